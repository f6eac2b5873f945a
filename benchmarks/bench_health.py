"""Start → first answer of ``/health`` for ``tron-server`` (issue 29 goal 2), against the
floor of the same run: a Python process that only imports the web stack it serves with.

    uv run python benchmarks/bench_health.py --rounds 5

Each round starts a server on a new home (the schema is created), stops it, then starts
it again on that home (the schema is current: the case the goal is about); rounds are
interleaved with the floor so load affects both alike. Medians are printed.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

BIN = Path(sys.executable).parent
FLOOR = "import uvicorn, starlette.applications, pydantic, pydantic_settings, sqlite3"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _serve(home: str) -> float:
    port = _port()
    env = {**os.environ, "ANTHROPIC_API_KEY": "bench"}
    start = time.perf_counter()
    proc = subprocess.Popen(
        [str(BIN / "tron-server"), "--home", home, "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    try:
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1).read()
                return time.perf_counter() - start
            except OSError:
                time.sleep(0.005)
    finally:
        proc.terminate()
        proc.wait()


def _floor() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", FLOOR], check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    fresh, current, floor = [], [], []
    for _ in range(args.rounds):
        home = tempfile.mkdtemp(prefix="tron-bench-health-")
        fresh.append(_serve(home))
        floor.append(_floor())
        current.append(_serve(home))
    print(f"load average {os.getloadavg()[0]:.2f}")
    for name, values in (("new home", fresh), ("schema current", current), ("floor", floor)):
        rounds = [round(v, 3) for v in values]
        print(f"{name:15} median {statistics.median(values):.3f} s  {rounds}")
    print(f"schema current / floor: {statistics.median(current) / statistics.median(floor):.2f}x")


if __name__ == "__main__":
    main()
