"""Write: create or replace a file atomically."""

from __future__ import annotations

from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict, Field

from ..paths import PathError, PathPolicy, WriteOutcome
from ..workspace.disk import OnDisk, capture
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

    async def run(self, params: WriteParams, ctx: ToolContext) -> ToolResult:
        policy = ctx.path_policy
        data = params.content.encode("utf-8", errors="surrogatepass")
        try:
            outcome, before = await anyio.to_thread.run_sync(
                self._write, policy, params.file_path, data
            )
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
        await ctx.record("file.write", payload)
        verb = "Created" if outcome.created else "Wrote"
        lines = params.content.count("\n") + (
            1 if params.content and not params.content.endswith("\n") else 0
        )
        return ToolResult(
            f"{verb} {shown} ({len(data)} bytes, {lines} lines).",
            details={"path": str(path), "bytes": len(data), "created": outcome.created},
        )
