"""Read: a file's lines numbered like ``cat -n``; images as image parts."""

from __future__ import annotations

import base64
import codecs
import io
import os
from pathlib import Path
from typing import Any, BinaryIO

import anyio
from pydantic import BaseModel, ConfigDict, Field

from ..paths import PathError, PathPolicy, ResolvedPath
from ..workspace.editor import EditorFiles
from ._text import number_line, sha256_hex
from .base import Tool, ToolContext, ToolResult

DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000
MAX_OUTPUT_CHARS = 250_000  # the whole window, so 2000 long lines cannot flood the context
MAX_IMAGE_BYTES = 5 * 1024 * 1024
HASH_MAX_BYTES = 16 * 1024 * 1024  # larger files are read by window and not hashed
SNIFF_BYTES = 8192

_IMAGE_MAGIC: list[tuple[bytes, str]] = [
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
]


def image_media_type(head: bytes) -> str | None:
    """The media type of a PNG/JPEG/GIF/WebP image from its magic bytes, else None."""
    for magic, media in _IMAGE_MAGIC:
        if head.startswith(magic):
            return media
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def sniff_encoding(head: bytes) -> str | None:
    """``utf-8``/``utf-8-sig``/``utf-16`` for text, None for binary content.

    NUL bytes (outside UTF-16 with a BOM) mean binary. Invalid UTF-8 is still text
    (decoded with replacement) unless control characters and invalid bytes dominate.
    """
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    if b"\x00" in head:
        return None
    text = head.decode("utf-8", errors="surrogateescape")
    if not text:
        return "utf-8"
    # A multibyte character cut at the end of the sample is not evidence of anything.
    suspicious = sum(
        1
        for ch in text[:-3]
        if ("\udc80" <= ch <= "\udcff") or (ch < " " and ch not in "\t\n\r\f\b\x1b\v")
    )
    return None if suspicious > 0.3 * len(text) else "utf-8"


def _has_escapes(text: str) -> bool:
    return any("\udc80" <= ch <= "\udcff" for ch in text)


def _unescape(text: str) -> str:
    """Show undecodable bytes (kept as surrogate escapes) as U+FFFD."""
    return "".join("\ufffd" if "\udc80" <= ch <= "\udcff" else ch for ch in text)


_Outcome = tuple[ToolResult, dict[str, Any] | None]
"""A result and the file.read payload to record (None when nothing was read)."""


class ReadParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file_path: str = Field(
        description="Path of the file to read (absolute, or relative to the working directory)."
    )
    offset: int | None = Field(
        default=None, ge=1, description="Line number to start reading at (1-based)."
    )
    limit: int | None = Field(
        default=None, ge=1, description=f"Number of lines to read (default {DEFAULT_LIMIT})."
    )


class _Window:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.first = 0
        self.cut_lines = 0
        self.replaced = False
        self.more = False
        self.total_lines: int | None = None
        self.stopped_for_size = False


def _read_window(f: BinaryIO, encoding: str, offset: int, limit: int) -> _Window:
    """Stream the file and keep lines ``offset .. offset+limit-1`` (memory stays bounded)."""
    errors = "surrogateescape" if encoding.startswith("utf-8") else "replace"
    text = io.TextIOWrapper(f, encoding=encoding, errors=errors, newline="\n")
    win = _Window()
    win.first = offset
    number = 0
    size = 0
    while True:
        piece = text.readline(MAX_LINE_CHARS + 1)
        if not piece:
            win.total_lines = number
            break
        number += 1
        complete = piece.endswith("\n")
        # A line longer than the cap: skip the rest of it without holding it in memory.
        extra = 0
        while not complete:
            rest = text.readline(65536)
            if not rest:
                break
            extra += len(rest)
            complete = rest.endswith("\n")
            if complete:
                extra -= 1
        if number < offset:
            continue
        if len(win.lines) >= limit or size >= MAX_OUTPUT_CHARS:
            win.more = True
            win.stopped_for_size = len(win.lines) < limit
            break
        line = piece.rstrip("\n")
        if line.endswith("\r"):
            line = line[:-1]
        if len(line) > MAX_LINE_CHARS or extra:
            cut = len(line) - MAX_LINE_CHARS + extra
            line = line[:MAX_LINE_CHARS] + f"… [line truncated: {cut} more characters]"
            win.cut_lines += 1
        if _has_escapes(line):
            win.replaced = True
            line = _unescape(line)
        win.lines.append(line)
        size += len(line) + 8
    text.detach()
    return win


def _text_target(policy: PathPolicy, raw: str) -> tuple[Path, str] | None:
    """The resolved path and how to show it, when an editor may serve it: a text file,
    or no file yet (an editor may hold a new, unsaved buffer); None for anything else."""
    with policy.resolve(raw) as target:
        shown = policy.display(target.path)
        if not target.exists:
            return target.path, shown
        if not target.is_file:
            return None
        with target.open_read() as f:
            head = f.read(SNIFF_BYTES)
        if image_media_type(head) is not None or sniff_encoding(head) is None:
            return None
        return target.path, shown


class Read(Tool[ReadParams]):
    """Read a text file (a window of numbered lines) or an image."""

    name = "Read"
    description = (
        "Read a file from the local filesystem. Returns lines numbered like `cat -n` "
        f"(up to {DEFAULT_LIMIT} lines from `offset`, 1-based; lines longer than "
        f"{MAX_LINE_CHARS} characters are cut). Use offset/limit for large files. "
        "PNG, JPEG, GIF and WebP images are returned as images. Binary files are not shown."
    )
    Params = ReadParams

    async def run(self, params: ReadParams, ctx: ToolContext) -> ToolResult:
        policy = ctx.path_policy
        served = None
        if ctx.editor is not None and ctx.editor.reads:
            served = await self._from_editor(ctx.editor, policy, params)
        if served is not None:
            result, record = served
        else:
            result, record = await anyio.to_thread.run_sync(self._run_sync, policy, params)
        if record is not None:
            record["toolCallId"] = ctx.tool_call_id
            await ctx.record("file.read", record)
        return result

    async def _from_editor(
        self, editor: EditorFiles, policy: PathPolicy, params: ReadParams
    ) -> _Outcome | None:
        """The editor's text of the file (an unsaved buffer included), numbered as from
        the disk; None to read the disk (an image or binary file, a folder, a bad path,
        or an editor that cannot say)."""
        try:
            target = await anyio.to_thread.run_sync(_text_target, policy, params.file_path)
        except (PathError, OSError):
            return None
        if target is None:
            return None
        path, shown = target
        text = await editor.read_text(path)
        if text is None:
            return None
        data = text.encode("utf-8", errors="surrogatepass")
        offset = params.offset or 1
        win = _read_window(io.BytesIO(data), "utf-8", offset, params.limit or DEFAULT_LIMIT)
        record: dict[str, Any] = {
            "path": str(path),
            "contentHash": sha256_hex(data),
            "lines": len(win.lines),
            "offset": offset,
            "bytes": len(data),
            "source": "editor",
        }
        result = ToolResult(
            self._format(win, shown, len(data), "utf-8", offset),
            details={
                "path": str(path),
                "lines": len(win.lines),
                "offset": offset,
                "totalLines": win.total_lines,
                "truncatedLines": win.cut_lines,
                "more": win.more,
                "source": "editor",
            },
        )
        return result, record

    def _run_sync(self, policy: PathPolicy, params: ReadParams) -> _Outcome:
        try:
            with policy.resolve(params.file_path) as target:
                return self._read(target, policy.display(target.path), params)
        except PathError as exc:
            return ToolResult(str(exc), is_error=True), None

    def _read(self, target: ResolvedPath, shown: str, params: ReadParams) -> _Outcome:
        path = target.path
        if not target.exists:
            return ToolResult(f"File not found: {shown}", is_error=True), None
        if not target.is_file:
            kind = "a directory" if target.is_dir else "not a regular file"
            hint = " Use Glob or Bash `ls` to list it." if target.is_dir else ""
            return ToolResult(f"{shown} is {kind}.{hint}", is_error=True), None
        try:
            # Opened through the folder handle of the one resolution (O_NOFOLLOW).
            with target.open_read() as f:
                size = os.fstat(f.fileno()).st_size
                head = f.read(SNIFF_BYTES)
                media = image_media_type(head)
                if media is not None:
                    return self._image(f, head, size, media, path, shown)
                encoding = sniff_encoding(head)
                if encoding is None:
                    return ToolResult(
                        f"{shown} is a binary file ({size} bytes); its content cannot be "
                        "shown as text. Use Bash (e.g. `file`, `xxd | head`) to inspect it.",
                        is_error=True,
                        details={"binary": True, "bytes": size},
                    ), None
                f.seek(0)
                offset = params.offset or 1
                limit = params.limit or DEFAULT_LIMIT
                win = _read_window(f, encoding, offset, limit)
                content_hash = self._hash(f, size)
        except PermissionError:
            return ToolResult(f"Permission denied: {shown}", is_error=True), None
        except OSError as exc:
            return ToolResult(f"Cannot read {shown}: {exc.strerror or exc}", is_error=True), None
        record: dict[str, Any] = {
            "path": str(path),
            "contentHash": content_hash,
            "lines": len(win.lines),
            "offset": offset,
            "bytes": size,
        }
        result = ToolResult(
            self._format(win, shown, size, encoding, offset),
            details={
                "path": str(path),
                "lines": len(win.lines),
                "offset": offset,
                "totalLines": win.total_lines,
                "truncatedLines": win.cut_lines,
                "more": win.more,
            },
        )
        return result, record

    @staticmethod
    def _hash(f: BinaryIO, size: int) -> str | None:
        """The SHA-256 of the file just read (the same open file, not the path again)."""
        if size > HASH_MAX_BYTES:
            return None
        f.seek(0)
        return sha256_hex(f.read())

    @staticmethod
    def _format(win: _Window, shown: str, size: int, encoding: str, offset: int) -> str:
        if size == 0:
            return f"(empty file: {shown})"
        if not win.lines:
            total = win.total_lines if win.total_lines is not None else "fewer"
            return f"(offset {offset} is past the end of {shown}, which has {total} lines)"
        out = [number_line(win.first + i, line) for i, line in enumerate(win.lines)]
        notes: list[str] = []
        if win.replaced:
            notes.append(
                "[this file is not valid UTF-8: undecodable bytes are shown as \ufffd; "
                "Edit will refuse to change it]"
            )
        elif encoding == "utf-16":
            notes.append("[this file is UTF-16 encoded]")
        if win.cut_lines:
            notes.append(f"[{win.cut_lines} long lines were cut at {MAX_LINE_CHARS} characters]")
        if win.more:
            last = win.first + len(win.lines) - 1
            why = " (output size limit)" if win.stopped_for_size else ""
            notes.append(
                f"[showing lines {win.first}-{last}{why}; the file continues: "
                f"use offset={last + 1} to read more]"
            )
        if notes:
            out.append("")
            out.extend(notes)
        return "\n".join(out)

    @staticmethod
    def _image(f: BinaryIO, head: bytes, size: int, media: str, path: Path, shown: str) -> _Outcome:
        if size > MAX_IMAGE_BYTES:
            return ToolResult(
                f"{shown} is an image of {size} bytes, above the {MAX_IMAGE_BYTES} byte limit "
                "for images. Resize it first (e.g. with Bash: "
                "`convert in.png -resize 50% out.png`).",
                is_error=True,
                details={"bytes": size, "mediaType": media},
            ), None
        data = head + f.read()
        payload: dict[str, Any] = {
            "path": str(path),
            "contentHash": sha256_hex(data),
            "lines": 0,
            "bytes": len(data),
            "mediaType": media,
        }
        result = ToolResult(
            [
                {"type": "text", "text": f"Image {shown} ({media}, {len(data)} bytes):"},
                {
                    "type": "image",
                    "source": {
                        "type": "base64",
                        "media_type": media,
                        "data": base64.b64encode(data).decode("ascii"),
                    },
                },
            ],
            details={"path": str(path), "bytes": len(data), "mediaType": media},
        )
        return result, payload
