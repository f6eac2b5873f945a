"""Properties of the importers' tree handling.

* ``plan_branches`` on any parent links (missing, pointing later, self, cycles):
  the same plan from its flat-array form ``plan_branches_indexed``, and
  every node in exactly one session, each session a parent chain, forks from an
  earlier session's node, the main line through the node written last.
* Generated Claude Code transcripts — responses split over records with parallel
  tool calls answered out of order, hook progress hanging off any record, missing
  results, rewinds to earlier prompts, compactions — import to one session per
  branch, each message once, and histories ``validate_history`` accepts.
"""

from __future__ import annotations

import itertools
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.events._importers import Stream
from tron_events.importers import IMPORTERS
from tron_events.importers._tree import plan_branches, plan_branches_indexed, repair_parents
from tron_events.validate import validate_history

EXAMPLES = {"ci": 40, "dev": 500}.get(os.environ.get("HYPOTHESIS_PROFILE", "ci"), 40)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_the_flat_plan_is_the_plan(data: st.DataObject) -> None:
    """``plan_branches_indexed`` (arrays, for transcripts of a million records) plans
    exactly what ``plan_branches`` does, on any parent links."""
    n = data.draw(st.integers(1, 30), label="nodes")
    links = [data.draw(st.integers(-2, n + 1), label=f"parent of {node}") for node in range(n)]
    expected = plan_branches(list(range(n)), dict(enumerate(links)))
    flat = plan_branches_indexed(links)
    assert [(f if f >= 0 else None, list(nodes)) for f, nodes in flat] == [
        (b.fork_from, b.nodes) for b in expected
    ]


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_any_parent_links_plan_to_a_tree_of_sessions(data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 25), label="nodes")
    order = list(range(n))
    parents: dict[int, int | None] = {
        node: data.draw(st.none() | st.integers(-2, n + 1), label=f"parent of {node}")
        for node in order
    }
    parent = repair_parents(order, parents)
    branches = plan_branches(order, parents)
    assert sorted(x for b in branches for x in b.nodes) == order
    assert [x for x in order if parent[x] is None] == [branches[0].nodes[0]]
    # The main line goes through the node written last (to a leaf below it, if
    # records written before it hang off it).
    assert branches[0].fork_from is None and order[-1] in branches[0].nodes
    placed: set[int] = set()
    for branch in branches:
        for a, b in itertools.pairwise(branch.nodes):
            assert parent[b] == a
        if branch is not branches[0]:
            assert branch.fork_from in placed and parent[branch.nodes[0]] == branch.fork_from
        placed.update(branch.nodes)
    # Links that already made a tree are kept as they were.
    if all(p is not None and 0 <= p < node for node, p in parents.items() if node):
        assert all(parent[node] == parents[node] for node in order if node)


# --- generated Claude Code transcripts ---------------------------------------------------


@dataclass
class Transcript:
    """Writes Claude Code records; tracks what the import must give."""

    lines: list[dict[str, Any]] = field(default_factory=list)
    counter: int = 0
    leaf: str | None = None
    prompts: list[tuple[str, str | None]] = field(default_factory=list)  # (text, parent)
    tool_uses: list[str] = field(default_factory=list)
    rewinds: int = 0

    def uuid(self) -> str:
        self.counter += 1
        return f"00000000-0000-4000-8000-{self.counter:012d}"

    def record(self, kind: str, parent: str | None, **fields: Any) -> str:
        uuid = self.uuid()
        second = self.counter
        self.lines.append(
            {"parentUuid": parent, "isSidechain": False, "userType": "external",
             "cwd": "/w", "sessionId": "s-1", "version": "2.1.40", "type": kind,
             "uuid": uuid, "timestamp": f"2026-01-01T00:{second // 60 % 60:02d}:"
             f"{second % 60:02d}.000Z", **fields}
        )  # fmt: skip
        return uuid

    def prompt(self, parent: str | None) -> None:
        text = f"prompt number {len(self.prompts) + 1}"
        self.prompts.append((text, parent))
        self.leaf = self.record("user", parent, message={"role": "user", "content": text})

    def response(self, draw: Any) -> None:
        message_id = f"msg_{self.counter}"
        kinds = draw(st.lists(st.sampled_from(["text", "thinking", "tool"]), min_size=1,
                              max_size=4), label="blocks")  # fmt: skip
        holders: list[tuple[str, str]] = []  # (tool_use id, the record holding it)
        for kind in kinds:
            if kind == "text":
                block: dict[str, Any] = {"type": "text", "text": f"said {self.counter}"}
            elif kind == "thinking":
                block = {"type": "thinking", "thinking": "hm", "signature": f"sig{self.counter}"}
            else:
                use_id = f"toolu_{self.counter:04d}"
                block = {"type": "tool_use", "id": use_id, "name": "Read", "input": {"n": 1}}
            self.leaf = self.record(
                "assistant", self.leaf, requestId=f"req_{message_id}",
                message={"id": message_id, "model": "claude-opus-4-6", "role": "assistant",
                         "type": "message", "content": [block], "stop_reason": None,
                         "usage": {"input_tokens": 1, "output_tokens": 1}},
            )  # fmt: skip
            if kind == "tool":
                holders.append((block["id"], self.leaf))
                self.tool_uses.append(block["id"])
        answered = draw(st.permutations(holders), label="result order")
        answered = answered[: draw(st.integers(0, len(answered)), label="results")]
        for use_id, holder in answered:
            # A result hangs off the record that holds its call (parallel calls).
            self.leaf = self.record(
                "user", holder, sourceToolAssistantUUID=holder,
                message={"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": use_id, "content": f"out {use_id}"}]},
            )  # fmt: skip

    def progress(self, draw: Any) -> None:
        uuids = [line["uuid"] for line in self.lines]
        parent = draw(st.sampled_from(uuids), label="progress parent") if uuids else None
        self.record("progress", parent, data={"type": "hook_progress"}, toolUseID="x")

    def compaction(self) -> None:
        boundary = self.record(
            "system", None, subtype="compact_boundary", content="Conversation compacted",
            logicalParentUuid=self.leaf, compactMetadata={"trigger": "auto", "preTokens": 9},
        )  # fmt: skip
        self.leaf = self.record(
            "user", boundary, isCompactSummary=True,
            message={"role": "user", "content": f"summary {self.counter}"},
        )  # fmt: skip


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.data())
def test_generated_transcripts_import_to_one_valid_session_per_branch(
    data: st.DataObject,
) -> None:
    t = Transcript()
    t.prompt(None)
    for _ in range(data.draw(st.integers(1, 14), label="steps")):
        step = data.draw(
            st.sampled_from(["response", "response", "prompt", "rewind", "progress", "compact"]),
            label="step",
        )
        if step == "response":
            t.response(data.draw)
        elif step == "prompt":
            t.prompt(t.leaf)
        elif step == "rewind" and len(t.prompts) > 1:
            # Edit an earlier prompt (not the first, which has no parent): a new
            # prompt beside it.
            _, parent = data.draw(st.sampled_from(t.prompts[1:]), label="rewind to")
            t.rewinds += 1
            t.prompt(parent)
        elif step == "progress":
            t.progress(data.draw)
        elif step == "compact":
            t.compaction()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s-1.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in t.lines))
        stream = Stream(IMPORTERS["claude-code"](path))
    assert len(stream.sessions) == 1 + t.rewinds
    for session_id in stream.sessions:
        assert validate_history(stream.messages_at_head(session_id)) == []
    users = [e["payload"]["content"] for e in stream.of_type("message.user")]
    assert sorted(users) == sorted(text for text, _ in t.prompts)
    uses = [
        b["id"]
        for e in stream.of_type("message.assistant")
        for b in e["payload"]["content"]
        if b["type"] == "tool_use"
    ]
    assert sorted(uses) == sorted(t.tool_uses)
    assert len(stream.of_type("metadata.import")) == sum(
        1 for line in t.lines if line["type"] == "progress"
    )
