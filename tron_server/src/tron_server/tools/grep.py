"""Grep: search file contents with a regular expression, honouring .gitignore.

ripgrep does the work when it is installed; otherwise a Python walk (the same
.gitignore rules, see :mod:`._walk`) with :mod:`re` gives the same results for the
patterns both engines understand. Both backends produce the same records
(path, line number, text, match or context), formatted by one function, so the
output cannot drift between them. Results are in path order (depth first, by name).
"""

from __future__ import annotations

import base64
import contextlib
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
import orjson
from anyio.abc import ByteReceiveStream
from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from ..paths import PathError
from ._walk import glob_matcher, path_sort_key, walk_files
from .base import Tool, ToolContext, ToolResult

OutputMode = Literal["files_with_matches", "content", "count"]

MAX_OUTPUT_CHARS = 30_000
MAX_LINE_CHARS = 500
MAX_RECORDS = 20_000  # lines (content) or files kept before the search stops early
MAX_FILE_BYTES = 64 * 1024 * 1024  # the Python fallback skips larger files

# Flags shared by every ripgrep call: the rules the Python walk implements.
RG_BASE_FLAGS = [
    "--hidden",
    "--no-require-git",
    "--no-ignore-global",
    "--no-ignore-dot",
    "--glob",
    "!.git",
    "--sort",
    "path",
    "--no-config",
    "--color",
    "never",
    "--no-messages",
]


class GrepParams(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    pattern: str = Field(min_length=1, description="Regular expression to search for.")
    path: str = Field(
        default=".", description="File or folder to search (default: the working directory)."
    )
    glob: str | None = Field(
        default=None,
        description='Only search files matching this glob, e.g. "*.py", "*.{ts,tsx}", '
        '"src/**/*.rs" (a glob without "/" matches file names at any depth).',
    )
    output_mode: OutputMode = Field(
        default="files_with_matches",
        description='"files_with_matches" (paths, default), "content" (matching lines with '
        'line numbers) or "count" (matching lines per file).',
    )
    after: int | None = Field(
        default=None, ge=0, alias="-A", description="Lines of context after each match."
    )
    before: int | None = Field(
        default=None, ge=0, alias="-B", description="Lines of context before each match."
    )
    context: int | None = Field(
        default=None, ge=0, alias="-C", description="Lines of context around each match."
    )
    case_insensitive: bool = Field(
        default=False,
        validation_alias=AliasChoices("case_insensitive", "-i"),
        description="Match case-insensitively.",
    )
    head_limit: int | None = Field(
        default=None, ge=1, description="Return only the first N lines / files / counts."
    )


@dataclass
class FileHits:
    """One file's results: ``lines`` holds (number, text, is_match); ``count`` matching lines."""

    path: str  # relative to the search root (or the file name when a file was searched)
    count: int = 0
    lines: list[tuple[int, str, bool]] = field(default_factory=list)


@dataclass
class SearchSpec:
    pattern: str
    root: Path
    is_file: bool
    glob: str | None
    mode: OutputMode
    before: int
    after: int
    ignore_case: bool


class PatternError(Exception):
    """The regular expression is invalid for the engine."""


# --- the Python engine ----------------------------------------------------------------


def _candidate_files(spec: SearchSpec) -> Iterator[tuple[str, Path]]:
    if spec.is_file:
        yield spec.root.name, spec.root
        return
    matcher = glob_matcher(spec.glob) if spec.glob else None
    for rel in walk_files(spec.root):
        if matcher is not None:
            regex, whole = matcher
            if not regex.match(rel if whole else rel.rsplit("/", 1)[-1]):
                continue
        yield rel, spec.root / rel


def python_search(spec: SearchSpec) -> list[FileHits]:
    """Search with :mod:`re`, line by line, like ripgrep (binary files skipped)."""
    try:
        regex = re.compile(spec.pattern, re.IGNORECASE if spec.ignore_case else 0)
    except re.error as exc:
        raise PatternError(str(exc)) from None
    results: list[FileHits] = []
    records = 0
    for rel, path in _candidate_files(spec):
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                continue
            data = path.read_bytes()
        except OSError:
            continue
        if b"\x00" in data:  # binary: ripgrep skips it too
            continue
        text = data.decode("utf-8", errors="replace")
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        hits = [i for i, line in enumerate(lines) if regex.search(line)]
        if not hits:
            continue
        fh = FileHits(rel, count=len(hits))
        if spec.mode == "content":
            wanted: dict[int, bool] = {}
            for i in hits:
                for j in range(max(0, i - spec.before), min(len(lines), i + spec.after + 1)):
                    wanted.setdefault(j, False)
                wanted[i] = True
            fh.lines = [(j + 1, lines[j], wanted[j]) for j in sorted(wanted)]
            records += len(fh.lines)
        else:
            records += 1
        results.append(fh)
        if records >= MAX_RECORDS:
            break
    return results


# --- the ripgrep engine ---------------------------------------------------------------


def rg_path() -> str | None:
    """The ripgrep executable, or None when it is not installed."""
    return shutil.which("rg")


def _rg_args(spec: SearchSpec) -> list[str]:
    args = [*RG_BASE_FLAGS]
    if spec.ignore_case:
        args.append("--ignore-case")
    else:
        args.append("--case-sensitive")
    if spec.glob:
        _, whole = glob_matcher(spec.glob)
        if not whole:
            # A type filter narrows by file name without overriding .gitignore
            # (a --glob would: ripgrep's globs take precedence over ignore files).
            args += ["--type-add", f"tronglob:{spec.glob}", "--type", "tronglob"]
    if spec.mode == "files_with_matches":
        args += ["--files-with-matches", "--null"]
    elif spec.mode == "count":
        args += ["--count", "--null", "--with-filename"]
    else:
        args += ["--json"]
        if spec.before:
            args += ["--before-context", str(spec.before)]
        if spec.after:
            args += ["--after-context", str(spec.after)]
    args += ["--regexp", spec.pattern]
    # Always name the path: with none, ripgrep reads stdin when it is not a terminal.
    args += ["--", spec.root.name if spec.is_file else "."]
    return args


def _json_text(data: dict[str, Any]) -> str:
    if "text" in data:
        return str(data["text"])
    return base64.b64decode(data.get("bytes", "")).decode("utf-8", errors="replace")


async def rg_search(spec: SearchSpec, rg: str) -> list[FileHits]:
    """Run ripgrep in the search root and parse its output into :class:`FileHits`."""
    cwd = spec.root.parent if spec.is_file else spec.root
    process = await anyio.open_process(
        [rg, *_rg_args(spec)],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    results: list[FileHits] = []
    try:
        assert process.stdout is not None and process.stderr is not None
        stopped_early = await _parse_rg_output(process.stdout, spec, results)
        if stopped_early:
            return results
        errors = b""
        async for chunk in process.stderr:
            errors += chunk
        code = await process.wait()
        if code == 2 and not results:
            message = errors.decode("utf-8", errors="replace").strip()
            if "regex" in message.lower() or "pattern" in message.lower():
                raise PatternError(message)
            raise RuntimeError(f"ripgrep failed: {message or f'exit code {code}'}")
    finally:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
        with anyio.CancelScope(shield=True):
            await process.aclose()
    return results


async def _parse_rg_output(
    stdout: ByteReceiveStream, spec: SearchSpec, results: list[FileHits]
) -> bool:
    """Parse ripgrep's output into ``results``; True if it stopped at MAX_RECORDS."""
    buffer = b""
    records = 0
    current: FileHits | None = None
    # -l --null separates paths with NUL and no newline; the other modes end lines with \n.
    separator = b"\0" if spec.mode == "files_with_matches" else b"\n"
    async for chunk in stdout:
        buffer += chunk
        *complete, buffer = buffer.split(separator)
        for raw in complete:
            if not raw:
                continue
            if spec.mode == "files_with_matches":
                results.append(FileHits(_rg_rel(raw), count=1))
                records += 1
            elif spec.mode == "count":
                name, _, count = raw.rpartition(b"\0")
                results.append(FileHits(_rg_rel(name), count=int(count)))
                records += 1
            else:
                message = orjson.loads(raw)
                kind = message.get("type")
                data = message.get("data", {})
                if kind == "begin":
                    current = FileHits(_rg_rel_text(_json_text(data["path"])))
                elif kind in ("match", "context") and current is not None:
                    text = _json_text(data["lines"]).rstrip("\n")
                    current.lines.append((int(data["line_number"]), text, kind == "match"))
                    current.count += kind == "match"
                    records += 1
                elif kind == "end" and current is not None:
                    if current.count:
                        results.append(current)
                    current = None
        if records >= MAX_RECORDS:
            if current is not None and current.count:
                results.append(current)
            return True
    return False


def _rg_rel(raw: bytes) -> str:
    return _rg_rel_text(raw.decode("utf-8", errors="replace"))


def _rg_rel_text(name: str) -> str:
    return name.removeprefix("./")


# --- formatting -----------------------------------------------------------------------


def _cut(text: str) -> str:
    text = text.rstrip("\r")
    if len(text) > MAX_LINE_CHARS:
        return text[:MAX_LINE_CHARS] + f"… [{len(text) - MAX_LINE_CHARS} more characters]"
    return text


def format_results(
    results: list[FileHits], spec: SearchSpec, shown_root: str, head_limit: int | None
) -> tuple[str, dict[str, Any]]:
    """The text the model sees, the same whichever engine searched."""
    results = sorted(results, key=lambda fh: path_sort_key(fh.path))

    def show(rel: str) -> str:
        if spec.is_file:
            return shown_root
        return rel if shown_root == "." else f"{shown_root.rstrip('/')}/{rel}"

    out: list[str] = []
    if spec.mode == "files_with_matches":
        out = [show(fh.path) for fh in results]
    elif spec.mode == "count":
        out = [f"{show(fh.path)}:{fh.count}" for fh in results]
    else:
        with_context = spec.before > 0 or spec.after > 0
        for fh in results:
            prev: int | None = None
            if with_context and out:
                out.append("--")
            for number, text, is_match in fh.lines:
                if with_context and prev is not None and number > prev + 1:
                    out.append("--")
                sep = ":" if is_match else "-"
                out.append(f"{show(fh.path)}{sep}{number}{sep}{_cut(text)}")
                prev = number
    total_lines = len(out)
    limited = head_limit is not None and total_lines > head_limit
    if head_limit is not None:
        out = out[:head_limit]
    matches = sum(fh.count for fh in results)
    details: dict[str, Any] = {
        "files": len(results),
        "matches": matches,
        "mode": spec.mode,
    }
    if not results:
        return "No matches found.", details
    text_lines: list[str] = []
    size = 0
    for i, line in enumerate(out):
        size += len(line) + 1
        if size > MAX_OUTPUT_CHARS:
            text_lines.append(
                f"[truncated: {len(out) - i} more lines not shown; narrow the search "
                "(path, glob) or use head_limit]"
            )
            details["truncated"] = True
            break
        text_lines.append(line)
    if limited:
        text_lines.append(f"[head_limit {head_limit}: {total_lines - len(out)} more not shown]")
    files = len(results)
    if spec.mode == "files_with_matches":
        summary = f"Found {files} file{'s' if files != 1 else ''}"
    elif spec.mode == "count":
        summary = f"Found {matches} matching lines in {files} file{'s' if files != 1 else ''}"
    else:
        summary = ""
    body = "\n".join(text_lines)
    return (f"{summary}\n{body}" if summary else body), details


def normalized(results: list[FileHits], mode: OutputMode) -> list[tuple[Any, ...]]:
    """A comparable form of results (for checking the two engines against each other)."""
    out: list[tuple[Any, ...]] = []
    for fh in sorted(results, key=lambda fh: path_sort_key(fh.path)):
        if mode == "content":
            out.append((fh.path, fh.count, tuple((n, t.rstrip("\r"), m) for n, t, m in fh.lines)))
        elif mode == "count":
            out.append((fh.path, fh.count))
        else:
            out.append((fh.path,))
    return out


async def search(
    spec: SearchSpec, engine: Literal["auto", "rg", "python"] = "auto"
) -> list[FileHits]:
    """Run the search with ripgrep when available (``auto``), else in Python."""
    rg = rg_path() if engine in ("auto", "rg") else None
    if engine == "rg" and rg is None:
        raise RuntimeError("ripgrep (rg) is not installed")
    if rg is not None:
        results = await rg_search(spec, rg)
        if spec.glob and glob_matcher(spec.glob)[1]:
            regex, _ = glob_matcher(spec.glob)
            results = [fh for fh in results if regex.match(fh.path)]
        return results
    return await anyio.to_thread.run_sync(python_search, spec)


class Grep(Tool[GrepParams]):
    """Search file contents (regex), honouring .gitignore."""

    name = "Grep"
    description = (
        "Search file contents with a regular expression (ripgrep syntax), honouring "
        ".gitignore; hidden files are searched, .git is not. output_mode: "
        '"files_with_matches" (default), "content" (lines as path:line:text; use -A/-B/-C '
        'for context) or "count". Filter files with glob (e.g. "*.py", "**/*.{ts,tsx}"). '
        "Use this instead of grep/rg in Bash."
    )
    Params = GrepParams
    engine: Literal["auto", "rg", "python"] = "auto"

    async def run(self, params: GrepParams, ctx: ToolContext) -> ToolResult:
        if "\x00" in params.pattern:
            return ToolResult("Invalid regular expression: it contains a NUL byte.", is_error=True)
        policy = ctx.path_policy
        try:
            with policy.resolve(params.path) as resolved:
                target, exists, is_file = resolved.path, resolved.exists, resolved.is_file
        except PathError as exc:
            return ToolResult(str(exc), is_error=True)
        shown = policy.display(target)
        if not exists:
            return ToolResult(f"Path not found: {shown}", is_error=True)
        context = params.context or 0
        spec = SearchSpec(
            pattern=params.pattern,
            root=target,
            is_file=is_file,
            glob=params.glob,
            mode=params.output_mode,
            before=params.before if params.before is not None else context,
            after=params.after if params.after is not None else context,
            ignore_case=params.case_insensitive,
        )
        try:
            results = await search(spec, self.engine)
        except PatternError as exc:
            # ripgrep's dialect refused it: Python's re may accept it (lookaround...).
            if self.engine != "auto":
                return ToolResult(f"Invalid regular expression: {exc}", is_error=True)
            try:
                results = await anyio.to_thread.run_sync(python_search, spec)
            except PatternError as exc2:
                return ToolResult(f"Invalid regular expression: {exc2}", is_error=True)
        text, details = format_results(results, spec, shown, params.head_limit)
        return ToolResult(text, details=details)
