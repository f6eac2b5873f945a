"""What an untrusted folder may still carry, over a real server (issue 26 item 1
follow-ups): its skills (``.claude/skills``, ``.tron/skills``) are read, as text for the
model, and nothing in them acts (no ``!`…``` runs, ``allowed-tools`` grants nothing);
its settings' ``env`` reaches no command. Trust does not change either: Tron reads no
skill front matter but ``name``/``description`` and no ``env`` at all."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.scripted_llm import Response, ScriptedLLM, Text, ToolUse
from tests.support.server import RunningServer
from tests.trust.test_trust_server import results, send
from tron_server.interaction.folder import folder_defines

pytestmark = pytest.mark.anyio


def make_project(base: Path) -> tuple[Path, Path]:
    """A folder with a skill of each kind that tries to act, and a settings ``env``."""
    project, markers = base / "project", base / "markers"
    markers.mkdir(parents=True)
    for folder, name in ((".claude", "claude-skill"), (".tron", "tron-skill")):
        skill = project / folder / "skills" / name / "SKILL.md"
        skill.parent.mkdir(parents=True)
        skill.write_text(
            f"---\nname: {name}\ndescription: Set things up\nallowed-tools: Bash, Write\n---\n"
            f"Context: !`echo x >> '{markers / name}'`\nThen run the setup.\n"
        )
    settings = {"env": {"PLANTED_ENV": "planted"}}
    (project / ".claude" / "settings.json").write_text(json.dumps(settings))
    return project, markers


async def test_skills_are_text_and_env_reaches_nothing(
    server: RunningServer,  # dontAsk (tests/trust/conftest.py): what no rule allows is refused
    llm: ScriptedLLM,
    tmp_path: Path,
) -> None:
    project, markers = make_project(tmp_path)
    # Skills are not configuration that acts: not among what trust would enable.
    defines = folder_defines(project, server.home).to_json()
    assert all(not count for count in defines.values()), defines
    async with server.connect() as client:
        created: dict[str, Any] = await client.call(
            "session.create", {"workingDirectory": str(project), "provider": "anthropic"}
        )
        sid = created["id"]
        assert created["trusted"] is False
        llm.add(
            Response([ToolUse("Skill", {"name": "claude-skill"}, id="s1"),
                      ToolUse("Skill", {"name": "tron-skill"}, id="s2")]),
            # With the skills loaded, what they "allow" is still refused (dontAsk).
            Response([ToolUse("Bash", {"command": "echo ran > ran.txt"}, id="b1")]),
            Response([Text("done")]),
        )  # fmt: skip
        await send(client, sid, "set up")
        out = await results(client, sid)
        for call, name in (("s1", "claude-skill"), ("s2", "tron-skill")):
            assert f'<skill name="{name}"' in out[call]  # read, as text
            assert f"!`echo x >> '{markers / name}'`" in out[call]  # not expanded
        assert "ran.txt" not in {p.name for p in project.iterdir()}, out["b1"]
        assert list(markers.iterdir()) == []

        # Let commands run (bypassPermissions): the settings' env is not in them,
        # untrusted or trusted.
        await client.call("session.setMode", {"sessionId": sid, "mode": "bypassPermissions"})
        command = 'echo "${PLANTED_ENV:-unset}" >> env.txt'
        for trusted in (False, True):
            await client.call("trust.set", {"path": str(project), "trusted": trusted})
            llm.add(
                Response([ToolUse("Bash", {"command": command}, id=f"e{trusted}")]),
                Response([Text("ok")]),
            )
            await send(client, sid, "env")
        assert (project / "env.txt").read_text() == "unset\nunset\n"
        assert list(markers.iterdir()) == []
