"""The transport's HTTP/1.1 (``tron_llm._http11``): any response, framed any lawful way
and cut into any pieces, parses to its status, headers and body; what cannot be framed
safely is refused; a request's head is what an HTTP server (h11) reads back."""

from __future__ import annotations

import h11
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tron_llm._http11 import MAX_HEAD, ProtocolError, ResponseParser, request_head

TOKEN = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=12).filter(
    lambda s: s.strip("-") == s
)
VALUE = st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=30)
EXTRA = st.lists(
    st.tuples(TOKEN, VALUE).filter(
        lambda kv: kv[0] not in ("content-length", "transfer-encoding", "connection")
    ),
    max_size=5,
)


@st.composite
def responses(draw: st.DrawFn) -> tuple[bytes, int, list[tuple[bytes, bytes]], bytes, bool]:
    """(wire bytes, status, headers, body, whether the connection stays open)."""
    status = draw(st.sampled_from([200, 201, 400, 404, 429, 500, 529]))
    body = draw(st.binary(max_size=3000))
    framing = draw(st.sampled_from(["length", "chunked", "close"]))
    close = framing == "close" or draw(st.booleans())
    headers = [(k.encode(), v.encode()) for k, v in draw(EXTRA)]
    wire = [b"HTTP/1.1 100 Continue\r\n\r\n"] if draw(st.booleans()) else []
    if framing == "length":
        headers.append((b"Content-Length", str(len(body)).encode()))
    elif framing == "chunked":
        headers.append((b"Transfer-Encoding", b"chunked"))
    if close:
        headers.append((b"Connection", b"close"))
    wire.append(f"HTTP/1.1 {status} Reason Phrase\r\n".encode())
    wire += [k + b": " + v + b"\r\n" for k, v in headers]
    wire.append(b"\r\n")
    if framing == "chunked":
        rest = body
        while rest:
            size = draw(st.integers(1, max(1, len(rest))))
            ext = draw(st.sampled_from([b"", b";name=value", b";x"]))
            wire.append(f"{size:X}".encode() + ext + b"\r\n" + rest[:size] + b"\r\n")
            rest = rest[size:]
        wire.append(b"0\r\n")
        if draw(st.booleans()):
            wire.append(b"Trailer-Field: value\r\n")
        wire.append(b"\r\n")
    else:
        wire.append(body)
    return b"".join(wire), status, headers, body, not close


def pieces(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(c, len(data)) for c in cuts})
    out, start = [], 0
    for p in [*points, len(data)]:
        out.append(data[start:p])
        start = p
    return out


def parse_all(parser: ResponseParser, chunks: list[bytes], *, close: bool) -> bytes:
    """Feed ``chunks`` one by one (then the close, if ``close``); the body read."""
    body = b""
    headed = False
    for index, chunk in enumerate(chunks):
        parser.feed(chunk)
        if close and index == len(chunks) - 1:
            parser.eof()
        if not headed:
            headed = parser.head()
        if headed:
            body += b"".join(parser.body())
    if not headed and close:
        parser.eof()
        headed = parser.head()
    assert headed
    while not parser.done:
        more = parser.body()
        assert more or parser.done, "no progress"
        body += b"".join(more)
    return body


@given(responses(), st.lists(st.integers(0, 4000), max_size=12))
def test_a_response_cut_anywhere_parses_to_its_status_headers_and_body(
    response: tuple[bytes, int, list[tuple[bytes, bytes]], bytes, bool], cuts: list[int]
) -> None:
    wire, status, headers, body, keep_alive = response
    parser = ResponseParser(b"POST")
    got = parse_all(parser, pieces(wire, cuts), close=not keep_alive)
    assert parser.status == status
    assert parser.reason == b"Reason Phrase"
    assert parser.headers == headers
    assert got == body
    assert parser.done
    assert parser.keep_alive is keep_alive


@given(responses(), st.lists(st.integers(0, 4000), max_size=6))
def test_h11_reads_the_same_response(
    response: tuple[bytes, int, list[tuple[bytes, bytes]], bytes, bool], cuts: list[int]
) -> None:
    wire, *_ = response
    ours = ResponseParser(b"POST")
    ours_body = parse_all(ours, pieces(wire, cuts), close=True)
    theirs = h11.Connection(h11.CLIENT)
    theirs.send(h11.Request(method="POST", target="/", headers=[("Host", "x")]))
    theirs.send(h11.EndOfMessage())
    theirs.receive_data(wire)
    theirs.receive_data(b"")
    their_body = b""
    while True:
        event = theirs.next_event()
        if isinstance(event, h11.Response):
            assert event.status_code == ours.status
            assert [(k, v) for k, v in event.headers.raw_items()] == ours.headers
        elif isinstance(event, h11.Data):
            their_body += event.data
        elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
            break
    assert their_body == ours_body


def test_a_second_response_on_the_same_bytes_means_the_connection_is_not_reused() -> None:
    parser = ResponseParser()
    parser.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n")
    assert parser.head()
    assert parser.body() == [b"ok"]
    assert parser.done and not parser.keep_alive


def test_no_body_for_204_304_and_head() -> None:
    for method, status in ((b"POST", 204), (b"GET", 304), (b"HEAD", 200)):
        parser = ResponseParser(method)
        parser.feed(f"HTTP/1.1 {status} X\r\nContent-Length: 10\r\n\r\n".encode())
        assert parser.head() and parser.done and parser.keep_alive
        assert parser.body() == []


def test_http_1_0_closes_unless_kept_alive() -> None:
    parser = ResponseParser()
    parser.feed(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n")
    assert parser.head() and parser.done and not parser.keep_alive
    parser = ResponseParser()
    parser.feed(b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n")
    assert parser.head() and parser.done and parser.keep_alive


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        (b"HTTP/2 200 OK\r\n\r\n", "status line"),
        (b"HTTP/1.1 2000 OK\r\n\r\n", "status line"),
        (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "malformed header"),
        (b"HTTP/1.1 200 OK\r\n folded: x\r\n\r\n", "malformed header"),
        (b"HTTP/1.1 200 OK\r\nName : x\r\n\r\n", "malformed header"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", "Content-Length"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "Content-Length"),
        (b"HTTP/1.1 101 Switching\r\n\r\n", "switched"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "chunk size"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n", "chunk size"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n", "CRLF"),
    ],
)
def test_what_cannot_be_framed_safely_is_refused(wire: bytes, message: str) -> None:
    parser = ResponseParser()
    parser.feed(wire)
    with pytest.raises(ProtocolError, match=message):
        while parser.head() and not parser.done:
            if not parser.body():
                break


def test_a_head_beyond_the_limit_is_refused_before_it_ends() -> None:
    parser = ResponseParser()
    parser.feed(b"HTTP/1.1 200 OK\r\nX: " + b"a" * MAX_HEAD)
    with pytest.raises(ProtocolError, match="longer than"):
        parser.head()


@pytest.mark.parametrize(
    "wire",
    [
        b"",
        b"HTTP/1.1 200 OK\r\nContent-Le",
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n",
    ],
)
def test_a_close_before_the_end_is_an_error(wire: bytes) -> None:
    parser = ResponseParser()
    parser.feed(wire)
    parser.eof()
    with pytest.raises(ProtocolError, match="closed the connection"):
        while parser.head() and not parser.done:
            if not parser.body():
                break


HEADER = st.tuples(TOKEN, VALUE)


@given(
    st.sampled_from(["GET", "POST", "PUT"]), st.lists(HEADER, max_size=6), st.binary(max_size=200)
)
def test_a_request_head_is_what_a_server_reads(
    method: str, headers: list[tuple[str, str]], body: bytes
) -> None:
    raw = [(b"Host", b"example.com"), *((k.encode(), v.encode()) for k, v in headers)]
    raw = [(k, v) for k, v in raw if k.lower() not in (b"content-length", b"transfer-encoding")]
    raw.append((b"Content-Length", str(len(body)).encode()))
    wire = request_head(method.encode(), b"/v1/messages?alt=sse", raw) + body
    server = h11.Connection(h11.SERVER)
    server.receive_data(wire)
    event = server.next_event()
    assert isinstance(event, h11.Request)
    assert event.method == method.encode()
    assert event.target == b"/v1/messages?alt=sse"
    assert [(k.lower(), v) for k, v in event.headers.raw_items()] == [
        (k.lower(), v.strip(b" \t")) for k, v in raw
    ]
    data = b""
    while True:
        event = server.next_event()
        if isinstance(event, h11.Data):
            data += event.data
        else:
            assert isinstance(event, h11.EndOfMessage)
            break
    assert data == body


@pytest.mark.parametrize(
    "header",
    [(b"X", b"a\r\nInjected: yes"), (b"X", b"a\nb"), (b"X", b"\0"), (b"Bad Name", b"v"),
     (b"", b"v"), (b"A:B", b"v")],
)  # fmt: skip
def test_a_header_that_would_break_the_request_is_refused(header: tuple[bytes, bytes]) -> None:
    with pytest.raises(ValueError):
        request_head(b"POST", b"/", [header])
