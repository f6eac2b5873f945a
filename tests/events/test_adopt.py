"""Adopting a database of the original Tron: built here from the reference
documents' DDL (000 "Database Schema", 003's indexes and FTS) with payloads in
the original's shapes, converted in place, reconstructed."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import stat
from pathlib import Path
from typing import Any

import orjson
import pytest
from pydantic import TypeAdapter

from tron_events import EventStore, NotATronDatabase, OriginalTronDatabase, migrate
from tron_events.adopt import adopt, convert_payload
from tron_events.cli import main
from tron_events.validate import validate_history

anthropic_types = pytest.importorskip("anthropic.types.message_create_params")
REQUEST = TypeAdapter(anthropic_types.MessageCreateParamsNonStreaming)

# Reference 000 "Database Schema" and 003 (indexes, FTS), verbatim.
ORIGINAL_DDL = """
CREATE TABLE events (
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  parent_id TEXT,
  sequence INTEGER NOT NULL,
  depth INTEGER NOT NULL DEFAULT 0,
  type TEXT NOT NULL,
  timestamp TEXT NOT NULL,
  payload TEXT NOT NULL,
  workspace_id TEXT NOT NULL
);
CREATE INDEX idx_events_session_seq ON events(session_id, sequence);
CREATE INDEX idx_events_parent ON events(parent_id);
CREATE TABLE sessions (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL,
  head_event_id TEXT,
  root_event_id TEXT,
  status TEXT DEFAULT 'active',
  model TEXT NOT NULL,
  provider TEXT NOT NULL,
  working_directory TEXT NOT NULL
);
CREATE TABLE workspaces (
  id TEXT PRIMARY KEY,
  path TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL
);
CREATE VIRTUAL TABLE events_fts USING fts5(
  id UNINDEXED,
  session_id UNINDEXED,
  type,
  content,
  tokenize='porter unicode61'
);
"""

BIG_INPUT = {"path": "/proj/big.txt", "content": "lorem ipsum " * 600}  # > 5 KB


def _ts(n: int) -> str:
    return f"2026-01-20T10:{n // 60:02d}:{n % 60:02d}.000Z"


def build_original(path: Path) -> dict[str, Any]:
    """An original database: a session with tools in the original's order and
    shapes, a fork of it, an ended session with gaps in its sequence and every
    depth left at its default 0, and a session without events."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.executescript(ORIGINAL_DDL)
    conn.execute("INSERT INTO workspaces VALUES ('ws-1', '/proj', 'proj')")
    rows: list[tuple[Any, ...]] = []
    clock = iter(range(1000))

    def ev(eid: str, sid: str, parent: str | None, seq: int, depth: int, type_: str,
           payload: dict[str, Any]) -> str:  # fmt: skip
        rows.append((eid, sid, parent, seq, depth, type_, _ts(next(clock)),
                     orjson.dumps(payload).decode(), "ws-1"))  # fmt: skip
        return eid

    start = {"workingDirectory": "/proj", "model": "claude-sonnet-4", "provider": "anthropic"}
    a = "sess-a"
    ev("a0", a, None, 0, 0, "session.start", start)
    ev("a1", a, "a0", 1, 1, "message.user", {"content": "write the big file", "turn": 1})
    # The original recorded tool.call and tool.result before the assistant
    # message holding the tool_use, with toolId rather than toolCallId.
    ev(
        "a2",
        a,
        "a1",
        2,
        2,
        "tool.call",
        {"toolId": "toolu_1", "name": "write", "arguments": BIG_INPUT, "turn": 1},
    )
    ev(
        "a3",
        a,
        "a2",
        3,
        3,
        "tool.result",
        {
            "toolId": "toolu_1",
            "content": [{"type": "text", "text": "wrote zanzibar.txt"}],
            "isError": False,
            "duration": 12,
        },
    )
    ev(
        "a4",
        a,
        "a3",
        4,
        4,
        "message.assistant",
        {
            "content": [
                {"type": "text", "text": "Writing it."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "write",
                    "input": {"_truncated": True, "_originalSize": 7300, "_preview": '{"path"'},
                },
            ],
            "turn": 1,
            "tokenUsage": {"inputTokens": 100, "outputTokens": 20},
        },
    )
    ev("a5", a, "a4", 5, 5, "stream.text_delta", {"delta": "Done"})
    ev(
        "a6",
        a,
        "a5",
        6,
        6,
        "message.assistant",
        {
            "content": "Done: the file is written.",
            "turn": 1,
            "tokenUsage": {"inputTokens": 130, "outputTokens": 8},
        },
    )
    ev("a7", a, "a6", 7, 7, "tool.result", {"toolId": "toolu_2", "content": "plain string"})
    b = "sess-b"
    ev("b0", b, "a1", 0, 2, "session.fork", {"sourceSessionId": a, "sourceEventId": "a1"})
    ev(
        "b1",
        b,
        "b0",
        1,
        3,
        "message.assistant",
        {"content": [{"type": "text", "text": "A different answer in the fork."}], "turn": 1},
    )
    c = "sess-c"
    ev("c0", c, None, 1, 0, "session.start", {**start, "workingDirectory": "/other"})
    ev("c1", c, "c0", 3, 0, "message.user", {"content": "quokka question", "turn": 1})
    ev("c2", c, "c1", 4, 0, "session.end", {"reason": "completed"})
    conn.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    conn.executemany(
        "INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (a, "ws-1", "a7", "a0", "active", "claude-sonnet-4", "anthropic", "/proj"),
            (b, "ws-1", "b1", "b0", "active", "claude-sonnet-4", "anthropic", "/proj"),
            (c, "ws-2", "c2", "c0", "ended", "claude-sonnet-4", "anthropic", "/other"),
            ("sess-d", "ws-1", None, None, "active", "gpt-5", "openai", "/proj"),
        ],
    )
    conn.executemany(
        "INSERT INTO events_fts VALUES (?, ?, ?, ?)",
        [(r[0], r[1], r[5], r[7]) for r in rows],
    )
    conn.execute("CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT)")
    conn.commit()
    conn.close()
    return {"events": {r[0]: r for r in rows}}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_adoption_keeps_every_event_and_reconstructs(tmp_path: Path) -> None:
    db = tmp_path / "prod.db"
    original = build_original(db)["events"]
    summary = adopt(str(db))
    assert summary.events == len(original) + 1  # sess-d was given a root
    assert summary.sessions == 4 and summary.workspaces == 2
    assert summary.backup.exists()
    backup = sqlite3.connect(summary.backup)
    assert backup.execute("SELECT count(*) FROM events").fetchone()[0] == len(original)
    backup.close()
    assert migrate.check(f"sqlite:///{db}").ok
    assert not Path(str(db) + ".adopting").exists()
    with EventStore.open(str(db)) as store:
        for eid, row in original.items():
            e = store.get_event(eid)
            assert e is not None and (e.session_id, e.type, e.timestamp) == (row[1], row[5], row[6])
        a = store.get_session("sess-a")
        assert a.head_event_id == "a7" and a.event_count == 8 and a.message_count == 3
        assert (a.input_tokens, a.output_tokens, a.turn_count) == (230, 28, 1)
        messages = store.get_messages_at("a7")
        assert validate_history(messages) == []
        REQUEST.validate_python(
            {"model": "m", "max_tokens": 16, "messages": [m.to_anthropic() for m in messages]}
        )
        blocks = messages[1].to_anthropic()["content"]
        tool_use = next(b for b in blocks if b["type"] == "tool_use")
        assert tool_use["input"] == BIG_INPUT  # restored from the tool.call
        assert messages[2].to_anthropic()["content"][0]["tool_use_id"] == "toolu_1"
        assert "Done: the file is written." in str(messages[-1].to_anthropic())
        fork = store.get_session("sess-b")
        assert (fork.parent_session_id, fork.fork_from_event_id) == ("sess-a", "a1")
        fork_messages = store.get_messages_at("b1")
        assert validate_history(fork_messages) == []
        assert [e.depth for e in store.get_ancestors("b1")] == [0, 1, 2, 3]
        c = store.get_session("sess-c")
        assert c.status == "ended" and c.ended_at == original["c2"][6]
        assert [(e.sequence, e.depth) for e in store.get_events("sess-c")] == [
            (0, 0), (1, 1), (2, 2)
        ]  # fmt: skip
        assert store.get_session("sess-c").working_directory == "/other"
        d = store.get_session("sess-d")
        assert store.get_event(d.root_event_id).type == "session.start"  # type: ignore[union-attr]
        assert [h.event_id for h in store.search("zanzibar")] == ["a3"]
        assert [h.event_id for h in store.search("quokka")] == ["c1"]
        # The adopted store takes appends and forks like any other.
        store.append("sess-a", "message.user", {"content": "more", "turn": 2})
        store.fork("a4")
    notices = "\n".join(summary.notices)
    assert "renumbered" in notices and "stream.text_delta" in notices
    assert "tables not carried over (they stay in the backup): settings" in notices
    assert summary.payloads_converted >= 3


def test_open_refuses_the_original_untouched_and_upgrade_adopts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "prod.db"
    build_original(db)
    before = digest(db)
    with pytest.raises(OriginalTronDatabase, match="tron-db adopt"):
        EventStore.open(str(db))
    assert digest(db) == before and not Path(str(db) + ".migrate.lock").exists()
    assert main(["upgrade", "--database-url", str(db)]) == 0
    out = capsys.readouterr()
    assert "original Tron" in out.err and "kept as" in out.out
    assert main(["adopt", "-d", str(db)]) == 0
    assert "nothing to adopt" in capsys.readouterr().out
    with EventStore.open(str(db)) as store:
        assert len(store.list_sessions()) == 4


def test_a_database_of_something_else_is_refused_untouched(tmp_path: Path) -> None:
    db = tmp_path / "other.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    conn.execute("INSERT INTO notes (body) VALUES ('mine')")
    conn.commit()
    conn.close()
    before = digest(db)
    for attempt in (
        lambda: adopt(str(db)),
        lambda: EventStore.open(str(db)),
        lambda: migrate.upgrade(f"sqlite:///{db}"),
    ):
        with pytest.raises(NotATronDatabase, match="notes"):
            attempt()
    assert digest(db) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.db"]


def test_adoption_waits_for_no_writer_and_leaves_the_file_when_busy(tmp_path: Path) -> None:
    db = tmp_path / "prod.db"
    build_original(db)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    import tron_events.adopt as adopt_module

    old = adopt_module.LOCK_TIMEOUT_S
    adopt_module.LOCK_TIMEOUT_S = 0.2
    try:
        with pytest.raises(Exception, match="in use"):
            adopt(str(db))
    finally:
        adopt_module.LOCK_TIMEOUT_S = old
        holder.execute("ROLLBACK")
        holder.close()
    with pytest.raises(OriginalTronDatabase):
        EventStore.open(str(db))


@pytest.mark.parametrize(
    ("type_", "payload", "expected"),
    [
        ("tool.call", {"toolId": "t", "name": "n", "arguments": {}},
         {"toolCallId": "t", "toolId": "t", "name": "n", "arguments": {}}),
        ("tool.result", {"toolId": "t", "content": "x"},
         {"toolCallId": "t", "toolId": "t", "content": "x"}),
        ("tool.call", {"toolCallId": "t", "toolName": "n", "input": {"a": 1}},
         {"toolCallId": "t", "toolName": "n", "input": {"a": 1}, "name": "n",
          "arguments": {"a": 1}}),
        ("message.assistant", {"content": "hi"}, {"content": [{"type": "text", "text": "hi"}]}),
        ("message.user", {"content": "hi"}, None),
        ("tool.result", {"toolCallId": "t", "content": [{"type": "text", "text": "x"}]}, None),
    ],
)  # fmt: skip
def test_original_payload_shapes(
    type_: str, payload: dict[str, Any], expected: dict[str, Any] | None
) -> None:
    assert convert_payload(type_, payload) == expected


@pytest.mark.parametrize("original_mode", [0o644, 0o600])
def test_nothing_adoption_leaves_is_more_readable_than_the_database(
    tmp_path: Path, original_mode: int
) -> None:
    db = tmp_path / "prod.db"
    old = os.umask(0o022)  # the usual umask: SQLite alone would make a copy 0644
    try:
        build_original(db)
        db.chmod(original_mode)
        reader = sqlite3.connect(db)  # someone looking (not writing): its WAL stays
        reader.execute("SELECT count(*) FROM events").fetchone()
        summary = adopt(str(db))
        reader.close()
        # Beside the file: the adopted database and one self-contained backup, nothing
        # else (no WAL of the original, no lock of the build).
        assert sorted(p.name for p in tmp_path.iterdir()) == ["prod.db", summary.backup.name]
        with EventStore.open(str(db)) as store:  # its WAL and SHM exist while it is open
            store.append(store.list_sessions()[0].id, "metadata.tag", {"tag": "after"})
            modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir()}
    finally:
        os.umask(old)
    assert modes["prod.db"] == 0o600  # as every database tron-events creates
    assert modes[summary.backup.name] == original_mode & 0o600
    assert {"prod.db-wal", "prod.db-shm"} <= set(modes)
    assert all(mode & 0o077 == 0 for mode in modes.values()), modes
