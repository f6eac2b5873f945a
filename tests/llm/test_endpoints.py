"""Where each adapter sends its requests and what its errors say about it (issue 27
item 10): the provider SDKs' own variables (``ANTHROPIC_BASE_URL``, ``OPENAI_BASE_URL``,
``GOOGLE_GEMINI_BASE_URL``) are read when no endpoint is given; an error names the
endpoint that failed and the variable that set it; a key holding a character an HTTP
header cannot carry is one clear error naming its variable, before any request."""

from __future__ import annotations

import httpx
import pytest

from tests.llm._serve import free_port
from tron_events.messages import Message, TextBlock
from tron_llm import (
    AuthenticationError,
    ErrorEvent,
    HTTPProvider,
    LLMRequest,
    NetworkError,
    NotFoundError,
    RetryPolicy,
)
from tron_llm.registry import base_url_variables, create_provider
from tron_server.providers import ProviderFactory
from tron_server.settings import Settings

pytestmark = pytest.mark.anyio

BASE_VARIABLES = ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "GOOGLE_GEMINI_BASE_URL")


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*BASE_VARIABLES, "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)


def request(model: str) -> LLMRequest:
    return LLMRequest(model=model, messages=[Message(role="user", content=[TextBlock(text="hi")])])


# provider, its variable, the value set, the URL the request must go to, a model
CASES = [
    ("anthropic", "ANTHROPIC_BASE_URL", "http://proxy.test:8080/",
     "http://proxy.test:8080/v1/messages", "claude-sonnet-4-5"),
    ("openai", "OPENAI_BASE_URL", "http://proxy.test:8080/v1",
     "http://proxy.test:8080/v1/chat/completions", "gpt-4.1"),
    ("openai-responses", "OPENAI_BASE_URL", "http://proxy.test:8080/v1",
     "http://proxy.test:8080/v1/responses", "gpt-4.1"),
    # Google's SDK reads the root and adds the version itself: so does the adapter.
    ("google", "GOOGLE_GEMINI_BASE_URL", "http://proxy.test:8080/gemini",
     "http://proxy.test:8080/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent",
     "gemini-2.5-flash"),
    ("google", "GOOGLE_GEMINI_BASE_URL", "http://proxy.test:8080/v1/",
     "http://proxy.test:8080/v1/models/gemini-2.5-flash:streamGenerateContent",
     "gemini-2.5-flash"),
]  # fmt: skip


@pytest.mark.parametrize(("provider", "variable", "value", "url", "model"), CASES)
async def test_the_sdk_variable_is_the_endpoint_when_none_is_given(
    monkeypatch: pytest.MonkeyPatch, provider: str, variable: str, value: str, url: str, model: str
) -> None:
    monkeypatch.setenv(variable, value)
    assert base_url_variables(provider) == (variable,)
    seen: list[str] = []

    def handler(req: httpx.Request) -> httpx.Response:
        seen.append(str(req.url.copy_with(query=None)))
        return httpx.Response(404, json={"error": {"message": "no such route"}})

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    adapter = create_provider(provider, api_key="k", client=client)
    events = [e async for e in adapter.stream(request(model))]
    assert seen == [url]
    error = events[-1]
    assert isinstance(error, ErrorEvent) and isinstance(error.error, NotFoundError)
    # A wrong endpoint answers 404: the error says which endpoint, set by what.
    assert f"({variable})" in error.error.message, error.error.message

    # An explicit endpoint (tron-server's TRON_*_BASE_URL) wins over the variable.
    seen.clear()
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    explicit = create_provider(
        provider, api_key="k", base_url="http://other.test/v9", client=client
    )
    [e async for e in explicit.stream(request(model))]
    assert seen and seen[0].startswith("http://other.test/v9/")


async def test_openai_compatible_never_reads_openai_base_url(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://proxy.test/v1")
    assert base_url_variables("openai-compatible") == ()
    with pytest.raises(ValueError, match="needs base_url"):
        create_provider("openai-compatible")


async def test_a_refused_connection_names_the_url_and_its_variable(
    monkeypatch: pytest.MonkeyPatch, fake_retry: RetryPolicy
) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    adapter = create_provider("anthropic", api_key="sk-ant-secret-key", retry=fake_retry)
    try:
        events = [e async for e in adapter.stream(request("claude-sonnet-4-5"))]
    finally:
        await adapter.aclose()
    error = events[-1]
    assert isinstance(error, ErrorEvent) and isinstance(error.error, NetworkError)
    assert error.error.message.startswith(f"connection failed: {url} (ANTHROPIC_BASE_URL): ")


async def test_the_default_endpoint_is_named_without_a_variable(fake_retry: RetryPolicy) -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=req)

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    adapter = create_provider("anthropic", api_key="k", client=client, retry=fake_retry)
    events = [e async for e in adapter.stream(request("claude-sonnet-4-5"))]
    error = events[-1]
    assert isinstance(error, ErrorEvent)
    assert error.error.message == "connection failed: https://api.anthropic.com: refused"


@pytest.mark.parametrize(
    ("provider", "variable"),
    [("anthropic", "ANTHROPIC_API_KEY"), ("openai", "OPENAI_API_KEY"),
     ("google", "GEMINI_API_KEY")],
)  # fmt: skip
async def test_a_key_that_is_not_ascii_is_one_clear_error(
    monkeypatch: pytest.MonkeyPatch, provider: str, variable: str
) -> None:
    key = "sk-ant-\u2026"  # the README's placeholder, copied literally
    monkeypatch.setenv(variable, key)
    sent: list[httpx.Request] = []

    def handler(req: httpx.Request) -> httpx.Response:
        sent.append(req)
        return httpx.Response(500)

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    adapter = create_provider(provider, client=client, retry=RetryPolicy(max_retries=3))
    events = [e async for e in adapter.stream(request("m"))]
    error = events[-1]
    assert isinstance(error, ErrorEvent) and isinstance(error.error, AuthenticationError)
    assert error.error.message == (
        f"the API key in {variable} has a character that is not ASCII "
        "('\u2026', U+2026, at position 8 of 8): an API key is plain ASCII; copy the key again"
    )
    assert not sent  # refused before any request, and not retried


async def test_the_server_names_its_own_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """tron-server's TRON_ANTHROPIC_BASE_URL wins over ANTHROPIC_BASE_URL and is the
    name its errors give; without it, the adapter reads ANTHROPIC_BASE_URL."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://sdk.test")
    factory = ProviderFactory(Settings(anthropic_base_url="http://tron.test"))
    adapter = factory("anthropic", "claude-sonnet-4-5")
    assert isinstance(adapter, HTTPProvider)
    assert adapter.endpoint == "http://tron.test (TRON_ANTHROPIC_BASE_URL)"
    plain = ProviderFactory(Settings())("anthropic", "claude-sonnet-4-5")
    assert isinstance(plain, HTTPProvider)
    assert plain.endpoint == "http://sdk.test (ANTHROPIC_BASE_URL)"
    settings = Settings(
        openai_compatible_base_url="http://local.test/v1", openai_compatible_api_key="k\u00e9y"
    )
    compatible = ProviderFactory(settings)("openai-compatible", "m")
    events = [e async for e in compatible.stream(request("m"))]
    error = events[-1]
    assert isinstance(error, ErrorEvent)
    assert "in TRON_OPENAI_COMPATIBLE_API_KEY" in error.error.message
    for made in (adapter, plain, compatible):
        await made.aclose()
