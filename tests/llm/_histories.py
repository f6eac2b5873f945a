"""Hypothesis strategies for provider-neutral histories, shared by the request-body
tests of every adapter (each passes the text, id and signature shapes it cares about)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tron_events.messages import (
    Base64ImageSource,
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UrlImageSource,
)

images = st.builds(
    ImageBlock,
    source=st.one_of(
        st.builds(
            Base64ImageSource,
            media_type=st.sampled_from(["image/png", "image/jpeg"]),
            data=st.just("iVBORw0KGgo="),
        ),
        st.builds(UrlImageSource, url=st.just("https://example.com/a.png")),
    ),
)
redacted = st.builds(RedactedThinkingBlock, data=st.just("EmwKAhgB"))


def histories(
    *,
    texts: st.SearchStrategy[str],
    tool_ids: st.SearchStrategy[str],
    thinking_signatures: st.SearchStrategy[str | None],
    item_ids: st.SearchStrategy[str | None],
    tool_inputs: st.SearchStrategy[dict[str, Any]],
    tool_use_signatures: st.SearchStrategy[str | None],
    max_turns: int,
    max_reply_blocks: int,
) -> st.SearchStrategy[list[Message]]:
    """User/assistant turns with text, images, every provider's thinking, redacted
    thinking and tool calls, answered by results (text or text+image) in the next
    user turn; a trailing user turn answers the last calls."""
    text_blocks = st.builds(TextBlock, text=texts, signature=st.none() | st.just("gsig"))
    thinking_blocks = st.builds(
        ThinkingBlock,
        thinking=texts,
        signature=thinking_signatures,
        provider=st.sampled_from([None, "anthropic", "openai", "google"]),
        item_id=item_ids,
    )

    @st.composite
    def build(draw: st.DrawFn) -> list[Message]:
        messages: list[Message] = []
        pending: list[str] = []
        for _ in range(draw(st.integers(1, max_turns))):
            user: list[Any] = [
                ToolResultBlock(
                    tool_use_id=tool_id,
                    content=draw(
                        st.one_of(texts, st.lists(st.one_of(text_blocks, images), max_size=3))
                    ),
                    is_error=draw(st.booleans()),
                )
                for tool_id in pending
            ]
            user += draw(st.lists(st.one_of(text_blocks, images), max_size=3))
            messages.append(Message(role="user", content=user or [TextBlock(text="hello")]))
            pending = draw(st.lists(tool_ids, max_size=3, unique=True))
            reply: list[Any] = draw(
                st.lists(
                    st.one_of(thinking_blocks, redacted, text_blocks), max_size=max_reply_blocks
                )
            )
            reply += [
                ToolUseBlock(
                    id=c,
                    name="read",
                    input=draw(tool_inputs),
                    signature=draw(tool_use_signatures),
                )
                for c in pending
            ]
            if reply:
                messages.append(Message(role="assistant", content=reply))
            else:
                pending = []
        if pending:
            results = [ToolResultBlock(tool_use_id=c, content="ok") for c in pending]
            messages.append(Message(role="user", content=results))
        return messages

    return build()
