"""Configuration files are protected at any depth (issue 26 item 3): Write, Edit,
MultiEdit and restores of a ``.tron/settings*.json``, ``.claude/settings*.json``,
``.mcp.json`` or a file below ``.claude/``/``.tron/`` ``commands/``, ``agents/``,
``hooks/`` ask in every mode except bypassPermissions, whatever the rules and hooks say."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.scripted_llm import Response, ScriptedLLM, Text, ToolUse
from tests.support.server import RunningServer, ServerFactory
from tron_server.client import RpcCallError, TronClient
from tron_server.interaction.modes import MODES, PermissionMode
from tron_server.interaction.policy import decide
from tron_server.interaction.rules import CallFacts, RuleSet, parse_rule

WD = Path("/work/project")

CONFIGURATION = [
    "sub/.tron/settings.json",
    "sub/deeper/.tron/settings.local.json",
    "vendor/lib/.claude/settings.json",
    "x/.claude/settings.local.json",
    "pkg/.mcp.json",
    ".mcp.json",
    "pkg/.claude/commands/deploy.md",
    "pkg/.claude/commands/ns/deep.md",
    "pkg/.tron/agents/evil.md",
    "pkg/.claude/hooks/check.sh",
    "pkg/.tron/hooks/guard.py",
]
ORDINARY = ["src/app.py", "sub/settings.json", "docs/.claude-notes.md", "pkg/.tron/NOTES.md"]


def facts(tool: str, relative: str) -> CallFacts:
    path = WD / relative
    return CallFacts(tool, {"file_path": relative}, WD, ((path, False),), named=((path, False),))


#: Every widening a session can have: allow rules for all edits, and a hook approving.
GENEROUS = RuleSet([parse_rule(r, "allow") for r in ("Edit", "Write", "Edit(**)")])


@pytest.mark.parametrize("relative", CONFIGURATION)
@pytest.mark.parametrize("tool", ["Write", "Edit", "MultiEdit"])
def test_writing_a_configuration_file_asks_in_every_mode_but_bypass(
    tool: str, relative: str
) -> None:
    expected: dict[PermissionMode, str] = {
        "default": "ask",
        "acceptEdits": "ask",
        "dontAsk": "deny",  # what would ask is refused
        "plan": "deny",
        "bypassPermissions": "allow",
    }
    for mode in MODES:
        verdict = decide(facts(tool, relative), mode=mode, rules=GENEROUS, hook="allow")
        assert verdict.behavior == expected[mode], (mode, verdict)
    asked = decide(facts(tool, relative), mode="acceptEdits", rules=GENEROUS, hook="allow")
    assert "always needs your approval" in asked.reason


@pytest.mark.parametrize("relative", ORDINARY)
def test_other_files_follow_the_rules_and_mode(relative: str) -> None:
    verdict = decide(facts("Write", relative), mode="acceptEdits", rules=RuleSet([]))
    assert verdict.behavior == "allow"
    assert decide(facts("Write", relative), mode="default", rules=GENEROUS).behavior == "allow"


def test_a_deny_rule_still_wins() -> None:
    rules = RuleSet([parse_rule("Edit(pkg/**)", "deny", base=WD)])
    verdict = decide(facts("Write", "pkg/.mcp.json"), mode="bypassPermissions", rules=rules)
    assert verdict.behavior == "deny"


def test_a_link_named_otherwise_is_judged_by_its_target_too() -> None:
    """``cfg.json`` a symlink to ``pkg/.tron/settings.json``: the resolved path decides."""
    call = CallFacts(
        "Write",
        {"file_path": "cfg.json"},
        WD,
        ((WD / "pkg" / ".tron" / "settings.json", False),),
        named=((WD / "cfg.json", False),),
    )
    assert decide(call, mode="acceptEdits", rules=GENEROUS).behavior == "ask"


_PART = st.sampled_from(["a", "b", "src", "node_modules", ".git", "x.y"])


@given(
    prefix=st.lists(_PART, max_size=4),
    config=st.sampled_from(CONFIGURATION),
    mode=st.sampled_from(["default", "acceptEdits"]),
)
def test_at_any_depth(prefix: list[str], config: str, mode: PermissionMode) -> None:
    relative = "/".join([*prefix, config])
    verdict = decide(facts("Edit", relative), mode=mode, rules=GENEROUS, hook="allow")
    assert verdict.behavior == "ask"


# -- over the server: the tools and a rewind with files ------------------------------------


@pytest.fixture
def server(
    server_factory: ServerFactory,
    llm: ScriptedLLM,
    monkeypatch: pytest.MonkeyPatch,
) -> RunningServer:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    return server_factory(anthropic_base_url=llm.base_url, default_model="claude-sonnet-4-5")


async def turn(client: TronClient, sid: str) -> dict[str, Any]:
    """One message (its reply scripted first); approvals are answered "allow"."""
    stream = client.notifications(session_id=sid)
    await client.call("agent.message", {"sessionId": sid, "content": "go"})
    asked: list[dict[str, Any]] = []
    with anyio.fail_after(30):
        while True:
            n = await stream.next()
            if n.method == "agent.approval":
                asked.append(n.data)
                await client.call("agent.respond", {"sessionId": sid,
                                  "requestId": n.data["requestId"], "answer": "allow"})  # fmt: skip
            if n.method == "agent.complete":
                break
    stream.close()
    return {"asked": asked}


@pytest.mark.anyio
async def test_tools_ask_and_a_restore_needs_confirming(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    project = tmp_path / "p"
    (project / "sub" / ".tron").mkdir(parents=True)
    settings = project / "sub" / ".tron" / "settings.json"
    settings.write_text('{"hooks": {}}\n')
    async with server.connect() as client:
        sid = (await client.call("session.create", {"workingDirectory": str(project)}))["id"]
        await client.call("session.setMode", {"sessionId": sid, "mode": "acceptEdits"})
        start = (await client.call("session.get", {"sessionId": sid}))["headEventId"]
        write = ToolUse("Write", {"file_path": "sub/.tron/settings.json", "content": "{}\n"})
        plain = ToolUse("Write", {"file_path": "sub/notes.txt", "content": "n\n"})
        llm.add(Response([write, plain]), Response([Text("Done.")]))
        outcome = await turn(client, sid)
        # acceptEdits wrote notes.txt without asking, but asked for the settings file.
        assert [a["input"]["file_path"] for a in outcome["asked"]] == ["sub/.tron/settings.json"]
        assert "always needs your approval" in outcome["asked"][0]["reason"]
        assert settings.read_text() == "{}\n"
        # A rewind with files would write the settings file back: it asks (-32006,
        # "configuration"), writes nothing, and goes with force.
        preview = await client.call("session.previewRewind", {"sessionId": sid, "eventId": start})
        problems = {Path(f["path"]).name: f["problem"] for f in preview["files"]}
        assert problems == {"settings.json": "configuration", "notes.txt": None}
        with pytest.raises(RpcCallError) as info:
            await client.call(
                "session.rewind", {"sessionId": sid, "eventId": start, "restoreFiles": True}
            )
        assert info.value.code == -32006
        assert [(f["path"], f["reason"]) for f in info.value.data["files"]] == [
            (str(settings), "configuration")
        ]
        assert "confirmation" in info.value.message
        assert settings.read_text() == "{}\n" and (project / "sub" / "notes.txt").exists()
        rewound = await client.call(
            "session.rewind",
            {"sessionId": sid, "eventId": start, "restoreFiles": True, "force": True},
        )
        assert sorted(Path(f["path"]).name for f in rewound["restore"]["files"]) == [
            "notes.txt",
            "settings.json",
        ]
        assert settings.read_text() == '{"hooks": {}}\n'
        assert not (project / "sub" / "notes.txt").exists()


@pytest.mark.anyio
async def test_bypass_permissions_writes_and_restores_without_asking(
    server: RunningServer, llm: ScriptedLLM, tmp_path: Path
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    async with server.connect() as client:
        sid = (await client.call("session.create", {"workingDirectory": str(project)}))["id"]
        mode = await client.call("session.setMode", {"sessionId": sid, "mode": "bypassPermissions"})
        assert mode["mode"] == "bypassPermissions"
        start = (await client.call("session.get", {"sessionId": sid}))["headEventId"]
        llm.add(
            Response([ToolUse("Write", {"file_path": "lib/.mcp.json", "content": "{}\n"})]),
            Response([Text("Done.")]),
        )
        assert (await turn(client, sid))["asked"] == []
        assert (project / "lib" / ".mcp.json").exists()
        await client.call(
            "session.rewind", {"sessionId": sid, "eventId": start, "restoreFiles": True}
        )
        assert not (project / "lib" / ".mcp.json").exists()


def test_every_file_that_configures_a_folder_is_protected(tmp_path: Path) -> None:
    """What the loaders read from a working directory is exactly what is protected: a
    new place of configuration must be added to both."""
    from tron_server.agent.subagents.definitions import agent_dirs
    from tron_server.commands.files import command_dirs
    from tron_server.hooks.settings import settings_paths
    from tron_server.trust import is_configuration_file

    wd, home = tmp_path / "project", tmp_path / "home"
    read = [path for scope, path in settings_paths(wd, home) if scope == "project"]
    for scope, folder in [*command_dirs(home, wd), *agent_dirs(home, wd)]:
        if scope != "home":
            read += [folder / "x.md", folder / "ns" / "x.md"]
    read.append(wd / ".mcp.json")
    assert read and all(is_configuration_file(p) for p in read), read
