"""Hypothesis strategies for provider-neutral histories, shared by the request-body
tests of every adapter (each passes the text, id and signature shapes it cares about)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tron_events.messages import (
    Base64ImageSource,
    ImageBlock,
    Message,
    NativeBlock,
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

SERVER_TOOL_USE = {
    "type": "server_tool_use",
    "id": "srvtoolu_01",
    "name": "web_search",
    "input": {"query": "weather"},
}
WEB_SEARCH_RESULT = {
    "type": "web_search_tool_result",
    "tool_use_id": "srvtoolu_01",
    "content": [
        {
            "type": "web_search_result",
            "url": "https://example.com",
            "title": "Example",
            "encrypted_content": "EvkS",
            "page_age": None,
        }
    ],
}
CODE_PART = {
    "executableCode": {"language": "PYTHON", "code": "print(1)"},
    "thoughtSignature": "c2ln",
}
RESULT_PART = {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1\n"}}
natives = {
    provider: st.sampled_from([NativeBlock(provider=provider, data=d) for d in data])
    for provider, data in {
        "anthropic": [SERVER_TOOL_USE, WEB_SEARCH_RESULT],
        "google": [CODE_PART, RESULT_PART],
        "openai-responses": [
            {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAAcmp"},
            {"type": "web_search_call", "id": "ws_1", "status": "completed"},
        ],
        "openai": [{"reasoning_details": [{"type": "reasoning.encrypted", "data": "QUJD"}]}],
    }.items()
}
"""Native blocks per provider, as each adapter keeps them."""


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
    native_blocks: st.SearchStrategy[NativeBlock] | None = None,
) -> st.SearchStrategy[list[Message]]:
    """User/assistant turns with text, images, every provider's thinking, redacted
    thinking, ``native_blocks`` and tool calls, answered by results (text or
    text+image) in the next user turn; a trailing user turn answers the last calls."""
    text_blocks = st.builds(
        TextBlock,
        text=texts,
        signature=st.none() | st.just("gsig"),
        phase=st.none() | st.sampled_from(["commentary", "final_answer"]),
    )
    thinking_blocks = st.builds(
        ThinkingBlock,
        thinking=texts,
        signature=thinking_signatures,
        provider=st.sampled_from([None, "anthropic", "openai", "google"]),
        item_id=item_ids,
    )

    natives_or_none = st.nothing() if native_blocks is None else native_blocks

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
                    st.one_of(thinking_blocks, redacted, text_blocks, natives_or_none),
                    max_size=max_reply_blocks,
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


def every_provider_histories(
    texts: st.SearchStrategy[str], *, max_tool_id: int = 60
) -> st.SearchStrategy[list[Message]]:
    """:func:`histories` of up to 6 turns with every provider's blocks in them (their
    thinking, signatures, item ids and native blocks), tool ids of URL-ish characters
    up to ``max_tool_id`` long: what one history moved between providers may hold."""
    return histories(
        texts=texts,
        tool_ids=st.text(
            alphabet=st.sampled_from("abcXYZ019_-|.:/ @"), min_size=1, max_size=max_tool_id
        ),
        thinking_signatures=st.none() | st.just("") | st.just("EqQBsig=="),
        item_ids=st.none() | st.just("rs_1"),
        tool_inputs=st.just({"path": "a"}),
        tool_use_signatures=st.none() | st.just("g"),
        max_turns=6,
        max_reply_blocks=3,
        native_blocks=st.one_of(*natives.values()),
    )
