"""The Gemini request body: contents, function calls and responses, signatures, config."""

from __future__ import annotations

from typing import Any

import pytest

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
from tron_llm import LLMRequest, ToolSpec, safe_tool_id
from tron_llm.gemini import SKIP_SIGNATURE, GeminiProvider, build_body

SIG_A = "DddTIiU21awiwt42+69FkZ3sgZsRfBPlbCQhNKh8jDnfcwKvPfMwgdPNFA+5BOs="
SIG_B = "lHzF2U5ycEvYk+4F7dsAh8WpUFFqedLYsSqPJ49jMiHFyfw1klnEuwo9vdjFJxQ="
PNG = (  # a 1x1 PNG
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def user(*blocks: Any) -> Message:
    return Message(role="user", content=list(blocks))


def assistant(*blocks: Any) -> Message:
    return Message(role="assistant", content=list(blocks))


def body_for(messages: list[Message], model: str = "gemini-2.5-flash", **kw: Any) -> dict[str, Any]:
    return build_body(LLMRequest(model=model, messages=messages, **kw))


def test_system_tools_and_generation_config() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
        "additionalProperties": False,
    }
    body = body_for(
        [user(TextBlock(text="hi"))],
        system="Be brief.",
        tools=[ToolSpec(name="read", description="Read a file", input_schema=schema)],
        max_tokens=1000,
        temperature=0.2,
        stop_sequences=["END"],
    )
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    (declaration,) = body["tools"][0]["functionDeclarations"]
    assert declaration["name"] == "read" and declaration["description"] == "Read a file"
    assert "$schema" not in declaration["parametersJsonSchema"]
    assert declaration["parametersJsonSchema"]["additionalProperties"] is False
    assert body["generationConfig"] == {
        "maxOutputTokens": 1000,
        "temperature": 0.2,
        "stopSequences": ["END"],
    }


@pytest.mark.parametrize(
    ("model", "level", "expected"),
    [
        ("gemini-2.5-flash", None, None),
        ("gemini-2.5-flash", "low", {"thinkingBudget": 1024, "includeThoughts": True}),
        ("gemini-2.5-pro", "xhigh", {"thinkingBudget": 24576, "includeThoughts": True}),
        ("gemini-3-pro-preview", "low", {"thinkingLevel": "LOW", "includeThoughts": True}),
        ("gemini-3-pro-preview", "medium", {"thinkingLevel": "HIGH", "includeThoughts": True}),
        ("gemini-3-flash-preview", "medium", {"thinkingLevel": "MEDIUM", "includeThoughts": True}),
        ("models/gemini-3.1-pro", "xhigh", {"thinkingLevel": "HIGH", "includeThoughts": True}),
    ],
)
def test_thinking_config(model: str, level: Any, expected: dict[str, Any] | None) -> None:
    config = body_for([user(TextBlock(text="hi"))], model=model, reasoning=level)[
        "generationConfig"
    ]
    assert config.get("thinkingConfig") == expected


@pytest.mark.parametrize(
    ("model", "level", "expected"),
    [
        ("gemini-2.5-flash", None, 8000),
        ("gemini-2.5-flash", "low", 8000 + 1024),
        ("gemini-2.5-pro", "xhigh", 8000 + 24576),
        ("gemini-9-unknown", "high", 8000 + 16384),  # unknown models: no cap
    ],
)
def test_thoughts_get_room_on_top_of_max_tokens(model: str, level: Any, expected: int) -> None:
    body = body_for([user(TextBlock(text="hi"))], model=model, reasoning=level, max_tokens=8000)
    assert body["generationConfig"]["maxOutputTokens"] == expected


def test_max_output_tokens_capped_by_the_catalog() -> None:
    body = body_for(
        [user(TextBlock(text="hi"))], model="gemini-2.5-pro", reasoning="high", max_tokens=60_000
    )
    assert body["generationConfig"]["maxOutputTokens"] == 65_536


def test_signatures_replayed_on_their_exact_parts() -> None:
    body = body_for(
        [
            user(TextBlock(text="q")),
            assistant(
                ThinkingBlock(thinking="plan", signature=SIG_A, provider="google"),
                TextBlock(text="Here", signature=None),
                TextBlock(text="", signature=SIG_B),
                TextBlock(text=""),  # unsigned and empty: nothing to replay
            ),
        ]
    )
    assert body["contents"][1] == {
        "role": "model",
        "parts": [
            {"text": "plan", "thought": True, "thoughtSignature": SIG_A},
            {"text": "Here"},
            {"text": "", "thoughtSignature": SIG_B},
        ],
    }


def test_other_providers_thinking_is_plain_text_and_redacted_is_dropped() -> None:
    body = body_for(
        [
            user(TextBlock(text="q")),
            assistant(
                ThinkingBlock(thinking="anthropic thoughts", signature="EqQBCkYIBxgC"),
                ThinkingBlock(thinking="openai thoughts", signature="gAAAA", provider="openai"),
                RedactedThinkingBlock(data="EmwKAhgBEgy3va3pzix"),
                TextBlock(text="answer"),
            ),
        ]
    )
    assert body["contents"][1]["parts"] == [
        {"text": "anthropic thoughts"},
        {"text": "openai thoughts"},
        {"text": "answer"},
    ]


def test_function_responses_follow_the_calls_order_with_their_names() -> None:
    body = body_for(
        [
            user(TextBlock(text="q")),
            assistant(
                ToolUseBlock(id="gcall_0123abcd_1", name="list_dir", input={"path": "."}),
                ToolUseBlock(id="gcall_0123abcd_2", name="get_time", input={}),
            ),
            user(
                ToolResultBlock(tool_use_id="gcall_0123abcd_2", content="12:00"),
                ToolResultBlock(
                    tool_use_id="gcall_0123abcd_1", content="not a directory", is_error=True
                ),
            ),
        ]
    )
    model, responses = body["contents"][1:]
    # Synthesized ids never go back: Gemini pairs by position.
    assert model["parts"] == [
        {"functionCall": {"name": "list_dir", "args": {"path": "."}}},
        {"functionCall": {"name": "get_time", "args": {}}},
    ]
    assert responses == {
        "role": "user",
        "parts": [
            {
                "functionResponse": {
                    "name": "list_dir",
                    "response": {"error": "not a directory"},
                }
            },
            {"functionResponse": {"name": "get_time", "response": {"output": "12:00"}}},
        ],
    }


def test_real_and_foreign_ids_are_sent_safe_on_both_sides() -> None:
    weird = "functions.Bash:0|x"
    body = body_for(
        [
            user(TextBlock(text="q")),
            assistant(
                ToolUseBlock(id="x7k2p9qa", name="a", input={}, signature=SIG_A),
                ToolUseBlock(id=weird, name="b", input={"n": 1}),
            ),
            user(
                ToolResultBlock(tool_use_id="x7k2p9qa", content=[TextBlock(text="A")]),
                ToolResultBlock(tool_use_id=weird, content="B"),
                TextBlock(text="and now?"),
            ),
        ]
    )
    calls = [p["functionCall"] for p in body["contents"][1]["parts"]]
    responses = [p["functionResponse"] for p in body["contents"][2]["parts"][:2]]
    assert [c["id"] for c in calls] == ["x7k2p9qa", safe_tool_id(weird)]
    assert [r["id"] for r in responses] == [c["id"] for c in calls]
    assert body["contents"][1]["parts"][0]["thoughtSignature"] == SIG_A
    assert body["contents"][2]["parts"][2] == {"text": "and now?"}


def test_a_call_without_a_result_gets_an_error_response() -> None:
    body = body_for(
        [
            user(TextBlock(text="q")),
            assistant(ToolUseBlock(id="c1", name="a", input={})),
            user(TextBlock(text="never mind")),
        ]
    )
    assert body["contents"][2]["parts"] == [
        {
            "functionResponse": {
                "name": "a",
                "id": "c1",
                "response": {"error": "No result was recorded for this call."},
            }
        },
        {"text": "never mind"},
    ]


def test_a_result_without_a_call_right_before_becomes_text() -> None:
    body = body_for(
        [
            user(TextBlock(text="q")),
            assistant(ToolUseBlock(id="c1", name="read", input={})),
            user(ToolResultBlock(tool_use_id="c1", content="ok")),
            assistant(TextBlock(text="done")),
            user(ToolResultBlock(tool_use_id="c1", content="late"), TextBlock(text="more")),
        ]
    )
    assert body["contents"][4]["parts"] == [
        {"text": "[result of read call c1]\nlate"},
        {"text": "more"},
    ]


def test_images_inline_files_and_urls() -> None:
    body = body_for(
        [
            user(
                ImageBlock(source=Base64ImageSource(media_type="image/png", data=PNG)),
                ImageBlock(source=UrlImageSource(url="gs://bucket/cat.jpg")),
                ImageBlock(source=UrlImageSource(url="https://example.com/dog.png")),
                TextBlock(text="compare"),
            )
        ]
    )
    assert body["contents"][0]["parts"] == [
        {"inlineData": {"mimeType": "image/png", "data": PNG}},
        {"fileData": {"fileUri": "gs://bucket/cat.jpg", "mimeType": "image/jpeg"}},
        {"text": "[image: https://example.com/dog.png]"},
        {"text": "compare"},
    ]


@pytest.mark.parametrize("model", ["gemini-2.5-flash", "gemini-3-pro-preview"])
def test_tool_result_images(model: str) -> None:
    body = body_for(
        [
            user(TextBlock(text="q")),
            assistant(ToolUseBlock(id="c1", name="screenshot", input={}, signature=SIG_A)),
            user(
                ToolResultBlock(
                    tool_use_id="c1",
                    content=[
                        TextBlock(text="here"),
                        ImageBlock(source=Base64ImageSource(media_type="image/png", data=PNG)),
                    ],
                )
            ),
        ],
        model=model,
    )
    parts = body["contents"][2]["parts"]
    response = parts[0]["functionResponse"]
    assert response["response"] == {"output": "here"}
    image = {"inlineData": {"mimeType": "image/png", "data": PNG}}
    if model.startswith("gemini-3"):
        # Gemini 3 takes multimodal function responses.
        assert response["parts"] == [image] and len(parts) == 1
    else:
        assert "parts" not in response and parts[1:] == [image]


def test_gemini3_current_turn_unsigned_calls_get_the_sentinel() -> None:
    history = [
        user(TextBlock(text="earlier")),
        assistant(ToolUseBlock(id="old", name="a", input={})),  # an older turn: left alone
        user(ToolResultBlock(tool_use_id="old", content="1")),
        assistant(TextBlock(text="ok")),
        user(TextBlock(text="now")),  # the current turn starts here
        assistant(
            TextBlock(text="calling"),
            ToolUseBlock(id="n1", name="a", input={}),
            ToolUseBlock(id="n2", name="b", input={}),
        ),
        user(
            ToolResultBlock(tool_use_id="n1", content="x"),
            ToolResultBlock(tool_use_id="n2", content="y"),
        ),
        assistant(ToolUseBlock(id="n3", name="a", input={}, signature=SIG_B)),  # real: kept
        user(ToolResultBlock(tool_use_id="n3", content="z")),
    ]
    g3 = body_for(history, model="gemini-3-pro-preview")["contents"]
    assert "thoughtSignature" not in g3[1]["parts"][0]
    step = g3[5]["parts"]
    assert "thoughtSignature" not in step[0]
    assert step[1]["thoughtSignature"] == SKIP_SIGNATURE  # the first call of the step only
    assert "thoughtSignature" not in step[2]
    assert g3[7]["parts"][0]["thoughtSignature"] == SIG_B
    g2 = body_for(history, model="gemini-2.5-flash")["contents"]
    assert not any("thoughtSignature" in p for c in g2[:7] for p in c["parts"])


def test_messages_with_nothing_to_send_are_skipped() -> None:
    body = body_for(
        [
            user(TextBlock(text="q")),
            assistant(RedactedThinkingBlock(data="xx")),
            user(TextBlock(text="again")),
        ]
    )
    assert [c["role"] for c in body["contents"]] == ["user", "user"]


def test_build_call_path_and_params() -> None:
    provider = GeminiProvider(api_key="k")
    call = provider.build_call(
        LLMRequest(model="models/gemini-2.5-flash", messages=[user(TextBlock(text="q"))])
    )
    assert call.path == "/models/gemini-2.5-flash:streamGenerateContent"
    assert call.params == {"alt": "sse"}
    assert provider.auth_headers("k") == {"x-goog-api-key": "k"}
    assert provider.base_url == "https://generativelanguage.googleapis.com/v1beta"
    assert provider.price_provider == "google" and provider.name == "google"
