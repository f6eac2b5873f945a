"""Content normalization, applied by the store when events are appended.

Every writer gets the same storage rules (DESIGN §4 "Content normalization"):

* a ``tool_use`` input in ``message.assistant`` whose JSON text exceeds
  :data:`MAX_TOOL_INPUT_CHARS` is stored as ``{_truncated, _originalSize, _preview}``
  (the matching ``tool.call`` keeps the full arguments, and reconstruction restores
  them from there);
* a ``tool.result`` whose content exceeds :data:`MAX_TOOL_RESULT_CHARS` is cut, ends
  with a ``[truncated N characters]`` marker, and gets ``truncated: true``.

Both functions are idempotent (normalizing twice changes nothing) and never mutate
their argument. Neither touches the database: they map a payload dict to a payload dict.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson

__all__ = [
    "MAX_TOOL_INPUT_CHARS",
    "MAX_TOOL_RESULT_CHARS",
    "TOOL_INPUT_PREVIEW_CHARS",
    "is_truncated_input",
    "normalize_assistant_payload",
    "normalize_tool_result_payload",
    "truncation_marker",
]

logger = logging.getLogger(__name__)

MAX_TOOL_INPUT_CHARS = 5_120
MAX_TOOL_RESULT_CHARS = 10_240
TOOL_INPUT_PREVIEW_CHARS = 500


def _json_text(value: Any) -> str:
    # Compact JSON without ASCII escaping: the same text (and length) as the
    # original's JSON.stringify, so the 5,120 threshold means the same thing.
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def is_truncated_input(value: Any) -> bool:
    """Whether ``value`` is a tool input that normalization replaced by a stub."""
    return isinstance(value, dict) and value.get("_truncated") is True


def normalize_assistant_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """Normalize a ``message.assistant`` payload's content blocks for storage.

    Non-object blocks are dropped (with a warning); unknown block types are kept
    as they are, since storage must not lose what a provider returned.
    """
    content = payload.get("content")
    if not isinstance(content, list):
        return payload
    for block in content:  # the common case: nothing to change, nothing built
        if type(block) is not dict or block.get("type") == "tool_use":
            break
    else:
        return payload
    blocks: list[Any] = []
    changed = False
    for block in content:
        if not isinstance(block, dict):
            logger.warning(
                "dropping non-object content block of type %s from message.assistant",
                type(block).__name__,
            )
            changed = True
            continue
        if block.get("type") == "tool_use":
            tool_input = block.get("input")
            if not is_truncated_input(tool_input):
                text = _json_text(tool_input)
                if len(text) > MAX_TOOL_INPUT_CHARS:
                    block = {
                        **block,
                        "input": {
                            "_truncated": True,
                            "_originalSize": len(text),
                            "_preview": text[:TOOL_INPUT_PREVIEW_CHARS],
                        },
                    }
                    changed = True
        blocks.append(block)
    if not changed:
        return payload
    return {**payload, "content": blocks}


def truncation_marker(removed: int) -> str:
    """The text appended where a tool result was cut."""
    return f"\n\n... [truncated {removed} characters]"


def _fit(length: int, budget: int) -> tuple[int, int]:
    """How much of ``length`` characters to keep so the kept text plus its marker
    fit in ``budget``; returns ``(keep, removed)``.

    Fitting the marker inside the budget keeps normalization idempotent.
    """
    removed = length - budget
    # The marker's length depends on the digits of ``removed``, which depends on the
    # marker's length: iterate to the fixed point (two or three rounds at most).
    while True:
        keep = max(0, budget - len(truncation_marker(removed)))
        if length - keep == removed:
            return keep, removed
        removed = length - keep


def normalize_tool_result_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """Normalize a ``tool.result`` payload: cap its text at MAX_TOOL_RESULT_CHARS.

    ``content`` may be a string or a list of parts (``text``/``image``). For a list,
    the budget is shared by the text parts in order: the part that crosses it is
    cut and carries the marker (counting every character removed, its own and
    those of the later text parts, which are dropped); image parts are kept (they
    are not text). Non-object parts are dropped with a warning.
    """
    content = payload.get("content")
    if isinstance(content, str):
        if len(content) <= MAX_TOOL_RESULT_CHARS:
            return payload
        keep, removed = _fit(len(content), MAX_TOOL_RESULT_CHARS)
        return {
            **payload,
            "content": content[:keep] + truncation_marker(removed),
            "truncated": True,
        }
    if not isinstance(content, list):
        return payload

    parts: list[Any] = []
    changed = False
    total = 0
    for part in content:
        if not isinstance(part, dict):
            logger.warning(
                "dropping non-object content part of type %s from tool.result",
                type(part).__name__,
            )
            changed = True
            continue
        text = part.get("text")
        if part.get("type") == "text" and isinstance(text, str):
            total += len(text)
        parts.append(part)
    if total <= MAX_TOOL_RESULT_CHARS:
        return {**payload, "content": parts} if changed else payload

    keep, removed = _fit(total, MAX_TOOL_RESULT_CHARS)
    kept: list[Any] = []
    left = keep  # text characters still to keep
    marked = False
    for part in parts:
        text = part.get("text")
        if part.get("type") != "text" or not isinstance(text, str):
            kept.append(part)
        elif marked:
            continue  # after the cut: dropped, counted in the marker
        elif len(text) < left:
            # Strictly less: the part where ``left`` runs out carries the marker, and
            # since keep < total there is always such a part.
            left -= len(text)
            kept.append(part)
        else:
            kept.append({**part, "text": text[:left] + truncation_marker(removed)})
            marked = True
    return {**payload, "content": kept, "truncated": True}
