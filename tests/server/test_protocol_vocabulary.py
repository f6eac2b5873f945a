"""The wire vocabulary in one place (``tron_server.protocol``): every notification kind
the server sends is a constant there, and ``docs/protocol.md`` documents exactly those."""

from __future__ import annotations

import re
from pathlib import Path

from tron_events import Session
from tron_llm import Usage
from tron_server import protocol

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "tron_server" / "src" / "tron_server"


def documented_notifications() -> set[str]:
    text = (ROOT / "docs" / "protocol.md").read_text()
    section = text.split("## Notifications (server → client)", 1)[1].split("\n## ", 1)[0]
    kinds: set[str] = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            first_cell = line.split("|")[1]
            kinds.update(re.findall(r"`([a-z_]+\.[a-z_]+)`", first_cell))
    return kinds


def test_docs_list_exactly_the_notification_kinds() -> None:
    assert documented_notifications() == protocol.NOTIFICATIONS


def test_the_server_names_notifications_only_through_the_constants() -> None:
    # A kind spelled as a string literal in the server would escape the list above.
    # The terminal is a client (it matches on kinds it receives) and is left out.
    pattern = re.compile(
        "|".join(re.escape(f'"{kind}"') for kind in sorted(protocol.NOTIFICATIONS))
    )
    offenders = []
    for path in SERVER.rglob("*.py"):
        rel = path.relative_to(SERVER)
        if rel.parts[0] == "terminal" or rel.name in {"protocol.py", "client.py"}:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line) and not line.lstrip().startswith("#"):
                offenders.append(f"{rel}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_session_and_usage_objects_are_camel_case() -> None:
    session = Session(
        id="s",
        workspace_id="w",
        root_event_id="r",
        head_event_id="h",
        status="active",
        model="m",
        provider="p",
        working_directory="/x",
        title=None,
        parent_session_id="parent",
        fork_from_event_id=None,
        created_at="t0",
        last_activity_at="t1",
        ended_at=None,
        event_count=2,
        message_count=1,
        turn_count=1,
        input_tokens=3,
        output_tokens=4,
        cache_read_tokens=5,
        cache_creation_tokens=6,
        cost=0.5,
    )
    wire = protocol.session_json(session)
    assert wire["parentSessionId"] == "parent" and wire["kind"] == "subagent"
    assert wire["cacheCreationTokens"] == 6 and wire["cost"] == 0.5
    assert all("_" not in key for key in wire)
    usage = protocol.usage_json(Usage(input_tokens=1, output_tokens=2, cache_write_tokens=3))
    assert usage["inputTokens"] == 1 and usage["cacheWriteTokens"] == 3
    assert (
        usage["totalTokens"]
        == Usage(input_tokens=1, output_tokens=2, cache_write_tokens=3).total_tokens
    )
