"""Claude Code's user-level files (``~/.claude/…``, or ``$CLAUDE_CONFIG_DIR``) are read as
the home-level equivalents of a project's files, Tron's own ``~/.tron/…`` winning on a
clash; and Claude Code's ``Notification`` hook event fires when the agent waits for the
user and on Notify (issue 27 item 11)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.rpc import complete, new_session, respond, wait_for
from tests.support.scripted_llm import Response, ScriptedLLM, Text, ToolUse
from tests.support.server import RunningServer
from tron_server.agent.subagents import discover_agents
from tron_server.commands import discover_commands
from tron_server.context.rules import RulesLoader
from tron_server.context.skills import discover_skills
from tron_server.hooks.settings import load_settings
from tron_server.interaction.settings import load_permission_settings


@pytest.fixture
def user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty ~/.claude of this test's own (CLAUDE_CONFIG_DIR, as Claude Code reads it)."""
    folder = tmp_path / "dot-claude"
    folder.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(folder))
    return folder


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_the_user_folder_is_claude_config_dir_or_dot_claude(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from tron_server.trust import claude_user_dir

    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cfg"))
    assert claude_user_dir() == tmp_path / "cfg"
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert claude_user_dir() == tmp_path / ".claude"


def test_user_settings_act_in_an_untrusted_folder_before_the_homes(
    user: Path, tmp_path: Path
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    hook = {"hooks": [{"type": "command", "command": "echo user"}]}
    write(user / "settings.json", json.dumps({
        "hooks": {"Stop": [hook]},
        "permissions": {"allow": ["Bash(make:*)"], "defaultMode": "acceptEdits"},
    }))  # fmt: skip
    home_hook = {"hooks": [{"type": "command", "command": "echo home"}]}
    write(home / "settings.json", json.dumps({
        "hooks": {"Stop": [home_hook]}, "permissions": {"defaultMode": "plan"},
    }))  # fmt: skip
    loaded = load_settings(project, home)
    assert not loaded.trusted  # the folder is not trusted; the user's files act anyway
    assert [h.command for h in loaded.hooks] == ["echo user", "echo home"]
    assert all(h.scope == "home" for h in loaded.hooks)
    permissions = load_permission_settings(project, home)
    assert [r.text for r in permissions.rules] == ["Bash(make:*)"]
    assert permissions.default_mode == "plan"  # ~/.tron wins over ~/.claude
    assert permissions.files[:2] == (user / "settings.json", home / "settings.json")


def test_a_session_in_the_home_folder_reads_the_users_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opened in the folder holding ``.claude/`` (the user's home), the user's settings
    are read once, as the user's (no trust needed), not a second time as the project's."""
    user_home = tmp_path / "me"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(user_home / ".claude"))
    write(user_home / ".claude" / "settings.json", json.dumps({"hooks": {"Stop": [
        {"hooks": [{"type": "command", "command": "echo once"}]}]}}))  # fmt: skip
    for trusted in (False, True):
        loaded = load_settings(user_home, tmp_path / "tron-home", trusted=trusted)
        assert [(h.command, h.scope) for h in loaded.hooks] == [("echo once", "home")]


def test_user_agents_commands_skills_and_claude_md_with_ours_winning(
    user: Path, tmp_path: Path
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    agent = "---\nname: {name}\ndescription: d\n---\n{prompt}\n"
    write(user / "agents" / "a.md", agent.format(name="reviewer", prompt="CLAUDE-USER"))
    write(user / "agents" / "b.md", agent.format(name="only-user", prompt="U"))
    write(home / "agents" / "a.md", agent.format(name="reviewer", prompt="TRON-HOME"))
    agents = discover_agents(home, project)
    assert agents["reviewer"].prompt == "TRON-HOME" and agents["only-user"].scope == "home"

    write(user / "commands" / "ship.md", "Ship it (user)\n")
    write(user / "commands" / "mine.md", "Mine: !`echo hi`\n")
    write(home / "commands" / "ship.md", "Ship it (tron)\n")
    commands = discover_commands(home, project)
    assert commands["ship"].body == "Ship it (tron)"
    # The user's own command runs its shell in any folder: it is not the folder's.
    assert commands["mine"].trusted and commands["mine"].refusal is None

    skill = "---\nname: {name}\ndescription: {d}\n---\nbody\n"
    write(user / "skills" / "deploy" / "SKILL.md", skill.format(name="deploy", d="claude"))
    write(user / "skills" / "lint" / "SKILL.md", skill.format(name="lint", d="user lint"))
    write(home / "skills" / "deploy" / "SKILL.md", skill.format(name="deploy", d="tron"))
    skills = {s.name: s for s in discover_skills(home, project)}
    assert skills["deploy"].description == "tron" and skills["lint"].scope == "home"

    write(user / "CLAUDE.md", "Always answer in French.\n")
    write(home / "rules" / "AGENTS.md", "Tron's own rules.\n")
    loaded = RulesLoader(home, project).initial()
    assert [(f.path, f.scope) for f in loaded] == [
        (user / "CLAUDE.md", "global"),
        (home / "rules" / "AGENTS.md", "global"),
    ]


@pytest.mark.anyio
async def test_user_claude_md_reaches_the_model_in_an_untrusted_folder(
    user: Path,
    make_server: Callable[..., RunningServer],
    llm: ScriptedLLM,
    tmp_path: Path,
) -> None:
    write(user / "CLAUDE.md", "USER-LEVEL-MEMORY: answer tersely.\n")
    server = make_server()
    llm.add(Response([Text("ok")]))
    async with server.connect() as client:
        sid = await new_session(client, tmp_path)
        stream = client.notifications(session_id=sid)
        await client.call("agent.message", {"sessionId": sid, "content": "hi"})
        await complete(stream)
    assert "USER-LEVEL-MEMORY" in json.dumps(llm.requests[0]["system"])


@pytest.mark.anyio
async def test_notification_hooks_fire_when_the_agent_waits_and_on_notify(
    user: Path,
    make_server: Callable[..., RunningServer],
    llm: ScriptedLLM,
    tmp_path: Path,
) -> None:
    """A ``Notification`` hook of ~/.claude/settings.json (as Claude Code users have one)
    gets Claude Code's fields: on an approval (``permission_prompt``), a question
    (``elicitation_dialog``) and the Notify tool (``notify``); its matcher selects the
    type."""
    log = tmp_path / "notifications.jsonl"
    script = f"import sys; open({str(log)!r}, 'a').write(sys.stdin.read().strip() + '\\n')"
    logging = {"type": "command", "command": f'{sys.executable} -c "{script}"'}
    never = {"type": "command", "command": f"touch {tmp_path / 'never'}"}
    write(user / "settings.json", json.dumps({"hooks": {"Notification": [
        {"matcher": "permission_prompt|elicitation_dialog|notify", "hooks": [logging]},
        {"matcher": "idle_prompt", "hooks": [never]},
    ]}}))  # fmt: skip
    server = make_server()
    work = tmp_path / "work"
    work.mkdir()
    llm.add(
        Response([ToolUse("Bash", {"command": "true"}, id="t_bash")]),
        Response([ToolUse("AskUser", {"question": "Which colour?", "options": ["red"]})]),
        Response([ToolUse("Notify", {"title": "Done", "body": "all built"})]),
        Response([Text("Bye.")]),
    )
    async with server.connect() as client:
        sid = await new_session(client, work)
        stream = client.notifications(session_id=sid)
        await client.call("agent.message", {"sessionId": sid, "content": "go"})
        approval = await wait_for(stream, "agent.approval")
        await respond(client, sid, approval.data["requestId"], {"decision": "allow"})
        question = await wait_for(stream, "agent.question")
        await respond(client, sid, question.data["requestId"], "red")
        await complete(stream)
    server.stop()  # drains the hooks still running in the background
    entries: list[dict[str, Any]] = [json.loads(line) for line in log.read_text().splitlines()]
    by_type = {e["notification_type"]: e for e in entries}
    assert sorted(by_type) == ["elicitation_dialog", "notify", "permission_prompt"]
    for entry in entries:
        assert entry["hook_event_name"] == "Notification" and entry["session_id"] == sid
        assert entry["cwd"] == str(work.resolve()) and entry["transcript_path"]
    assert "Bash" in by_type["permission_prompt"]["message"]
    assert "Which colour?" in by_type["elicitation_dialog"]["message"]
    assert by_type["notify"]["title"] == "Done" and by_type["notify"]["message"] == "all built"
    assert not (tmp_path / "never").exists()
