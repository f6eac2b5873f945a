"""Sampling: a server asking the model (``sampling/createMessage``), when the user allows it.

Off by default (the server gets an error saying so). With ``TRON_MCP_SAMPLING=1`` a request
is answered by the server's default provider and model: its messages' text (images kept)
become the history, its ``systemPrompt`` the system prompt, ``maxTokens`` the limit; the
reply's text is the answer. Nothing of it is recorded in a session: it is the server's
conversation, not the user's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tron_events.messages import ImageBlock, Message, TextBlock
from tron_llm import Done, ErrorEvent, LLMRequest, Provider

from .connection import SampleFn

__all__ = ["make_sampler"]

_STOPS = {"end_turn": "endTurn", "max_tokens": "maxTokens", "stop_sequence": "stopSequence"}


def _blocks(content: Any) -> list[Any]:
    items = content if isinstance(content, list) else [content]
    out: list[Any] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "text":
            out.append(TextBlock(text=str(item.get("text", ""))))
        elif item.get("type") == "image" and isinstance(item.get("data"), str):
            out.append(ImageBlock.model_validate({"source": {
                "type": "base64", "media_type": item.get("mimeType", "image/png"),
                "data": item["data"]}}))  # fmt: skip
    return out


def make_sampler(providers: Callable[[str, str], Provider], provider: str, model: str) -> SampleFn:
    """Answer sampling requests with ``provider``'s ``model``."""

    async def sample(params: dict[str, Any]) -> dict[str, Any]:
        messages = []
        for raw in params.get("messages") or []:
            role = "assistant" if raw.get("role") == "assistant" else "user"
            blocks = _blocks(raw.get("content"))
            if blocks:
                messages.append(Message(role=role, content=blocks))
        if not messages:
            raise ValueError("the sampling request has no message")
        request = LLMRequest(model=model, messages=messages, system=params.get("systemPrompt"),
                             max_tokens=int(params.get("maxTokens") or 1024))  # fmt: skip
        done: Done | None = None
        async for event in providers(provider, model).stream(request):
            if isinstance(event, ErrorEvent):
                raise RuntimeError(str(event.error))
            if isinstance(event, Done):
                done = event
        if done is None:
            raise RuntimeError("the model's answer ended early")
        text = "".join(b.text for b in done.message.content if isinstance(b, TextBlock))
        stop = _STOPS.get(done.stop_reason, done.stop_reason)
        return {"role": "assistant", "content": {"type": "text", "text": text},
                "model": done.model or model, "stopReason": stop}  # fmt: skip

    return sample
