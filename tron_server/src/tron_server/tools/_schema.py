"""Turn a pydantic parameters model into a clean JSON schema for the model.

Providers differ in how much JSON Schema they accept (Gemini rejects ``$ref``,
several reject ``title`` noise), so the schema is flattened: references are
inlined, titles dropped, and every object closed with ``additionalProperties: false``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


def params_schema(model: type[BaseModel]) -> dict[str, Any]:
    """Return the inlined, title-free JSON schema of ``model``."""
    raw = model.model_json_schema()
    defs: dict[str, Any] = raw.pop("$defs", {})
    cleaned = _clean(raw, defs, depth=0)
    assert isinstance(cleaned, dict)
    cleaned.setdefault("properties", {})
    return cleaned


def _clean(node: Any, defs: dict[str, Any], depth: int) -> Any:
    if depth > 32:  # a recursive model; our parameter models are never recursive
        raise ValueError("parameter schema is too deeply nested (recursive model?)")
    if isinstance(node, list):
        return [_clean(item, defs, depth + 1) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = dict(defs[ref.removeprefix("#/$defs/")])
        extra = {k: v for k, v in node.items() if k != "$ref"}
        target.update(extra)
        return _clean(target, defs, depth + 1)
    node = _collapse_optional(node)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title":
            continue
        if key == "properties" and isinstance(value, dict):
            # Keys here are property names, not schema keywords: keep them all.
            out[key] = {name: _clean(sub, defs, depth + 1) for name, sub in value.items()}
        else:
            out[key] = _clean(value, defs, depth + 1)
    if out.get("type") == "object":
        out.setdefault("additionalProperties", False)
    return out


def _collapse_optional(node: dict[str, Any]) -> dict[str, Any]:
    """``anyOf: [X, {type: null}]`` with ``default: null`` → X: the parameter is optional
    already (not in ``required``); a bare type is easier for every provider."""
    any_of = node.get("anyOf")
    if not (isinstance(any_of, list) and len(any_of) == 2 and node.get("default", 0) is None):
        return node
    others = [s for s in any_of if s != {"type": "null"}]
    if len(others) != 1 or not isinstance(others[0], dict):
        return node
    merged = {k: v for k, v in node.items() if k not in ("anyOf", "default")}
    merged.update(others[0])
    return merged
