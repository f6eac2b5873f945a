"""A forced tool (``LLMRequest.tool_choice``) in every adapter's request body, checked
against the official SDKs' request types (test-only oracles): Anthropic's ``tool_choice
{type: tool}`` (thinking left off: the API refuses both), OpenAI Chat's and Responses'
``tool_choice`` function, Gemini's ``toolConfig`` in ``ANY`` mode for that one function."""

from __future__ import annotations

import json
from typing import Any

import pytest
from anthropic.types.message_create_params import MessageCreateParamsStreaming
from google.genai import types as genai_types
from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming
from openai.types.responses.response_create_params import ResponseCreateParamsStreaming
from pydantic import TypeAdapter

from tests.llm.test_anthropic_sdk import dropped_keys, materialize
from tron_events.messages import Message, TextBlock
from tron_llm import LLMRequest, OpenAIChatProvider, OpenAIResponsesProvider, ToolSpec
from tron_llm.anthropic import build_body as anthropic_body
from tron_llm.gemini import build_body as gemini_body

# Module-level: a lazily validated Iterable needs its adapter alive while it is iterated.
ANTHROPIC: TypeAdapter[Any] = TypeAdapter(MessageCreateParamsStreaming)
CHAT: TypeAdapter[Any] = TypeAdapter(CompletionCreateParamsStreaming)
RESPONSES: TypeAdapter[Any] = TypeAdapter(ResponseCreateParamsStreaming)

TOOL = ToolSpec(
    name="record_handoff",
    description="Record the handoff",
    input_schema={
        "type": "object",
        "properties": {"summary": {"type": "string"}},
        "required": ["summary"],
    },
)


def request(model: str, **extra: Any) -> LLMRequest:
    return LLMRequest(
        model=model,
        messages=[Message(role="user", content=[TextBlock(text="summarize")])],
        tools=[TOOL],
        tool_choice="record_handoff",
        **extra,
    )


def test_anthropic_forces_the_tool_without_thinking() -> None:
    body = anthropic_body(request("claude-sonnet-4-5", reasoning="high"))
    validated = materialize(ANTHROPIC.validate_python(body))
    assert dropped_keys(body, validated) == []
    assert body["tool_choice"] == {"type": "tool", "name": "record_handoff"}
    assert "thinking" not in body


def test_openai_chat_forces_the_function() -> None:
    body = OpenAIChatProvider(api_key="k").build_body(request("gpt-4o"))
    validated = materialize(CHAT.validate_python(body))
    assert dropped_keys(body, validated) == []
    assert body["tool_choice"] == {"type": "function", "function": {"name": "record_handoff"}}


def test_openai_responses_forces_the_function() -> None:
    body = OpenAIResponsesProvider(api_key="k").build_body(request("gpt-5.2"))
    validated = materialize(RESPONSES.validate_python(body))
    assert dropped_keys(body, validated) == []
    assert body["tool_choice"] == {"type": "function", "name": "record_handoff"}


def test_gemini_allows_only_that_function() -> None:
    body = gemini_body(request("gemini-2.5-flash"))
    config = genai_types.ToolConfig.model_validate_json(json.dumps(body["toolConfig"]))
    assert config.function_calling_config is not None
    assert config.function_calling_config.mode == genai_types.FunctionCallingConfigMode.ANY
    assert config.function_calling_config.allowed_function_names == ["record_handoff"]


def test_a_forced_tool_must_be_one_of_the_tools() -> None:
    with pytest.raises(ValueError, match="names no tool"):
        LLMRequest(model="m", messages=[], tools=[TOOL], tool_choice="other")
    assert request("m").tool_choice == "record_handoff"
    assert "tool_choice" not in anthropic_body(LLMRequest(model="m", messages=[], tools=[TOOL]))
