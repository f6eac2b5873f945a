"""Every adapter's own HTTP client verifies TLS with one context per process (made once:
loading the CA bundle is what a first request should not pay), and a client given by the
caller is used as given."""

from __future__ import annotations

import ssl

import httpx
import pytest

from tron_llm import AnthropicProvider, OpenAIChatProvider, shared_ssl_context
from tron_llm._transport import AsyncioTransport

pytestmark = pytest.mark.anyio


async def test_adapters_share_one_verifying_context() -> None:
    context = shared_ssl_context()
    assert context is shared_ssl_context()
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] > 0  # the CA bundle is loaded
    one = AnthropicProvider(api_key="k")
    two = OpenAIChatProvider(api_key="k")
    try:
        for provider in (one, two):
            transport = provider._client._transport
            assert isinstance(transport, AsyncioTransport)
            assert transport._ssl is context
    finally:
        await one.aclose()
        await two.aclose()
    own = httpx.AsyncClient()
    given = AnthropicProvider(api_key="k", client=own)
    assert given._client is own
    await own.aclose()
