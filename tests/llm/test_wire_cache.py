"""The adapters' wire cache: a request body built with the messages converted on an
earlier call (the same Message objects) is the body built from scratch, byte for
byte, on every call of a growing session (cache breakpoints, merged roles, thinking
rules and all)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.llm import _histories
from tron_events.messages import Message, TextBlock
from tron_llm import anthropic, gemini
from tron_llm._types import LLMRequest
from tron_llm._wire_cache import WireCache
from tron_llm.openai_chat import OpenAIChatProvider
from tron_llm.openai_responses import OpenAIResponsesProvider

texts = st.text(alphabet=st.sampled_from("ab ü\n\t"), max_size=6)
histories = _histories.every_provider_histories(texts, max_tool_id=50)
settings_ = st.fixed_dictionaries(
    {
        "model": st.sampled_from(
            ["claude-sonnet-4-5", "gpt-5.2", "gemini-2.5-pro", "gemini-3-pro-preview"]
        ),
        "reasoning": st.none() | st.just("high"),
        "prompt_caching": st.booleans(),
        "system": st.none() | st.just("You are Tron."),
    }
)

Build = Callable[[LLMRequest, Any], dict[str, Any]]


def _anthropic(request: LLMRequest, cache: Any) -> dict[str, Any]:
    return anthropic.build_body(request, cache)


def _openai(provider: OpenAIChatProvider | OpenAIResponsesProvider) -> Build:
    def build(request: LLMRequest, cache: Any) -> dict[str, Any]:
        # The adapter's own cache; ``cache`` only says whether to use it.
        return provider.build_body(request, cached=cache is not None)

    return build


def _gemini(request: LLMRequest, cache: Any) -> dict[str, Any]:
    return gemini.build_body(request, gemini._id_map(request), cache)


ADAPTERS: dict[str, Build] = {
    "gemini": _gemini,
    "anthropic": _anthropic,
    "openai-chat": _openai(OpenAIChatProvider(api_key="k")),
    "openai-compatible-chat": _openai(
        OpenAIChatProvider(api_key="k", base_url="http://localhost:11434/v1")
    ),
    "openai-responses": _openai(OpenAIResponsesProvider(api_key="k")),
}


def _grown(history: list[Message]) -> list[list[Message]]:
    """The histories a session sends, call after call: each prefix, the same objects;
    then the history without each message (the same messages after others)."""
    prefixes = [history[:n] for n in range(1, len(history) + 1)]
    return prefixes + [history[:n] + history[n + 1 :] for n in range(len(history))]


def _check(build: Build, history: list[Message], calls: list[dict[str, Any]]) -> None:
    cache: WireCache[Any] = WireCache(max_entries=3)  # small: entries move and drop
    for messages in _grown(history):
        for options in calls:  # settings change between calls over the same messages
            request = LLMRequest(messages=messages, **options)
            fresh = orjson.dumps(build(request, None))
            assert orjson.dumps(build(request, cache)) == fresh
            # Twice: the first body's changes (breakpoints) did not reach the cache.
            assert orjson.dumps(build(request, cache)) == fresh


@pytest.mark.parametrize("adapter", ["anthropic", "gemini"])
@settings(max_examples=150, deadline=None)
@given(history=histories, calls=st.lists(settings_, min_size=1, max_size=3))
def test_bodies_with_the_cache_equal_the_bodies_without(
    adapter: str, history: list[Message], calls: list[dict[str, Any]]
) -> None:
    _check(ADAPTERS[adapter], history, calls)


@settings(max_examples=100, deadline=None)
@given(
    adapter=st.sampled_from(["openai-chat", "openai-compatible-chat", "openai-responses"]),
    history=histories,
    calls=st.lists(settings_, min_size=1, max_size=3),
)
def test_openai_bodies_with_the_cache_equal_the_bodies_without(
    adapter: str, history: list[Message], calls: list[dict[str, Any]]
) -> None:
    _check(ADAPTERS[adapter], history, calls)


def test_the_cache_keeps_a_message_from_its_second_conversion_while_it_lives() -> None:
    cache: WireCache[Any] = WireCache()
    user = Message(role="user", content=[TextBlock(text="hi")])
    first = anthropic.convert_messages([user], cache=cache)
    assert cache.get(user) is None  # sent once: only marked seen
    second = anthropic.convert_messages([user], cache=cache)
    assert second == first and cache.get(user) == (second[0],)
    assert anthropic.convert_messages([user], cache=cache)[0] is second[0]  # not made again
    merged = anthropic.convert_messages([user, user], cache=cache)  # a new message
    assert merged[0]["content"] == [{"type": "text", "text": "hi"}] * 2
    assert second[0]["content"] == [{"type": "text", "text": "hi"}]
    # An equal message that is another object is not this one's entry.
    assert cache.get(Message(role="user", content=[TextBlock(text="hi")])) is None
    # The cache does not keep a message alive: its entry goes with it.
    many = [Message(role="user", content=[TextBlock(text=f"m{i}")]) for i in range(50)]
    for _ in range(2):
        anthropic.convert_messages(many, cache=cache)
    assert len(cache) == 51
    del user, many
    assert len(cache) == 0
