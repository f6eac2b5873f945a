"""The floor of a Python agent on Tron's stack, for ``bench_peers.py`` (contender ``floor``).

    python benchmarks/_floor_agent.py BASE_URL PROMPT [--stack]

The least a print-mode agent written in Python with httpx and asyncio does: import httpx,
send the prompt with one ``Bash`` tool to the Anthropic Messages API at ``BASE_URL``
(streamed), read the SSE events, run each tool call's command with ``bash -c`` as an
asyncio subprocess, send the results back, until the model answers without a call. No
store, no events, no permissions, no hooks, no process-tree guarantees, no output
limits: what Tron's tool round trip and one-shot start cannot go below on this machine
with these libraries, measured in the same run as Tron and the peers.

``--stack`` first imports the libraries Tron's server is built on (contender
``floor-stack``): the least a print mode that starts ``tron-server`` pays before it asks.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import httpx

TOOL = {
    "name": "Bash",
    "description": "Run a shell command.",
    "input_schema": {
        "type": "object",
        "properties": {"command": {"type": "string"}},
        "required": ["command"],
    },
}


async def _turn(client: httpx.AsyncClient, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """One streamed model call: the assistant message it gives."""
    body = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "stream": True,
            "tools": [TOOL], "messages": messages}  # fmt: skip
    blocks: list[dict[str, Any]] = []
    partial: list[str] = []
    stop = None
    async with client.stream("POST", "/v1/messages", json=body) as response:
        async for line in response.aiter_lines():
            if not line.startswith("data: "):
                continue
            event = json.loads(line[6:])
            kind = event["type"]
            if kind == "content_block_start":
                blocks.append(dict(event["content_block"]))
                partial = []
            elif kind == "content_block_delta":
                delta = event["delta"]
                if delta["type"] == "text_delta":
                    blocks[-1]["text"] += delta["text"]
                elif delta["type"] == "input_json_delta":
                    partial.append(delta["partial_json"])
            elif kind == "content_block_stop" and blocks[-1]["type"] == "tool_use":
                blocks[-1]["input"] = json.loads("".join(partial) or "{}")
            elif kind == "message_delta":
                stop = event["delta"]["stop_reason"]
    return {"role": "assistant", "content": blocks, "stop_reason": stop}


async def _bash(command: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        "bash", "-c", command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await proc.communicate()
    return out.decode(errors="replace")


async def main(base_url: str, prompt: str) -> None:
    headers = {"x-api-key": "bench", "anthropic-version": "2023-06-01"}
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=60) as client:
        while True:
            reply = await _turn(client, messages)
            stop = reply.pop("stop_reason")
            messages.append(reply)
            calls = [b for b in reply["content"] if b["type"] == "tool_use"]
            if stop != "tool_use" or not calls:
                break
            results = [
                {"type": "tool_result", "tool_use_id": c["id"],
                 "content": await _bash(c["input"].get("command", ""))}
                for c in calls
            ]  # fmt: skip
            messages.append({"role": "user", "content": results})
    print("".join(b.get("text", "") for b in messages[-1]["content"]))


if __name__ == "__main__":
    if "--stack" in sys.argv[3:]:
        # What bench_health.py calls the web stack's floor: loaded, not used.
        import sqlite3  # noqa: F401

        import pydantic  # noqa: F401
        import pydantic_settings  # noqa: F401
        import starlette.applications  # noqa: F401
        import uvicorn  # noqa: F401
    asyncio.run(main(sys.argv[1], sys.argv[2]))
