"""The reconstruction property, through the real store.

Hypothesis generates agent conversations (user turns; assistant turns with text,
thinking and 1-3 tool calls of up to 20 KB; results, errors and interruptions;
model switches, reasoning changes, prompt updates; compactions, clears and
deletions), records them through the store in the order the server does
(assistant message with tool_use -> each tool.call -> each tool.result ->
continuation), forks and rewinds at random events, and then checks at EVERY event
of the tree that:

* ``validate_history(get_state_at(e).messages)`` is empty;
* the history equals the one an independent reference model expects, block for
  block and with the event ids of each message;
* the state (model, provider, prompt, reasoning level, tokens, turns) equals the
  reference's;
* the request built from it validates against the official ``anthropic`` SDK
  types (a second, independent oracle for the shape of every block).

The reference model knows nothing of the implementation's incremental algorithm:
it tracks the tree itself (parents, heads, forks, rewinds) and computes each
expected history from scratch, by windows (an assistant message's results are
the results recorded after it and before the next assistant message) and a
final merge of same-role neighbours.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from tests.events.conftest import RECONSTRUCTION_EXAMPLES
from tron_events import EventStore
from tron_events.messages import Message
from tron_events.normalize import normalize_tool_result_payload
from tron_events.reconstruct import COMPACTION_ACK, INTERRUPTED_RESULT, SUMMARY_PREFIX
from tron_events.validate import validate_history

anthropic_types = pytest.importorskip("anthropic.types.message_create_params")
REQUEST = TypeAdapter(anthropic_types.MessageCreateParamsNonStreaming)

MODELS = ["claude-a", "claude-b", "gpt-c"]
LEVELS: list[str | None] = [None, "low", "medium", "high", "xhigh"]


# -- the reference model ---------------------------------------------------------------


@dataclass
class Rec:
    """What the reference knows of one event."""

    id: str
    kind: str  # start fork user assistant call result delete summary clear model level prompt
    parent: str | None
    blocks: list[dict[str, Any]] = field(default_factory=list)  # user/assistant wire blocks
    uses: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (id, full input)
    use_id: str = ""  # call/result
    result: dict[str, Any] | None = None  # expected tool_result block
    target: str = ""  # delete
    value: Any = None  # summary text, model, level, prompt
    turn: int = 0
    usage: tuple[int, int, int, int] = (0, 0, 0, 0)


def json_text(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def stored_input(args: dict[str, Any], full_args_on_path: bool) -> dict[str, Any]:
    """The tool_use input reconstruction should give back."""
    dumped = json_text(args)
    if len(dumped) <= 5_120 or full_args_on_path:
        return args
    return {"_truncated": True, "_originalSize": len(dumped), "_preview": dumped[:500]}


class Reference:
    def __init__(self) -> None:
        self.recs: dict[str, Rec] = {}
        self.heads: dict[str, str] = {}  # session id -> head event id
        self.order: list[str] = []  # every event id, in append order

    def add(self, rec: Rec, session_id: str) -> None:
        self.recs[rec.id] = rec
        self.heads[session_id] = rec.id
        self.order.append(rec.id)

    def path(self, event_id: str) -> list[Rec]:
        out = []
        cur: str | None = event_id
        while cur is not None:
            rec = self.recs[cur]
            out.append(rec)
            cur = rec.parent
        out.reverse()
        return out

    def history(self, event_id: str) -> list[tuple[str, list[dict[str, Any]], list[str]]]:
        """The expected (role, wire blocks, event ids) of every message at ``event_id``."""
        recs = self.path(event_id)
        deleted = {r.target for r in recs if r.kind == "delete"}
        called = {r.use_id for r in recs if r.kind == "call"}
        start, summary = 0, None
        for i, r in enumerate(recs):
            if r.kind in ("summary", "clear"):
                start, summary = i + 1, (r if r.kind == "summary" else None)
        live = [
            r
            for r in recs[start:]
            if r.kind in ("user", "assistant", "result") and r.id not in deleted
        ]

        # Raw messages: [role, blocks, ids, what]
        raw: list[list[Any]] = []
        if summary is not None:
            raw.append(["user", [text(SUMMARY_PREFIX + summary.value)], [summary.id], "summary"])
        for i, r in enumerate(live):
            if r.kind == "user" and r.blocks:
                raw.append(["user", list(r.blocks), [r.id], "message"])
            elif r.kind == "assistant" and (r.blocks or r.uses):
                uses = [
                    {
                        "type": "tool_use",
                        "id": u,
                        "name": "tool",
                        "input": stored_input(a, u in called),
                    }
                    for u, a in r.uses
                ]
                raw.append(["assistant", list(r.blocks) + uses, [r.id], "message"])
                if r.uses:
                    window = []
                    for later in live[i + 1 :]:
                        if later.kind == "assistant" and (later.blocks or later.uses):
                            break
                        if later.kind == "result":
                            window.append(later)
                    found = {w.use_id: w for w in reversed(window)}  # the first one wins
                    results = [
                        found[u].result
                        if u in found
                        else {
                            "type": "tool_result",
                            "tool_use_id": u,
                            "content": INTERRUPTED_RESULT,
                            "is_error": True,
                        }
                        for u, _ in r.uses
                    ]
                    used = {found[u].id for u, _ in r.uses if u in found}
                    ids = [w.id for w in window if w.id in used]
                    raw.append(["user", results, ids, "results"])

        # A history starts with a user message: leading assistant messages go, and
        # the results that answered them with them.
        while raw and raw[0][0] == "assistant":
            raw.pop(0)
            if raw and raw[0][3] == "results":
                raw.pop(0)
        if summary is not None and len(raw) > 1 and raw[1][0] == "user":
            raw.insert(1, ["assistant", [text(COMPACTION_ACK)], [summary.id], "ack"])

        merged: list[tuple[str, list[dict[str, Any]], list[str]]] = []
        for role, blocks, ids, _ in raw:
            if merged and merged[-1][0] == role:
                merged[-1][1].extend(blocks)
                merged[-1][2].extend(ids)
            else:
                merged.append((role, list(blocks), list(ids)))
        return merged

    def state(self, event_id: str) -> dict[str, Any]:
        recs = self.path(event_id)
        deleted = {r.target for r in recs if r.kind == "delete"}
        out: dict[str, Any] = {"reasoning_level": None, "turn_count": 0}
        tokens = [0, 0, 0, 0]
        for r in recs:
            if r.kind == "start":
                out.update(r.value)
            elif r.kind in ("fork", "model"):
                out["model"] = r.value
            elif r.kind == "level":
                out["reasoning_level"] = r.value
            elif r.kind == "prompt":
                out["system_prompt"] = r.value
            elif r.kind == "assistant" and r.id not in deleted:
                tokens = [a + b for a, b in zip(tokens, r.usage, strict=True)]
            out["turn_count"] = max(out["turn_count"], r.turn)
        out["token_usage"] = dict(
            zip(
                ["input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens"],
                tokens,
                strict=True,
            )
        )
        return out


# -- driving the store and the reference together ------------------------------------


class Run:
    def __init__(self, store: EventStore, data: st.DataObject) -> None:
        self.store = store
        self.data = data
        self.ref = Reference()
        self.turn = 0
        self.calls = 0
        start = {
            "model": "claude-a",
            "provider": "anthropic",
            "working_directory": "/work/app",
            "system_prompt": "be brief",
        }
        session = store.create_session(**start)
        self.session = session.id
        self.sessions = [session.id]
        self.model_now = "claude-a"
        self.ref.add(Rec(session.root_event_id, "start", None, value=start), session.id)

    def draw(self, strategy: st.SearchStrategy[Any]) -> Any:
        return self.data.draw(strategy)

    def append(self, type_: str, payload: dict[str, Any], rec: Rec) -> None:
        head = self.ref.heads[self.session]
        event = self.store.append(self.session, type_, payload)
        assert event.parent_id == head
        rec.id, rec.parent = event.id, head
        self.ref.add(rec, self.session)

    def current_model(self) -> str:
        model = "claude-a"
        for r in self.ref.path(self.ref.heads[self.session]):
            if r.kind in ("fork", "model"):
                model = r.value
        return model

    # The steps.

    def user_turn(self) -> None:
        self.turn += 1
        words = self.draw(st.sampled_from(["", "  ", "hello", "fix the bug", "continue"]))
        if self.draw(st.booleans()):
            content: Any = words
            blocks = [text(words)] if words.strip() else []
        else:
            image = {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
            }
            content = [text(words), image] if words else [image]
            blocks = ([text(words)] if words.strip() else []) + [image]
        self.append(
            "message.user",
            {"content": content, "turn": self.turn},
            Rec("", "user", None, blocks=blocks, turn=self.turn),
        )

    def assistant_turn(self) -> None:
        n_tools = self.draw(st.integers(0, 3))
        blocks: list[dict[str, Any]] = []
        if self.draw(st.booleans()):
            blocks.append(
                {
                    "type": "thinking",
                    "thinking": self.draw(st.sampled_from(["", "hmm", "let me think"])),
                    "signature": self.draw(st.sampled_from(["sig+/=", "EqQBCkYIARgC\n\u00e9"])),
                }
            )
        said = self.draw(st.sampled_from(["", " ", "ok", "running it", "done"]))
        stored_blocks = [*blocks, text(said)]
        if said.strip():
            blocks.append(text(said))
        uses = []
        for _ in range(n_tools):
            self.calls += 1
            size = self.draw(st.one_of(st.integers(0, 300), st.integers(4_900, 20_000)))
            uses.append((f"toolu_{self.calls}", {"path": "/src/a.py", "data": "x" * size}))
        stored_blocks += [
            {"type": "tool_use", "id": u, "name": "tool", "input": a} for u, a in uses
        ]
        usage = tuple(self.draw(st.integers(0, 1_000)) for _ in range(4))
        token_usage = dict(
            zip(
                ["inputTokens", "outputTokens", "cacheReadTokens", "cacheCreationTokens"],
                usage,
                strict=True,
            )
        )
        self.append(
            "message.assistant",
            {"content": stored_blocks, "turn": self.turn, "tokenUsage": token_usage},
            Rec("", "assistant", None, blocks=blocks, uses=uses, turn=self.turn, usage=usage),
        )
        if not uses:
            return
        for u, a in uses:
            payload = {"toolCallId": u, "name": "tool", "arguments": a, "turn": self.turn}
            self.append("tool.call", payload, Rec("", "call", None, use_id=u, turn=self.turn))
        order = self.draw(st.permutations(uses))
        for u, _ in order:
            outcome = self.draw(st.sampled_from(["ok", "ok", "error", "interrupted"]))
            if outcome == "interrupted":
                continue  # the turn stopped before this tool reported
            size = self.draw(st.one_of(st.integers(0, 100), st.integers(10_000, 15_000)))
            content: Any = "r" * size
            if self.draw(st.booleans()) and size:
                content = [text("r" * size)]
            payload = {"toolCallId": u, "content": content, "isError": outcome == "error"}
            stored = normalize_tool_result_payload(payload)
            expected = {
                "type": "tool_result",
                "tool_use_id": u,
                "content": stored["content"],
                "is_error": outcome == "error",
            }
            self.append("tool.result", payload, Rec("", "result", None, use_id=u, result=expected))

    def switch_model(self) -> None:
        new = self.draw(st.sampled_from(MODELS))
        payload = {"previousModel": self.current_model(), "newModel": new}
        self.append("config.model_switch", payload, Rec("", "model", None, value=new))

    def reasoning(self) -> None:
        level = self.draw(st.sampled_from(LEVELS))
        self.append(
            "config.reasoning_level", {"newLevel": level}, Rec("", "level", None, value=level)
        )

    def prompt(self) -> None:
        prompt = self.draw(st.sampled_from(["be brief", "be thorough", ""]))
        self.append(
            "config.prompt_update", {"systemPrompt": prompt}, Rec("", "prompt", None, value=prompt)
        )

    def compact(self) -> None:
        summary = self.draw(st.sampled_from(["we fixed the bug", "user wants tests"]))
        self.append(
            "compact.summary", {"summary": summary}, Rec("", "summary", None, value=summary)
        )

    def clear(self) -> None:
        self.append("context.cleared", {"reason": "user"}, Rec("", "clear", None))

    def delete(self) -> None:
        targets = [
            r
            for r in self.ref.path(self.ref.heads[self.session])
            if r.kind in ("user", "assistant", "result")
        ]
        if not targets:
            return
        target = self.draw(st.sampled_from(targets))
        kind = {"user": "message.user", "assistant": "message.assistant", "result": "tool.result"}
        payload = {"targetEventId": target.id, "targetType": kind[target.kind]}
        self.append("message.deleted", payload, Rec("", "delete", None, target=target.id))

    def fork(self) -> None:
        point = self.draw(st.sampled_from(self.ref.order))
        model = self.draw(st.sampled_from([None, *MODELS]))
        result = self.store.fork(point, model=model)
        fork_event = result.fork_event
        assert fork_event.parent_id == point
        at_point = "claude-a"
        for r in self.ref.path(point):
            if r.kind in ("fork", "model"):
                at_point = r.value
        self.session = result.session.id
        self.sessions.append(self.session)
        self.ref.add(Rec(fork_event.id, "fork", point, value=model or at_point), self.session)

    def rewind(self) -> None:
        path = self.ref.path(self.ref.heads[self.session])
        target = self.draw(st.sampled_from(path))
        self.store.rewind(self.session, target.id)
        self.ref.heads[self.session] = target.id

    def switch_session(self) -> None:
        self.session = self.draw(st.sampled_from(self.sessions))

    # The check.

    def check(self, event_id: str) -> None:
        state = self.store.get_state_at(event_id)
        messages = state.messages
        assert validate_history(messages) == []
        got = [(m.role, [b.to_wire() for b in m.content], m.event_ids) for m in messages]
        assert got == self.ref.history(event_id)
        expected_state = self.ref.state(event_id)
        assert state.model == expected_state["model"]
        assert state.provider == expected_state["provider"]
        assert state.working_directory == expected_state["working_directory"]
        assert state.system_prompt == expected_state["system_prompt"]
        assert state.reasoning_level == expected_state["reasoning_level"]
        assert state.token_usage.model_dump() == expected_state["token_usage"]
        assert state.turn_count == expected_state["turn_count"]
        assert state.head_event_id == event_id
        check_with_anthropic_sdk(messages)


def check_with_anthropic_sdk(messages: list[Message]) -> None:
    """The request validates against the SDK's own types.

    The SDK declares content as ``Iterable[...]``, which pydantic validates lazily:
    walking the validated value forces every block (and nested part) through it.
    """
    request = {
        "model": "claude-a",
        "max_tokens": 1024,
        "messages": [m.to_anthropic() for m in messages],
    }
    validated = REQUEST.validate_python(request)
    for message in validated["messages"]:
        content = message["content"]
        if isinstance(content, str):
            continue
        for block in content:
            inner = block.get("content")
            if inner is not None and not isinstance(inner, str):
                list(inner)


STEPS = (
    ["user_turn"] * 4
    + ["assistant_turn"] * 5
    + ["switch_model", "reasoning", "prompt", "compact", "delete", "delete", "clear"]
    + ["fork", "fork", "rewind", "rewind", "switch_session"]
)


@settings(
    max_examples=RECONSTRUCTION_EXAMPLES,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,  # one store, a new session per example
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(data=st.data())
def test_every_event_reconstructs_to_the_reference_history(
    store: EventStore, data: st.DataObject
) -> None:
    run = Run(store, data)
    steps = set()
    for _ in range(data.draw(st.integers(1, 20), label="steps")):
        step = data.draw(st.sampled_from(STEPS), label="step")
        steps.add(step)
        getattr(run, step)()
    for event_id in run.ref.order:
        run.check(event_id)
    # Coverage, shown by --hypothesis-show-statistics.
    event(f"events: {len(run.ref.order) // 10 * 10}+")
    for step in ("fork", "rewind", "delete", "compact"):
        if step in steps:
            event(f"used {step}")
    rendered = repr([run.ref.history(e) for e in run.ref.order])
    for feature, needle in (
        ("synthetic result", INTERRUPTED_RESULT),
        ("compaction ack", COMPACTION_ACK),
        ("truncated input kept as stub", "_truncated"),
        ("truncated result", "characters]"),
    ):
        if needle in rendered:
            event(f"history with {feature}")
    if any(len(json_text(a)) > 5_120 for r in run.ref.recs.values() for _, a in r.uses):
        event("tool input over 5,120")
    for session_id in run.sessions:
        head = run.ref.heads[session_id]
        state = store.get_state_at_head(session_id)
        assert state.head_event_id == head
        assert state == store.get_state_at(head)
        assert store.get_messages_at(head) == state.messages
