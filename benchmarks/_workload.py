"""Shared pieces of the benchmark suite: realistic payloads and timing helpers.

Text is drawn from a Zipf-distributed vocabulary (a few hundred real English and
programming words at the head, ~20,000 made-up words in the tail), so the FTS5
index sees a realistic mix of very common and rare terms.
"""

from __future__ import annotations

import gc
import itertools
import os
import random
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

HEAD_WORDS = [
    "the",
    "to",
    "of",
    "and",
    "a",
    "in",
    "is",
    "it",
    "you",
    "that",
    "for",
    "this",
    "on",
    "be",
    "with",
    "as",
    "are",
    "not",
    "can",
    "we",
    "if",
    "file",
    "function",
    "error",
    "test",
    "code",
    "line",
    "return",
    "value",
    "the",
    "will",
    "use",
    "need",
    "should",
    "then",
    "from",
    "run",
    "fix",
    "let",
    "check",
    "now",
    "update",
    "change",
    "add",
    "new",
    "call",
    "type",
    "data",
    "read",
    "write",
    "path",
    "config",
    "module",
    "class",
    "import",
    "object",
    "list",
    "string",
    "number",
    "true",
    "false",
    "output",
    "input",
    "result",
    "build",
    "server",
    "client",
    "request",
    "response",
    "session",
    "event",
    "store",
    "query",
    "index",
    "search",
    "table",
    "database",
    "commit",
    "branch",
    "merge",
    "review",
    "debug",
    "log",
    "trace",
    "stack",
    "frame",
    "thread",
    "process",
    "memory",
    "cache",
    "buffer",
    "stream",
    "socket",
    "timeout",
    "retry",
    "parse",
    "format",
    "json",
    "yaml",
    "schema",
    "field",
    "key",
    "map",
    "array",
    "loop",
    "method",
    "variable",
    "argument",
    "parameter",
    "default",
    "option",
    "flag",
    "command",
    "shell",
    "script",
    "python",
    "rust",
    "node",
    "package",
    "version",
    "install",
    "dependency",
    "lock",
    "build",
    "compile",
    "link",
    "binary",
    "release",
    "deploy",
    "docker",
    "image",
    "container",
    "cluster",
    "service",
    "endpoint",
    "route",
    "handler",
    "middleware",
    "auth",
    "token",
    "user",
    "password",
    "permission",
    "role",
    "policy",
    "rule",
    "hook",
    "plugin",
    "extension",
    "component",
    "render",
    "state",
    "props",
    "effect",
    "context",
    "provider",
    "reducer",
    "action",
    "dispatch",
    "async",
    "await",
    "promise",
    "future",
    "task",
    "queue",
    "worker",
    "job",
    "schedule",
    "cron",
    "batch",
    "pipeline",
    "migration",
    "upgrade",
    "downgrade",
    "revision",
    "column",
    "row",
    "insert",
    "delete",
    "select",
    "join",
    "where",
    "order",
    "group",
    "limit",
    "offset",
    "cursor",
    "page",
    "size",
    "count",
    "total",
    "sum",
    "average",
    "metric",
]

_SYLLABLES = [
    "ka",
    "ri",
    "to",
    "mu",
    "ne",
    "sa",
    "lo",
    "vi",
    "de",
    "po",
    "ra",
    "ze",
    "qu",
    "fi",
    "ju",
    "ban",
    "tor",
    "mel",
    "vas",
    "kin",
    "dor",
    "sul",
    "pra",
    "gle",
    "tri",
    "zon",
    "mix",
    "lux",
    "cor",
    "fen",
    "dal",
    "rin",
    "bos",
    "tep",
    "wal",
    "yor",
    "hul",
]


def _tail_words(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    seen = set(HEAD_WORDS)
    out: list[str] = []
    while len(out) < n:
        w = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))
        if w not in seen:
            seen.add(w)
            out.append(w)
    return out


VOCAB: list[str] = list(dict.fromkeys(HEAD_WORDS)) + _tail_words(20_000)
_CUM_WEIGHTS = list(itertools.accumulate(1.0 / (rank**1.07) for rank in range(1, len(VOCAB) + 1)))


class TextGen:
    """Deterministic Zipf text."""

    def __init__(self, seed: int = 1) -> None:
        self.rng = random.Random(seed)

    def words(self, n: int) -> list[str]:
        return self.rng.choices(VOCAB, cum_weights=_CUM_WEIGHTS, k=n)

    def sentence_text(self, n_words: int) -> str:
        words = self.words(n_words)
        out: list[str] = []
        for i in range(0, len(words), 12):
            chunk = words[i : i + 12]
            chunk[0] = chunk[0].capitalize()
            out.append(" ".join(chunk) + ".")
        return " ".join(out)

    def chars(self, n_chars: int) -> str:
        """About ``n_chars`` characters of text."""
        text = self.sentence_text(max(1, n_chars // 6))
        while len(text) < n_chars:
            text += " " + self.sentence_text(8)
        return text[:n_chars].rstrip()


MODEL = "claude-sonnet-4-5"


def user_payload(gen: TextGen, turn: int, size: int = 640) -> dict[str, Any]:
    """A message.user payload whose JSON is about ``size`` + 30 bytes."""
    return {"content": gen.chars(size), "turn": turn}


def assistant_payload(
    gen: TextGen, turn: int, size: int = 520, tools: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """A message.assistant payload (text block, usage, stop reason, model): ~700 bytes JSON."""
    content: list[dict[str, Any]] = [{"type": "text", "text": gen.chars(size)}]
    content.extend(tools or [])
    return {
        "content": content,
        "turn": turn,
        "tokenUsage": {
            "inputTokens": gen.rng.randint(1_000, 60_000),
            "outputTokens": gen.rng.randint(20, 900),
            "cacheReadTokens": gen.rng.randint(0, 50_000),
            "cacheCreationTokens": gen.rng.randint(0, 2_000),
        },
        "stopReason": "tool_use" if tools else "end_turn",
        "model": MODEL,
    }


def message_stream(n: int, seed: int = 1) -> list[tuple[str, dict[str, Any]]]:
    """``n`` alternating message.user / message.assistant events of ~700-byte payloads."""
    gen = TextGen(seed)
    out: list[tuple[str, dict[str, Any]]] = []
    for i in range(n):
        turn = i // 2 + 1
        if i % 2 == 0:
            out.append(("message.user", user_payload(gen, turn)))
        else:
            out.append(("message.assistant", assistant_payload(gen, turn)))
    return out


def index_text(event_type: str, payload: dict[str, Any]) -> str:
    """What a bare loop would index: the message text (same as the store for these types)."""
    content = payload.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(b["text"] for b in content if b.get("type") == "text")


# --- timing -----------------------------------------------------------------------------


def timed(fn: Callable[[], Any]) -> float:
    """Seconds taken by ``fn()`` (garbage collection left on, as in production)."""
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def percentile(xs: list[float], p: float) -> float:
    s = sorted(xs)
    k = (len(s) - 1) * p
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def rotations(names: list[str], rounds: int) -> Iterator[tuple[int, list[str]]]:
    """Round ``r`` runs every contender once, in an order rotated by ``r``, so a
    noisy stretch of the machine does not always hit the same contender."""
    for r in range(rounds):
        k = r % len(names)
        yield r, names[k:] + names[:k]


def fmt_ms(seconds: float) -> str:
    ms = seconds * 1000
    if ms >= 100:
        return f"{ms:,.0f} ms"
    if ms >= 10:
        return f"{ms:.1f} ms"
    return f"{ms:.2f} ms"


def machine() -> str:
    import platform
    import sqlite3
    import sys

    return (
        f"Python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version}, "
        f"{platform.machine()}, {os.cpu_count()} CPUs"
    )


def collect() -> None:
    gc.collect()
