"""When a session's last client leaves, the orchestrator lets go of what it keeps for the
session between runs (its rules files' state, its profile, its folder's hook engine when
no other session in use works there); the next run builds them again from the store and
the files, as after a restart (issue 29: memory follows the sessions someone has open)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.agent.harness import Harness
from tests.support.scripted_llm import Response, Text, ToolUse
from tron_events import AsyncEventStore
from tron_server.agent import Orchestrator
from tron_server.hooks import build_hook_engine
from tron_server.tools.base import ToolRegistry

pytestmark = pytest.mark.anyio


async def test_a_forgotten_session_s_next_run_restores_its_rules_without_recording_again(
    h: Harness,
) -> None:
    h.nested_rules()
    h.llm.add(Response([Text("Encore.")]))
    s = await h.session()
    await h.run(s.id, "read pkg/mod.py")
    assert s.id in h.orch._rules and s.id in h.orch._profiles
    h.orch.forget_history(s.id)  # its last client left
    assert s.id not in h.orch._rules and s.id not in h.orch._profiles
    await h.run(s.id, "again")
    system = str(h.llm.requests[-1]["system"])
    assert "Always answer in French." in system and "never use tabs" in system
    assert (await h.types(s.id)).count("rules.loaded") == 2  # restored, not recorded again


async def test_a_session_forgotten_during_its_run_is_forgotten_at_the_run_s_end(
    h: Harness,
) -> None:
    h.llm.add(Response([ToolUse("Slow", {"seconds": 60}, id="toolu_slow")]))
    s = await h.session()
    await h.orch.send_message(s.id, "wait")
    with anyio.fail_after(10):
        await h.slow.started.wait()
    rules = h.orch._rules[s.id]
    h.orch.forget_history(s.id)
    assert h.orch._rules.get(s.id) is rules  # the run still uses it
    await h.orch.abort(s.id)
    assert s.id not in h.orch._rules
    h.llm.add(Response([Text("Back.")]))
    assert (await h.run(s.id, "go on"))["stopReason"] == "end_turn"


async def test_a_folder_s_hook_engine_goes_with_the_last_session_in_use_there(
    tmp_path: Path,
) -> None:
    store = await AsyncEventStore.open(f"sqlite:///{tmp_path / 'agent.db'}")
    orch = Orchestrator(
        store, lambda _p, _m: None, ToolRegistry([]), None, lambda *_: None,  # type: ignore[arg-type,return-value]
        home=tmp_path / "home",
        hooks_factory=lambda wd, record: build_hook_engine(wd, tmp_path / "home", record),
    )  # fmt: skip
    try:
        one, two = tmp_path / "one", tmp_path / "two"
        for folder in (one, two):
            folder.mkdir()
        engine = orch.hooks_for(one)
        orch._rules_for("a", one), orch._rules_for("b", one), orch._rules_for("c", two)
        orch.hooks_for(two)
        orch.forget_history("a")
        assert orch.hooks_for(one) is engine  # "b" still works in it
        orch.forget_history("c")
        assert set(orch.lifecycle._engines) == {one}
        orch.forget_history("b")
        assert orch.lifecycle._engines == {}
        assert orch.hooks_for(one) is not engine  # built again when a session needs it
        orch.forget_history("never-seen")  # nothing kept: nothing to do
    finally:
        await orch.shutdown(timeout=5)
        await store.aclose()
