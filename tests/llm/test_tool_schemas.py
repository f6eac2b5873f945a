"""Tool schemas written by others (MCP servers) reach each provider in a form it accepts.

Each adapter's request body, for any JSON schema, validates against the provider's own
SDK request type (test-only oracles) and keeps the rules the APIs enforce beyond their
types (``tron_llm._schema``): an object root everywhere; no root ``anyOf``/``oneOf``/``allOf``
for Anthropic and OpenAI; every array with ``items`` for OpenAI; no ``$schema`` for
Gemini. A schema that breaks none of them is sent exactly as given.
"""

from __future__ import annotations

import json
from typing import Any

from anthropic.types.message_create_params import MessageCreateParamsStreaming
from google.genai import types as gemini_types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming
from openai.types.responses.response_create_params import ResponseCreateParamsStreaming
from pydantic import TypeAdapter

from tron_events.messages import Message, TextBlock
from tron_llm import LLMRequest, ToolSpec
from tron_llm._schema import for_anthropic, for_gemini, for_openai
from tron_llm.anthropic import build_body as anthropic_body
from tron_llm.gemini import build_body as gemini_body
from tron_llm.openai_chat import OpenAIChatProvider
from tron_llm.openai_responses import OpenAIResponsesProvider

ANTHROPIC: TypeAdapter[Any] = TypeAdapter(MessageCreateParamsStreaming)
CHAT: TypeAdapter[Any] = TypeAdapter(CompletionCreateParamsStreaming)
RESPONSES: TypeAdapter[Any] = TypeAdapter(ResponseCreateParamsStreaming)
COMBINATORS = ("anyOf", "oneOf", "allOf")

names = st.text(alphabet="abcxyz_-", min_size=1, max_size=8)
scalars = st.fixed_dictionaries(
    {"type": st.sampled_from(["string", "number", "integer", "boolean", "null"])},
    optional={"description": st.text(max_size=10), "enum": st.lists(st.integers(), max_size=2),
              "format": st.sampled_from(["uri", "email", "date"]),
              "default": st.integers()},
)  # fmt: skip


def _schemas(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    objects = st.fixed_dictionaries(
        {"type": st.just("object"), "properties": st.dictionaries(names, children, max_size=4)},
        optional={"required": st.lists(names, max_size=3),
                  "additionalProperties": st.booleans() | children},
    )  # fmt: skip
    arrays = st.fixed_dictionaries(
        {"type": st.just("array")},
        optional={"items": children, "minItems": st.integers(0, 3)},
    )
    combined = st.builds(lambda k, v: {k: v}, st.sampled_from(COMBINATORS),
                         st.lists(children, min_size=1, max_size=3))  # fmt: skip
    return objects | arrays | combined


schema_nodes = st.recursive(scalars, _schemas, max_leaves=12)

#: Roots as servers publish them: well-formed objects, objects with the extras providers
#: balk at, and the odd ones (no type, another type, a root combinator).
roots = st.one_of(
    schema_nodes,
    st.builds(lambda s, extra: {**s, **extra}, schema_nodes,
              st.fixed_dictionaries({}, optional={
                  "$schema": st.just("http://json-schema.org/draft-07/schema#"),
                  "title": st.text(max_size=8), "$defs": st.just({"x": {"type": "string"}}),
              })),
    st.builds(lambda props, branches, key: {"type": "object", "properties": props,
                                            key: branches},
              st.dictionaries(names, schema_nodes, max_size=3),
              st.lists(st.fixed_dictionaries({"properties": st.dictionaries(names, schema_nodes,
                                                                             max_size=2),
                                              "required": st.lists(names, max_size=2)}),
                       min_size=1, max_size=3),
              st.sampled_from(COMBINATORS)),
    st.builds(lambda props: {"properties": props}, st.dictionaries(names, schema_nodes,
                                                                   max_size=3)),
    st.just({}),
)  # fmt: skip


def _arrays_have_items(node: Any, data: bool = False) -> bool:
    if isinstance(node, list):
        return all(_arrays_have_items(n, data) for n in node)
    if not isinstance(node, dict) or data:
        return True
    kind = node.get("type")
    if (kind == "array" or (isinstance(kind, list) and "array" in kind)) and "items" not in node:
        return False
    return all(_arrays_have_items(v, k in ("enum", "const", "default", "examples"))
               for k, v in node.items())  # fmt: skip


def request(schema: dict[str, Any], model: str) -> LLMRequest:
    spec = ToolSpec(name="mcp__server__tool", description="A tool", input_schema=schema)
    return LLMRequest(model=model, messages=[Message(role="user", content=[TextBlock(text="hi")])],
                      tools=[spec])  # fmt: skip


def sent_schemas(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What each adapter sends for ``schema``, after its body validated against its SDK."""
    out: dict[str, dict[str, Any]] = {}
    body = anthropic_body(request(schema, "claude-sonnet-4-5"))
    ANTHROPIC.validate_python(body)
    out["anthropic"] = body["tools"][0]["input_schema"]
    body = OpenAIChatProvider(api_key="k").build_body(request(schema, "gpt-4o"))
    CHAT.validate_python(body)
    out["openai"] = body["tools"][0]["function"]["parameters"]
    body = OpenAIResponsesProvider(api_key="k").build_body(request(schema, "gpt-5"))
    RESPONSES.validate_python(body)
    out["openai-responses"] = body["tools"][0]["parameters"]
    body = gemini_body(request(schema, "gemini-2.5-flash"))
    for tool in body["tools"]:
        gemini_types.Tool.model_validate_json(json.dumps(tool))
    out["google"] = body["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"]
    return out


def check_schema(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every adapter's body for ``schema`` is valid and keeps its provider's rules."""
    sent = sent_schemas(schema)
    for provider, given_schema in sent.items():
        assert given_schema["type"] == "object", provider
        json.dumps(given_schema)  # JSON all the way down
    for provider in ("anthropic", "openai", "openai-responses"):
        assert not any(k in sent[provider] for k in COMBINATORS), provider
    for provider in ("openai", "openai-responses"):
        assert _arrays_have_items(sent[provider]), provider
    assert "$schema" not in sent["google"]
    return sent


#: Four SDK validations per example: fewer examples than the profile's (dev runs more).
EXAMPLES = settings(max_examples=40 if settings().max_examples <= 200 else 400, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])  # fmt: skip


@EXAMPLES
@given(roots)
def test_any_schema_reaches_every_provider_in_a_form_it_accepts(schema: dict[str, Any]) -> None:
    check_schema(schema)


@EXAMPLES
@given(roots)
def test_a_schema_no_provider_refuses_is_sent_as_given(schema: dict[str, Any]) -> None:
    fine = (
        schema.get("type") == "object"
        and not any(k in schema for k in COMBINATORS)
        and _arrays_have_items(schema)
    )
    sent = sent_schemas(schema)
    if fine:
        assert sent["anthropic"] == schema and sent["openai"] == schema
        assert for_anthropic(schema) is schema and for_openai(schema) is schema
    if schema.get("type") == "object" and "$schema" not in schema:
        assert sent["google"] == schema and for_gemini(schema) is schema


def test_what_each_rule_does() -> None:
    root_choice = {"type": "object", "properties": {"id": {"type": "string"}},
                   "oneOf": [{"required": ["id"]}, {"properties": {"name": {"type": "string"}},
                                                    "required": ["name"]}]}  # fmt: skip
    flat = for_anthropic(root_choice)
    assert set(flat["properties"]) == {"id", "name"} and "required" not in flat
    assert "Arguments: {id} or {name}." in flat["description"]
    both = for_openai(
        {
            "allOf": [
                {"properties": {"a": {"type": "array"}}, "required": ["a"]},
                {"properties": {"b": {"type": "string"}}, "required": ["b"]},
            ]
        }
    )
    assert both["type"] == "object" and both["required"] == ["a", "b"]
    assert both["properties"]["a"] == {"type": "array", "items": {}}
    assert for_anthropic({"type": "string"})["type"] == "object"
    assert for_gemini({"$schema": "x", "type": "object"}) == {"type": "object"}
