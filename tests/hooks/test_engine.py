"""HookEngine: ordering, matchers, blocking, modification chaining, failures, background runs,
and the hook.triggered / hook.completed records on a real event store."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.hooks.conftest import StoreRecorder
from tron_events import Session
from tron_server.hooks import HookContext, HookDecision, HookEngine, HookFn
from tron_server.hooks.base import compile_matcher

pytestmark = pytest.mark.anyio


def pre(tool: str = "Bash", **tool_input: object) -> HookContext:
    return HookContext(
        event="PreToolUse",
        session_id="s",
        working_directory=Path("/w"),
        tool_name=tool,
        tool_input=dict(tool_input) or {"command": "ls"},
    )


async def test_priority_order_highest_first_ties_in_registration_order() -> None:
    seen: list[str] = []
    engine = HookEngine()

    def hook(name: str):  # type: ignore[no-untyped-def]
        async def fn(ctx: HookContext) -> None:
            seen.append(name)

        return fn

    engine.register("low", "PreToolUse", hook("low"), priority=-5)
    engine.register("mid-a", "PreToolUse", hook("mid-a"))
    engine.register("high", "PreToolUse", hook("high"), priority=100)
    engine.register("mid-b", "PreToolUse", hook("mid-b"))
    engine.register("other-event", "UserPromptSubmit", hook("other-event"), priority=1000)
    decision = await engine.run_blocking(pre())
    assert decision.action == "allow"
    assert seen == ["high", "mid-a", "mid-b", "low"]
    assert engine.hooks_for("PreToolUse", "Bash") == seen


@pytest.mark.parametrize(
    ("matcher", "matches", "misses"),
    [
        (None, ["Bash", "Write"], []),
        ("*", ["Bash", "mcp__x"], []),
        ("", ["Bash"], []),
        ("Bash", ["Bash"], ["BashX", "bash", "Write"]),
        ("Write|Edit", ["Write", "Edit"], ["Bash", "WriteX", "Edi"]),
        ("Write, Edit", ["Write", "Edit"], ["Bash", "Write, Edit"]),
        # Anything else is a regular expression searched in the name, unanchored as
        # Claude Code's RegExp.test (measured against its CLI: "rit." fires on Write).
        ("mcp__.*", ["mcp__github__pr", "xmcp__a"], ["Bash"]),
        ("Notebook.*|Read", ["NotebookEdit", "Read", "Reader"], ["Bash"]),
        ("rit.", ["Write"], ["Edit"]),
        ("^Edit$", ["Edit"], ["NotebookEdit", "Edits"]),
    ],
)
def test_matchers(matcher: str | None, matches: list[str], misses: list[str]) -> None:
    pred = compile_matcher(matcher)
    assert all(pred(n) for n in matches)
    assert not any(pred(n) for n in misses)


def test_bad_regex_matcher_is_refused_at_registration() -> None:
    engine = HookEngine()

    async def fn(ctx: HookContext) -> None:
        return None

    with pytest.raises(ValueError, match="invalid hook matcher"):
        engine.register("bad", "PreToolUse", fn, matcher="Bash(")


async def test_matcher_selects_hooks_and_is_ignored_without_a_tool() -> None:
    ran: list[str] = []
    engine = HookEngine()

    async def bash_only(ctx: HookContext) -> None:
        ran.append(ctx.event)

    engine.register("b", "PreToolUse", bash_only, matcher="Bash")
    engine.register("p", "UserPromptSubmit", bash_only, matcher="Bash")
    await engine.run_blocking(pre("Read", file_path="x"))
    assert ran == []
    await engine.run_blocking(pre("Bash"))
    await engine.run_blocking(
        HookContext(
            event="UserPromptSubmit", session_id="s", working_directory=Path("/w"), prompt="hi"
        )
    )
    assert ran == ["PreToolUse", "UserPromptSubmit"]


async def test_matchers_select_what_claude_code_matches_per_event(workdir: Path) -> None:
    """Claude Code's Agent (formerly Task) and AskUserQuestion are our Task and AskUser, in
    both directions; SessionEnd matches the reason, SubagentStop the agent type; Stop has
    no matcher (ignored). A permission rule on Agent is one on Task too."""
    ran: list[str] = []
    engine = HookEngine()

    def hook(name: str) -> HookFn:
        async def fn(ctx: HookContext) -> None:
            ran.append(name)

        return fn

    for name, event, matcher in [
        ("agent", "PreToolUse", "Agent"), ("task", "PreToolUse", "Task"),
        ("ask", "PreToolUse", "AskUserQuestion"), ("clear", "SessionEnd", "clear"),
        ("exit", "SessionEnd", "logout|prompt_input_exit"),
        ("reviewer", "SubagentStop", "reviewer"), ("stop", "Stop", "Bash"),
    ]:  # fmt: skip
        engine.register(name, event, hook(name), matcher=matcher)  # type: ignore[arg-type]
    assert engine.hooks_for("PreToolUse", "Task") == ["agent", "task"]
    assert engine.hooks_for("PreToolUse", "Agent") == ["agent", "task"]
    assert engine.hooks_for("PreToolUse", "AskUser") == ["ask"]
    assert engine.hooks_for("PreToolUse", "Read") == []

    def ctx(event: str, **data: str) -> HookContext:
        return HookContext(event=event, session_id="s", working_directory=workdir, data=data)  # type: ignore[arg-type]

    for event, data in [("SessionEnd", {"reason": "clear"}), ("SessionEnd", {"reason": "other"}),
                        ("SessionEnd", {"reason": "logout"}),
                        ("SubagentStop", {"agent_type": "general-purpose"}),
                        ("SubagentStop", {"agent_type": "reviewer"}), ("Stop", {})]:  # fmt: skip
        await engine.run_now(ctx(event, **data))
    assert ran == ["clear", "exit", "reviewer", "stop"]

    from tron_server.interaction import CallFacts, parse_rule

    facts = CallFacts("Task", {"prompt": "p", "description": "d"}, workdir)
    assert parse_rule("Agent", "deny").matches(facts)


async def test_notice_answers_are_merged_and_messages_reach_the_user(workdir: Path) -> None:
    told: list[tuple[str, str, str]] = []
    engine = HookEngine()

    async def notify(sid: str, hook: str, event: str, message: str) -> None:
        told.append((hook, event, message))

    engine.set_notifier(notify)

    def answer(decision: HookDecision) -> HookFn:
        async def fn(ctx: HookContext) -> HookDecision:
            return decision

        return fn

    engine.register("a", "Stop", answer(HookDecision("block", "run the tests", context="ctx a")))
    engine.register("b", "Stop", answer(HookDecision(system_message="lint is slow today")))
    engine.register("c", "Stop", answer(HookDecision("block", "update the changelog")))
    merged = await engine.run_now(
        HookContext(event="Stop", session_id="s", working_directory=workdir)
    )
    assert merged.action == "block" and not merged.stop
    assert merged.reason == "run the tests\n\nupdate the changelog"
    assert merged.context == "ctx a"
    assert told == [("b", "Stop", "lint is slow today")]

    engine.register("d", "Stop", answer(HookDecision("block", stop=True, stop_reason="frozen")))
    merged = await engine.run_now(
        HookContext(event="Stop", session_id="s", working_directory=workdir)
    )
    assert merged.stop and merged.stop_reason == "frozen"
    assert told[-1] == ("d", "Stop", "frozen")
    # In a gate, a stop wins at once: later hooks do not run.
    engine.register("s", "PreToolUse", answer(HookDecision("block", "no", stop=True,
                                                           stop_reason="frozen")))  # fmt: skip
    engine.register("t", "PreToolUse", answer(HookDecision(context="never")))
    gate = await engine.run_blocking(pre())
    assert (gate.action, gate.stop, gate.stop_reason, gate.context) == ("block", True, "frozen",
                                                                        None)  # fmt: skip


async def test_first_block_wins_and_later_hooks_do_not_run() -> None:
    ran: list[str] = []
    engine = HookEngine()

    async def blocker(ctx: HookContext) -> HookDecision:
        ran.append("blocker")
        return HookDecision(action="block", reason="no pushing")

    async def later(ctx: HookContext) -> None:
        ran.append("later")

    engine.register("blocker", "PreToolUse", blocker, priority=10)
    engine.register("later", "PreToolUse", later)
    decision = await engine.run_blocking(pre())
    assert decision.action == "block"
    assert decision.reason == "no pushing"
    assert ran == ["blocker"]


async def test_block_without_reason_names_the_hook() -> None:
    engine = HookEngine()

    async def blocker(ctx: HookContext) -> HookDecision:
        return HookDecision(action="block")

    engine.register("quiet", "PreToolUse", blocker)
    decision = await engine.run_blocking(pre())
    assert decision.reason is not None and "quiet" in decision.reason


async def test_modifications_chain_through_hooks() -> None:
    engine = HookEngine()
    seen: list[dict[str, object] | None] = []

    async def add_flag(ctx: HookContext) -> HookDecision:
        assert ctx.tool_input is not None
        return HookDecision(
            action="modify",
            tool_input={**ctx.tool_input, "command": ctx.tool_input["command"] + " -la"},
        )

    async def add_timeout(ctx: HookContext) -> HookDecision:
        assert ctx.tool_input is not None
        seen.append(ctx.tool_input)
        return HookDecision(
            action="modify", tool_input={**ctx.tool_input, "timeout": 5}, reason="t"
        )

    async def observer(ctx: HookContext) -> None:
        seen.append(ctx.tool_input)

    engine.register("flag", "PreToolUse", add_flag, priority=2)
    engine.register("timeout", "PreToolUse", add_timeout, priority=1)
    engine.register("observer", "PreToolUse", observer)
    decision = await engine.run_blocking(pre(command="ls"))
    assert decision.action == "modify"
    assert decision.tool_input == {"command": "ls -la", "timeout": 5}
    assert seen == [{"command": "ls -la"}, {"command": "ls -la", "timeout": 5}]
    assert decision.reason == "t"


async def test_prompt_modification_then_block_returns_block() -> None:
    engine = HookEngine()

    async def rewrite(ctx: HookContext) -> HookDecision:
        return HookDecision(action="modify", prompt=(ctx.prompt or "") + " please")

    async def check(ctx: HookContext) -> HookDecision | None:
        if ctx.prompt and "secret" in ctx.prompt:
            return HookDecision(action="block", reason="no secrets")
        return None

    engine.register("rewrite", "UserPromptSubmit", rewrite, priority=1)
    engine.register("check", "UserPromptSubmit", check)
    ctx = HookContext(
        event="UserPromptSubmit", session_id="s", working_directory=Path("/w"), prompt="hi"
    )
    d = await engine.run_blocking(ctx)
    assert (d.action, d.prompt) == ("modify", "hi please")
    d2 = await engine.run_blocking(
        HookContext(
            event="UserPromptSubmit", session_id="s", working_directory=Path("/w"), prompt="secret"
        )
    )
    assert (d2.action, d2.reason) == ("block", "no secrets")


async def test_failing_blocking_hook_fails_closed_by_default() -> None:
    engine = HookEngine()

    async def broken(ctx: HookContext) -> None:
        raise RuntimeError("boom")

    engine.register("broken", "PreToolUse", broken)
    d = await engine.run_blocking(pre())
    assert d.action == "block"
    assert d.reason is not None and "broken" in d.reason and "boom" in d.reason


async def test_failing_hook_with_on_error_allow_fails_open(
    caplog: pytest.LogCaptureFixture,
) -> None:
    engine = HookEngine()

    async def broken(ctx: HookContext) -> None:
        raise RuntimeError("boom")

    engine.register("lenient", "PreToolUse", broken, on_error="allow")
    with caplog.at_level("WARNING", logger="tron_server.hooks"):
        d = await engine.run_blocking(pre())
    assert d.action == "allow"
    assert "lenient" in caplog.text and "boom" in caplog.text


async def test_blocking_hook_timeout_follows_policy(
    recorder: StoreRecorder, session: Session
) -> None:
    engine = HookEngine(recorder)

    async def sleepy(ctx: HookContext) -> None:
        await anyio.sleep(30)

    engine.register("sleepy-closed", "PreToolUse", sleepy, timeout=0.2)
    ctx = HookContext(
        event="PreToolUse",
        session_id=session.id,
        working_directory=Path("/w"),
        tool_name="Bash",
        tool_input={"command": "ls"},
    )
    with anyio.fail_after(10):
        d = await engine.run_blocking(ctx)
    assert d.action == "block" and d.reason is not None and "timed out" in d.reason

    open_engine = HookEngine(recorder)
    open_engine.register("sleepy-open", "PreToolUse", sleepy, timeout=0.2, on_error="allow")
    with anyio.fail_after(10):
        d2 = await open_engine.run_blocking(ctx)
    assert d2.action == "allow"
    completed = [p for t, p in await recorder.events(session.id) if t == "hook.completed"]
    assert [(p["hookName"], p["action"]) for p in completed] == [
        ("sleepy-closed", "block"),
        ("sleepy-open", "allow"),
    ]
    assert all("timed out after 0.2s" in p["error"] for p in completed)


async def test_cancellation_of_the_caller_propagates() -> None:
    engine = HookEngine()
    started = anyio.Event()

    async def slow(ctx: HookContext) -> None:
        started.set()
        await anyio.sleep(30)

    engine.register("slow", "PreToolUse", slow, on_error="allow")
    with anyio.move_on_after(5) as outer:
        async with anyio.create_task_group() as tg:
            tg.start_soon(engine.run_blocking, pre())
            await started.wait()
            tg.cancel_scope.cancel()
    assert not outer.cancelled_caught  # the task group was cancelled, not the 5 s guard


async def test_records_triggered_and_completed_on_the_store(
    recorder: StoreRecorder, session: Session
) -> None:
    engine = HookEngine(recorder)

    async def allow(ctx: HookContext) -> None:
        return None

    async def block(ctx: HookContext) -> HookDecision:
        return HookDecision(action="block", reason="nope")

    engine.register("first", "PreToolUse", allow, priority=1)
    engine.register("second", "PreToolUse", block)
    ctx = HookContext(
        event="PreToolUse",
        session_id=session.id,
        working_directory=Path("/w"),
        tool_name="Bash",
        tool_input={"command": "x"},
        data={"toolCallId": "toolu_1"},
    )
    await engine.run_blocking(ctx)
    events = await recorder.events(session.id)
    assert [t for t, _ in events] == ["hook.triggered", "hook.completed"] * 2
    trig = events[0][1]
    assert trig == {
        "hookName": "first",
        "hookEvent": "PreToolUse",
        "toolName": "Bash",
        "toolCallId": "toolu_1",
    }
    done = events[3][1]
    assert done["hookName"] == "second" and done["action"] == "block" and done["reason"] == "nope"
    assert isinstance(done["durationMs"], int) and done["durationMs"] >= 0
    assert "error" not in done


async def test_record_failure_does_not_change_the_outcome() -> None:
    async def broken_record(session_id: str, event_type: str, payload: dict[str, object]) -> None:
        raise RuntimeError("db down")

    engine = HookEngine(broken_record)

    async def block(ctx: HookContext) -> HookDecision:
        return HookDecision(action="block", reason="r")

    engine.register("b", "PreToolUse", block)
    assert (await engine.run_blocking(pre())).action == "block"


async def test_background_hooks_are_awaited_on_drain_and_fail_open(
    recorder: StoreRecorder, session: Session
) -> None:
    engine = HookEngine(recorder)
    done: list[str] = []
    gate = anyio.Event()

    async def slow(ctx: HookContext) -> None:
        await gate.wait()
        done.append("slow")

    async def broken(ctx: HookContext) -> None:
        raise RuntimeError("background boom")

    async def after(ctx: HookContext) -> None:
        done.append("after")

    engine.register("slow", "PostToolUse", slow, priority=2)
    engine.register("broken", "PostToolUse", broken, priority=1)
    engine.register("after", "PostToolUse", after)
    ctx = HookContext(
        event="PostToolUse",
        session_id=session.id,
        working_directory=Path("/w"),
        tool_name="Bash",
        tool_result={"content": "ok", "isError": False},
    )
    engine.fire_background(ctx)  # returns at once
    assert done == [] and engine.pending_count == 1
    gate.set()
    await engine.drain(timeout=10)
    assert done == ["slow", "after"]  # the broken hook did not stop the next one
    assert engine.pending_count == 0
    completed = [p for t, p in await recorder.events(session.id) if t == "hook.completed"]
    broken_rec = next(p for p in completed if p["hookName"] == "broken")
    assert broken_rec["action"] == "allow" and "background boom" in broken_rec["error"]


async def test_drain_cancels_hooks_that_outlive_the_timeout() -> None:
    engine = HookEngine()
    cancelled: list[bool] = []

    async def forever(ctx: HookContext) -> None:
        try:
            await anyio.sleep(60)
        except BaseException:
            cancelled.append(True)
            raise

    engine.register("forever", "SessionEnd", forever, timeout=120)
    engine.fire_background(
        HookContext(event="SessionEnd", session_id="s", working_directory=Path("/w"))
    )
    with anyio.fail_after(10):
        await engine.drain(timeout=0.2)
    assert cancelled == [True]
    assert engine.pending_count == 0


async def test_event_kind_is_checked() -> None:
    engine = HookEngine()
    with pytest.raises(ValueError):
        await engine.run_blocking(
            HookContext(event="Stop", session_id="s", working_directory=Path("/w"))
        )
    with pytest.raises(ValueError):
        engine.fire_background(pre())


@given(st.lists(st.integers(-5, 5), min_size=1, max_size=12))
def test_run_order_is_priority_descending_then_registration(priorities: list[int]) -> None:
    engine = HookEngine()

    async def fn(ctx: HookContext) -> None:
        return None

    for i, p in enumerate(priorities):
        engine.register(f"h{i}", "PreToolUse", fn, priority=p)
    expected = [f"h{i}" for i, _ in sorted(enumerate(priorities), key=lambda t: (-t[1], t[0]))]
    assert engine.hooks_for("PreToolUse", "Bash") == expected


NAME = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,8}", fullmatch=True)


@given(st.lists(NAME, min_size=1, max_size=4, unique=True), NAME)
def test_name_list_matcher_is_exact_membership(names: list[str], probe: str) -> None:
    pred = compile_matcher("|".join(names))
    assert pred(probe) == (probe in names)
    assert all(pred(n) for n in names)
