"""The server's allocator settings (tron_server.heap): a bounded number of glibc arenas
unless the user chose one, and freed pages handed back."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tron_server import heap

needs_glibc = pytest.mark.skipif(heap._libc() is None, reason="glibc is not the allocator here")


def _in_child(code: str, env: dict[str, str] | None = None) -> str:
    """Run ``code`` in a fresh interpreter (mallopt changes the process for good)."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    return done.stdout.strip()


@needs_glibc
def test_arenas_are_limited_unless_the_variable_says_otherwise() -> None:
    code = (
        "import threading\n"
        "from tron_server.heap import limit_malloc_arenas\n"
        "print(limit_malloc_arenas(1))\n"
    )
    assert _in_child(code, env={"PATH": "/usr/bin:/bin"}) == "True"
    assert _in_child(code, env={"PATH": "/usr/bin:/bin", "MALLOC_ARENA_MAX": "4"}) == "False"


@needs_glibc
def test_release_is_throttled() -> None:
    assert heap.release_memory(min_interval=0.0) is True
    assert heap.release_memory(min_interval=3600.0) is False
