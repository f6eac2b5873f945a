"""Edit: exact string replacement in a UTF-8 text file."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict, Field

from ..paths import PathError, PathPolicy
from ..workspace.disk import OnDisk, state_of_bytes
from ..workspace.editor import EditorFiles, EditorRefused
from ..workspace.recorder import Content, FileRecorder
from ._text import number_line, sha256_hex
from .base import Tool, ToolContext, ToolResult

MAX_EDIT_BYTES = 64 * 1024 * 1024
SNIPPET_CONTEXT = 3


class EditParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file_path: str = Field(
        description="Path of the file to edit (absolute, or relative to the working directory)."
    )
    old_string: str = Field(description="The exact text to replace (must match exactly).")
    new_string: str = Field(description="The text to replace it with (must differ).")
    replace_all: bool = Field(
        default=False, description="Replace every occurrence instead of exactly one."
    )


class EditRefused(Exception):
    """An edit that cannot be applied; the message tells the model why and what to do."""


@dataclass(frozen=True)
class EditOutcome:
    before: bytes
    after: bytes
    replacements: int
    first_line: int
    new_text: str
    new_string: str


def _to_crlf(s: str) -> str:
    return s.replace("\r\n", "\n").replace("\n", "\r\n")


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _occurrence_lines(text: str, needle: str) -> list[int]:
    lines: list[int] = []
    start = 0
    while (i := text.find(needle, start)) != -1:
        lines.append(_line_of(text, i))
        start = i + len(needle)
    return lines


def nearest_lines(text: str, needle: str, max_windows: int = 2) -> str:
    """The file lines that look most like ``needle`` (difflib), numbered, for a not-found error."""
    file_lines = text.replace("\r\n", "\n").split("\n")
    needle_lines = needle.replace("\r\n", "\n").strip("\n").split("\n")
    # Anchor on the most distinctive (longest) line of old_string; compare stripped lines
    # so an indentation mistake still finds its target.
    anchor_idx = max(range(len(needle_lines)), key=lambda i: len(needle_lines[i].strip()))
    anchor = needle_lines[anchor_idx].strip()
    if not anchor:
        return ""
    stripped = [line.strip() for line in file_lines]
    candidates = difflib.get_close_matches(anchor, stripped, n=50, cutoff=0.5)
    if not candidates:
        return ""
    best = candidates[0]
    starts: list[int] = []
    for i, line in enumerate(stripped):
        if line == best:
            starts.append(max(0, i - anchor_idx))
        if len(starts) >= max_windows:
            break
    blocks: list[str] = []
    for start in starts:
        end = min(len(file_lines), start + len(needle_lines))
        blocks.append("\n".join(number_line(n + 1, file_lines[n]) for n in range(start, end)))
    return "\n...\n".join(blocks)


def plan_edit(before: bytes, old: str, new: str, replace_all: bool, shown: str) -> EditOutcome:
    """Compute the edited bytes or raise :class:`EditRefused` with a helpful reason."""
    if b"\x00" in before:
        raise EditRefused(
            f"{shown} looks like a binary file (it contains NUL bytes); Edit only "
            "changes text files."
        )
    bom = before.startswith(b"\xef\xbb\xbf")
    try:
        text = before[3:].decode("utf-8") if bom else before.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EditRefused(
            f"{shown} is not valid UTF-8 (byte 0x{before[exc.start]:02x} at offset {exc.start}); "
            "Edit refuses to change it so as not to corrupt its bytes. Use Bash (e.g. iconv, "
            "sed) or rewrite the whole file with Write."
        ) from None
    if old == new:
        raise EditRefused("old_string and new_string are identical; there is nothing to change.")
    if old == "":
        raise EditRefused(
            "old_string is empty. Give the exact text to replace, or use Write to replace the "
            "whole file."
        )
    crlf = text.count("\r\n") > text.count("\n") - text.count("\r\n")
    # Try the strings as given, then with line endings adapted to the file's, so an
    # old_string written with \n matches a CRLF file and new lines keep the file's endings.
    candidates = [(old, new)]
    if crlf:
        candidates.insert(0, (_to_crlf(old), _to_crlf(new)))
    elif "\r\n" in old:
        candidates.append((old.replace("\r\n", "\n"), new.replace("\r\n", "\n")))
    count = 0
    for cand_old, cand_new in candidates:
        count = text.count(cand_old)
        if count:
            old, new = cand_old, cand_new
            break
    if count == 0:
        msg = f"old_string was not found in {shown}."
        stripped_match = " ".join(old.split()) in " ".join(text.split())
        if stripped_match:
            msg += " It matches if whitespace is ignored: check indentation and line breaks."
        near = nearest_lines(text, old)
        if near:
            msg += f"\nThe most similar lines in the file:\n{near}"
        msg += "\nRead the file again and copy old_string exactly (without line-number prefixes)."
        raise EditRefused(msg)
    if count > 1 and not replace_all:
        where = _occurrence_lines(text, old)
        shown_lines = ", ".join(map(str, where[:20])) + (" ..." if len(where) > 20 else "")
        raise EditRefused(
            f"old_string was found {count} times in {shown} (at lines {shown_lines}). Include "
            "more surrounding text to make it unique, or set replace_all to replace every one."
        )
    first = text.find(old)
    new_text = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    after = (b"\xef\xbb\xbf" if bom else b"") + new_text.encode("utf-8")
    return EditOutcome(before, after, count, _line_of(text, first), new_text, new)


def _snippet(outcome: EditOutcome) -> str:
    lines = outcome.new_text.replace("\r\n", "\n").split("\n")
    start = max(1, outcome.first_line - SNIPPET_CONTEXT)
    span = outcome.new_string.count("\n") + 1
    end = min(len(lines), outcome.first_line + span - 1 + SNIPPET_CONTEXT, start + 40)
    return "\n".join(number_line(n, lines[n - 1]) for n in range(start, end + 1))


class Edit(Tool[EditParams]):
    """Replace an exact string in a file; refuses ambiguous, missing or unsafe edits."""

    name = "Edit"
    description = (
        "Replace exact text in a file. old_string must match the file exactly (including "
        "indentation) and exactly once, unless replace_all is true. Read the file first. "
        "Line endings (LF/CRLF) of the file are kept. Files that are not UTF-8 are refused."
    )
    Params = EditParams

    def __init__(self, files: FileRecorder | None = None) -> None:
        #: Records the file's content before and after (None: hashes only).
        self.files = files

    async def run(self, params: EditParams, ctx: ToolContext) -> ToolResult:
        policy = ctx.path_policy
        source: str | None = None
        try:
            served = None
            editor = ctx.editor
            if editor is not None and editor.reads and editor.writes:
                served = await self._through_editor(editor, policy, params)
            if served is not None:
                (path, outcome, executable), source = served, "editor"
            else:
                path, outcome, executable = await anyio.to_thread.run_sync(
                    self._apply, policy, params
                )
        except EditRefused as exc:
            return ToolResult(str(exc), is_error=True)
        payload: dict[str, Any] = {
            "path": str(path),
            "contentHash": sha256_hex(outcome.after),
            "contentHashBefore": sha256_hex(outcome.before),
            "contentHashAfter": sha256_hex(outcome.after),
            "replacements": outcome.replacements,
            "toolCallId": ctx.tool_call_id,
        }
        if self.files is not None:
            limit = self.files.max_file_bytes
            old = state_of_bytes(outcome.before, executable=executable, limit=limit)
            before = OnDisk(old, outcome.before if old.stored else None)
            payload.update(
                await self.files.record_change(before, Content(outcome.after, executable))
            )
        if source is not None:
            payload["source"] = source
        await ctx.record("file.edit", payload)
        plural = "s" if outcome.replacements != 1 else ""
        shown = policy.display(path)
        return ToolResult(
            f"Edited {shown}: {outcome.replacements} replacement{plural}.\n{_snippet(outcome)}",
            details={"path": str(path), "replacements": outcome.replacements},
        )

    @staticmethod
    def _target(policy: PathPolicy, raw: str) -> tuple[Path, str, bool]:
        """The checked path of an edit, how to show it and whether it is executable."""
        try:
            with policy.resolve(raw) as target:
                shown = policy.display(target.path)
                policy.check_write(target)
                if target.exists and not target.is_file:
                    raise EditRefused(f"{shown} is a directory.")
                executable = target.stat is not None and bool(target.stat.st_mode & 0o100)
                return target.path, shown, executable
        except PathError as exc:
            raise EditRefused(str(exc)) from None

    async def _through_editor(
        self, editor: EditorFiles, policy: PathPolicy, params: EditParams
    ) -> tuple[Path, EditOutcome, bool] | None:
        """Edit the editor's buffer (its unsaved text is what is replaced in); None when
        the editor cannot say (edit the disk)."""
        path, shown, executable = await anyio.to_thread.run_sync(
            self._target, policy, params.file_path
        )
        text = await editor.read_text(path)
        if text is None:
            return None
        before = text.encode("utf-8", errors="surrogatepass")
        outcome = plan_edit(before, params.old_string, params.new_string, params.replace_all,
                            shown)  # fmt: skip
        try:
            written = await editor.write_text(path, outcome.after.decode("utf-8"))
        except EditorRefused as exc:
            raise EditRefused(f"The editor refused to write {shown}: {exc}") from None
        return (path, outcome, executable) if written else None

    @staticmethod
    def _apply(policy: PathPolicy, params: EditParams) -> tuple[Path, EditOutcome, bool]:
        """Read and replace the file through one resolution (the same folder handle)."""
        try:
            with policy.resolve(params.file_path) as target:
                shown = policy.display(target.path)
                policy.check_write(target)
                if not target.exists:
                    raise EditRefused(f"File not found: {shown}. Use Write to create a file.")
                if target.is_dir:
                    raise EditRefused(f"{shown} is a directory.")
                if target.stat is not None and target.stat.st_size > MAX_EDIT_BYTES:
                    raise EditRefused(
                        f"{shown} is {target.stat.st_size} bytes, above Edit's {MAX_EDIT_BYTES} "
                        "byte limit; use Bash (sed) for files this large."
                    )
                try:
                    before = target.read_bytes(limit=MAX_EDIT_BYTES)
                except PermissionError:
                    raise EditRefused(f"Permission denied: {shown}") from None
                outcome = plan_edit(
                    before, params.old_string, params.new_string, params.replace_all, shown
                )
                try:
                    policy.write_bytes(target, outcome.after)
                except PermissionError:
                    raise EditRefused(f"Permission denied: cannot write {shown}") from None
                except OSError as exc:
                    raise EditRefused(f"Cannot write {shown}: {exc.strerror or exc}") from None
                executable = target.stat is not None and bool(target.stat.st_mode & 0o100)
                return target.path, outcome, executable
        except PathError as exc:
            raise EditRefused(str(exc)) from None
