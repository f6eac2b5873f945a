"""Text helpers: hashing, output capping, line numbering."""

from __future__ import annotations

import hashlib
from collections import deque

MAX_OUTPUT_CHARS = 30_000


def sha256_hex(data: bytes) -> str:
    """The content hash recorded in file.* events (``sha256:`` prefix omitted)."""
    return hashlib.sha256(data).hexdigest()


def number_line(number: int, text: str) -> str:
    """One line the way ``cat -n`` prints it: the number right-aligned in 6 columns, a tab."""
    return f"{number:>6}\t{text}"


def truncation_marker(dropped: int) -> str:
    return f"\n\n[truncated {dropped} characters]\n\n"


def cap_text(
    text: str, limit: int = MAX_OUTPUT_CHARS, head_share: float = 1 / 3
) -> tuple[str, int]:
    """Keep the head and the tail of ``text`` within ``limit`` characters.

    Returns the capped text and the number of characters dropped (0 if none).
    The tail gets the larger share: errors and summaries come last.
    """
    if len(text) <= limit:
        return text, 0
    head = int(limit * head_share)
    tail = limit - head
    dropped = len(text) - head - tail
    return text[:head] + truncation_marker(dropped) + text[-tail:], dropped


class HeadTailBuffer:
    """Accumulates streamed text keeping at most ``limit`` characters: a head and a tail.

    Memory stays bounded whatever the command prints.
    """

    def __init__(self, limit: int = MAX_OUTPUT_CHARS, head_share: float = 1 / 3) -> None:
        self.head_limit = int(limit * head_share)
        self.tail_limit = limit - self.head_limit
        self._head: list[str] = []
        self._head_len = 0
        self._tail: deque[str] = deque()
        self._tail_len = 0
        self.total = 0

    def append(self, chunk: str) -> None:
        self.total += len(chunk)
        if self._head_len < self.head_limit:
            take = chunk[: self.head_limit - self._head_len]
            self._head.append(take)
            self._head_len += len(take)
            chunk = chunk[len(take) :]
        if not chunk:
            return
        self._tail.append(chunk)
        self._tail_len += len(chunk)
        while self._tail and self._tail_len - len(self._tail[0]) >= self.tail_limit:
            self._tail_len -= len(self._tail.popleft())

    @property
    def dropped(self) -> int:
        return max(0, self.total - self._head_len - min(self._tail_len, self.tail_limit))

    def text(self) -> str:
        head = "".join(self._head)
        tail = "".join(self._tail)
        if len(tail) > self.tail_limit:
            tail = tail[-self.tail_limit :]
        dropped = self.total - len(head) - len(tail)
        if dropped > 0:
            return head + truncation_marker(dropped) + tail
        return head + tail
