"""MCP content (as the wire carries it, camelCase dicts) → Tron's content blocks.

=====================  ============================================================
MCP                    Tron (Anthropic-shaped blocks)
=====================  ============================================================
text                   text
image                  image (base64), when a provider can show its type; else a note
audio                  a text note (no model here hears audio)
resource (text)        text: ``<resource uri="…" mimeType="…">…</resource>``
resource (blob)        an image when it is one, else a note naming it and its size
resource_link          a text line naming the link (the model can ask for it)
=====================  ============================================================

A tool result's ``isError`` makes the result an error; ``structuredContent`` is kept in the
result's ``details`` (recorded with it) and, when the server sent no content beside it, is
the text the model sees (its JSON).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["IMAGE_TYPES", "McpResult", "content_blocks", "resource_blocks", "tool_result"]


@dataclass(frozen=True)
class McpResult:
    """A tool call's result as the model sees it (the runtime's ``ToolResult`` fields)."""

    content: str | list[dict[str, Any]]
    is_error: bool = False
    details: dict[str, Any] | None = None


#: Image types every provider adapter accepts inline.
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


def _size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)


def _attr(value: Any) -> str:
    return str(value).replace("&", "&amp;").replace('"', "&quot;")


def _image(data: Any, mime: Any, what: str) -> dict[str, Any]:
    if isinstance(data, str) and isinstance(mime, str) and mime.lower() in IMAGE_TYPES:
        return {"type": "image",
                "source": {"type": "base64", "media_type": mime.lower(), "data": data}}  # fmt: skip
    size = _size(data) if isinstance(data, str) else 0
    return {"type": "text", "text": f"[{what} ({mime or 'unknown type'}, {size} bytes) not "
                                    "shown: the model cannot read this type]"}  # fmt: skip


def resource_blocks(resource: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One resource's contents (``{uri, mimeType?, text | blob}``) as blocks."""
    uri = str(resource.get("uri", ""))
    mime = resource.get("mimeType")
    if isinstance(resource.get("text"), str):
        kind = f' mimeType="{_attr(mime)}"' if mime else ""
        text = resource["text"]
        return [{"type": "text",
                 "text": f'<resource uri="{_attr(uri)}"{kind}>\n{text}\n</resource>'}]  # fmt: skip
    blob = resource.get("blob")
    if isinstance(mime, str) and mime.lower() in IMAGE_TYPES and isinstance(blob, str):
        return [{"type": "text", "text": f'<resource uri="{_attr(uri)}" mimeType="{mime}"/>'},
                _image(blob, mime, f"resource {uri}")]  # fmt: skip
    return [_image(blob, mime, f"binary resource {uri}")]


def content_blocks(content: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """MCP content blocks (tool results, prompt messages) as Tron blocks, in order."""
    out: list[dict[str, Any]] = []
    for block in content:
        kind = block.get("type")
        if kind == "text":
            out.append({"type": "text", "text": str(block.get("text", ""))})
        elif kind == "image":
            out.append(_image(block.get("data"), block.get("mimeType"), "image"))
        elif kind == "audio":
            mime = block.get("mimeType") or "audio"
            size = _size(str(block.get("data", "")))
            out.append({"type": "text",
                        "text": f"[audio ({mime}, {size} bytes) not shown: the model cannot "
                                "hear it]"})  # fmt: skip
        elif kind == "resource" and isinstance(block.get("resource"), Mapping):
            out.extend(resource_blocks(block["resource"]))
        elif kind == "resource_link":
            name = block.get("title") or block.get("name") or ""
            line = f"[resource link: {block.get('uri', '')}"
            line += f" ({name})" if name else ""
            line += f", {block['mimeType']}" if block.get("mimeType") else ""
            line += "]"
            if block.get("description"):
                line += f" {block['description']}"
            out.append({"type": "text", "text": line})
        else:
            out.append({"type": "text", "text": json.dumps(dict(block), ensure_ascii=False)})
    return out


def _as_result_content(blocks: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """Text alone is a string (as the built-in tools answer); with images, the parts."""
    if all(b["type"] == "text" for b in blocks):
        return "\n".join(b["text"] for b in blocks)
    return blocks


def tool_result(result: Mapping[str, Any], server: str) -> McpResult:
    """A ``CallToolResult`` (wire form) as the result the model sees."""
    blocks = content_blocks(result.get("content") or [])
    structured = result.get("structuredContent")
    details: dict[str, Any] = {"server": server}
    if structured is not None:
        details["structuredContent"] = structured
        if not blocks:
            blocks = [{"type": "text", "text": json.dumps(structured, ensure_ascii=False)}]
    is_error = bool(result.get("isError"))
    content = _as_result_content(blocks)
    if content == "" or content == []:
        content = "(the tool returned nothing)" if not is_error else "(the tool failed)"
    return McpResult(content=content, is_error=is_error, details=details)
