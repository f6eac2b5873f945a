"""Tron against the coding agents users compare it with, driven by one scripted model.

Peers are installed from npm into a cache (``benchmarks/.data/peers``; ``--peers-dir``):
Claude Code (``@anthropic-ai/claude-code``), pi (``@mariozechner/pi-coding-agent``),
Codex (``@openai/codex``) and opencode (``opencode-ai``). A peer that cannot be installed
or run here is skipped with the reason (no npm, a failed install, a CLI that exits
without asking the model).

One scripted model server (in this process, on 127.0.0.1) speaks each peer's provider
wire format: the Anthropic Messages SSE stream (Tron, Claude Code, pi, opencode) and the
OpenAI Responses SSE stream (Codex). It is stateless: while a request carries fewer than
``--tools`` tool results, it answers with one call of the request's shell tool (``Bash``,
``bash``, ``shell`` ... found in the request's tool list, its arguments filled from the
tool's schema) running ``echo hi``; then with a short text. It notes when each request
arrives.

Scenarios, each in interleaved rounds (the order of the peers rotates), medians:

* **one-shot**: print mode (``tron -p``, ``claude -p``, ``pi -p``, ``codex exec``,
  ``opencode run``) with no Tron server running: the CLI's start to the first model
  request that offers tools. For Tron this includes starting ``tron-server`` in the
  background on an existing home (its database exists; the server is stopped after).
* **tool round trip**: the same command with a prompt the model answers with ``--tools``
  sequential shell calls: the median interval between consecutive model requests (a tool
  call's round trip: the CLI runs ``echo``, records it, asks again). Tron's server is
  running here (a second turn of a started server).
* **floor** (contender ``floor``, not a peer): ``benchmarks/_floor_agent.py``, the least a
  Python agent on Tron's libraries does (httpx, an asyncio ``bash -c`` per call, no store):
  what Tron's figures cannot go below on this machine.
* **floor-stack** (contender, not a peer): the same floor agent, which first imports the
  libraries Tron's design fixes for its server (``uvicorn``, ``starlette``, ``pydantic``,
  ``pydantic_settings``, ``sqlite3``: what ``bench_health.py`` calls the web stack's floor)
  and does nothing with them: the least any ``tron -p`` that starts ``tron-server`` pays
  before its first request, whatever Tron's own code does.
* **peak PSS**: the largest sum of ``Pss`` (``/proc/PID/smaps_rollup``) over the CLI's
  process tree (and, for Tron, its server) sampled every 20 ms during the tool turn.
* **resume** (``--resume-turns``, default 500 and 2,000): a generated session of that
  many turns, written in the agent's own store (``_peer_sessions.py``: Claude Code's
  project JSONL, pi's session file, Codex's rollout, opencode's database, Tron's event
  store), is resumed in print mode with the agent's own flag (``claude -p --resume ID``,
  ``pi -p --session FILE``, ``codex exec resume ID``, ``opencode run --session ID``,
  ``tron -p --resume ID``; not the floor, which keeps no session) and a one-line prompt:
  the CLI's start to its first model request that offers tools. Tron's server is running
  (started by the round's earlier runs; it has not read the session); Tron also resumes
  another such session with no server running ("tron, no server": ``tron`` starts one,
  stopped after; its baseline is the one-shot). Each round resumes a session of its own,
  written before the first round. The scripted model counts the generated turns the
  request carries (each user message is marked ``(turn N of T)``) and its history items
  (``messages``, or the Responses ``input``): a run that did not send all T turns is
  invalid and left out of the medians.

Before the rounds each agent runs once unmeasured, so that its home exists as a user's
does (Tron's and opencode's databases, into which the sessions are then written).

    uv run python benchmarks/bench_peers.py                 # all peers, 3 rounds
    uv run python benchmarks/bench_peers.py --peers tron,claude --rounds 5
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _peer_sessions as sessions
import uvicorn
from _peer_sessions import Turn, turns_seen

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / ".data"
PACKAGES = {
    "claude": "@anthropic-ai/claude-code",
    "pi": "@mariozechner/pi-coding-agent",
    "codex": "@openai/codex",
    "opencode": "opencode-ai",
}
RESUMABLE = ("tron", "claude", "pi", "codex", "opencode")  # a session writer each
SHELL_TOOLS = ("bash", "shell", "exec_command", "local_shell", "run_shell_command")
MODEL = "claude-sonnet-4-5"


# -- the scripted model ---------------------------------------------------------------


@dataclass
class Seen:
    at: float
    path: str
    has_tools: bool
    results: int
    messages: int  # history items sent: ``messages`` (Anthropic) or ``input`` (Responses)
    turns: int  # distinct generated turns the request carries (_peer_sessions.MARK)


@dataclass
class Model:
    """The stateless scripted model (see the module docstring)."""

    tools: int = 20
    seen: list[Seen] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reset(self, tools: int) -> None:
        with self.lock:
            self.tools = tools
            self.seen = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                pass
            return
        at = time.perf_counter()
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        path = scope["path"]
        try:
            request = json.loads(body) if body else {}
        except ValueError:
            request = {}
        if not path.endswith(("/messages", "/responses")):
            await _json_reply(send, 200, {"data": [], "object": "list"})
            return
        responses = path.endswith("/responses")
        tools = request.get("tools") or []
        results = _count_results(request, responses)
        items = request.get("input" if responses else "messages")
        turns = turns_seen(body.decode(errors="replace"))
        with self.lock:
            self.seen.append(
                Seen(at, path, bool(tools), results, len(items) if isinstance(items, list) else 0,
                     turns)
            )  # fmt: skip
        shell = _shell_tool(tools, responses)
        call = shell is not None and results < self.tools
        if responses:
            events = _responses_stream(call, shell, results)
        else:
            events = _anthropic_stream(call, shell, results, request.get("model", MODEL))
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})  # fmt: skip
        for chunk in events:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})


async def _json_reply(send: Any, status: int, value: Any) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json")]})  # fmt: skip
    await send({"type": "http.response.body", "body": json.dumps(value).encode()})


def _count_results(request: dict[str, Any], responses: bool) -> int:
    if responses:
        return sum(
            1
            for item in request.get("input") or []
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        )
    count = 0
    for message in request.get("messages") or []:
        content = message.get("content")
        if isinstance(content, list):
            count += sum(
                1 for b in content if isinstance(b, dict) and b.get("type") == "tool_result"
            )
    return count


def _shell_tool(tools: list[Any], responses: bool) -> tuple[str, dict[str, Any]] | None:
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        name = str(tool.get("name") or (tool.get("function") or {}).get("name") or "")
        if name.lower() in SHELL_TOOLS:
            schema = tool.get("input_schema") or tool.get("parameters") or {}
            return name, _arguments(schema)
    return None


def _arguments(schema: dict[str, Any]) -> dict[str, Any]:
    props = schema.get("properties") or {}
    args: dict[str, Any] = {}
    for name, spec in props.items():
        kind = spec.get("type") if isinstance(spec, dict) else None
        if name in ("command", "cmd"):
            args[name] = ["bash", "-lc", "echo hi"] if kind == "array" else "echo hi"
        elif name == "description":
            args[name] = "Print hi"
    if not args:
        args["command"] = "echo hi"
    return args


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _anthropic_stream(
    call: bool, shell: tuple[str, dict[str, Any]] | None, n: int, model: str
) -> list[bytes]:
    usage = {"input_tokens": 100, "output_tokens": 1}
    out = [
        _sse("message_start", {"type": "message_start", "message": {
            "id": f"msg_{n}", "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}}),
    ]  # fmt: skip
    if call and shell is not None:
        name, args = shell
        out += [
            _sse("content_block_start", {"type": "content_block_start", "index": 0,
                 "content_block": {"type": "tool_use", "id": f"toolu_{n:04d}", "name": name,
                                   "input": {}}}),
            _sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                 "delta": {"type": "input_json_delta", "partial_json": json.dumps(args)}}),
            _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ]  # fmt: skip
        stop = "tool_use"
    else:
        out += [
            _sse("content_block_start", {"type": "content_block_start", "index": 0,
                 "content_block": {"type": "text", "text": ""}}),
            _sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                 "delta": {"type": "text_delta", "text": "Done."}}),
            _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ]  # fmt: skip
        stop = "end_turn"
    out += [
        _sse("message_delta", {"type": "message_delta",
             "delta": {"stop_reason": stop, "stop_sequence": None},
             "usage": {"output_tokens": 5}}),
        _sse("message_stop", {"type": "message_stop"}),
    ]  # fmt: skip
    return out


def _responses_stream(call: bool, shell: tuple[str, dict[str, Any]] | None, n: int) -> list[bytes]:
    rid = f"resp_{n:04d}"
    base = {"id": rid, "object": "response", "created_at": 0, "model": "gpt-5", "status":
            "in_progress", "output": [], "usage": None}  # fmt: skip
    out = [_sse("response.created", {"type": "response.created", "response": base})]
    if call and shell is not None:
        name, args = shell
        item: dict[str, Any] = {"type": "function_call", "id": f"fc_{n:04d}",
                                "call_id": f"call_{n:04d}", "name": name,
                                "arguments": json.dumps(args), "status": "completed"}  # fmt: skip
    else:
        item = {"type": "message", "id": f"msg_{n:04d}", "role": "assistant", "status":
                "completed", "content": [{"type": "output_text", "text": "Done.",
                                          "annotations": []}]}  # fmt: skip
    out += [
        _sse("response.output_item.added", {"type": "response.output_item.added",
             "output_index": 0, "item": item}),
        _sse("response.output_item.done", {"type": "response.output_item.done",
             "output_index": 0, "item": item}),
        _sse("response.completed", {"type": "response.completed", "response": {
            **base, "status": "completed", "output": [item], "usage": {
                "input_tokens": 100, "output_tokens": 5, "total_tokens": 105,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0}}}}),
    ]  # fmt: skip
    return out


class _Quiet(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@contextlib.contextmanager
def serve_model(model: Model) -> Iterator[str]:
    # IPPROTO_TCP: asyncio sets TCP_NODELAY only then (RESULTS_server.md, method notes).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    server = _Quiet(uvicorn.Config(model, log_level="error", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


# -- the peers --------------------------------------------------------------------------


def install_peers(folder: Path, names: list[str]) -> dict[str, str]:
    """npm install the peers into ``folder``; their versions, or why not."""
    npm = shutil.which("npm")
    out: dict[str, str] = {}
    if npm is None:
        return {n: "skipped: npm is not installed" for n in names}
    folder.mkdir(parents=True, exist_ok=True)
    wanted = [PACKAGES[n] for n in names if n in PACKAGES]
    missing = [p for p in wanted if not (folder / "node_modules" / p / "package.json").exists()]
    if missing:
        done = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--prefix",
                               str(folder), *missing], capture_output=True, text=True,
                              timeout=1800, check=False)  # fmt: skip
        if done.returncode != 0:
            why = (done.stderr or done.stdout).strip().splitlines()[-1:]
            return {n: f"skipped: npm install failed ({' '.join(why)})" for n in names}
    for name in names:
        if name not in PACKAGES:
            continue
        meta = folder / "node_modules" / PACKAGES[name] / "package.json"
        out[name] = json.loads(meta.read_text())["version"] if meta.exists() else "missing"
    return out


@dataclass
class Peer:
    name: str
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    extra_pids: list[int] = field(default_factory=list)


def _bin(folder: Path, name: str) -> str:
    return str(folder / "node_modules" / ".bin" / name)


def make_peer(name: str, base_url: str, work: Path, peers: Path, prompt: str) -> Peer:
    """The command line and environment of ``name`` in print mode against ``base_url``."""
    home = work / f"home-{name}"
    home.mkdir(parents=True, exist_ok=True)
    project = work / "project"
    project.mkdir(exist_ok=True)
    env: dict[str, str] = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "LANG": "C.UTF-8",
           "TERM": "dumb", "NO_COLOR": "1"}  # fmt: skip
    if name == "tron":
        env.update(TRON_HOME=str(home / ".tron"), TRON_ANTHROPIC_BASE_URL=base_url,
                   ANTHROPIC_API_KEY="bench", TRON_ALLOW_BYPASS_PERMISSIONS="true",
                   TRON_PORT=str(_free_port()))  # fmt: skip
        argv = [str(ROOT / ".venv" / "bin" / "tron"), "-p", prompt,
                "--permission-mode", "bypassPermissions"]  # fmt: skip
    elif name in ("floor", "floor-stack"):
        floor = ROOT / "benchmarks" / "_floor_agent.py"
        argv = [str(ROOT / ".venv" / "bin" / "python"), str(floor), base_url, prompt]
        if name == "floor-stack":
            argv.append("--stack")
    elif name == "claude":
        env.update(ANTHROPIC_BASE_URL=base_url, ANTHROPIC_API_KEY="bench",
                   DISABLE_TELEMETRY="1", DISABLE_AUTOUPDATER="1",
                   CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", IS_SANDBOX="1")  # fmt: skip
        argv = [_bin(peers, "claude"), "-p", prompt, "--model", MODEL,
                "--allowedTools", "Bash"]  # fmt: skip
    elif name == "pi":
        agent = home / ".pi" / "agent"
        agent.mkdir(parents=True, exist_ok=True)
        (agent / "models.json").write_text(json.dumps({"providers": {"bench": {
            "baseUrl": base_url, "api": "anthropic-messages", "apiKey": "bench",
            "models": [{"id": MODEL, "name": MODEL, "reasoning": False, "input": ["text"],
                        "contextWindow": 200000, "maxTokens": 8192,
                        "cost": {"input": 0, "output": 0, "cacheRead": 0,
                                 "cacheWrite": 0}}]}}}))  # fmt: skip
        argv = [_bin(peers, "pi"), "-p", prompt, "--provider", "bench", "--model", MODEL]
    elif name == "codex":
        codex_home = home / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True)
        (codex_home / "config.toml").write_text(
            'model = "gpt-5"\nmodel_provider = "bench"\n[model_providers.bench]\n'
            f'name = "bench"\nbase_url = "{base_url}/v1"\nwire_api = "responses"\n'
            'env_key = "BENCH_API_KEY"\n'
        )
        env.update(CODEX_HOME=str(codex_home), BENCH_API_KEY="bench")
        argv = [_bin(peers, "codex"), "exec", "--skip-git-repo-check",
                "--dangerously-bypass-approvals-and-sandbox", prompt]  # fmt: skip
    elif name == "opencode":
        (project / "opencode.json").write_text(json.dumps({
            "$schema": "https://opencode.ai/config.json",
            "provider": {"anthropic": {"options": {"baseURL": f"{base_url}/v1",
                                                   "apiKey": "bench"}}},
            "permission": {"bash": "allow", "edit": "allow"}, "autoupdate": False}))  # fmt: skip
        env.update(ANTHROPIC_API_KEY="bench", OPENCODE_DISABLE_AUTOUPDATE="1")
        argv = [_bin(peers, "opencode"), "run", "--model", f"anthropic/{MODEL}", prompt]
    else:
        raise ValueError(name)
    return Peer(name, argv, env, project)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tron_server_pid(peer: Peer) -> int | None:
    record = Path(peer.env["TRON_HOME"]) / "server.json"
    try:
        return int(json.loads(record.read_text())["pid"])
    except (OSError, ValueError, KeyError):
        return None


def stop_tron_server(peer: Peer) -> None:
    pid = _tron_server_pid(peer)
    if pid is None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat[stat.rfind(")") + 2 :].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def _pss_kb(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
                    break
        except OSError:
            continue
    return total


@dataclass
class Run:
    first_request: float | None  # s from start to the first request with tools
    round_trip: float | None  # median s between consecutive requests with tools
    peak_pss_mb: float
    requests: int
    error: str | None = None
    history_messages: int = 0  # history items in the first request with tools
    history_turns: int = 0  # generated turns it carried (a resume: all of them, or invalid)


def run_peer(peer: Peer, model: Model, tools: int, timeout: float) -> Run:
    model.reset(tools)
    peak = 0
    start = time.perf_counter()
    proc = subprocess.Popen(peer.argv, cwd=peer.cwd, env=peer.env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)  # fmt: skip
    out_err: list[bytes] = []

    def drain() -> None:
        out_err.append(proc.communicate()[1] or b"")

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    deadline = start + timeout
    while proc.poll() is None and time.perf_counter() < deadline:
        pids = _tree(proc.pid)
        if peer.name == "tron":
            server = _tron_server_pid(peer)
            if server is not None:
                pids.append(server)
        peak = max(peak, _pss_kb(pids))
        time.sleep(0.02)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    reader.join(10)
    with model.lock:
        seen = [s for s in model.seen if s.has_tools]
    first = seen[0].at - start if seen else None
    gaps = [b.at - a.at for a, b in itertools.pairwise(seen) if b.results > a.results]
    error = None
    if not seen:
        tail = (out_err[0] if out_err else b"").decode(errors="replace").strip()
        error = f"no model request with tools (exit {proc.returncode}): {tail[-300:]}"
    return Run(first, statistics.median(gaps) if gaps else None, peak / 1024, len(seen), error,
               seen[0].messages if seen else 0, seen[0].turns if seen else 0)  # fmt: skip


# -- resume of generated sessions ---------------------------------------------------------


def write_session(peer: Peer, turns: list[Turn], versions: dict[str, str]) -> list[str]:
    """Write ``turns`` as a session in ``peer``'s own store; the arguments that resume it
    (the peer's own resume flag and the session's id or file)."""
    home = Path(peer.env["HOME"])
    if peer.name == "tron":
        url = f"sqlite:///{Path(peer.env['TRON_HOME']) / 'database' / 'prod.db'}"
        return ["--resume", sessions.tron_session(url, peer.cwd, turns, MODEL)]
    if peer.name == "claude":
        sid = sessions.claude_session(home, peer.cwd, turns, versions["claude"], MODEL)
        return ["--resume", sid]
    if peer.name == "pi":
        return ["--session", str(sessions.pi_session(home, peer.cwd, turns, "bench", MODEL))]
    if peer.name == "codex":
        codex_home = Path(peer.env["CODEX_HOME"])
        return [sessions.codex_session(codex_home, peer.cwd, turns, versions["codex"], "gpt-5")]
    if peer.name == "opencode":
        database = home / ".local" / "share" / "opencode" / "opencode.db"
        sid = sessions.opencode_session(database, peer.cwd, turns, versions["opencode"], MODEL)
        return ["--session", sid]
    raise ValueError(peer.name)


def resume_peer(peer: Peer, resume: list[str]) -> Peer:
    """``peer`` (print mode, a prompt) resuming a session: ``resume`` from write_session."""
    argv = list(peer.argv)
    if peer.name == "codex":  # codex exec resume [OPTIONS] SESSION_ID PROMPT
        at = argv.index("exec") + 1
        argv = [*argv[:at], "resume", *argv[at:-1], *resume, argv[-1]]
    else:
        argv += resume
    return Peer(peer.name, argv, peer.env, peer.cwd)


# -- the benchmark ------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peers", default="tron,claude,pi,codex,opencode")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tools", type=int, default=20)
    parser.add_argument("--resume-turns", default="500,2000",
                        help="sizes of the generated sessions to resume ('' for none)")  # fmt: skip
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--peers-dir", type=Path, default=DATA / "peers")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    names = args.peers.split(",")
    sizes = [int(t) for t in args.resume_turns.split(",") if t.strip()]
    local = ("tron", "floor", "floor-stack")
    versions = install_peers(args.peers_dir, [n for n in names if n not in local])
    versions["floor"] = "benchmarks/_floor_agent.py (httpx, asyncio)"
    versions["floor-stack"] = "benchmarks/_floor_agent.py --stack (and the server's libraries)"
    tron = [str(ROOT / ".venv" / "bin" / "tron"), "--version"]
    versions["tron"] = subprocess.run(tron, capture_output=True, text=True, check=False).stdout
    versions["tron"] = versions["tron"].strip()
    active = [n for n in names if n in local or not versions.get(n, "").startswith("skipped")]
    model = Model()
    scenarios = ["oneshot", "tools", *(f"resume{t}" for t in sizes)]
    scenarios += [f"resume{t}_cold" for t in sizes]  # Tron's, with no server running
    results: dict[str, dict[str, list[Run]]] = {n: {k: [] for k in scenarios} for n in active}
    skipped: dict[str, str] = {n: v for n, v in versions.items() if v.startswith("skipped")}
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as tmp, serve_model(model) as url:
        work = Path(tmp)
        peers = {n: make_peer(n, url, work, args.peers_dir, "Say hi.") for n in active}
        tool_peers = {
            n: make_peer(n, url, work, args.peers_dir, f"Run `echo hi` {args.tools} times.")
            for n in active
        }
        try:
            # One unmeasured run each: the homes exist (Tron's database, opencode's) as a
            # user's do, and the generated sessions can be written into them.
            for name in active:
                warm = run_peer(peers[name], model, 0, args.timeout)
                if name == "tron":
                    stop_tron_server(peers["tron"])
                elif warm.error:
                    skipped[name] = f"skipped: {warm.error}"
            # A session per round (and for Tron one more, resumed with no server running):
            # none was opened before.
            resumes: dict[tuple[str, int, int, bool], Peer] = {}
            for size in sizes:
                turns = sessions.history(size, seed=size)
                for name in active:
                    if name in skipped or name not in RESUMABLE:
                        continue
                    for i in range(args.rounds):
                        for cold in (False, True) if name == "tron" else (False,):
                            resume = write_session(peers[name], turns, versions)
                            resumes[name, size, i, cold] = resume_peer(peers[name], resume)
            for i in range(args.rounds):
                order = active[i % len(active) :] + active[: i % len(active)]
                for name in order:
                    if name in skipped:
                        continue
                    one = run_peer(peers[name], model, 0, args.timeout)
                    tools = run_peer(tool_peers[name], model, args.tools, args.timeout)
                    # Tron's server is still running: its resumes are a started server's.
                    resumed = [run_peer(resumes[name, t, i, False], model, 0, args.timeout)
                               for t in sizes if (name, t, i, False) in resumes]  # fmt: skip
                    if name == "tron":
                        stop_tron_server(peers[name])
                    cold_runs: list[Run] = []
                    for t in sizes:  # each starts the server: stopped after each
                        if (name, t, i, True) in resumes:
                            cold_runs.append(run_peer(resumes[name, t, i, True], model, 0,
                                                 args.timeout))  # fmt: skip
                            stop_tron_server(peers[name])
                    if one.error and tools.error:
                        skipped[name] = f"skipped: {one.error}"
                        continue
                    results[name]["oneshot"].append(one)
                    results[name]["tools"].append(tools)
                    for size, run in zip(sizes, resumed, strict=False):
                        results[name][f"resume{size}"].append(run)
                    for size, run in zip(sizes, cold_runs, strict=False):
                        results[name][f"resume{size}_cold"].append(run)
                    print(f"round {i + 1} {name}: first request {one.first_request}, "
                          f"tool turn's first request {tools.first_request}, "
                          f"round trip {tools.round_trip}, peak PSS {tools.peak_pss_mb:.0f} MB, "
                          f"{tools.requests} requests" + "".join(
                              f", resume {t}: {r.first_request} "
                              f"({r.history_turns} turns, {r.history_messages} messages)"
                              for t, r in zip(sizes, resumed, strict=False))
                          + "".join(f", resume {t} with no server: {r.first_request}"
                                    for t, r in zip(sizes, cold_runs, strict=False)),
                          flush=True)  # fmt: skip
                load.append(os.getloadavg()[0])
        finally:
            if "tron" in peers:
                stop_tron_server(peers["tron"])
    report(results, sizes, versions, skipped, load, args)


def _median(values: list[float | None]) -> float | None:
    xs = [v for v in values if v is not None]
    return statistics.median(xs) if xs else None


def resume_valid(run: Run, size: int) -> bool:
    """Whether a resume sent the whole generated history in its first request."""
    return run.error is None and run.first_request is not None and run.history_turns == size


def report(
    results: dict[str, dict[str, list[Run]]],
    sizes: list[int],
    versions: dict[str, str],
    skipped: dict[str, str],
    load: list[float],
    args: argparse.Namespace,
) -> None:
    rows: dict[str, dict[str, Any]] = {}
    for name, runs in results.items():
        if name in skipped or not runs["tools"]:
            continue
        row: dict[str, Any] = {
            "first_request_s": _median([r.first_request for r in runs["oneshot"]]),
            "round_trip_ms": (lambda v: v * 1000 if v is not None else None)(
                _median([r.round_trip for r in runs["tools"]])
            ),
            "peak_pss_mb": _median([r.peak_pss_mb for r in runs["tools"]]),
            # The tool turn's start to its first request: for Tron a started server's new
            # session, the baseline of its resumes.
            "tool_turn_first_request_s": _median([r.first_request for r in runs["tools"]]),
            "per_round": {
                "first_request_s": [r.first_request for r in runs["oneshot"]],
                "tool_turn_first_request_s": [r.first_request for r in runs["tools"]],
                "round_trip_ms": [
                    r.round_trip * 1000 if r.round_trip is not None else None for r in runs["tools"]
                ],
                "peak_pss_mb": [r.peak_pss_mb for r in runs["tools"]],
            },
        }
        _resume_fields(row, runs, sizes, "")
        rows[name] = row
        if any(runs[f"resume{size}_cold"] for size in sizes):
            # Tron's resumes with no server running: their baseline is the one-shot.
            cold: dict[str, Any] = {"tool_turn_first_request_s": row["first_request_s"],
                                    "per_round": {}}  # fmt: skip
            _resume_fields(cold, runs, sizes, "_cold")
            rows[f"{name}, no server"] = cold
    summary = {"versions": versions, "skipped": skipped, "rows": rows, "load": load,
               "rounds": args.rounds, "tools": args.tools, "resume_turns": sizes,
               "utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime())}  # fmt: skip
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    print_resume_table(rows, sizes)


def _resume_fields(
    row: dict[str, Any], runs: dict[str, list[Run]], sizes: list[int], suffix: str
) -> None:
    for size in sizes:
        resumed = runs[f"resume{size}{suffix}"]
        valid = [r for r in resumed if resume_valid(r, size)]
        row[f"resume{size}_s"] = _median([r.first_request for r in valid])
        row[f"resume{size}_pss_mb"] = _median([r.peak_pss_mb for r in valid])
        row["per_round"][f"resume{size}"] = [
            {"first_request_s": r.first_request, "history_turns": r.history_turns,
             "history_messages": r.history_messages, "peak_pss_mb": r.peak_pss_mb,
             "valid": resume_valid(r, size), "error": r.error}
            for r in resumed
        ]  # fmt: skip


def print_resume_table(rows: dict[str, dict[str, Any]], sizes: list[int]) -> None:
    """The resume figures as a Markdown table (medians of the valid rounds; per round: s,
    turns sent, history messages sent)."""
    if not sizes or not rows:
        return
    names = list(rows)
    print("\n| resume, start → first model request | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    base = [rows[n]["tool_turn_first_request_s"] for n in names]
    print("| a new session (the tool turn's start → first request; Tron with no server: "
          "the one-shot), median | "
          + " | ".join(f"{v:.2f} s" if v is not None else "–" for v in base) + " |")  # fmt: skip
    for size in sizes:
        cells = []
        for name in names:
            value = rows[name][f"resume{size}_s"]
            rounds = rows[name]["per_round"][f"resume{size}"]
            invalid = sum(1 for r in rounds if not r["valid"])
            cell = f"{value:.2f} s" if value is not None else "invalid" if rounds else "–"
            cells.append(cell + (f" ({invalid} invalid)" if invalid else ""))
        print(f"| {size:,} turns, median | " + " | ".join(cells) + " |")
        for k in range(max(len(rows[n]["per_round"][f"resume{size}"]) for n in names)):
            cells = []
            for name in names:
                rounds = rows[name]["per_round"][f"resume{size}"]
                if k >= len(rounds) or rounds[k]["first_request_s"] is None:
                    cells.append("–")
                    continue
                r = rounds[k]
                cells.append(f"{r['first_request_s']:.2f} s, {r['history_turns']} turns, "
                             f"{r['history_messages']} msgs")  # fmt: skip
            print(f"| {size:,} turns, round {k + 1} | " + " | ".join(cells) + " |")
    peers = [n for n in names if not n.startswith("tron")]
    for tron in ("tron", "tron, no server"):
        if tron not in rows:
            continue
        for size in sizes:
            mine = rows[tron][f"resume{size}_s"]
            ratios = [
                f"{mine / rows[n][f'resume{size}_s']:.2f}× {n}"
                for n in peers
                if mine is not None and rows[n][f"resume{size}_s"]
            ]
            print(f"\n{tron} / peer, resume {size:,} turns: " + ", ".join(ratios))


if __name__ == "__main__":
    main()
