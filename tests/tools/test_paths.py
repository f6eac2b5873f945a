"""One path resolution for every tool and the guardrails (PathPolicy).

A hypothesis property over generated trees of folders and symlinks (inside and outside
the working directory, chained, relative and absolute targets) and generated spellings of
paths: what Write/Edit write lies under the allowed roots, never a settings file, and is
exactly the file the kernel would open for that path (``os.path.realpath`` is the oracle);
the guardrails' verdict and the tool's agree. Race tests swap symlinks in a thread while
tools write, and nothing is ever written outside.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.support.trust import trust_folder
from tron_server.hooks import Guardrails, GuardrailSettings, HookContext, build_hook_engine
from tron_server.hooks.guardrails import path_policy
from tron_server.tools import (
    InvalidPath,
    PathError,
    PathPolicy,
    PathRefused,
    ToolContext,
    ToolResult,
    default_tools,
)

# tmpfs when there is one: the tools fsync every write.
_SCRATCH = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None

NAMES = ["a", "b", "sub", "l1", "l2"]
PARENTS = ["work", "work/a", "work/d", "work/sub", "work/.tron", "outside", "scratch"]
SEEDED = ["d", "f", "out", "up", "cfg", "back"]
WORDS = [*NAMES, *SEEDED, "..", ".", "", "outside", "work", "scratch", "home", ".tron"]
WORDS += ["settings.json"]
PROTECTED = ("work/.tron/settings.json", "work/.claude/settings.json", "home/settings.json")


@contextmanager
def sandbox() -> Iterator[Path]:
    """base/{work (working directory), outside, scratch (an allowed root), home}."""
    with tempfile.TemporaryDirectory(dir=_SCRATCH, prefix="tron-paths-") as tmp:
        base = Path(tmp).resolve()
        for folder in ("work/.tron", "work/.claude", "outside", "scratch", "home"):
            (base / folder).mkdir(parents=True)
        for rel in PROTECTED:
            (base / rel).write_text('{"hooks": {}}')
        (base / "outside" / "o.txt").write_text("outside file")
        yield base


def seed(base: Path) -> None:
    """A few links that lead out, up and around, for the generated trees to build on."""
    (base / "work" / "d").mkdir()
    (base / "work" / "d" / "f").write_text("f-d")
    (base / "outside" / "f").write_text("f-outside")
    (base / "work" / "out").symlink_to("../outside")
    (base / "work" / "up").symlink_to("d/../..")
    (base / "work" / "cfg").symlink_to(".tron")
    (base / "work" / "d" / "back").symlink_to(str(base / "work"))


def guard_for(base: Path, **kw: Any) -> Guardrails:
    settings_ = GuardrailSettings(allowed_write_paths=(str(base / "scratch"),), **kw)
    return Guardrails(settings_, working_directory=base / "work", home=base / "home")


def snapshot(base: Path) -> dict[str, tuple[str, str]]:
    """Every entry below ``base`` without following links: kind and content/target."""
    out: dict[str, tuple[str, str]] = {}
    for folder, dirs, files in os.walk(base):
        for name in dirs + files:
            path = Path(folder) / name
            rel = str(path.relative_to(base))
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                out[rel] = ("dir", "")
            else:
                out[rel] = ("file", path.read_text(errors="replace"))
    return out


def run_tool(ctx: ToolContext, name: str, args: dict[str, Any]) -> ToolResult:
    async def go() -> ToolResult:
        return await default_tools().execute(name, args, ctx)

    return anyio.run(go)


# -- generated trees and spellings ------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    parent: str
    name: str
    kind: str  # dir | file | link
    target: str = ""


def _rel_text(words: list[str]) -> str:
    return "/".join(words) or "."


link_targets = st.one_of(
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(_rel_text),
    st.tuples(
        st.sampled_from(["work", "outside", "scratch", "home", "work/.tron", "work/a"]),
        st.lists(st.sampled_from(WORDS), max_size=3),
    ).map(lambda t: "@ABS@/" + t[0] + ("/" + _rel_text(t[1]) if t[1] else "")),
)
entries = st.lists(
    st.builds(
        Entry,
        st.sampled_from(PARENTS),
        st.sampled_from(NAMES),
        st.sampled_from(["dir", "file", "link", "link"]),
        link_targets,
    ),
    max_size=10,
)
spellings = st.tuples(
    st.sampled_from(["", "", "", "@ABS@/work/", "@ABS@/", "@ABS@/outside/../work/", "~/"]),
    st.lists(st.sampled_from([*WORDS, *SEEDED, "d", "d", ".."]), max_size=5),
    st.sampled_from([*NAMES, "f", "f", "f", "f", "settings.json", "new.txt", "o.txt", "", "."]),
).map(lambda t: t[0] + "/".join([*t[1], t[2]]))


# Spellings through the seeded links (generated trees may change what they reach).
curated = st.sampled_from(
    [
        "d/f", "d/back/d/f", "up/work/d/f", "out/f", "out/../work/d/f", "cfg/settings.json",
        "d/../cfg/settings.json", "up/outside/f", "back/../outside/f", "~/d/f", "a/../d/f",
        "@ABS@/work/up/work/d/f", "d/back/cfg/../d/f", "up/home/settings.json", "sub/f",
        "l1/f", "l1/../f", "a/l2/f", "up/scratch/new.txt", "d/back/../scratch/f",
    ]
)  # fmt: skip


def build(base: Path, tree: list[Entry]) -> None:
    for e in tree:
        parent = base / e.parent
        path = parent / e.name
        if not parent.is_dir() or parent.is_symlink() or os.path.lexists(path):
            continue
        if e.kind == "dir":
            path.mkdir()
        elif e.kind == "file":
            path.write_text(f"f-{e.parent}")
        else:
            path.symlink_to(e.target.replace("@ABS@", str(base)))


def _under(rel: str, roots: tuple[str, ...]) -> bool:
    return any(rel == r or rel.startswith(r + "/") for r in roots)


@settings(
    # Each example builds a tree on disk: half the profile's count (100 in CI, 500 in dev).
    max_examples=max(10, settings.default.max_examples // 2),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    tree=entries,
    spelling=st.one_of(spellings, curated),
    op=st.sampled_from(["Write", "Edit", "Edit", "Read"]),
)
def test_tools_write_only_under_the_roots_and_where_the_kernel_would(
    tree: list[Entry], spelling: str, op: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with sandbox() as base:
        monkeypatch.setenv("HOME", str(base / "work"))  # "~/" spellings land in work
        seed(base)
        build(base, tree)
        raw = spelling.replace("@ABS@", str(base))
        guard = guard_for(base)
        ctx = ToolContext("s", base / "work", "t", paths=guard.paths)
        verdict = guard.check_write(raw)
        before = snapshot(base)
        if op == "Write":
            result = run_tool(ctx, "Write", {"file_path": raw, "content": "WRITTEN"})
        elif op == "Edit":
            result = run_tool(
                ctx, "Edit", {"file_path": raw, "old_string": "f-", "new_string": "E-"}
            )
        else:
            result = run_tool(ctx, "Read", {"file_path": raw})
        after = snapshot(base)
        event(f"{op}: {'ok' if not result.is_error else 'refused' if verdict else 'error'}")

        changed = {k for k in after if after[k] != before.get(k)} | (before.keys() - after.keys())
        # What a tool wrote lies under the working directory or the allowed folder ...
        assert all(_under(k, ("work", "scratch")) for k in changed), (raw, changed)
        # ... and is never a settings file.
        assert not changed & set(PROTECTED), (raw, changed)
        if op == "Read":
            assert not changed
        if verdict is not None and op != "Read":
            # The guardrails refuse: the tool, enforcing the same policy, refuses too.
            assert result.is_error and not changed, (raw, verdict, result.content)
        if not result.is_error:
            assert op == "Read" or verdict is None
            assert result.details is not None
            expected = os.path.realpath(os.path.join(base / "work", os.path.expanduser(raw)))
            # The one resolution names the file the kernel would open for this path.
            assert result.details["path"] == expected, (raw, result.details["path"])
            if op != "Read":
                content = Path(expected).read_text()
                assert content == "WRITTEN" if op == "Write" else content.startswith("E-")
                assert {k for k in changed if after[k][0] != "dir"} == {
                    str(Path(expected).relative_to(base))
                }


# -- the examples ---------------------------------------------------------------


def test_dotdot_through_a_symlink_is_physical_for_the_guard_and_the_tools() -> None:
    with sandbox() as base:
        work = base / "work"
        (work / "a" / "b").mkdir(parents=True)
        (work / "sub").symlink_to("a/b")
        guard = guard_for(base)
        ctx = ToolContext("s", work, "t", paths=guard.paths)
        # sub/.. is work/a, so sub/../../outside/x is work/outside/x: inside, and written
        # there (a lexical collapse would have written base/outside/x).
        assert guard.check_write("sub/../../outside/x") is None
        result = run_tool(ctx, "Write", {"file_path": "sub/../../outside/x", "content": "in"})
        assert not result.is_error, result.content
        assert (work / "outside" / "x").read_text() == "in"
        assert not (base / "outside" / "x").exists()
        # sub/../.tron/settings.json is work/a/.tron/settings.json, not the settings file.
        result = run_tool(ctx, "Write", {"file_path": "sub/../.tron/settings.json", "content": "x"})
        assert not result.is_error
        assert (work / "a" / ".tron" / "settings.json").read_text() == "x"
        assert (work / ".tron" / "settings.json").read_text() == '{"hooks": {}}'
        # One more level up through the link is outside, for both.
        raw = "sub/../../../outside/y"
        assert guard.check_write(raw) is not None
        assert run_tool(ctx, "Write", {"file_path": raw, "content": "no"}).is_error
        assert not (base / "outside" / "y").exists()


def test_settings_files_reached_through_links_are_refused() -> None:
    with sandbox() as base:
        work = base / "work"
        (work / "cfg").symlink_to(".tron")
        (work / "home-link").symlink_to(base / "home")
        (work / "s.json").symlink_to(".claude/settings.json")
        guard = guard_for(base)
        ctx = ToolContext("s", work, "t", paths=guard.paths)
        for raw in (
            "cfg/settings.json",
            "home-link/settings.json",
            "s.json",
            "./a/../.tron/./settings.json",
            str(work / ".claude" / "settings.local.json"),
        ):
            reason = guard.check_write(raw)
            assert reason is not None and "settings file" in reason, raw
            for tool, args in (
                ("Write", {"content": "{}"}),
                ("Edit", {"old_string": "hooks", "new_string": "off"}),
            ):
                result = run_tool(ctx, tool, {"file_path": raw, **args})
                assert result.is_error and "settings file" in str(result.content), (raw, tool)
        assert all((base / rel).read_text() == '{"hooks": {}}' for rel in PROTECTED)


@pytest.mark.parametrize("tool", ["Write", "Edit", "Read", "Grep", "Glob"])
def test_a_nul_byte_is_refused_explicitly(tool: str) -> None:
    with sandbox() as base:
        guard = guard_for(base)
        ctx = ToolContext("s", base / "work", "t", paths=guard.paths)
        raw = "a\x00b.txt"
        args: dict[str, Any] = {
            "Write": {"file_path": raw, "content": "x"},
            "Edit": {"file_path": raw, "old_string": "a", "new_string": "b"},
            "Read": {"file_path": raw},
            "Grep": {"pattern": "x", "path": raw},
            "Glob": {"pattern": "*.py", "path": raw},
        }[tool]
        result = run_tool(ctx, tool, args)
        assert result.is_error and "NUL byte" in str(result.content)
        assert "failed:" not in str(result.content)  # a clear refusal, not a crash
        reason = guard.check_write(raw)
        assert reason is not None and "NUL byte" in reason
        with pytest.raises(InvalidPath):
            guard.paths.resolve(raw)


@pytest.mark.anyio
async def test_the_guardrails_hook_refuses_a_nul_byte_without_failing() -> None:
    with sandbox() as base:
        engine = build_hook_engine(base / "work", base / "home")
        decision = await engine.run_blocking(
            HookContext(
                event="PreToolUse",
                session_id="s",
                working_directory=base / "work",
                tool_name="Write",
                tool_input={"file_path": "x\x00y", "content": ""},
            )
        )
        assert decision.action == "block" and decision.reason is not None
        assert "NUL byte" in decision.reason and "failed" not in decision.reason


def test_the_session_tools_get_the_guardrails_policy() -> None:
    with sandbox() as base:
        work = base / "work"
        policy = path_policy(build_hook_engine(work, base / "home"), work)
        assert policy.write_roots == (work,)
        assert work / ".tron" / "settings.json" in policy.protected
        (work / ".tron" / "settings.json").write_text('{"guardrails": {"enabled": false}}')
        # Only a folder its user trusts may switch its guardrails off.
        assert path_policy(build_hook_engine(work, base / "home"), work).write_roots == (work,)
        trust_folder(base / "home", work)
        assert path_policy(build_hook_engine(work, base / "home"), work).write_roots is None
        assert path_policy(None, work).write_roots is None


def test_the_tool_checks_again_at_the_write() -> None:
    """A symlink swapped between the guardrails' check and the tool run: the tool refuses."""
    with sandbox() as base:
        work = base / "work"
        (work / "real").mkdir()
        (work / "sw").symlink_to("real")
        guard = guard_for(base)
        assert guard.check_write("sw/f.txt") is None  # the hook allows it ...
        (work / "sw").unlink()
        (work / "sw").symlink_to(base / "outside")  # ... then the link is swapped
        ctx = ToolContext("s", work, "t", paths=guard.paths)
        result = run_tool(ctx, "Write", {"file_path": "sw/f.txt", "content": "x"})
        assert result.is_error and "outside the working directory" in str(result.content)
        assert not (base / "outside" / "f.txt").exists()


def test_resolution_details() -> None:
    with sandbox() as base:
        work = base / "work"
        policy = PathPolicy(work)
        (work / "loop1").symlink_to("loop2")
        (work / "loop2").symlink_to("loop1")
        with pytest.raises(PathError, match="too many levels"):
            policy.resolve("loop1/x")
        (work / "file").write_text("x")
        with pytest.raises(PathError, match="not a directory"):
            policy.resolve("file/x")
        with policy.resolve("new/deeper/f.txt") as r:
            assert r.path == work / "new" / "deeper" / "f.txt" and not r.exists
        outcome = policy.write_bytes("new/deeper/f.txt", b"data")
        assert outcome.created and (work / "new" / "deeper" / "f.txt").read_bytes() == b"data"
        assert not policy.write_bytes("new/deeper/f.txt", b"more").created
        (work / "chain1").symlink_to("chain2")
        (work / "chain2").symlink_to(str(work / "new" / "deeper"))
        with policy.resolve("chain1/../deeper/./f.txt") as r:
            assert r.path == work / "new" / "deeper" / "f.txt" and r.is_file
        with policy.resolve("/") as r:
            assert r.path == Path("/") and r.is_dir
        assert policy.remove("new/deeper/f.txt") and not policy.remove("new/deeper/f.txt")
        with pytest.raises(PathError, match="directory"):
            policy.write_bytes("new", b"x")
        unrestricted_refusal = policy.refusal(str(base / "outside" / "z"))
        assert unrestricted_refusal is None  # without write roots, only resolution


# -- races --------------------------------------------------------------------------------


def _flipper(swap: list[tuple[str, str]], link: Path, stop: threading.Event) -> None:
    """Swap ``link`` between targets, atomically (a new link renamed over it)."""
    i = 0
    while not stop.is_set():
        kind, target = swap[i % len(swap)]
        tmp = link.with_name(f".{link.name}.{i}")
        if kind == "link":
            tmp.symlink_to(target)
        else:
            tmp.write_text(target)
        os.replace(tmp, link)
        i += 1


@pytest.mark.parametrize(
    "spelling", ["sw/f.txt", "sw/./f.txt", "sw/../sw/f.txt"], ids=["plain", "dot", "dotdot"]
)
def test_a_folder_symlink_swapped_in_a_thread_never_redirects_a_write(spelling: str) -> None:
    with sandbox() as base:
        work = base / "work"
        (work / "real").mkdir()
        (work / "sw").symlink_to("real")
        policy = guard_for(base).paths
        stop = threading.Event()
        swap = [("link", "real"), ("link", str(base / "outside"))]
        flipper = threading.Thread(target=_flipper, args=(swap, work / "sw", stop))
        flipper.start()
        written = refused = 0
        try:
            for i in range(600):
                try:
                    policy.write_bytes(spelling, f"{i}".encode())
                    written += 1
                except PathRefused:
                    refused += 1
                except PathError:
                    pass  # "kept changing": refused without writing
        finally:
            stop.set()
            flipper.join()
        assert not (base / "outside" / "f.txt").exists()
        assert snapshot(base / "outside") == {"o.txt": ("file", "outside file")}
        assert written and refused  # both sides of the race were hit
        assert (work / "real" / "f.txt").exists()


def test_a_file_swapped_for_a_symlink_is_replaced_not_followed() -> None:
    with sandbox() as base:
        work = base / "work"
        target = base / "outside" / "o.txt"
        (work / "f").write_text("f-inside")
        policy = guard_for(base).paths
        ctx = ToolContext("s", work, "t", paths=policy)
        stop = threading.Event()
        swap = [("file", "f-inside"), ("link", str(target))]
        flipper = threading.Thread(target=_flipper, args=(swap, work / "f", stop))
        flipper.start()
        edits: list[ToolResult] = []
        try:
            for i in range(300):
                if i % 2:
                    edit = {"file_path": "f", "old_string": "f-", "new_string": "g-"}
                    edits.append(run_tool(ctx, "Edit", edit))
                else:
                    with contextlib.suppress(PathError):
                        policy.write_bytes("f", b"f-written")
        finally:
            stop.set()
            flipper.join()
        assert target.read_text() == "outside file"
        assert snapshot(base / "outside") == {"o.txt": ("file", "outside file")}
        assert any(not e.is_error for e in edits)  # edits of the inside file went through


def test_the_old_import_path_is_the_same_policy() -> None:
    # tools/_paths.py was the path policy's home before tron_server.paths; code on
    # other branches still imports it from there.
    import tron_server.paths as new
    import tron_server.tools._paths as old

    assert old.__all__ == new.__all__
    for name in new.__all__:
        assert getattr(old, name) is getattr(new, name), name
