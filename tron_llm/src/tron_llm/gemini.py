"""Google Gemini over raw httpx: ``POST {base}/models/{model}:streamGenerateContent?alt=sse``.

Choices this adapter makes (each one a documented Gemini rule or pitfall):

* **Key** in the ``x-goog-api-key`` header, never in the URL (URLs end up in logs).
* **Thought signatures** are replayed on the exact part they came on: a signed text
  part is its own ``TextBlock`` (signature in ``TextBlock.signature``), a signed
  function call keeps it in ``ToolUseBlock.signature``, a signed thought in
  ``ThinkingBlock.signature``. Google's rule is "don't concatenate parts with
  signatures, don't merge a signed part with an unsigned one", so the stream parser
  joins consecutive parts of one kind only while neither carries a signature, and
  empty signed text parts (Gemini ends many streams with one) are kept.
* **Thought parts** (``thought: true``) are replayed as the official SDK's chat
  history does it, as they came: ``{"text", "thought": true, "thoughtSignature"}``.
  The API reads the signature, not the summary text. Thinking produced by another
  provider is sent as a plain text part.
* **Function-call ids** are optional on Gemini (2.x omits them; 3.x sends them).
  Missing ids are synthesized as ``gcall_<8 hex>_<n>`` (the hex derives from the
  response id, so ids stay unique across a session as the history checks require);
  synthesized ids are never sent back: Gemini pairs calls and responses by order,
  so function responses are sent in the order of the calls, and a call without a
  recorded result gets an error response (Gemini rejects a count mismatch).
* **Gemini 3** rejects the current turn's function calls without a signature (a
  history from another provider): the first call of such a step carries Google's
  documented ``skip_thought_signature_validator`` sentinel, never replacing a real
  signature. Gemini 3 gets ``thinkingLevel`` and tool-result images inside the
  function response; Gemini 2.x gets ``thinkingBudget`` and the images as parts
  after the responses.
* **Tools** use ``parametersJsonSchema`` (full JSON Schema, what the google-genai SDK
  sends for Python callables) rather than the OpenAPI-subset ``parameters``; only the
  ``$schema`` marker is stripped and a root without ``type`` made an object (``_schema``).
* **Image URLs**: Gemini reads only uploaded files (Files API or ``gs://`` URIs) by
  reference, so any other URL is sent as a text note naming it.
* **Parts Tron does not model** (``executableCode``, ``codeExecutionResult``, the
  server-side ``toolCall`` and ``toolResponse`` of Gemini 3's built-in tools, inline
  data...) are kept whole, signature included, as ``NativeBlock`` (provider
  ``google``) and replayed as they came, in their place: Gemini 3 expects the signed
  parts of a turn back.
* **Usage** is cumulative on every chunk: the last one wins. Gemini's prompt count
  includes cached tokens and its candidate count excludes thoughts, so
  input = prompt + tool-use prompt, output = candidates + thoughts.
"""

from __future__ import annotations

import hashlib
import json
import mimetypes
import re
from collections.abc import Mapping
from typing import Any, ClassVar
from urllib.parse import quote

from tron_events.messages import (
    ContentBlock,
    ImageBlock,
    Message,
    NativeBlock,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)

from ._cost import with_cost
from ._http import HTTPCall, HTTPProvider, StreamParser
from ._ids import ToolIdMap
from ._retry import parse_retry_after
from ._schema import for_gemini
from ._sse import ServerSentEvent
from ._types import (
    Done,
    LLMRequest,
    ReasoningLevel,
    StopReason,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolSpec,
    Usage,
)
from ._wire_cache import WireCache
from .catalog import get_model
from .errors import AuthenticationError, LLMError, NetworkError, error_for_status

__all__ = [
    "SKIP_SIGNATURE",
    "GeminiProvider",
    "GeminiStreamParser",
    "build_body",
    "build_contents",
    "function_declaration",
    "google_error",
    "is_synthesized_id",
    "max_output_tokens",
    "thinking_config",
]

PROVIDER = "google"
SKIP_SIGNATURE = "skip_thought_signature_validator"
"""Google's documented stand-in for a missing signature on a Gemini 3 function call."""

_SYNTH_ID = re.compile(r"gcall_[0-9a-f]{8}_\d+")
_FILES_URI = re.compile(r"https://generativelanguage\.googleapis\.com/[^/]+/files/[A-Za-z0-9_-]+")
_MAJOR = re.compile(r"gemini-(\d+)")

# Gemini 2.5 budgets: within every 2.5 model's range (Flash caps at 24,576).
_BUDGETS: dict[str, int] = {"low": 1024, "medium": 8192, "high": 16384, "xhigh": 24576}

_REFUSALS = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "PROHIBITED_CONTENT",
        "BLOCKLIST",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
    }
)
_ERRORS = frozenset(
    {
        "MALFORMED_FUNCTION_CALL",
        "UNEXPECTED_TOOL_CALL",
        "TOO_MANY_TOOL_CALLS",
        "MISSING_THOUGHT_SIGNATURE",
    }
)

# gRPC status names of in-stream errors that come without a numeric code.
_STATUS_CODES: dict[str, int] = {
    "INVALID_ARGUMENT": 400,
    "FAILED_PRECONDITION": 400,
    "OUT_OF_RANGE": 400,
    "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403,
    "NOT_FOUND": 404,
    "ABORTED": 409,
    "RESOURCE_EXHAUSTED": 429,
    "CANCELLED": 499,
    "INTERNAL": 500,
    "UNKNOWN": 500,
    "UNAVAILABLE": 503,
    "DEADLINE_EXCEEDED": 504,
}


# Keys of a part that qualify its content rather than being content.
_PART_METADATA = frozenset(
    {"thought", "thoughtSignature", "partMetadata", "videoMetadata", "mediaResolution"}
)


def is_synthesized_id(tool_id: str) -> bool:
    """True for a function-call id this adapter made up (Gemini sent none)."""
    return _SYNTH_ID.fullmatch(tool_id) is not None


def _major_version(model: str) -> int | None:
    match = _MAJOR.search(model.lower())
    return int(match.group(1)) if match else None


def _uses_levels(model: str) -> bool:
    """Gemini 3 and later take ``thinkingLevel`` (and enforce call signatures)."""
    major = _major_version(model)
    return major is not None and major >= 3


# --- request -----------------------------------------------------------------------------


def thinking_config(model: str, level: ReasoningLevel | None) -> dict[str, Any] | None:
    """The ``thinkingConfig`` for a reasoning level (None: the model's default).

    Gemini 3 takes a level: Pro accepts LOW and HIGH only, Flash also MEDIUM, and no
    model documents more than HIGH, so ``xhigh`` is HIGH. Gemini 2.5 takes a budget.
    """
    if level is None:
        return None
    if _uses_levels(model):
        if level == "low":
            name = "LOW"
        elif level == "medium" and "flash" in model.lower():
            name = "MEDIUM"
        else:
            name = "HIGH"
        return {"thinkingLevel": name, "includeThoughts": True}
    return {"thinkingBudget": _BUDGETS[level], "includeThoughts": True}


def max_output_tokens(model: str, max_tokens: int, level: ReasoningLevel | None) -> int:
    """``maxOutputTokens``: Gemini counts thoughts against it, so with thinking on it
    grows by the level's budget (capped at the model's output limit when the catalog
    knows it) to leave the answer the room the caller asked for."""
    if level is None:
        return max_tokens
    total = max_tokens + _BUDGETS[level]
    info = get_model(model.removeprefix("models/"))
    if info is not None:
        total = min(total, info.max_output_tokens)
    return max(total, max_tokens)


def function_declaration(tool: ToolSpec) -> dict[str, Any]:
    """A ``FunctionDeclaration`` with the tool's JSON schema as ``parametersJsonSchema``."""
    schema = for_gemini(tool.input_schema)
    declaration: dict[str, Any] = {"name": tool.name, "parametersJsonSchema": schema}
    if tool.description:
        declaration["description"] = tool.description
    return declaration


def build_body(
    request: LLMRequest, ids: ToolIdMap | None = None, cache: WireCache[Any] | None = None
) -> dict[str, Any]:
    """The JSON body of a ``streamGenerateContent`` call for ``request``
    (``cache``: see ``build_contents``; the body is the same without it)."""
    ids = ids or ToolIdMap()
    body: dict[str, Any] = {"contents": build_contents(request.messages, request.model, ids, cache)}
    if request.system:
        body["systemInstruction"] = {"parts": [{"text": request.system}]}
    if request.tools:
        body["tools"] = [{"functionDeclarations": [function_declaration(t) for t in request.tools]}]
    if request.tool_choice is not None:
        body["toolConfig"] = {
            "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [request.tool_choice]}
        }
    config: dict[str, Any] = {
        "maxOutputTokens": max_output_tokens(request.model, request.max_tokens, request.reasoning)
    }
    if request.temperature is not None:
        config["temperature"] = request.temperature
    if request.stop_sequences:
        config["stopSequences"] = list(request.stop_sequences)
    thinking = thinking_config(request.model, request.reasoning)
    if thinking is not None:
        config["thinkingConfig"] = thinking
    body["generationConfig"] = config
    return body


def build_contents(
    messages: list[Message], model: str, ids: ToolIdMap, cache: WireCache[Any] | None = None
) -> list[dict[str, Any]]:
    """``contents`` for a history: one ``Content`` per non-empty message.

    ``cache`` (the adapter's; the ids of a cached message are then not registered in
    ``ids`` again: a reverse map must come from ``_id_map``): the parts of messages
    converted before. A model message's parts are a
    function of the message; a user message's also of the calls of the message just
    before it and of the model generation, so its entry holds that message and the
    generation and serves only them; a user message answering a call of an earlier
    message (whose part names it) is not kept. The parts lists are copied (the
    current turn's signing replaces parts), the parts themselves are shared."""
    gemini3 = _uses_levels(model)
    names: dict[str, str] = {}  # tool_use id -> function name, for functionResponse.name
    calls: list[ToolUseBlock] = []  # the calls of the assistant message just before
    contents: list[dict[str, Any]] = []
    previous: Message | None = None
    for message in messages:
        entry = cache.get(message) if cache is not None else None
        if message.role == "assistant":
            if entry is None:
                parts = [p for block in message.content for p in _model_parts(block, ids)]
                calls = [b for b in message.content if isinstance(b, ToolUseBlock)]
                if cache is not None:
                    cache.put(message, (parts, calls))
            else:
                parts, calls = entry
            names.update((c.id, c.name) for c in calls)
            role = "model"
        else:
            if entry is not None and entry[0] is previous and entry[1] == gemini3:
                parts = entry[2]
            else:
                parts = _user_parts(message.content, calls, names, ids, gemini3)
                if cache is not None and _answers_only(message, calls):
                    cache.put(message, (previous, gemini3, parts))
            calls = []
            role = "user"
        previous = message
        if parts:
            contents.append({"role": role, "parts": list(parts)})
    if gemini3:
        _sign_current_turn(contents)
    return contents


def _answers_only(message: Message, calls: list[ToolUseBlock]) -> bool:
    """Whether every tool result of ``message`` answers one of ``calls``."""
    answered = {c.id for c in calls}
    return all(b.tool_use_id in answered for b in message.content if isinstance(b, ToolResultBlock))


def _signed(part: dict[str, Any], signature: str | None) -> dict[str, Any]:
    if signature is not None:
        part["thoughtSignature"] = signature
    return part


def _model_parts(block: ContentBlock, ids: ToolIdMap) -> list[dict[str, Any]]:
    if isinstance(block, TextBlock):
        # An empty part matters only for the signature it carries.
        if not block.text and block.signature is None:
            return []
        return [_signed({"text": block.text}, block.signature)]
    if isinstance(block, ThinkingBlock):
        if block.provider == PROVIDER:
            if not block.thinking and block.signature is None:
                return []
            return [_signed({"text": block.thinking, "thought": True}, block.signature)]
        # Another provider's reasoning: its signature means nothing here.
        return [{"text": block.thinking}] if block.thinking.strip() else []
    if isinstance(block, ToolUseBlock):
        call: dict[str, Any] = {"name": block.name, "args": block.input}
        if not is_synthesized_id(block.id):
            call["id"] = ids.out(block.id)
        return [_signed({"functionCall": call}, block.signature)]
    if isinstance(block, ImageBlock):
        return [_image_part(block)]
    if isinstance(block, NativeBlock):
        # Our own parts go back as they came; another provider's mean nothing here.
        return [dict(block.data)] if block.provider == PROVIDER else []
    # Redacted thinking is Anthropic's encrypted reasoning; a tool result cannot be
    # the model's.
    assert isinstance(block, RedactedThinkingBlock | ToolResultBlock)
    return []


def _image_part(block: ImageBlock) -> dict[str, Any]:
    source = block.source
    if source.type == "base64":
        return {"inlineData": {"mimeType": source.media_type, "data": source.data}}
    url = source.url
    if url.startswith("gs://") or _FILES_URI.match(url):
        data: dict[str, Any] = {"fileUri": url}
        mime, _ = mimetypes.guess_type(url)
        if mime:
            data["mimeType"] = mime
        return {"fileData": data}
    # Gemini does not fetch arbitrary URLs: say which image the user meant.
    return {"text": f"[image: {url}]"}


def _user_parts(
    blocks: list[ContentBlock],
    calls: list[ToolUseBlock],
    names: Mapping[str, str],
    ids: ToolIdMap,
    gemini3: bool,
) -> list[dict[str, Any]]:
    results = {b.tool_use_id: b for b in blocks if isinstance(b, ToolResultBlock)}
    responses: list[dict[str, Any]] = []
    trailing: list[dict[str, Any]] = []  # images of tool results on Gemini 2
    # Gemini pairs responses with calls by position: answer every call, in order.
    for call in calls:
        result = results.pop(call.id, None)
        if result is None:
            response: dict[str, Any] = {
                "name": call.name,
                "response": {"error": "No result was recorded for this call."},
            }
            images: list[dict[str, Any]] = []
        else:
            response, images = _function_response(result, call.name)
        if not is_synthesized_id(call.id):
            response["id"] = ids.out(call.id)
        if images and gemini3:
            response["parts"] = images
        elif images:
            trailing.extend(images)
        responses.append({"functionResponse": response})

    parts = responses + trailing
    for block in blocks:
        if isinstance(block, ToolResultBlock):
            if block.tool_use_id in results:
                # No call right before answers it: keep what it says, as text.
                text = _result_text(block)
                name = names.get(block.tool_use_id, "a tool")
                parts.append({"text": f"[result of {name} call {block.tool_use_id}]\n{text}"})
        elif isinstance(block, TextBlock) and block.text:
            parts.append({"text": block.text})
        elif isinstance(block, ImageBlock):
            parts.append(_image_part(block))
        elif isinstance(block, ThinkingBlock) and block.thinking.strip():
            parts.append({"text": block.thinking})
        # tool_use and redacted thinking cannot be the user's: nothing to send.
    return parts


def _result_text(result: ToolResultBlock) -> str:
    if isinstance(result.content, str):
        return result.content
    texts = [p.text for p in result.content if isinstance(p, TextBlock)]
    notes = [
        f"[image: {p.source.url}]"
        for p in result.content
        if isinstance(p, ImageBlock) and p.source.type == "url"
    ]
    return "\n".join(texts + notes)


def _function_response(
    result: ToolResultBlock, name: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    images: list[dict[str, Any]] = []
    if not isinstance(result.content, str):
        images = [
            _image_part(p)
            for p in result.content
            if isinstance(p, ImageBlock) and p.source.type == "base64"
        ]
    key = "error" if result.is_error else "output"
    return {"name": name, "response": {key: _result_text(result)}}, images


def _sign_current_turn(contents: list[dict[str, Any]]) -> None:
    """Give each step of the current turn whose calls are unsigned the sentinel.

    The current turn starts after the last user content that is not only function
    responses. A step with any real signature is left alone.
    """
    start = 0
    for index, content in enumerate(contents):
        if content["role"] == "user" and any("functionResponse" not in p for p in content["parts"]):
            start = index + 1
    for content in contents[start:]:
        if content["role"] != "model":
            continue
        parts = content["parts"]
        if any("thoughtSignature" in p for p in parts):
            continue
        for position, part in enumerate(parts):
            if "functionCall" in part:
                parts[position] = {**part, "thoughtSignature": SKIP_SIGNATURE}
                break


# --- response ----------------------------------------------------------------------------


def _usage(metadata: Mapping[str, Any]) -> Usage:
    def count(name: str) -> int:
        value = metadata.get(name)
        return int(value) if isinstance(value, int | float) else 0

    thoughts = count("thoughtsTokenCount")
    return Usage(
        input_tokens=count("promptTokenCount") + count("toolUsePromptTokenCount"),
        cache_read_tokens=count("cachedContentTokenCount"),
        output_tokens=count("candidatesTokenCount") + thoughts,
        reasoning_tokens=thoughts,
    )


def _retry_delay(details: Any) -> float | None:
    """The ``RetryInfo.retryDelay`` ("37s") of a Google error's details, if any."""
    if not isinstance(details, list):
        return None
    for detail in details:
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("RetryInfo"):
            delay = detail.get("retryDelay")
            if isinstance(delay, str) and delay.endswith("s"):
                try:
                    return max(0.0, float(delay[:-1]))
                except ValueError:
                    return None
    return None


def google_error(
    error: Mapping[str, Any], *, status: int | None = None, retry_after: float | None = None
) -> LLMError:
    """The typed error of a Google ``{"code", "message", "status", "details"}`` object."""
    code = error.get("code")
    kind = error.get("status")
    if not isinstance(code, int):
        code = status or _STATUS_CODES.get(str(kind), 500)
    message = str(error.get("message") or kind or f"HTTP {code}")
    details = error.get("details")
    delay = _retry_delay(details)
    if delay is not None and retry_after is None:
        retry_after = delay
    reasons = (
        {d.get("reason") for d in details if isinstance(d, dict)}
        if isinstance(details, list)
        else set()
    )
    # A wrong key is a 400 INVALID_ARGUMENT on Gemini, not a 401.
    if "API_KEY_INVALID" in reasons or "api key not valid" in message.lower():
        return AuthenticationError(
            f"{message} (check GEMINI_API_KEY)",
            status_code=code,
            provider=PROVIDER,
            error_type=str(kind) if kind else None,
        )
    return error_for_status(
        code,
        message,
        retry_after=retry_after,
        provider=PROVIDER,
        error_type=str(kind) if kind else None,
    )


class GeminiStreamParser(StreamParser):
    """Turns ``alt=sse`` chunks (each a whole ``GenerateContentResponse``) into events."""

    def __init__(self, request: LLMRequest, ids: ToolIdMap | None = None) -> None:
        self._request = request
        self._ids = ids or ToolIdMap()
        self._blocks: list[ContentBlock] = []
        self._open = False  # the last block is unsigned text/thinking a part may extend
        self._calls = 0
        self._finish: str | None = None
        self._blocked: str | None = None
        self._usage = Usage()
        self._model: str | None = None
        self._response_id: str | None = None

    def feed(self, event: ServerSentEvent) -> list[StreamEvent]:
        """The stream events of one chunk; raises the typed error of an error chunk."""
        data = event.data.strip()
        if not data or data == "[DONE]":
            return []
        try:
            chunk = json.loads(data)
        except ValueError as exc:
            raise NetworkError(
                f"Gemini sent a chunk that is not JSON: {data[:200]!r}", provider=PROVIDER
            ) from exc
        if isinstance(chunk, list):  # the non-SSE array framing, one element per chunk
            return [e for item in chunk for e in self._chunk(item)]
        return self._chunk(chunk)

    def _chunk(self, chunk: Any) -> list[StreamEvent]:
        if not isinstance(chunk, dict):
            return []
        error = chunk.get("error")
        if isinstance(error, dict):
            raise google_error(error)
        if isinstance(chunk.get("usageMetadata"), dict):
            self._usage = _usage(chunk["usageMetadata"])  # cumulative: the last one wins
        self._model = chunk.get("modelVersion") or self._model
        self._response_id = chunk.get("responseId") or self._response_id
        feedback = chunk.get("promptFeedback")
        if isinstance(feedback, dict) and feedback.get("blockReason"):
            self._blocked = str(feedback["blockReason"])
        out: list[StreamEvent] = []
        candidates = chunk.get("candidates")
        if not isinstance(candidates, list) or not candidates:
            return out
        candidate = next(
            (c for c in candidates if isinstance(c, dict) and c.get("index", 0) == 0), None
        )
        if candidate is None:
            return out
        content = candidate.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, dict):
                out.extend(self._part(part))
        if candidate.get("finishReason"):
            self._finish = str(candidate["finishReason"])
        return out

    def _part(self, part: dict[str, Any]) -> list[StreamEvent]:
        signature = part.get("thoughtSignature")
        signature = signature if isinstance(signature, str) and signature else None
        call = part.get("functionCall")
        if isinstance(call, dict):
            return self._call(call, signature)
        if "text" not in part and part.keys() - _PART_METADATA:
            # Code execution, a built-in tool's call or response, inline data...:
            # kept whole (its signature included) to go back as it came.
            self._open = False
            self._blocks.append(NativeBlock(provider=PROVIDER, data=dict(part)))
            return []
        text = part.get("text")
        if not isinstance(text, str):
            if signature is None:
                return []  # an inline image, code execution...: not ours to keep
            text = ""
        thought = part.get("thought") is True
        last = self._blocks[-1] if self._blocks else None
        extend = (
            self._open
            and signature is None
            and isinstance(last, ThinkingBlock if thought else TextBlock)
        )
        if extend and isinstance(last, ThinkingBlock):
            self._blocks[-1] = last.model_copy(update={"thinking": last.thinking + text})
        elif extend and isinstance(last, TextBlock):
            self._blocks[-1] = last.model_copy(update={"text": last.text + text})
        elif not text and signature is None:
            return []
        elif thought:
            self._blocks.append(
                ThinkingBlock(thinking=text, signature=signature, provider=PROVIDER)
            )
        else:
            self._blocks.append(TextBlock(text=text, signature=signature))
        # A signed part stands alone: nothing may be merged into it.
        self._open = signature is None
        if not text:
            return []
        index = len(self._blocks) - 1
        if thought:
            return [ThinkingDelta(index=index, thinking=text)]
        return [TextDelta(index=index, text=text)]

    def _call(self, call: dict[str, Any], signature: str | None) -> list[StreamEvent]:
        self._open = False
        self._calls += 1
        name = str(call.get("name") or "")
        args = call.get("args")
        arguments: dict[str, Any] = args if isinstance(args, dict) else {}
        raw_id = call.get("id")
        if isinstance(raw_id, str) and raw_id:
            tool_id = self._ids.back(raw_id)
        else:
            tool_id = self._synthesize_id()
        index = len(self._blocks)
        self._blocks.append(
            ToolUseBlock(id=tool_id, name=name, input=arguments, signature=signature)
        )
        return [
            ToolCallStart(index=index, id=tool_id, name=name),
            ToolCallDelta(index=index, id=tool_id, partial_json=json.dumps(arguments)),
            ToolCallEnd(index=index, id=tool_id, name=name, input=arguments),
        ]

    def _synthesize_id(self) -> str:
        # Deterministic for the same response, distinct across responses (history
        # checks want tool_use ids unique in a session): hash the response id, or
        # the history this response continues when there is none.
        seed = self._response_id or json.dumps(
            [m.to_payload() for m in self._request.messages], sort_keys=True
        )
        digest = hashlib.sha256(seed.encode()).hexdigest()[:8]
        return f"gcall_{digest}_{self._calls}"

    def _message(self) -> Message:
        return Message(role="assistant", content=list(self._blocks))

    def partial(self) -> Message | None:
        """What streamed so far, or None when nothing did."""
        return self._message() if self._blocks else None

    def usage(self) -> Usage:
        """The last usage snapshot, priced."""
        return self._priced()

    def stop_reason(self) -> StopReason:
        """The normalized reason the response ended."""
        finish = self._finish
        if finish is None:
            return "refusal" if self._blocked else "end_turn"
        if finish in _REFUSALS:
            return "refusal"
        if finish in _ERRORS:
            return "error"
        if finish == "MAX_TOKENS":
            return "max_tokens"
        if any(isinstance(b, ToolUseBlock) for b in self._blocks):
            return "tool_use"
        return "end_turn"

    def finish(self) -> Done:
        """The final message; raises ``NetworkError`` when the stream was cut short."""
        if self._finish is None and self._blocked is None:
            raise NetworkError(
                "the Gemini stream ended before a finishReason (connection cut?)",
                provider=PROVIDER,
            )
        return Done(
            message=self._message(),
            stop_reason=self.stop_reason(),
            usage=self._priced(),
            model=self._model or self._request.model,
            response_id=self._response_id,
        )

    def _priced(self) -> Usage:
        usage = with_cost(PROVIDER, self._request.model, self._usage)
        if usage.cost_usd is None and self._model and self._model != self._request.model:
            usage = with_cost(PROVIDER, self._model, self._usage)
        return usage


class GeminiProvider(HTTPProvider):
    """Google Gemini (Generative Language API, ``v1beta``) with streaming SSE.

    The key comes from ``api_key``, else ``GEMINI_API_KEY``, else ``GOOGLE_API_KEY``.
    """

    name: ClassVar[str] = PROVIDER
    default_base_url: ClassVar[str] = "https://generativelanguage.googleapis.com/v1beta"
    api_key_env: ClassVar[tuple[str, ...]] = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    base_url_env: ClassVar[tuple[str, ...]] = ("GOOGLE_GEMINI_BASE_URL",)
    requires_api_key = True
    price_provider = PROVIDER

    def base_url_from_env(self, value: str) -> str:
        """``GOOGLE_GEMINI_BASE_URL`` is the root without the API version, as Google's
        SDK reads it (``https://generativelanguage.googleapis.com``): ``/v1beta`` is
        added unless the path already ends in a version."""
        value = value.rstrip("/")
        if re.search(r"/v\d+(?:alpha|beta)?$", value):
            return value
        return value + "/v1beta"

    #: Each history message's parts, converted once (created on first use).
    _wire_cache: WireCache[Any] | None = None

    def build_call(self, request: LLMRequest) -> HTTPCall:
        """``POST /models/{model}:streamGenerateContent?alt=sse`` with the JSON body."""
        model = request.model.removeprefix("models/")
        cache = self._wire_cache
        if cache is None:
            cache = self._wire_cache = WireCache()
        return HTTPCall(
            path=f"/models/{quote(model, safe='-._~')}:streamGenerateContent",
            # No id map for the body: a sent id is a function of the id; the parser
            # makes its own for the ids that come back.
            body=build_body(request, None, cache),
            params={"alt": "sse"},
        )

    def new_parser(self, request: LLMRequest) -> StreamParser:
        """A parser for one response to ``request``."""
        return GeminiStreamParser(request, _id_map(request))

    def auth_headers(self, api_key: str) -> dict[str, str]:
        """The key in ``x-goog-api-key`` (never in the URL, where logs would keep it)."""
        return {"x-goog-api-key": api_key}

    def error_from_response(self, status: int, headers: Mapping[str, str], body: bytes) -> LLMError:
        """The typed error of a non-2xx response (Google's error object, maybe in a list)."""
        try:
            data: Any = json.loads(body)
        except ValueError:
            data = None
        if isinstance(data, list) and data:
            data = data[0]
        if isinstance(data, dict) and isinstance(data.get("error"), dict):
            error = dict(data["error"])
            error["code"] = status
            return google_error(error, status=status, retry_after=parse_retry_after(headers))
        return super().error_from_response(status, headers, body)


def _id_map(request: LLMRequest) -> ToolIdMap:
    """The id map of a request: built the same way for the body and the parser."""
    ids = ToolIdMap()
    for message in request.messages:
        for tool_id in message.tool_use_ids():
            ids.out(tool_id)
    return ids
