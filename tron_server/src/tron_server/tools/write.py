"""Write: create or replace a file atomically."""

from __future__ import annotations

from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict, Field

from ._fs import atomic_write_bytes
from ._paths import display_path, resolve_path
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

    async def run(self, params: WriteParams, ctx: ToolContext) -> ToolResult:
        path = resolve_path(ctx, params.file_path)
        shown = display_path(path, ctx.working_directory)
        if path.is_dir():
            return ToolResult(f"{shown} is a directory; give a file path.", is_error=True)
        data = params.content.encode("utf-8", errors="surrogatepass")
        try:
            created = await anyio.to_thread.run_sync(atomic_write_bytes, path, data)
        except PermissionError:
            return ToolResult(f"Permission denied: cannot write {shown}", is_error=True)
        except (NotADirectoryError, FileExistsError):
            return ToolResult(
                f"Cannot write {shown}: a parent of it exists and is not a directory.",
                is_error=True,
            )
        content_hash = sha256_hex(data)
        payload: dict[str, Any] = {
            "path": str(path),
            "contentHash": content_hash,
            "bytes": len(data),
            "created": created,
            "toolCallId": ctx.tool_call_id,
        }
        await ctx.record("file.write", payload)
        verb = "Created" if created else "Wrote"
        lines = params.content.count("\n") + (
            1 if params.content and not params.content.endswith("\n") else 0
        )
        return ToolResult(
            f"{verb} {shown} ({len(data)} bytes, {lines} lines).",
            details={"path": str(path), "bytes": len(data), "created": created},
        )
