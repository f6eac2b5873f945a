"""HTTP/1.1 for one client request at a time: the request's bytes and an incremental
parser of the response (RFC 9112).

What :mod:`tron_llm._transport` needs and no more: no pipelining, no upgrades. A model's
streamed reply arrives in many small reads, and a general-purpose state machine (h11)
spends more per read than the reading (~20 µs a chunk, issue 29): this parser finds a
whole head with one search and each chunk of a chunked body with two. It refuses what
it cannot frame safely (a malformed head or chunk, conflicting lengths, a head beyond
64 KiB) with :class:`ProtocolError`.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["MAX_HEAD", "ProtocolError", "ResponseParser", "request_head"]

MAX_HEAD = 64 * 1024
"""The largest response head (status line and headers) accepted, in bytes."""

_FORBIDDEN = (b"\r", b"\n", b"\0")


class ProtocolError(Exception):
    """The server's bytes are not a response this client can read."""


def request_head(method: bytes, target: bytes, headers: Iterable[tuple[bytes, bytes]]) -> bytes:
    """A request's head; raises ``ValueError`` for a header that would break it (a line
    break or NUL in a name or value, an empty name, a space or colon in a name)."""
    lines = [method + b" " + target + b" HTTP/1.1\r\n"]
    for name, value in headers:
        if not name or b":" in name or b" " in name or b"\t" in name:
            raise ValueError(f"invalid header name {name!r}")
        for bad in _FORBIDDEN:
            if bad in name or bad in value:
                raise ValueError(f"invalid character in header {name!r}")
        lines.append(name + b": " + value.strip(b" \t") + b"\r\n")
    lines.append(b"\r\n")
    if any(b" " in part for part in (method, target)):
        raise ValueError("a space in the method or the target")
    return b"".join(lines)


# The body's framing (RFC 9112 §6.3).
_NONE, _LENGTH, _CHUNKED, _CLOSE = range(4)
# Where a chunked body is.
_SIZE, _DATA, _DATA_END, _TRAILERS = range(4)


class ResponseParser:
    """The response to one request, fed the bytes as they arrive.

    :meth:`head` gives the status and headers once they are in; then :meth:`body`
    returns the body's bytes received so far, and ``done`` says when the body ended.
    :meth:`eof` tells it the server closed. ``keep_alive`` says, once done, whether the
    connection may carry another request."""

    def __init__(self, method: bytes = b"POST") -> None:
        self._method = method
        self._buffer = bytearray()
        self._headed = False
        self._framing = _NONE
        self._remaining = 0  # bytes left of the body (_LENGTH) or of the chunk (_DATA)
        self._chunk_state = _SIZE
        self._eof = False
        self.done = False
        self.keep_alive = False
        self.status = 0
        self.reason = b""
        self.headers: list[tuple[bytes, bytes]] = []

    def feed(self, data: bytes) -> None:
        """Bytes from the server."""
        self._buffer += data

    def eof(self) -> None:
        """The server closed its side."""
        self._eof = True

    @property
    def pending(self) -> int:
        """Bytes received and not parsed yet."""
        return len(self._buffer)

    # --- the head ---------------------------------------------------------------------

    def head(self) -> bool:
        """Whether the final head (not a 1xx) is in; parses it when it is."""
        while not self._headed:
            buffer = self._buffer
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(buffer) > MAX_HEAD:
                    raise ProtocolError(f"a response head longer than {MAX_HEAD} bytes")
                if self._eof:
                    raise ProtocolError(
                        "the server closed the connection without a response"
                        if not buffer
                        else "the server closed the connection in the middle of the response head"
                    )
                return False
            if end > MAX_HEAD:
                raise ProtocolError(f"a response head longer than {MAX_HEAD} bytes")
            text = bytes(buffer[:end])
            del buffer[: end + 4]
            self._parse_head(text)
        return True

    def _parse_head(self, text: bytes) -> None:
        lines = text.split(b"\r\n")
        status_line = lines[0]
        version, _, rest = status_line.partition(b" ")
        code, _, reason = rest.partition(b" ")
        if version not in (b"HTTP/1.1", b"HTTP/1.0") or len(code) != 3 or not code.isdigit():
            raise ProtocolError(f"not an HTTP/1.1 status line: {status_line[:100]!r}")
        status = int(code)
        headers: list[tuple[bytes, bytes]] = []
        for line in lines[1:]:
            name, colon, value = line.partition(b":")
            if not colon or not name or name != name.strip() or line[:1] in (b" ", b"\t"):
                raise ProtocolError(f"a malformed header line: {line[:100]!r}")
            headers.append((name, value.strip(b" \t")))
        if status < 200:
            if status == 101:
                raise ProtocolError("the server switched protocols, which this client never asks")
            return  # 100 Continue and other interim responses: the final one follows
        self._headed = True
        self.status, self.reason, self.headers = status, reason, headers
        self._frame(version, headers)

    def _frame(self, version: bytes, headers: list[tuple[bytes, bytes]]) -> None:
        connection = b""
        encodings: list[bytes] = []
        lengths: set[bytes] = set()
        for name, value in headers:
            lower = name.lower()
            if lower == b"transfer-encoding":
                encodings += [e.strip().lower() for e in value.split(b",") if e.strip()]
            elif lower == b"content-length":
                lengths.update(v.strip() for v in value.split(b","))
            elif lower == b"connection":
                connection += b"," + value.lower()
        closes = b"close" in connection or (
            version == b"HTTP/1.0" and b"keep-alive" not in connection
        )
        if self._method == b"HEAD" or self.status in (204, 304):
            self._framing = _NONE
        elif encodings:
            if encodings[-1] != b"chunked":
                self._framing, closes = _CLOSE, True  # RFC 9112 §6.3 (4): read to the close
            else:
                self._framing = _CHUNKED
        elif lengths:
            if len(lengths) != 1 or not next(iter(lengths)).isdigit():
                raise ProtocolError(f"an invalid Content-Length: {sorted(lengths)!r}")
            self._remaining = int(next(iter(lengths)))
            self._framing = _LENGTH if self._remaining else _NONE
        else:
            self._framing, closes = _CLOSE, True
        self.keep_alive = not closes
        if self._framing == _NONE:
            self._finish()

    # --- the body ---------------------------------------------------------------------

    def body(self) -> list[bytes]:
        """The body's bytes that arrived (an empty list: wait for more, unless done);
        raises :class:`ProtocolError` if the server closed before the body's end."""
        if self.done:
            return []
        framing = self._framing
        buffer = self._buffer
        if framing == _LENGTH:
            if not buffer:
                self._check_eof()
                return []
            take = min(len(buffer), self._remaining)
            out = bytes(buffer[:take]) if take < len(buffer) else bytes(buffer)
            del buffer[:take]
            self._remaining -= take
            if not self._remaining:
                self._finish()
            return [out]
        if framing == _CLOSE:
            rest = [bytes(buffer)] if buffer else []
            buffer.clear()
            if self._eof:
                self._finish()
            return rest
        return self._chunks()

    def _chunks(self) -> list[bytes]:
        buffer = self._buffer
        out: list[bytes] = []
        pos = 0
        size = len(buffer)
        while True:
            state = self._chunk_state
            if state == _DATA:
                take = min(size - pos, self._remaining)
                if take <= 0:
                    break
                out.append(bytes(buffer[pos : pos + take]))
                pos += take
                self._remaining -= take
                if self._remaining:
                    break
                self._chunk_state = _DATA_END
            elif state == _SIZE:
                end = buffer.find(b"\r\n", pos)
                if end < 0:
                    if size - pos > 1024:
                        raise ProtocolError("a chunk size line longer than 1024 bytes")
                    break
                digits = bytes(buffer[pos:end]).partition(b";")[0].strip()
                try:
                    chunk = int(digits, 16)
                except ValueError:
                    raise ProtocolError(f"an invalid chunk size: {digits[:40]!r}") from None
                if chunk < 0 or digits[:1] in (b"+", b"-") or digits[:2].lower() == b"0x":
                    raise ProtocolError(f"an invalid chunk size: {digits[:40]!r}")
                pos = end + 2
                if chunk:
                    self._remaining, self._chunk_state = chunk, _DATA
                else:
                    self._chunk_state = _TRAILERS
            elif state == _DATA_END:
                if size - pos < 2:
                    break
                if buffer[pos : pos + 2] != b"\r\n":
                    raise ProtocolError("a chunk not followed by CRLF")
                pos += 2
                self._chunk_state = _SIZE
            else:  # trailers: header lines up to an empty one, ignored
                end = buffer.find(b"\r\n", pos)
                if end < 0:
                    if size - pos > MAX_HEAD:
                        raise ProtocolError(f"trailers longer than {MAX_HEAD} bytes")
                    break
                empty = end == pos
                pos = end + 2
                if empty:
                    del buffer[:pos]
                    self._finish()
                    return out
        del buffer[:pos]
        if not out:
            self._check_eof()
        return out

    def _check_eof(self) -> None:
        if self._eof:
            raise ProtocolError("the server closed the connection in the middle of the response")

    def _finish(self) -> None:
        self.done = True
        if self._buffer:  # bytes beyond the response: the connection is not in step
            self.keep_alive = False
