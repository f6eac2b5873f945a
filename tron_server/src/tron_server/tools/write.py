"""Write: create or replace a file atomically."""

from __future__ import annotations

from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict, Field

from ..paths import PathError, PathPolicy, WriteOutcome
from ..workspace.disk import OnDisk, capture, state_of_bytes
from ..workspace.editor import EditorFiles, EditorRefused
from ..workspace.recorder import Content, FileRecorder
from ._text import sha256_hex
from .base import Tool, ToolContext, ToolResult


class WriteParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file_path: str = Field(
        description="Path of the file to write (absolute, or relative to the working directory)."
    )
    content: str = Field(description="The complete new content of the file.")


class Write(Tool[WriteParams]):
    """Create or overwrite a file (UTF-8), creating parent folders; atomic replace."""

    name = "Write"
    description = (
        "Write a file to the local filesystem, replacing it if it exists (parent folders "
        "are created). The replacement is atomic. Prefer Edit to change part of an existing file."
    )
    Params = WriteParams

    def __init__(self, files: FileRecorder | None = None) -> None:
        #: Records the file's content before and after (None: hashes only).
        self.files = files

    def _write(
        self, policy: PathPolicy, raw: str, data: bytes
    ) -> tuple[WriteOutcome, OnDisk | None]:
        """Resolve, capture what is there (when recording), check and write, through
        the same folder handle."""
        with policy.resolve(raw) as target:
            before = capture(target, self.files.max_file_bytes) if self.files else None
            return policy.write_bytes(target, data), before

    def _check(self, policy: PathPolicy, raw: str) -> tuple[WriteOutcome, OnDisk | None]:
        """Resolve and check the write as :meth:`_write` does, writing nothing (the
        editor writes): what would be written where, and what the disk holds now."""
        with policy.resolve(raw) as target:
            policy.check_write(target)
            if target.exists and not target.is_file:
                raise IsADirectoryError(raw)
            before = capture(target, self.files.max_file_bytes) if self.files else None
            return WriteOutcome(target.path, created=not target.exists), before

    async def _through_editor(
        self, editor: EditorFiles, policy: PathPolicy, params: WriteParams, data: bytes
    ) -> tuple[WriteOutcome, OnDisk | None] | ToolResult | None:
        """Write through the editor's buffer; None when it is gone (write the disk)."""
        outcome, before = await anyio.to_thread.run_sync(self._check, policy, params.file_path)
        if editor.reads and self.files is not None:
            # What the write replaces is the buffer's text, unsaved changes included.
            held = await editor.read_text(outcome.path)
            if held is not None:
                old = held.encode("utf-8", errors="surrogatepass")
                executable = (
                    before is not None and before.state is not None and (before.state.executable)
                )
                state = state_of_bytes(old, executable=executable,
                                       limit=self.files.max_file_bytes)  # fmt: skip
                before = OnDisk(state, old if state.stored else None)
        try:
            if not await editor.write_text(outcome.path, params.content):
                return None
        except EditorRefused as exc:
            shown = policy.display(outcome.path)
            return ToolResult(f"The editor refused to write {shown}: {exc}", is_error=True)
        return outcome, before

    async def run(self, params: WriteParams, ctx: ToolContext) -> ToolResult:
        policy = ctx.path_policy
        data = params.content.encode("utf-8", errors="surrogatepass")
        source: str | None = None
        try:
            served = None
            if ctx.editor is not None and ctx.editor.writes:
                served = await self._through_editor(ctx.editor, policy, params, data)
            if isinstance(served, ToolResult):
                return served
            if served is not None:
                (outcome, before), source = served, "editor"
            else:
                outcome, before = await anyio.to_thread.run_sync(
                    self._write, policy, params.file_path, data
                )
        except IsADirectoryError:
            return ToolResult(f"Cannot write {params.file_path}: it is a directory.",
                              is_error=True)  # fmt: skip
        except PathError as exc:
            return ToolResult(str(exc), is_error=True)
        except PermissionError:
            return ToolResult(f"Permission denied: cannot write {params.file_path}", is_error=True)
        except (NotADirectoryError, FileExistsError):
            return ToolResult(
                f"Cannot write {params.file_path}: a parent of it exists and is not a directory.",
                is_error=True,
            )
        except OSError as exc:
            return ToolResult(
                f"Cannot write {params.file_path}: {exc.strerror or exc}", is_error=True
            )
        path = outcome.path
        shown = policy.display(path)
        content_hash = sha256_hex(data)
        payload: dict[str, Any] = {
            "path": str(path),
            "contentHash": content_hash,
            "bytes": len(data),
            "created": outcome.created,
            "toolCallId": ctx.tool_call_id,
        }
        if self.files is not None:
            executable = before is not None and before.state is not None and before.state.executable
            payload.update(
                await self.files.record_change(before, Content(data, executable=executable))
            )
        if source is not None:
            payload["source"] = source
        await ctx.record("file.write", payload)
        verb = "Created" if outcome.created else "Wrote"
        lines = params.content.count("\n") + (
            1 if params.content and not params.content.endswith("\n") else 0
        )
        return ToolResult(
            f"{verb} {shown} ({len(data)} bytes, {lines} lines).",
            details={"path": str(path), "bytes": len(data), "created": outcome.created},
        )
