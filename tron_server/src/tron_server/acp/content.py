"""An ACP prompt as Tron message content (Anthropic-shaped blocks).

- text → a text block;
- image → an image block (base64 source);
- resource link → a text block naming it (``@path`` for a local file, which the agent
  can Read, else the URI);
- embedded resource → its text in a text block, wrapped so the model sees where it came
  from (``<context ref="…">``); an embedded image blob → an image block, another
  binary blob → a note with its size (its bytes are not sent to the model);
- audio is not offered (``promptCapabilities.audio`` is false): refused with a reason.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any
from urllib.parse import unquote, urlsplit

from acp.schema import (
    AudioContentBlock,
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

PromptBlock = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)

#: The image types every provider takes.
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


class UnsupportedContent(ValueError):
    """A prompt block Tron cannot give the model (the message says which and why)."""


def _path_of(uri: str) -> str | None:
    parts = urlsplit(uri)
    if parts.scheme == "file":
        return unquote(parts.path)
    return None


def _image(data: str, mime: str, where: str) -> dict[str, Any]:
    if mime not in IMAGE_TYPES:
        raise UnsupportedContent(f"{where} is {mime}; images must be PNG, JPEG, GIF or WebP")
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise UnsupportedContent(f"{where}'s data is not base64") from None
    return {"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}}


def _link(block: ResourceContentBlock) -> str:
    path = _path_of(block.uri)
    return f"@{path}" if path else f"[{block.title or block.name}]({block.uri})"


def _embedded(resource: TextResourceContents | BlobResourceContents) -> dict[str, Any]:
    ref = _path_of(resource.uri) or resource.uri
    if isinstance(resource, TextResourceContents):
        return {"type": "text", "text": f'<context ref="{ref}">\n{resource.text}\n</context>'}
    mime = resource.mime_type or "application/octet-stream"
    if mime in IMAGE_TYPES:
        return _image(resource.blob, mime, f"the embedded resource {ref}")
    size = len(resource.blob) * 3 // 4
    return {
        "type": "text",
        "text": f'<context ref="{ref}">[binary content, {mime}, about {size} bytes: '
        "not included]</context>",
    }


def to_tron(prompt: list[PromptBlock]) -> list[dict[str, Any]]:
    """The blocks of ``agent.message``'s ``content``. Raises :class:`UnsupportedContent`."""
    blocks: list[dict[str, Any]] = []
    for i, block in enumerate(prompt):
        if isinstance(block, TextContentBlock):
            blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContentBlock):
            blocks.append(_image(block.data, block.mime_type, f"image {i + 1} of the prompt"))
        elif isinstance(block, ResourceContentBlock):
            blocks.append({"type": "text", "text": _link(block)})
        elif isinstance(block, EmbeddedResourceContentBlock):
            blocks.append(_embedded(block.resource))
        else:
            raise UnsupportedContent(
                "Tron does not take audio in prompts (promptCapabilities.audio is false)"
            )
    return _merge_text(blocks)


def _merge_text(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Adjacent text blocks joined by a space (an editor sends a mention between two texts:
    the model reads one sentence, and the session's title is that sentence)."""
    out: list[dict[str, Any]] = []
    for block in blocks:
        if out and block["type"] == "text" and out[-1]["type"] == "text":
            left, right = out[-1]["text"], block["text"]
            sep = "" if not left or not right or left[-1].isspace() or right[0].isspace() else " "
            out[-1] = {"type": "text", "text": left + sep + right}
        else:
            out.append(block)
    return out


def text_of(content: Any) -> str:
    """The text of a prompt's content (for a slash command, which is text alone)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


__all__ = ["IMAGE_TYPES", "PromptBlock", "UnsupportedContent", "text_of", "to_tron"]
