"""What MCP servers cost a session, over a real tron-server and real MCP servers.

    uv run python benchmarks/bench_mcp.py [--rounds 15] [--calls 20]

The server is started as a user starts it (``python -m tron_server``, see
``bench_server.py``) with the scripted LLM served in this process; MCP servers are three
``@modelcontextprotocol/server-everything`` over stdio (installed into the test cache as
``tests/mcp`` does). Times are ``time.perf_counter``.

- ``start``: ``session.create`` sent → the session's first LLM request arriving, for a
  message in a fresh folder. Contenders, in a rotated order each round (each round a new
  folder, so no server of it runs yet):
  ``none`` (no MCP server), ``3 stdio, listed before`` (the three servers' tool lists are
  in the list cache from an earlier run: lazy start, nothing is started), ``3 stdio, never
  listed`` (the cache emptied first: the servers are started for their lists, what a first
  use ever costs). The promise is on ``listed before`` − ``none`` (≤ 10 ms).
- ``call``: one message calls ``mcp__ev0__echo`` and ``Read`` (a small file) ``--calls``
  times each, alternating, in bypassPermissions mode; each call's time is its
  ``tool.result`` ``duration`` (the runtime's clock around the tool: validation, the MCP
  request and answer over stdio, the result's mapping). The server is connected before
  the measured message.
- ``inproc``: what a run's first turn spends on MCP with three configured servers listed
  before, measured alone in this process (``McpManager.tools_for`` — the configuration
  files, approvals, the list cache — and the tools made from it), in a new folder each
  time: the part of ``start``'s difference that is MCP's, without the server's noise.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
for _p in (str(ROOT), str(BENCH_DIR)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from bench_server import (  # noqa: E402
    machine,
    med,
    ms,
    rotated,
    rpc,
    timed_llm,
    tron_server,
    ws_connect,
)

from tests.mcp.servers import everything_entry  # noqa: E402
from tests.support.scripted_llm import Response, Text, ToolUse  # noqa: E402
from tron_server.trust import TrustStore  # noqa: E402

_ids = itertools.count(1)


async def wait_complete(ws: Any, session_id: str) -> None:
    import orjson

    while True:
        msg = orjson.loads(await ws.recv(decode=False))
        if msg.get("method") == "agent.complete" and msg["params"].get("sessionId") == session_id:
            return


def project(root: Path, name: str, servers: int, entry: Path) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    if servers:
        config = {f"ev{i}": {"command": "node", "args": [str(entry), "stdio"]}
                  for i in range(servers)}  # fmt: skip
        (folder / ".mcp.json").write_text(json.dumps({"mcpServers": config}))
    (folder / "small.txt").write_text("a small file\n")
    return folder


async def first_request(ws: Any, llm: Any, times: Any, folder: Path) -> float:
    """Seconds from session.create sent to the first LLM request arriving."""
    llm.add(Response([Text("ok")]))
    before = len(times.spans)
    t0 = time.perf_counter()
    session = await rpc(ws, next(_ids), "session.create", {"workingDirectory": str(folder)})
    await rpc(ws, next(_ids), "agent.message", {"sessionId": session["id"], "content": "hi"})
    await wait_complete(ws, session["id"])
    assert len(times.spans) == before + 1
    return float(times.spans[before][0] - t0)


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    entry = everything_entry()
    root = Path(tempfile.mkdtemp(prefix="bench-mcp-"))
    home = root / "home"
    home.mkdir()
    (home / "settings.json").write_text(json.dumps({"enableAllProjectMcpServers": True}))
    TrustStore(home).trust(root)  # the projects below it: their .mcp.json servers may run
    results: dict[str, list[float]] = {"none": [], "listed": [], "never": []}
    calls: dict[str, list[float]] = {"mcp": [], "builtin": []}
    try:
        async with timed_llm() as (llm, times):
            env = {
                "TRON_ANTHROPIC_BASE_URL": llm.base_url, "ANTHROPIC_API_KEY": "bench-key",
                "TRON_CLAUDE_JSON": str(root / "no-claude.json"),
                "TRON_ALLOW_BYPASS_PERMISSIONS": "1",
                "TRON_DEFAULT_PERMISSION_MODE": "bypassPermissions",
            }  # fmt: skip
            async with tron_server(home, env=env) as server:
                ws = await ws_connect(server.ws_url, server.token)
                # Warm-up: the servers list once (fills the cache), every path imported.
                warm = project(root, "warm", 3, entry)
                await first_request(ws, llm, times, warm)
                await first_request(ws, llm, times, project(root, "warm0", 0, entry))
                for r in range(args.rounds):
                    for kind in rotated(["none", "listed", "never"], r):
                        if kind == "never":
                            shutil.rmtree(home / "cache" / "mcp", ignore_errors=True)
                        folder = project(root, f"{kind}-{r}", 0 if kind == "none" else 3, entry)
                        results[kind].append(await first_request(ws, llm, times, folder))
                # Round trips, the server connected (the warm folder's first call starts it).
                uses = []
                for i in range(args.calls):
                    uses += [ToolUse("mcp__ev0__echo", {"message": f"m{i}"}, id=f"m{i}"),
                             ToolUse("Read", {"file_path": "small.txt"}, id=f"r{i}")]  # fmt: skip
                start = Response([ToolUse("mcp__ev0__echo", {"message": "start"}, id="s")])
                llm.add(
                    start, Response([Text("started")]), Response(uses), Response([Text("done")])
                )
                session = await rpc(ws, next(_ids), "session.create",
                                    {"workingDirectory": str(warm)})  # fmt: skip
                sid = session["id"]
                for text in ("start", "measure"):
                    await rpc(ws, next(_ids), "agent.message", {"sessionId": sid, "content": text})
                    await wait_complete(ws, sid)
                page = await rpc(ws, next(_ids), "events.sync", {"sessionId": sid, "limit": 1000})
                for event in page["events"]:
                    if event["type"] == "tool.result":
                        payload = event["payload"]
                        key = payload["toolCallId"]
                        assert not payload["isError"], payload
                        if key[0] in "mr" and key != "s":
                            calls["mcp" if key[0] == "m" else "builtin"].append(
                                payload["duration"] / 1000
                            )
                await ws.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    results["inproc"] = await inproc(args, entry)
    return {"start": results, "call": calls, "machine": machine()}


async def inproc(args: argparse.Namespace, entry: Path) -> list[float]:
    from tron_server.agent.mcp_tools import make_tool
    from tron_server.mcp import McpManager

    root = Path(tempfile.mkdtemp(prefix="bench-mcp-inproc-"))
    home = root / "home"
    home.mkdir()
    (home / "settings.json").write_text(json.dumps({"enableAllProjectMcpServers": True}))
    TrustStore(home).trust(root)  # the projects below it: their .mcp.json servers may run
    manager = McpManager(home, claude_json=root / "none.json")
    await manager.start()
    out: list[float] = []
    try:
        usable = await manager.tools_for("warm", project(root, "warm", 3, entry))  # lists once
        assert len(usable.tools) > 30, usable.failures
        await manager.aclose()
        manager = McpManager(home, claude_json=root / "none.json")
        await manager.start()
        for r in range(args.rounds * 4):
            folder = project(root, f"p{r}", 3, entry)
            t0 = time.perf_counter()
            usable = await manager.tools_for(f"s{r}", folder)
            tools = [make_tool(c, t) for c, t in usable.tools]
            [t.spec() for t in tools]
            out.append(time.perf_counter() - t0)
            assert len(tools) > 30 and not usable.failures
    finally:
        await manager.aclose()
        shutil.rmtree(root, ignore_errors=True)
    return out


def report(res: dict[str, Any], args: argparse.Namespace) -> None:
    start = res["start"]
    print(f"\n`uv run python benchmarks/bench_mcp.py --rounds {args.rounds} --calls {args.calls}`"
          f" ({res['machine']})\n")  # fmt: skip
    print("| session start → first LLM request | median | min | max |")
    print("|---|---|---|---|")
    labels = {"none": "no MCP server", "listed": "3 stdio servers, listed before (lazy)",
              "never": "3 stdio servers, never listed (started for their lists)"}  # fmt: skip
    for key, label in labels.items():
        xs = start[key]
        print(f"| {label} | {ms(med(xs))} | {ms(min(xs))} | {ms(max(xs))} |")
    added = med(start["listed"]) - med(start["none"])
    paired = [a - b for a, b in zip(start["listed"], start["none"], strict=True)]
    print(
        f"\nAdded by 3 configured stdio servers (lazy start): {ms(added)} (median − median); "
        f"median of the rounds' paired differences {ms(med(paired))}"
    )
    xs = start["inproc"]
    print(
        f"\nThe MCP work of that first turn alone (in process, {len(xs)} folders): median "
        f"{ms(med(xs))}, max {ms(max(xs))}"
    )
    calls = res["call"]
    print("\n| one tool call (tool.result duration) | median | p90 | n |")
    print("|---|---|---|---|")
    for key, label in (("mcp", "mcp__ev0__echo (stdio)"), ("builtin", "Read (built-in)")):
        xs = sorted(calls[key])
        p90 = xs[int(0.9 * (len(xs) - 1))]
        print(f"| {label} | {ms(med(xs))} | {ms(p90)} | {len(xs)} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    res = asyncio.run(bench(args))
    report(res, args)


if __name__ == "__main__":
    main()
