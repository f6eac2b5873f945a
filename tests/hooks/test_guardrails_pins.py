"""Guardrails pinned by mutation testing (issue 26 item 7): each test here failed on a
mutant of ``hooks/guardrails.py`` that every other test let through (a refusal turned
into an allow, a lost check, a changed message). ``benchmarks/mutation.sh guardrails``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tron_server.hooks import Guardrails, GuardrailSettings, HookContext, HookEngine
from tron_server.hooks.guardrails import (
    GUARDRAILS_HOOK_NAME,
    GUARDRAILS_PRIORITY,
    hook_programs,
    path_policy,
    register_guardrails,
)
from tron_server.hooks.settings import HookSettingsError

pytestmark = pytest.mark.anyio

HOW = (
    'To allow it, run it yourself, or list the rule in "guardrails": '
    '{"disabledBashRules": [...]} in .tron/settings.json.'
)


def guard(workdir: Path, home: Path, **kw: object) -> Guardrails:
    return Guardrails(GuardrailSettings(**kw), working_directory=workdir, home=home)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "command",
    [
        "rm -Rf /",  # R after the first letter of a flag group
        "rm --no-preserve-root /",  # the flag alone says it
        "rm -rf {home}/.",
        "systemctl reboot",
        "systemctl halt",
        "systemctl kexec",
        "telinit 6",
        "init 6",
        "init 0",
        "sudo init 0",
    ],
)
def test_more_destructive_commands_are_refused(command: str, workdir: Path, home: Path) -> None:
    command = command.replace("{home}", os.path.expanduser("~"))
    assert guard(workdir, home).check_bash(command) is not None, command


@pytest.mark.parametrize(
    "command",
    [
        "rm -f -- -r /",  # after --, -r is a file name, not a flag: not recursive
        "rm --force /",  # a long option is not a group of letters (r in 'force')
        "rm -rf ~/X",  # a folder in the home, not the home
        "echo 0",  # 0 and 6 are init's runlevels only
        "sleep 6",
        "init 5",
        "systemctl status",
    ],
)
def test_near_misses_pass(command: str, workdir: Path, home: Path) -> None:
    assert guard(workdir, home).check_bash(command) is None, command


def test_the_home_written_out_with_a_trailing_slash_in_HOME(
    workdir: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    me = tmp_path / "meX"
    monkeypatch.setenv("HOME", f"{me}/")
    assert guard(workdir, home).check_bash(f"rm -rf {me}") is not None
    assert guard(workdir, home).check_bash(f"rm -rf {me}/.") is not None


def test_refusal_messages_are_exact(workdir: Path, home: Path) -> None:
    g = guard(workdir, home, denied_bash_patterns=(r"git\s+push",))
    assert g.check_bash("sudo rm -rf /") == (
        "Guardrails refused this command: `rm -rf /` is recursive rm of / or of the home "
        f"directory (rule 'rm-root'). {HOW}"
    )
    assert g.check_bash(":(){ :|:& };:") == (
        f"Guardrails refused this command: it is a fork bomb (rule 'fork-bomb'). {HOW}"
    )
    assert g.check_bash("git push") == (
        "Guardrails refused this command: it matches the denied pattern 'git\\\\s+push' "
        "from guardrails.deniedBashPatterns in settings.json. Remove the pattern there to "
        "allow it."
    )


def test_write_refusal_messages_are_exact(workdir: Path, home: Path) -> None:
    g = guard(workdir, home)
    assert g.check_write("/etc/x") == (
        f"Guardrails refused writing /etc/x: it is outside the working directory {workdir}. "
        'To allow it, add the folder to "guardrails": {"allowedWritePaths": [...]} in '
        ".tron/settings.json (project) or ~/.tron/settings.json."
    )
    # A path that is no file name: the policy's reason, said as the guardrails' refusal.
    assert g.check_write("a\x00b") == (
        "Guardrails refused writing 'a\\x00b': the path 'a\\x00b' contains a NUL byte (\\0); "
        "file names cannot contain one"
    )


def test_unknown_rule_names_and_bad_patterns_are_configuration_errors(
    workdir: Path, home: Path
) -> None:
    with pytest.raises(HookSettingsError) as caught:
        guard(workdir, home, disabled_bash_rules=("nope", "power"))
    assert str(caught.value) == (
        "guardrails.disabledBashRules names unknown rules ['nope']; known rules: "
        "chmod-root, dd-to-disk, fork-bomb, mkfs, power, redirect-to-disk, rm-root"
    )
    with pytest.raises(HookSettingsError) as caught:
        guard(workdir, home, denied_bash_patterns=("(",))
    assert str(caught.value) == (
        "guardrails.deniedBashPatterns holds an invalid regular expression: "
        "missing ), unterminated subpattern at position 0"
    )


def test_the_guardrails_keep_their_home_and_roots(
    workdir: Path, home: Path, tmp_path: Path
) -> None:
    scratch = tmp_path / "scratch"
    g = guard(workdir, home, allowed_write_paths=(str(scratch), "rel"))
    assert g.home == home
    assert g.allowed_roots == (workdir, scratch, workdir / "rel")


def test_claude_codes_user_settings_are_protected(
    workdir: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    claude = tmp_path / "claude-user"
    claude.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    g = guard(workdir, home, allowed_write_paths=(str(claude),))
    reason = g.check_write(str(claude / "settings.json"))
    assert reason is not None and "a settings file" in reason
    assert g.check_write(str(claude / "notes.md")) is None


def test_notebook_edit_is_checked_by_its_notebook_path(workdir: Path, home: Path) -> None:
    g = guard(workdir, home)
    reason = g.check("NotebookEdit", {"notebook_path": "/etc/x.ipynb"})
    assert reason is not None and "outside the working directory" in reason
    assert g.check("NotebookEdit", {"notebook_path": "x.ipynb"}) is None


def test_a_path_that_is_not_text_is_left_to_the_tool(workdir: Path, home: Path) -> None:
    g = guard(workdir, home)
    assert g.check("Write", {"file_path": 5, "content": ""}) is None
    assert g.check("Write", {"file_path": "", "content": ""}) is None


async def test_the_sessions_working_directory_is_the_one_relative_paths_start_from(
    workdir: Path, home: Path, tmp_path: Path
) -> None:
    """A session in another folder than the guardrails' own: ``x`` is in that folder,
    which is outside the write roots."""
    other = tmp_path / "other"
    other.mkdir()
    g = guard(workdir, home)
    assert g.check_write("x") is None
    assert g.check_write("x", other) is not None
    assert g.check("Write", {"file_path": "x"}, other) is not None
    ctx = HookContext(
        event="PreToolUse", session_id="s", working_directory=other,
        tool_name="Write", tool_input={"file_path": "x", "content": ""},
    )  # fmt: skip
    decision = await g(ctx)
    assert decision is not None and decision.action == "block"


async def test_a_call_without_input_is_not_judged(workdir: Path, home: Path) -> None:
    ctx = HookContext(
        event="PreToolUse", session_id="s", working_directory=workdir,
        tool_name="Bash", tool_input=None,
    )  # fmt: skip
    assert await guard(workdir, home)(ctx) is None


def _programs(workdir: Path, *commands: str) -> set[Path]:
    return set(hook_programs(commands, workdir))


def test_hook_programs_named_through_the_project_variable(workdir: Path) -> None:
    (workdir / ".tron").mkdir()
    for name in ("a.sh", "b.sh"):
        (workdir / ".tron" / name).write_text("exit 0\n")
    found = _programs(workdir, "$TRON_PROJECT_DIR/.tron/a.sh", "${TRON_PROJECT_DIR}/.tron/b.sh")
    assert found == {workdir / ".tron" / "a.sh", workdir / ".tron" / "b.sh"}


def test_hook_programs_of_interpreters(workdir: Path) -> None:
    tron = workdir / ".tron"
    tron.mkdir()
    for name in ("h.py", "data.json", "python3", "snippet.py"):
        (tron / name).write_text("")
    (workdir / "check.sh").write_text("")
    # Options before the script are skipped; only the first other word is the script.
    assert _programs(workdir, "python3 -u .tron/h.py .tron/data.json") == {tron / "h.py"}
    # An interpreter named by a path is a program too, as is its script.
    assert _programs(workdir, "./.tron/python3 .tron/h.py") == {tron / "python3", tron / "h.py"}
    # -c: the next word is code, not a file.
    assert _programs(workdir, "python3 -c ./.tron/snippet.py") == set()
    # A bare name is looked up on PATH, not in the working directory.
    assert _programs(workdir, "check.sh") == set()


def test_an_unreadable_word_does_not_hide_the_script_after_it(workdir: Path) -> None:
    (workdir / "h.py").write_text("")
    too_long = "/" + "a" * 300 + "/python3"  # stat fails with ENAMETOOLONG
    assert _programs(workdir, f"{too_long} ./h.py") == {workdir / "h.py"}


def test_register_guardrails_matches_the_write_and_bash_tools_only(
    workdir: Path, home: Path
) -> None:
    engine = HookEngine()
    register_guardrails(engine, GuardrailSettings(), working_directory=workdir, home=home)
    for tool in ("Write", "Edit", "MultiEdit", "NotebookEdit", "Bash"):
        assert engine.hooks_for("PreToolUse", tool) == [GUARDRAILS_HOOK_NAME], tool
    assert engine.hooks_for("PreToolUse", "Read") == []
    [described] = engine.describe()
    assert described == {
        "name": GUARDRAILS_HOOK_NAME,
        "event": "PreToolUse",
        "priority": GUARDRAILS_PRIORITY,
        "matcher": "Bash|Edit|MultiEdit|NotebookEdit|Write",
        "timeout": 10.0,
        "onError": "block",
    }
    more = HookEngine()
    register_guardrails(
        more, GuardrailSettings(), working_directory=workdir, home=home, tools=["Browser"]
    )
    assert more.hooks_for("PreToolUse", "Browser") == [GUARDRAILS_HOOK_NAME]


def test_path_policy_without_guardrails_only_resolves(
    workdir: Path, home: Path, tmp_path: Path
) -> None:
    for engine in (None, HookEngine()):
        policy = path_policy(engine, workdir)
        assert policy.working_directory == workdir
        assert policy.write_roots is None
        assert policy.refusal(str(tmp_path / "elsewhere")) is None
    engine = HookEngine()
    register_guardrails(engine, GuardrailSettings(), working_directory=workdir, home=home)
    assert path_policy(engine, workdir).refusal(str(tmp_path / "elsewhere")) is not None
    off = HookEngine()
    register_guardrails(off, GuardrailSettings(enabled=False), working_directory=workdir, home=home)
    assert path_policy(off, workdir).refusal(str(tmp_path / "elsewhere")) is None
