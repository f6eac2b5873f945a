"""A one-line progress bar on stderr, drawn only when stderr is a terminal."""

from __future__ import annotations

import sys
import time
from typing import TextIO

#: Redraw at most this often (seconds).
INTERVAL_S = 0.2
WIDTH = 24


class Progress:
    """``update(done, total)`` redraws ``label  45% [#####     ] 450,000/1,000,000 events``;
    ``close()`` clears the line. Does nothing when ``stream`` is not a TTY."""

    def __init__(self, label: str, unit: str = "events", stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty()
        self.label = label
        self.unit = unit
        self.started = time.monotonic()
        self._drawn_at = 0.0
        self._drawn = False

    def update(self, done: int, total: int | None = None, *, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._drawn_at < INTERVAL_S:
            return
        self._drawn_at = now
        rate = done / max(now - self.started, 1e-6)
        if total:
            share = min(done / total, 1.0)
            bar = "#" * round(share * WIDTH)
            text = (
                f"{self.label} {share:4.0%} [{bar:<{WIDTH}}] {done:,}/{total:,} {self.unit}"
                f"  {rate:,.0f}/s"
            )
        else:
            text = f"{self.label} {done:,} {self.unit}  {rate:,.0f}/s"
        self.stream.write("\r" + text + "\x1b[K")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self.enabled and self._drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
