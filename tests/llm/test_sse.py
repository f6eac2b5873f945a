"""The SSE decoder: framing rules, and the chunking property over every fixture.

Every file under fixtures/**/*.sse (every provider's) is re-chunked at random byte
offsets — splitting UTF-8 characters and CRLF pairs — with its line endings
rewritten to CRLF, LF or CR; the decoded events must be identical to decoding the
original in one piece, and match the official SDK's decoder.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from anthropic._streaming import SSEDecoder as SDKDecoder
from hypothesis import given
from hypothesis import strategies as st

from tests.llm.conftest import FIXTURES
from tron_llm import ServerSentEvent, SSEDecoder
from tron_llm._sse import iter_sse

pytestmark = pytest.mark.anyio

ALL_FIXTURES = sorted(FIXTURES.rglob("*.sse"))
ENDINGS = [b"\n", b"\r\n", b"\r"]


def decode(chunks: list[bytes]) -> list[ServerSentEvent]:
    decoder = SSEDecoder()
    events = [event for chunk in chunks for event in decoder.feed(chunk)]
    return events + decoder.flush()


def with_endings(body: bytes, ending: bytes) -> bytes:
    return ending.join(re.split(rb"\r\n|\r|\n", body))


def cut(body: bytes, offsets: list[int]) -> list[bytes]:
    points = [0, *sorted({o % (len(body) + 1) for o in offsets}), len(body)]
    return [body[a:b] for a, b in itertools.pairwise(points)]


def test_every_provider_has_fixtures() -> None:
    assert len(ALL_FIXTURES) >= 10
    assert all(decode([p.read_bytes()]) for p in ALL_FIXTURES)


@given(
    path=st.sampled_from(ALL_FIXTURES),
    ending=st.sampled_from(ENDINGS),
    offsets=st.lists(st.integers(min_value=0), max_size=40),
)
def test_any_chunking_and_line_ending_decodes_the_same(
    path: Path, ending: bytes, offsets: list[int]
) -> None:
    original = path.read_bytes()
    expected = decode([original])
    body = with_endings(original, ending)
    assert decode(cut(body, offsets)) == expected


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
@pytest.mark.parametrize("ending", ENDINGS, ids=["LF", "CRLF", "CR"])
def test_byte_by_byte_matches_the_sdk_decoder(path: Path, ending: bytes) -> None:
    body = with_endings(path.read_bytes(), ending)
    ours = decode([body[i : i + 1] for i in range(len(body))])
    theirs = [
        (e.event or "message", e.data)
        for e in SDKDecoder().iter_bytes(iter([body]))
        if e.data  # the spec dispatches only events with data
    ]
    assert [(e.event, e.data) for e in ours] == theirs


def test_multibyte_characters_split_anywhere() -> None:
    body = "data: héllo 日本 🌍\n\n".encode()
    for i in range(len(body) + 1):
        assert decode([body[:i], body[i:]]) == [ServerSentEvent("message", "héllo 日本 🌍")]


def test_crlf_split_between_cr_and_lf_is_one_line_ending() -> None:
    assert decode([b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"]) == [
        ServerSentEvent("message", "a\nb")
    ]


def test_fields_comments_and_dispatch_rules() -> None:
    body = (
        b"\xef\xbb\xbf: keepalive comment\n"
        b"event: first\nid: 7\nretry: 1500\ndata: line 1\ndata:line 2\ndata\n\n"
        b"event: ignored-without-data\n\n"
        b'data: {"x": 1}\nunknown: field\n\n'
        b"id\ndata: no trailing blank line"
    )
    assert decode([body[:1], body[1:2], body[2:]]) == [
        ServerSentEvent("first", "line 1\nline 2\n", "7", 1500),
        ServerSentEvent("message", '{"x": 1}', "7"),
        ServerSentEvent("message", "no trailing blank line", ""),
    ]


async def test_iter_sse_over_async_chunks() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b"event: a\nda"
        yield b"ta: 1\n\nevent: b\ndata: 2"

    assert [e async for e in iter_sse(chunks())] == [
        ServerSentEvent("a", "1"),
        ServerSentEvent("b", "2"),
    ]
