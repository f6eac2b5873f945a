"""An incremental Server-Sent Events decoder (the WHATWG rules, no dependencies).

Bytes arrive cut anywhere: inside a UTF-8 character, between the CR and LF of a
CRLF, inside a field name. ``SSEDecoder.feed`` buffers what it cannot finish yet,
so any chunking of the same bytes yields the same events.
"""

from __future__ import annotations

import codecs
from collections.abc import AsyncIterable, AsyncIterator, Iterator
from dataclasses import dataclass

__all__ = ["SSEDecoder", "ServerSentEvent", "iter_sse"]


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    """One dispatched event."""

    event: str
    data: str
    id: str | None = None
    retry: int | None = None


class SSEDecoder:
    """Feed bytes, get events."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""  # text after the last complete line
        self._skip_lf = False  # the previous chunk ended in CR: a leading LF is its pair
        self._started = False
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None
        self._last_id: str | None = None
        self._retry: int | None = None

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """Decode a chunk; return the events it completed."""
        return list(self._lines_to_events(self._decoder.decode(chunk)))

    def flush(self) -> list[ServerSentEvent]:
        """End of stream: a final event without its blank line is dispatched too."""
        text = self._decoder.decode(b"", final=True)
        events = list(self._lines_to_events(text))
        if self._pending:
            line, self._pending = self._pending, ""
            event = self._line(line)
            if event is not None:
                events.append(event)
        event = self._dispatch()
        if event is not None:
            events.append(event)
        return events

    def _lines_to_events(self, text: str) -> Iterator[ServerSentEvent]:
        if not text:
            return
        if not self._started:
            self._started = True
            if text.startswith("\ufeff"):
                text = text[1:]
        if self._skip_lf:
            self._skip_lf = False
            if text.startswith("\n"):
                text = text[1:]
        buffer = self._pending + text
        if "\r" not in buffer:
            # The usual stream (LF line ends only): one split instead of a find per line.
            lines = buffer.split("\n")
            self._pending = lines.pop()
            for line in lines:
                if line:
                    if line[0] != ":":
                        self._line(line)
                else:
                    event = self._dispatch()
                    if event is not None:
                        yield event
            return
        start = 0
        length = len(buffer)
        while True:
            cr = buffer.find("\r", start)
            lf = buffer.find("\n", start)
            if cr < 0 and lf < 0:
                break
            if cr < 0 or (0 <= lf < cr):
                end, next_start = lf, lf + 1
            elif cr + 1 < length:
                end = cr
                next_start = cr + 2 if buffer[cr + 1] == "\n" else cr + 1
            else:
                # A CR at the very end: the line is over, and an LF may follow.
                end, next_start = cr, cr + 1
                self._skip_lf = True
            event = self._line(buffer[start:end])
            if event is not None:
                yield event
            start = next_start
        self._pending = buffer[start:]

    def _line(self, line: str) -> ServerSentEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._last_id = value
        elif name == "retry" and value.isdigit():
            self._retry = int(value)
        return None

    def _dispatch(self) -> ServerSentEvent | None:
        data, event, retry = self._data, self._event, self._retry
        self._data, self._event, self._retry = [], "", None
        if not data:
            return None
        return ServerSentEvent(event or "message", "\n".join(data), self._last_id, retry)


async def iter_sse(chunks: AsyncIterable[bytes]) -> AsyncIterator[ServerSentEvent]:
    """The events of a byte stream (e.g. ``httpx.Response.aiter_bytes()``)."""
    decoder = SSEDecoder()
    async for chunk in chunks:
        for event in decoder.feed(chunk):
            yield event
    for event in decoder.flush():
        yield event
