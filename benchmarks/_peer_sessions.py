"""Generated long sessions, written in each agent's own session format (bench_peers.py).

One synthetic history (:func:`history`: turns of a user message and an assistant reply of
~200-1,000 characters each, a quarter of them with a shell call and its output between
the two) is written as

* Claude Code: ``~/.claude/projects/<cwd, non-alphanumerics as '-'>/<uuid>.jsonl``
  (``user`` / ``assistant`` records chained by ``uuid`` / ``parentUuid``, one content
  block per assistant record, the tool result a ``user`` record with ``toolUseResult``);
* pi: a version-3 session file (``session`` header, then ``message`` entries chained by
  ``id`` / ``parentId``; ``toolCall`` blocks and ``toolResult`` messages);
* Codex: a rollout ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl``
  (``session_meta``, then per turn ``task_started``, ``turn_context``, the ``response_item``
  messages, ``function_call`` / ``function_call_output`` and the ``event_msg`` copies,
  ``task_complete``);
* Tron: events appended to the home's database with ``tron_events.EventStore``.

Each user message starts with ``(turn N of T)``: the scripted model counts the distinct
markers in a request to tell whether the agent sent the whole history. The token usage
recorded with each reply is what the scripted model reports (100 in, 5 out), as if the
session had been recorded against it: the agents that size the context from the last
reply's usage then send the history as it is instead of compacting it first.
"""

from __future__ import annotations

import json
import random
import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

MARK = re.compile(r"\(turn (\d+) of \d+\)")

_VOCABULARY = """
the function returns a value when the test passes and the error is raised from the
parser module because config path should update build server client request response
session event store query index search table database commit branch merge review debug
log trace stack frame thread process memory cache buffer stream socket timeout retry
format json schema field handler router service worker queue lock state view widget
layout render style token model prompt tool result call output input file line import
class method object list string number true false None async await yield fixture assert
mock patch coverage lint type check migration revision column row
"""
WORDS = _VOCABULARY.split()


@dataclass(frozen=True)
class Turn:
    n: int
    user: str
    reply: str
    tool: tuple[str, str] | None  # a shell command and its output, between the two


def _text(rng: random.Random, low: int, high: int) -> str:
    size = rng.randint(low, high)
    words: list[str] = []
    length = 0
    while length < size:
        sentence = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 16)))
        words.append(sentence[0].upper() + sentence[1:] + ".")
        length += len(words[-1]) + 1
    return " ".join(words)[:size]


def history(turns: int, seed: int) -> list[Turn]:
    """``turns`` turns of realistic sizes (~200-1,000 characters a message)."""
    rng = random.Random(seed)
    out = []
    for n in range(1, turns + 1):
        user = f"(turn {n} of {turns}) " + _text(rng, 200, 1000)
        tool = None
        if rng.random() < 0.25:
            target = rng.choice(WORDS)
            command = f"grep -rn {target} src/ | head -20"
            lines = [
                f"src/{rng.choice(WORDS)}.py:{rng.randint(1, 900)}: {_text(rng, 30, 90)}"
                for _ in range(rng.randint(3, 12))
            ]
            tool = (command, "\n".join(lines))
        out.append(Turn(n, user, _text(rng, 200, 1000), tool))
    return out


def _stamps(turns: int) -> list[str]:
    """Enough ISO timestamps for the records of ``turns`` turns, a second apart, ending a
    minute ago."""
    count = 10 * turns + 10
    start = datetime.now(UTC) - timedelta(seconds=count + 60)
    return [
        (start + timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%S.") + f"{i % 1000:03d}Z"
        for i in range(count)
    ]


def _write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        for record in records:
            f.write(json.dumps(record, separators=(",", ":")) + "\n")


# -- Claude Code ---------------------------------------------------------------------------


def claude_session(home: Path, cwd: Path, turns: list[Turn], version: str, model: str) -> str:
    """Write the history as a Claude Code session of ``cwd``; its session id."""
    sid = str(uuid.uuid4())
    stamps = iter(_stamps(len(turns)))
    common = {
        "isSidechain": False,
        "userType": "external",
        "entrypoint": "sdk-cli",
        "cwd": str(cwd),
        "sessionId": sid,
        "version": version,
        "gitBranch": "HEAD",
    }
    usage = {
        "input_tokens": 100,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": 5,
        "service_tier": "standard",
    }
    records: list[dict[str, Any]] = []
    parent: str | None = None
    n_msg = 0

    def add(kind: str, message: dict[str, Any], **extra: Any) -> str:
        nonlocal parent
        me = str(uuid.uuid4())
        records.append(
            {
                "parentUuid": parent,
                **common,
                "type": kind,
                "message": message,
                "uuid": me,
                "timestamp": next(stamps),
                **extra,
            }
        )
        parent = me
        return me

    def reply(block: dict[str, Any], stop: str) -> str:
        nonlocal n_msg
        n_msg += 1
        return add(
            "assistant",
            {
                "id": f"msg_gen{n_msg:06d}",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [block],
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": usage,
            },
            requestId=f"req_gen{n_msg:06d}",
        )

    for turn in turns:
        add("user", {"role": "user", "content": turn.user}, promptId=str(uuid.uuid4()))
        if turn.tool is not None:
            command, output = turn.tool
            call_id = f"toolu_gen{turn.n:06d}"
            caller = reply(
                {
                    "type": "tool_use",
                    "id": call_id,
                    "name": "Bash",
                    "input": {"command": command, "description": "Search the source"},
                },
                "tool_use",
            )
            add(
                "user",
                {
                    "role": "user",
                    "content": [
                        {
                            "tool_use_id": call_id,
                            "type": "tool_result",
                            "content": output,
                            "is_error": False,
                        }
                    ],
                },
                toolUseResult={
                    "stdout": output,
                    "stderr": "",
                    "interrupted": False,
                    "isImage": False,
                },
                sourceToolAssistantUUID=caller,
            )
        reply({"type": "text", "text": turn.reply}, "end_turn")
    records.append(
        {
            "type": "last-prompt",
            "lastPrompt": turns[-1].user[:200],
            "leafUuid": parent,
            "sessionId": sid,
        }
    )
    folder = home / ".claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(cwd))
    _write_jsonl(folder / f"{sid}.jsonl", records)
    return sid


# -- pi ------------------------------------------------------------------------------------


def pi_session(home: Path, cwd: Path, turns: list[Turn], provider: str, model: str) -> Path:
    """Write the history as a pi session file (version 3) of ``cwd``; its path."""
    sid = str(uuid.uuid4())
    stamps = _stamps(len(turns))
    clock = iter(stamps)
    records: list[dict[str, Any]] = [
        {"type": "session", "version": 3, "id": sid, "timestamp": stamps[0], "cwd": str(cwd)}
    ]
    parent: str | None = None
    count = 0

    def add(entry: dict[str, Any]) -> None:
        nonlocal parent, count
        count += 1
        me = f"{count:08x}"
        records.append({**entry, "id": me, "parentId": parent, "timestamp": next(clock)})
        parent = me

    def ms() -> int:
        return int(datetime.fromisoformat(stamps[count]).timestamp() * 1000)

    usage = {
        "input": 100,
        "output": 5,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 105,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }
    assistant = {
        "role": "assistant",
        "api": "anthropic-messages",
        "provider": provider,
        "model": model,
        "usage": usage,
    }
    add({"type": "model_change", "provider": provider, "modelId": model})
    add({"type": "thinking_level_change", "thinkingLevel": "off"})
    for turn in turns:
        add(
            {
                "type": "message",
                "message": {
                    "role": "user",
                    "timestamp": ms(),
                    "content": [{"type": "text", "text": turn.user}],
                },
            }
        )
        if turn.tool is not None:
            command, output = turn.tool
            call_id = f"toolu_gen{turn.n:06d}"
            add(
                {
                    "type": "message",
                    "message": {
                        **assistant,
                        "stopReason": "toolUse",
                        "timestamp": ms(),
                        "content": [
                            {
                                "type": "toolCall",
                                "id": call_id,
                                "name": "bash",
                                "arguments": {"command": command},
                            }
                        ],
                    },
                }
            )
            add(
                {
                    "type": "message",
                    "message": {
                        "role": "toolResult",
                        "toolCallId": call_id,
                        "toolName": "bash",
                        "content": [{"type": "text", "text": output}],
                        "isError": False,
                        "timestamp": ms(),
                    },
                }
            )
        add(
            {
                "type": "message",
                "message": {
                    **assistant,
                    "stopReason": "stop",
                    "timestamp": ms(),
                    "content": [{"type": "text", "text": turn.reply}],
                },
            }
        )
    folder = (
        home / ".pi" / "agent" / "sessions" / ("--" + str(cwd).strip("/").replace("/", "-") + "--")
    )
    path = folder / f"{stamps[0].replace(':', '-').replace('.', '-', 1)}_{sid}.jsonl"
    _write_jsonl(path, records)
    return path


# -- Codex ---------------------------------------------------------------------------------


def codex_session(codex_home: Path, cwd: Path, turns: list[Turn], version: str, model: str) -> str:
    """Write the history as a Codex rollout of ``cwd`` under ``codex_home``; its thread id."""
    tid = str(uuid.uuid4())
    stamps = _stamps(len(turns))
    clock = iter(stamps)
    records: list[dict[str, Any]] = []

    def add(kind: str, payload: dict[str, Any]) -> None:
        records.append({"timestamp": next(clock), "type": kind, "payload": payload})

    add(
        "session_meta",
        {
            "id": tid,
            "timestamp": stamps[0],
            "cwd": str(cwd),
            "originator": "codex_exec",
            "cli_version": version,
            "source": "exec",
            "model_provider": "bench",
        },
    )
    for turn in turns:
        turn_id = str(uuid.uuid4())
        add(
            "event_msg",
            {"type": "task_started", "turn_id": turn_id, "model_context_window": 258400},
        )
        add(
            "turn_context",
            {
                "turn_id": turn_id,
                "cwd": str(cwd),
                "approval_policy": "never",
                "sandbox_policy": {"type": "danger-full-access"},
                "model": model,
                "summary": "none",
            },
        )
        add(
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": turn.user}],
            },
        )
        add("event_msg", {"type": "user_message", "message": turn.user, "images": []})
        if turn.tool is not None:
            command, output = turn.tool
            call_id = f"call_gen{turn.n:06d}"
            add(
                "response_item",
                {
                    "type": "function_call",
                    "name": "exec_command",
                    "arguments": json.dumps({"cmd": command}),
                    "call_id": call_id,
                },
            )
            add(
                "response_item",
                {
                    "type": "function_call_output",
                    "call_id": call_id,
                    "output": f"Process exited with code 0\nOutput:\n{output}",
                },
            )
        add(
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": turn.reply}],
            },
        )
        add("event_msg", {"type": "agent_message", "message": turn.reply})
        add(
            "event_msg",
            {"type": "task_complete", "turn_id": turn_id, "last_agent_message": turn.reply},
        )
    day = datetime.fromisoformat(stamps[0])
    name = f"rollout-{day.strftime('%Y-%m-%dT%H-%M-%S')}-{tid}.jsonl"
    _write_jsonl(codex_home / "sessions" / day.strftime("%Y/%m/%d") / name, records)
    return tid


# -- opencode ------------------------------------------------------------------------------


def _oc_id(prefix: str, n: int, rng: random.Random) -> str:
    # opencode's ids sort by creation (12 hex digits of time, then base62); these sort by n.
    tail = "".join(
        rng.choice("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
        for _ in range(14)
    )
    return f"{prefix}_{n:012x}{tail}"


def opencode_session(database: Path, cwd: Path, turns: list[Turn], version: str, model: str) -> str:
    """Write the history into opencode's database (its ``session``, ``message`` and ``part``
    tables, which it reads a session from; a ``session.created`` event and the session's
    event sequence for what it appends); its session id. The database must exist (made by
    a first run of opencode)."""
    import sqlite3

    rng = random.Random(uuid.uuid4().int)  # ids unique across the sessions of one database
    sid = _oc_id("ses", int(datetime.now(UTC).timestamp() * 1000), rng)
    now = int(datetime.now(UTC).timestamp() * 1000) - 10 * len(turns) * 1000
    models = {"providerID": "anthropic", "modelID": model}
    tokens = {
        "total": 105,
        "input": 100,
        "output": 5,
        "reasoning": 0,
        "cache": {"write": 0, "read": 0},
    }
    messages: list[tuple[str, str, int, int, str]] = []
    parts: list[tuple[str, str, str, int, int, str]] = []
    n = 0

    def message(data: dict[str, Any]) -> str:
        nonlocal n
        n += 1
        mid = _oc_id("msg", n, rng)
        messages.append((mid, sid, now + n, now + n, json.dumps(data)))
        return mid

    def part(mid: str, data: dict[str, Any]) -> None:
        nonlocal n
        n += 1
        parts.append((_oc_id("prt", n, rng), mid, sid, now + n, now + n, json.dumps(data)))

    def step(parent: str, finish: str, body: dict[str, Any]) -> None:
        mid = message(
            {
                "parentID": parent,
                "role": "assistant",
                "mode": "build",
                "agent": "build",
                "path": {"cwd": str(cwd), "root": "/"},
                "cost": 0,
                "tokens": tokens,
                "modelID": model,
                "providerID": "anthropic",
                "time": {"created": now + n, "completed": now + n + 1},
                "finish": finish,
            }
        )
        part(mid, {"type": "step-start"})
        part(mid, body)
        part(mid, {"type": "step-finish", "reason": finish, "tokens": tokens, "cost": 0})

    for turn in turns:
        user = message(
            {"role": "user", "time": {"created": now + n}, "agent": "build", "model": models}
        )
        part(user, {"type": "text", "text": turn.user})
        if turn.tool is not None:
            command, output = turn.tool
            step(
                user,
                "tool-calls",
                {
                    "type": "tool",
                    "tool": "bash",
                    "callID": f"toolu_gen{turn.n:06d}",
                    "state": {
                        "status": "completed",
                        "input": {"command": command},
                        "output": output,
                        "metadata": {"output": output, "exit": 0, "truncated": False},
                        "title": command,
                        "time": {"start": now + n, "end": now + n + 1},
                    },
                },
            )
        step(
            user,
            "stop",
            {"type": "text", "text": turn.reply, "time": {"start": now + n, "end": now + n + 1}},
        )
    info = {
        "id": sid,
        "slug": "generated-session",
        "projectID": "global",
        "directory": str(cwd),
        "path": str(cwd).lstrip("/"),
        "title": "Generated session",
        "version": version,
        "time": {"created": now, "updated": now + n},
    }
    db = sqlite3.connect(database, timeout=30)
    try:
        with db:
            db.execute(
                "INSERT INTO session (id, project_id, slug, directory, path, title, version,"
                " agent, model, time_created, time_updated) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (
                    sid,
                    "global",
                    info["slug"],
                    str(cwd),
                    info["path"],
                    info["title"],
                    version,
                    "build",
                    json.dumps({"id": model, "providerID": "anthropic", "variant": "default"}),
                    now,
                    now + n,
                ),
            )
            db.executemany("INSERT INTO message VALUES (?,?,?,?,?)", messages)
            db.executemany("INSERT INTO part VALUES (?,?,?,?,?,?)", parts)
            db.execute("INSERT INTO event_sequence (aggregate_id, seq) VALUES (?, 0)", (sid,))
            db.execute(
                "INSERT INTO event (id, aggregate_id, seq, type, data) VALUES (?,?,0,?,?)",
                (
                    _oc_id("evt", 0, rng),
                    sid,
                    "session.created.1",
                    json.dumps({"sessionID": sid, "info": info}),
                ),
            )
    finally:
        db.close()
    return sid


# -- Tron ----------------------------------------------------------------------------------


def tron_session(database_url: str, cwd: Path, turns: list[Turn], model: str) -> str:
    """Append the history as a Tron session to the database; its session id."""
    from tron_events import EventStore

    usage = {"inputTokens": 100, "outputTokens": 5, "cacheReadTokens": 0, "cacheCreationTokens": 0}
    store = EventStore.open(database_url)
    try:
        session = store.create_session(
            working_directory=str(cwd), model=model, provider="anthropic"
        )
        events: list[dict[str, Any]] = []
        step = 0

        def reply(content: list[dict[str, Any]], stop: str) -> None:
            nonlocal step
            step += 1
            events.append({"type": "stream.turn_start", "payload": {"turn": step}})
            events.append(
                {
                    "type": "message.assistant",
                    "payload": {
                        "content": content,
                        "turn": step,
                        "tokenUsage": usage,
                        "stopReason": stop,
                        "model": model,
                        "latency": 900.0,
                    },
                }
            )

        def end(stop: str) -> None:
            events.append(
                {
                    "type": "stream.turn_end",
                    "payload": {
                        "turn": step,
                        "stopReason": stop,
                        "tokenUsage": usage,
                        "cost": 0.000375,
                    },
                }
            )

        for turn in turns:
            events.append(
                {"type": "message.user", "payload": {"content": turn.user, "turn": step + 1}}
            )
            if turn.tool is not None:
                command, output = turn.tool
                call_id = f"toolu_gen{turn.n:06d}"
                arguments = {"command": command, "description": "Search the source"}
                reply(
                    [{"type": "tool_use", "id": call_id, "name": "Bash", "input": arguments}],
                    "tool_use",
                )
                events.append(
                    {
                        "type": "tool.call",
                        "payload": {
                            "toolCallId": call_id,
                            "name": "Bash",
                            "arguments": arguments,
                            "turn": step,
                        },
                    }
                )
                events.append(
                    {
                        "type": "tool.result",
                        "payload": {
                            "toolCallId": call_id,
                            "content": f"{output}\n\n[exit code: 0]",
                            "isError": False,
                            "duration": 12.0,
                        },
                    }
                )
                end("tool_use")
            reply([{"type": "text", "text": turn.reply}], "end_turn")
            end("end_turn")
            if len(events) >= 500:
                store.append_many(session.id, events)
                events = []
        if events:
            store.append_many(session.id, events)
        return session.id
    finally:
        store.close()


def turns_seen(body: str) -> int:
    """How many distinct generated turns a request body carries."""
    return len(set(MARK.findall(body)))
