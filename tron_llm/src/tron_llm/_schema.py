"""A tool's JSON schema, changed only where a provider refuses it.

Tools come with schemas written by others (an MCP server's ``inputSchema``); each adapter
sends them as they are, except for what its provider's API rejects:

- every provider: the root must be an object schema (``"type": "object"``); a root without
  ``type`` (``{}``, only ``properties``) gets it;
- Anthropic and OpenAI: no ``anyOf`` / ``oneOf`` / ``allOf`` at the root (Anthropic: "input_schema
  does not support oneOf, allOf, or anyOf at the top level"): the branches' properties are
  merged into the root (required: what every branch requires; ``allOf``: what any does), and
  the alternatives are said in the description;
- OpenAI: an ``array`` schema without ``items`` ("array schema missing items") gets
  ``"items": {}`` (any item), wherever it is;
- Gemini: the ``$schema`` marker is dropped (``parametersJsonSchema`` rejects it).

A schema that needs none of this is returned as the same object.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["for_anthropic", "for_gemini", "for_openai"]

_COMBINATORS = ("anyOf", "oneOf", "allOf")
#: Keys whose values are data, not schemas.
_DATA = frozenset({"enum", "const", "default", "examples"})


def _object_root(schema: Any) -> dict[str, Any]:
    if not isinstance(schema, dict):
        return {"type": "object", "properties": {}}
    kind = schema.get("type")
    if kind == "object":
        return schema
    if kind is None or (isinstance(kind, list) and "object" in kind):
        return {**schema, "type": "object"}
    # A root of another type cannot be a call's arguments: say it, accept any object.
    note = f"(arguments schema: {json.dumps(schema)[:200]})"
    description = f"{schema.get('description', '')} {note}".strip()
    return {"type": "object", "properties": {}, "description": description}


def _flat_root(schema: dict[str, Any]) -> dict[str, Any]:
    if not any(k in schema for k in _COMBINATORS):
        return schema
    out = {k: v for k, v in schema.items() if k not in _COMBINATORS}
    properties: dict[str, Any] = dict(out.get("properties") or {})
    required: list[str] = list(out.get("required") or [])
    notes: list[str] = []
    for key in _COMBINATORS:
        branches = [b for b in schema.get(key) or [] if isinstance(b, dict)]
        if not branches:
            continue
        sets = [set(b.get("required") or []) for b in branches]
        for branch in branches:
            for name, sub in (branch.get("properties") or {}).items():
                properties.setdefault(name, sub)
        chosen = set.union(*sets) if key == "allOf" else set.intersection(*sets)
        required += [name for name in sorted(chosen) if name not in required]
        if key != "allOf":
            shapes = ["{" + ", ".join(sorted(b.get("required") or b.get("properties") or []))
                      + "}" for b in branches]  # fmt: skip
            notes.append(f"Arguments: {' or '.join(shapes)}.")
    out["properties"] = properties
    if required:
        out["required"] = required
    if notes:
        out["description"] = " ".join([str(out.get("description") or ""), *notes]).strip()
    return out


def _array_items(node: Any) -> Any:
    """``node`` with ``items: {}`` in every array schema that has none (copied on change)."""
    if isinstance(node, list):
        items = [_array_items(n) for n in node]
        return node if all(a is b for a, b in zip(items, node, strict=True)) else items
    if not isinstance(node, dict):
        return node
    changed = {k: _array_items(v) for k, v in node.items() if k not in _DATA}
    kind = node.get("type")
    is_array = kind == "array" or (isinstance(kind, list) and "array" in kind)
    if all(changed[k] is node[k] for k in changed) and not (is_array and "items" not in node):
        return node
    out = {**node, **changed}
    if is_array and "items" not in out:
        out["items"] = {}
    return out


def for_anthropic(schema: Any) -> dict[str, Any]:
    """What Anthropic's ``input_schema`` takes."""
    return _flat_root(_object_root(schema))


def for_openai(schema: Any) -> dict[str, Any]:
    """What OpenAI's ``parameters`` (Chat Completions and Responses) take."""
    fixed: dict[str, Any] = _array_items(_flat_root(_object_root(schema)))
    return fixed


def for_gemini(schema: Any) -> dict[str, Any]:
    """What Gemini's ``parametersJsonSchema`` takes."""
    root = _object_root(schema)
    return {k: v for k, v in root.items() if k != "$schema"} if "$schema" in root else root
