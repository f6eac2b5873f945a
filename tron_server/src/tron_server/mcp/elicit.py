"""An MCP elicitation (``elicitation/create``) asked through Tron's question flow.

A form asks one question per field of the requested schema (the first one carries the
server's message): an ``enum`` (or titled ``oneOf`` constants) becomes a choice, a boolean
``yes``/``no``, an array of enums a multiple choice, anything else free text; numbers are
read back as numbers (a field that cannot be read is asked again, once). A form without
fields, and a URL-mode elicitation (open this link), ask "Accept" or "Decline". A question
that times out or whose turn is aborted ends the elicitation as ``cancel``; "Decline" as
``decline``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["Ask", "elicit_with"]

Ask = Callable[[str, list[str], bool], Awaitable[Any]]
"""``(question, options, multiSelect)`` → the user's answer (text, or a list of texts for
a multiple choice); None when there is none (timed out, the turn aborted)."""

ACCEPT, DECLINE = "Accept", "Decline"


def _choices(schema: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """The options shown and what each one answers."""
    if isinstance(schema.get("enum"), list):
        names = schema.get("enumNames")
        values = list(schema["enum"])
        shown = [str(n) for n in names] if isinstance(names, list) and len(names) == len(
            values) else [str(v) for v in values]  # fmt: skip
        return shown, dict(zip(shown, values, strict=False))
    for key in ("oneOf", "anyOf"):
        options = schema.get(key)
        if isinstance(options, list) and all(isinstance(o, dict) and "const" in o
                                             for o in options):  # fmt: skip
            shown = [str(o.get("title") or o["const"]) for o in options]
            return shown, {s: o["const"] for s, o in zip(shown, options, strict=True)}
    if schema.get("type") == "boolean":
        return ["yes", "no"], {"yes": True, "no": False}
    return [], {}


def _read(value: Any, schema: dict[str, Any], answers: dict[str, Any]) -> Any:
    """The answer as the schema's type; raises ValueError when it cannot be."""
    if isinstance(value, list):
        return [answers.get(str(v), v) for v in value]
    text = str(value).strip()
    if text in answers:
        return answers[text]
    kind = schema.get("type")
    if kind == "integer":
        return int(text)
    if kind == "number":
        number = float(text)
        return int(number) if number.is_integer() and "." not in text else number
    if kind == "boolean":
        lowered = text.lower()
        if lowered in ("yes", "y", "true", "1"):
            return True
        if lowered in ("no", "n", "false", "0"):
            return False
        raise ValueError("answer yes or no")
    return text


async def elicit_with(ask: Ask, server: str, params: dict[str, Any]) -> dict[str, Any]:
    """Ask ``params`` (an elicitation, wire form) of the user; the ``ElicitResult``."""
    message = str(params.get("message") or "")
    intro = f"The MCP server {server} asks: {message}".strip()
    if params.get("mode") == "url":
        question = f"{intro}\nOpen this link: {params.get('url', '')}"
        answer = await ask(question, [ACCEPT, DECLINE], False)
        if answer is None:
            return {"action": "cancel"}
        return {"action": "accept" if answer == ACCEPT else "decline"}
    schema = params.get("requestedSchema") or {}
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict) or not properties:
        answer = await ask(intro, [ACCEPT, DECLINE], False)
        if answer is None:
            return {"action": "cancel"}
        return {"action": "accept", "content": {}} if answer == ACCEPT else {"action": "decline"}
    required = set(schema.get("required") or [])
    content: dict[str, Any] = {}
    first = True
    for name, field in properties.items():
        field = field if isinstance(field, dict) else {}
        label = str(field.get("title") or name)
        described = f"{label}: {field['description']}" if field.get("description") else label
        if name not in required:
            described += " (optional: answer - to leave it out)"
        if "default" in field:
            described += f" [default: {field['default']}]"
        multi = field.get("type") == "array"
        options, answers = _choices(field.get("items", {}) if multi else field)
        question = f"{intro}\n\n{described}" if first else described
        first = False
        for attempt in range(2):
            value = await ask(question, options, multi and bool(options))
            if value is None:
                return {"action": "cancel"}
            if (
                not isinstance(value, list)
                and str(value).strip() in ("-", "")
                and (name not in required)
            ):
                break
            try:
                content[name] = _read(value, field, answers)
                break
            except ValueError as exc:
                if attempt:
                    return {"action": "decline"}
                question = f"{described}\n(That answer cannot be used: {exc}. Try again.)"
    return {"action": "accept", "content": content}
