"""The event tree against a plain in-memory model (hypothesis stateful testing).

Every step drives the real store (on each backend) and the model the same way;
after every step heads, ancestors, children, sequences, feeds and search must
agree. Each example works in a workspace of its own, so one database serves
the whole run.
"""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass, field

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from tron_events import (
    ConcurrencyConflict,
    EventStore,
    InvalidParent,
    InvalidRewind,
    SessionHasForks,
    SessionNotActive,
)


@dataclass
class MEvent:
    id: str
    parent: str | None
    session: str
    sequence: int
    depth: int
    word: str | None


@dataclass
class MSession:
    id: str
    root: str
    head: str
    parent_session: str | None
    own: list[str] = field(default_factory=list)
    ended: bool = False


_words = itertools.count()


class TreeMachine(RuleBasedStateMachine):
    store: EventStore  # set by the test

    sessions = Bundle("sessions")

    def __init__(self) -> None:
        super().__init__()
        self.events: dict[str, MEvent] = {}
        self.ss: dict[str, MSession] = {}
        self.wd = f"/sm/{uuid.uuid4().hex}"

    # -- model helpers ------------------------------------------------------

    def path(self, event_id: str) -> list[str]:
        out = []
        cur: str | None = event_id
        while cur is not None:
            out.append(cur)
            cur = self.events[cur].parent
        return out[::-1]

    def tree(self, s: MSession) -> set[str]:
        return set(s.own) | set(self.path(s.root))

    def add(self, sid: str, event_id: str, parent: str | None, word: str | None) -> None:
        s = self.ss[sid]
        depth = 0 if parent is None else self.events[parent].depth + 1
        self.events[event_id] = MEvent(event_id, parent, sid, len(s.own), depth, word)
        s.own.append(event_id)
        s.head = event_id

    def live(self) -> list[MSession]:
        return list(self.ss.values())

    # -- rules --------------------------------------------------------------

    @rule(target=sessions)
    def create(self) -> str:
        s = self.store.create_session(working_directory=self.wd, model="m", provider="p")
        self.ss[s.id] = MSession(s.id, s.root_event_id, s.root_event_id, None)
        self.add(s.id, s.root_event_id, None, None)
        return s.id

    @rule(sid=sessions, data=st.data())
    def append(self, sid: str, data: st.DataObject) -> None:
        if sid not in self.ss:
            return
        s = self.ss[sid]
        word = f"w{next(_words)}x"
        mode = data.draw(st.sampled_from(["head", "explicit", "expected", "stale"]))
        kwargs: dict[str, str] = {}
        parent = s.head
        if mode == "explicit":
            parent = data.draw(st.sampled_from(sorted(self.tree(s))))
            kwargs["parent_id"] = parent
        elif mode == "expected":
            kwargs["expected_head"] = s.head
        elif mode == "stale":
            stale = [e for e in sorted(self.tree(s)) if e != s.head]
            if not stale:
                return
            kwargs["expected_head"] = data.draw(st.sampled_from(stale))
        payload = {"content": f"message {word}", "turn": 1}
        if s.ended:
            with pytest.raises(SessionNotActive):
                self.store.append(sid, "message.user", payload, **kwargs)  # type: ignore[arg-type]
            return
        if mode == "stale":
            with pytest.raises(ConcurrencyConflict):
                self.store.append(sid, "message.user", payload, **kwargs)  # type: ignore[arg-type]
            return
        e = self.store.append(sid, "message.user", payload, **kwargs)  # type: ignore[arg-type]
        self.add(sid, e.id, parent, word)

    @rule(sid=sessions, n=st.integers(1, 4))
    def append_many(self, sid: str, n: int) -> None:
        if sid not in self.ss:
            return
        s = self.ss[sid]
        words = [f"w{next(_words)}x" for _ in range(n)]
        drafts = [{"type": "message.user", "payload": {"content": w}} for w in words]
        if s.ended:
            with pytest.raises(SessionNotActive):
                self.store.append_many(sid, drafts)
            return
        for e, w in zip(self.store.append_many(sid, drafts), words, strict=True):
            self.add(sid, e.id, s.head, w)

    @rule(target=sessions, data=st.data())
    def fork(self, data: st.DataObject) -> str:
        if not self.events:
            return "sess_none"
        source = data.draw(st.sampled_from(sorted(self.events)))
        f = self.store.fork(source)
        self.ss[f.session.id] = MSession(
            f.session.id, f.fork_event.id, f.fork_event.id, self.events[source].session
        )
        self.add(f.session.id, f.fork_event.id, source, None)
        return f.session.id

    @rule(sid=sessions, data=st.data())
    def rewind(self, sid: str, data: st.DataObject) -> None:
        if sid not in self.ss:
            return
        s = self.ss[sid]
        target = data.draw(st.sampled_from(sorted(self.events)))
        on_path = target in self.path(s.head)
        if s.ended:
            with pytest.raises(SessionNotActive):
                self.store.rewind(sid, target)
        elif not on_path:
            with pytest.raises(InvalidRewind):
                self.store.rewind(sid, target)
        else:
            assert self.store.rewind(sid, target).head_event_id == target
            s.head = target

    @rule(sid=sessions, data=st.data())
    def explicit_parent_off_tree(self, sid: str, data: st.DataObject) -> None:
        if sid not in self.ss or self.ss[sid].ended:
            return
        outside = sorted(set(self.events) - self.tree(self.ss[sid]))
        if outside:
            with pytest.raises(InvalidParent):
                self.store.append(
                    sid,
                    "message.user",
                    {"content": "x"},
                    parent_id=data.draw(st.sampled_from(outside)),
                )

    @rule(sid=sessions)
    def end(self, sid: str) -> None:
        if sid not in self.ss:
            return
        s = self.ss[sid]
        if s.ended:
            with pytest.raises(SessionNotActive):
                self.store.end_session(sid)
            return
        e = self.store.end_session(sid)
        self.add(sid, e.id, s.head, None)
        s.ended = True

    @precondition(lambda self: bool(self.ss))
    @rule(sid=consumes(sessions), cascade=st.booleans())
    def delete(self, sid: str, cascade: bool) -> None:
        if sid not in self.ss:
            return
        forks = [x.id for x in self.ss.values() if x.parent_session == sid]
        if forks and not cascade:
            with pytest.raises(SessionHasForks):
                self.store.delete_session(sid)
            return
        self.store.delete_session(sid, cascade=cascade)
        doomed = [sid]
        i = 0
        while i < len(doomed):
            doomed += [x.id for x in self.ss.values() if x.parent_session == doomed[i]]
            i += 1
        for d in doomed:
            for eid in self.ss.pop(d).own:
                del self.events[eid]

    # -- invariants ---------------------------------------------------------

    @invariant()
    def sessions_agree(self) -> None:
        for s in self.live():
            got = self.store.get_session(s.id)
            assert got.head_event_id == s.head
            assert got.status == ("ended" if s.ended else "active")
            assert got.event_count == len(s.own)
            own = self.store.get_events(s.id)
            assert [e.id for e in own] == s.own
            assert [e.sequence for e in own] == list(range(len(s.own)))
            page = self.store.get_since(session_id=s.id, after_sequence=len(s.own) - 3)
            assert [e.id for e in page.events] == s.own[-2:]

    @invariant()
    def ancestors_agree(self) -> None:
        for s in self.live():
            path = self.store.get_ancestors(s.head)
            assert [e.id for e in path] == self.path(s.head)
            assert [e.depth for e in path] == list(range(len(path)))
            assert all(a.id == b.parent_id for a, b in itertools.pairwise(path))

    @invariant()
    def children_agree(self) -> None:
        for eid in sorted(self.events)[:8]:
            expected = {e.id for e in self.events.values() if e.parent == eid}
            assert {c.id for c in self.store.get_children(eid)} == expected

    @invariant()
    def workspace_feed_agrees(self) -> None:
        if not self.ss:
            return
        ws = self.store.get_session(next(iter(self.ss))).workspace_id
        feed = self.store.get_since(workspace_id=ws, limit=10_000).events
        assert sorted(e.id for e in feed) == sorted(self.events)
        assert [e.position for e in feed] == sorted(e.position for e in feed)

    @invariant()
    def search_finds_each_word(self) -> None:
        with_words = [e for e in self.events.values() if e.word]
        for e in with_words[-3:]:
            hits = self.store.search(e.word or "")
            assert [h.event_id for h in hits] == [e.id]


def test_tree_matches_model(store: EventStore, backend: str) -> None:
    TreeMachine.store = store
    examples = settings().max_examples
    if backend == "postgres":
        # The same machine over the network costs ~6x per step; a third of the runs
        # keeps CI under its time budget (the backends share every code path above
        # the recorder, which the SQLite runs cover in full).
        examples = max(20, examples // 3)
    run_state_machine_as_test(
        TreeMachine, settings=settings(stateful_step_count=50, max_examples=examples)
    )
