"""Start → first answer of ``/health`` for ``tron-server`` (issue 29 goal 2), against the
floor of the same run: a Python process that only imports the web stack it serves with.

    uv run python benchmarks/bench_health.py --rounds 5
    git archive OLD tron_server/src tron_events/src tron_llm/src | tar -x -C /tmp/old
    uv run python benchmarks/bench_health.py --rounds 5 --compare /tmp/old
    uv run python benchmarks/bench_health.py --rounds 5 --compare /tmp/old --print-mode

Each round starts a server on a new home (the schema is created), stops it, then starts
it again on that home (the schema is current: the case the goal is about); rounds are
interleaved with the floor (and with ``--compare``'s code, run from its source tree
through ``PYTHONPATH`` on the same home) so load affects all alike. Medians are printed.

Two times per start: the first answer of ``/health``, and the first answer saying
``"ready": true`` (``/rpc`` serves then; a server whose ``/health`` has no ``ready`` is
ready when it answers); and, for a start on an existing home, the CPU seconds the
server had used by then ("ready CPU": what the start costs, less sensitive to the
machine's load than the wall clock). Every source tree is byte-compiled first, as an installed
package is: a start must not pay for compiling our modules (``PYTHONDONTWRITEBYTECODE``
would otherwise make every start compile what changed).

``--print-mode`` adds, in the same rounds, ``tron -p`` with no server running on an
existing home: its start to the first model request (the scripted model of
``bench_peers.py``), the server started in the background by the client as a user meets
it (then stopped), for this code and ``--compare``'s; and the CPU seconds ``tron`` and
that server had used when the request arrived ("CPU": the work on the way, which the
machine's load does not stretch as it does the wall clock).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
FLOOR = "import uvicorn, starlette.applications, pydantic, pydantic_settings, sqlite3"
PACKAGES = ("tron_server", "tron_events", "tron_llm")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _serve(home: str, source: Path | None = None) -> tuple[float, float, float]:
    """Seconds from the start to the first /health answer, and to the first ready one;
    the CPU seconds the server had used when it answered ready (less sensitive to the
    machine's load than the wall clock; the /health polls are in it too)."""
    port = _port()
    env = {**os.environ, "ANTHROPIC_API_KEY": "bench"}
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join(str(source / p / "src") for p in PACKAGES)
    start = time.perf_counter()
    proc = subprocess.Popen(
        [str(BIN / "tron-server"), "--home", home, "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    first: float | None = None
    try:
        while True:
            try:
                url = f"http://127.0.0.1:{port}/health"
                body = json.loads(urllib.request.urlopen(url, timeout=5).read())
            except OSError:
                time.sleep(0.005)
                continue
            now = time.perf_counter() - start
            first = now if first is None else first
            if body.get("ready", True):
                return first, now, _cpu_seconds(proc.pid)
            time.sleep(0.005)
    finally:
        proc.terminate()
        proc.wait()


class PrintMode:
    """``tron -p`` against bench_peers' scripted model, no server running (see above).

    Besides the wall clock, the CPU seconds ``tron`` and the server it started had used
    when the model saw the first request (read from ``/proc`` as the request arrives: the
    server's record names it, and ``tron`` is its parent until it exits)."""

    def __init__(self, work: Path) -> None:
        import bench_peers

        self._peers = bench_peers
        self.cpu_at_request: float | None = None
        home = work / "home-tron" / ".tron"
        outer = self

        class Model(bench_peers.Model):
            async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
                if scope["type"] == "http" and outer.cpu_at_request is None:
                    outer.cpu_at_request = _tron_cpu_seconds(home)
                await super().__call__(scope, receive, send)

        self.model = Model()
        self._serving = bench_peers.serve_model(self.model)
        url = self._serving.__enter__()
        self.peer = bench_peers.make_peer("tron", url, work, work / "peers", "Say hi.")
        self.run()  # the home and its database exist before the rounds

    def run(self, source: Path | None = None) -> tuple[float, float]:
        """Seconds from the start to the first model request, and the CPU seconds then."""
        peer = self.peer
        env = dict(peer.env)
        if source is not None:
            env["PYTHONPATH"] = os.pathsep.join(str(source / p / "src") for p in PACKAGES)
        self.cpu_at_request = None
        run = self._peers.run_peer(
            self._peers.Peer(peer.name, peer.argv, env, peer.cwd), self.model, 0, 120
        )
        self._peers.stop_tron_server(peer)
        if run.first_request is None:
            raise SystemExit(f"tron -p made no model request: {run.error}")
        return run.first_request, self.cpu_at_request or float("nan")

    def close(self) -> None:
        self._serving.__exit__(None, None, None)


def _tron_cpu_seconds(home: Path) -> float:
    """CPU seconds of the server recorded in ``home`` and of its parent (``tron``)."""
    try:
        pid = int(json.loads((home / "server.json").read_text())["pid"])
        parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        return _cpu_seconds(pid) + _cpu_seconds(parent)
    except (OSError, ValueError, KeyError):
        return float("nan")


def _floor() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", FLOOR], check=True)
    return time.perf_counter() - start


def _compile(tree: Path) -> None:
    for package in PACKAGES:
        compileall.compile_dir(tree / package / "src", quiet=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--compare", type=Path, help="a source tree of other code to run too")
    parser.add_argument("--print-mode", action="store_true", help="also time tron -p")
    args = parser.parse_args()
    _compile(ROOT)
    if args.compare is not None:
        _compile(args.compare)
    series: dict[str, list[float]] = {}

    def add(name: str, value: float) -> None:
        series.setdefault(name, []).append(value)

    loads = [os.getloadavg()[0]]
    printing = (
        PrintMode(Path(tempfile.mkdtemp(prefix="tron-bench-p-"))) if args.print_mode else None
    )
    for _ in range(args.rounds):
        home = tempfile.mkdtemp(prefix="tron-bench-health-")
        answer, ready, _ = _serve(home)
        add("new home: answers", answer)
        add("new home: ready", ready)
        add("floor", _floor())
        answer, ready, cpu = _serve(home)
        add("current: answers", answer)
        add("current: ready", ready)
        add("current: ready CPU", cpu)
        if args.compare is not None:
            answer, ready, cpu = _serve(home, args.compare)
            add("compared: answers", answer)
            add("compared: ready", ready)
            add("compared: ready CPU", cpu)
        if printing is not None:
            request, cpu = printing.run()
            add("tron -p: request", request)
            add("tron -p: CPU", cpu)
            if args.compare is not None:
                request, cpu = printing.run(args.compare)
                add("compared -p: request", request)
                add("compared -p: CPU", cpu)
        loads.append(os.getloadavg()[0])
    if printing is not None:
        printing.close()
    print(f"load average (1 min) per round: {', '.join(f'{x:.2f}' for x in loads)}")
    floor = statistics.median(series["floor"])
    for name, values in series.items():
        rounds = ", ".join(f"{v:.3f}" for v in values)
        median = statistics.median(values)
        print(f"{name:20} median {median:.3f} s  {median / floor:5.2f}x floor  [{rounds}]")


if __name__ == "__main__":
    main()
