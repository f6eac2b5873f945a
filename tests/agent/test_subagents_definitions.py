"""Agent definition files in Claude Code's sub-agent format, and the model a child runs on."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.trust import trust_folder
from tron_server.agent.subagents import (
    GENERAL_PURPOSE,
    AgentFileError,
    discover_agents,
    parse_agent_file,
    resolve_model,
)


def agent(tmp_path: Path, text: str, name: str = "a.md") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("tools_text", "tools", "task_agents"),
    [
        ("tools: Read, Grep, Glob", ("Read", "Grep", "Glob"), None),
        ("tools: [Read, 'Grep']", ("Read", "Grep"), None),
        ("tools:\n  - Read\n  - Bash", ("Read", "Bash"), None),
        ("tools: []", (), None),
        ("tools:", None, None),
        ("tools: '*'", None, None),
        ("tools: Read, Task(reviewer, tester)", ("Read", "Task"), ("reviewer", "tester")),
        ("tools: Agent(explorer), Read", ("Task", "Read"), ("explorer",)),
        ("tools: Agent", ("Task",), None),
    ],
)
def test_the_tools_allow_list_in_each_yaml_spelling(
    tmp_path: Path,
    tools_text: str,
    tools: tuple[str, ...] | None,
    task_agents: tuple[str, ...] | None,
) -> None:
    path = agent(tmp_path, f"---\nname: x\ndescription: does x\n{tools_text}\n---\nPrompt.\n")
    definition = parse_agent_file(path, "project")
    assert definition.tools == tools and definition.task_agents == task_agents


def test_every_field_of_a_full_file(tmp_path: Path) -> None:
    path = agent(
        tmp_path,
        "---\n"
        "name: code-reviewer\n"
        "description: >\n  Reviews code.\n  Use PROACTIVELY after edits.\n"
        'model: "opus"\n'
        "disallowedTools: Bash, Write\n"
        "maxTurns: 7\n"
        "color: red\n"
        "permissionMode: plan\n"
        "---\n\n# Reviewer\n\nBe thorough.\n",
    )
    d = parse_agent_file(path, "claude")
    assert (
        d.name == "code-reviewer" and d.description == "Reviews code. Use PROACTIVELY after edits."
    )
    assert d.model == "opus" and d.max_turns == 7 and d.tools is None
    assert d.disallowed_tools == ("Bash", "Write")
    assert d.prompt == "# Reviewer\n\nBe thorough." and d.scope == "claude" and d.source == path
    assert d.ignored_keys == ("color", "permissionMode")
    assert d.allowed_tools(["Read", "Write", "Bash", "Grep"]) == ["Read", "Grep"]
    inherit = parse_agent_file(
        agent(tmp_path, "---\nname: i\ndescription: d\nmodel: inherit\n---\n", "i.md"), "home"
    )
    assert inherit.model is None and inherit.prompt == GENERAL_PURPOSE.prompt


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("no front matter at all", "no front matter"),
        ("---\nname: x\ndescription: y\n", "no closing '---' line"),
        ("---\ndescription: y\n---\n", "'name' is required"),
        ("---\nname: x\n---\n", "'description' is required"),
        ("---\nname: two words\ndescription: y\n---\n", "name 'two words' must be"),
        ("---\nname: x\ndescription: y\nmaxTurns: many\n---\n", "maxTurns must be a whole"),
        ("---\nname: x\ndescription: y\nmaxTurns: 0\n---\n", "maxTurns must be at least 1"),
        ("---\nname: [a, b]\ndescription: y\n---\n", "'name' must be text"),
        ("---\nname: x\ndescription: y\ntools: Read; rm -rf\n---\n", "is not a tool name"),
        ("---\nname: x\njust words\n---\n", "line 3: expected 'key: value'"),
    ],
)
def test_a_malformed_file_says_which_file_and_why(tmp_path: Path, text: str, reason: str) -> None:
    path = agent(tmp_path, text)
    with pytest.raises(AgentFileError) as info:
        parse_agent_file(path, "project")
    assert str(path) in str(info.value) and reason in str(info.value)


def test_discovery_skips_bad_files_and_lets_the_project_win(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    for folder, body in [
        (home / "agents", "HOME"),
        (project / ".claude" / "agents", "CLAUDE"),
        (project / ".tron" / "agents", "TRON"),
    ]:
        folder.mkdir(parents=True)
        (folder / "x.md").write_text(f"---\nname: shared\ndescription: d\n---\n{body}\n")
    (home / "agents" / "mine.md").write_text("---\nname: mine\ndescription: only home\n---\nM\n")
    (project / ".claude" / "agents" / "bad.md").write_bytes(b"---\nname: \xff\xfe\n---\n")
    (project / ".claude" / "agents" / "notes.txt").write_text("not an agent")
    # Until the user trusts the project, only the home's agents are read.
    untrusted = discover_agents(home, project)
    assert list(untrusted) == ["general-purpose", "mine", "shared"]
    assert untrusted["shared"].prompt == "HOME"
    trust_folder(home, project)
    agents = discover_agents(home, project)
    assert list(agents) == ["general-purpose", "mine", "shared"]
    assert agents["shared"].prompt == "TRON" and agents["shared"].scope == "project"
    assert agents["mine"].scope == "home"
    assert discover_agents(tmp_path / "nowhere", tmp_path / "nothing") == {
        "general-purpose": GENERAL_PURPOSE
    }


@pytest.mark.parametrize(
    ("requested", "provider", "model", "expected"),
    [
        (None, "anthropic", "claude-sonnet-4-5", ("anthropic", "claude-sonnet-4-5")),
        ("inherit", "openai", "gpt-4.1", ("openai", "gpt-4.1")),
        ("haiku", "anthropic", "claude-sonnet-4-5", ("anthropic", "claude-haiku-4-5")),
        ("Opus", "anthropic", "claude-sonnet-4-5", ("anthropic", "claude-opus-4-5")),
        ("sonnet", "openai-compatible", "qwen3", ("openai-compatible", "qwen3")),
        (
            "claude-haiku-4-5-20251001",
            "openai",
            "gpt-4.1",
            ("anthropic", "claude-haiku-4-5-20251001"),
        ),
        ("gpt-4.1", "openai-responses", "gpt-5", ("openai-responses", "gpt-4.1")),
        ("my-local-model", "openai-compatible", "qwen3", ("openai-compatible", "my-local-model")),
    ],
)
def test_model_aliases_and_ids(
    requested: str | None, provider: str, model: str, expected: tuple[str, str]
) -> None:
    choice = resolve_model(requested, provider=provider, model=model)
    assert (choice.provider, choice.model) == expected
    assert (choice.note is not None) == (requested == "sonnet" and provider != "anthropic")


def test_a_bom_and_crlf_file_and_rules_on_a_tool(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A file saved by a Windows editor reads the same; a rule on a tool (Claude Code's
    ``Bash(git *)``) withholds the tool, and says so, rather than grant it unrestricted."""
    path = tmp_path / "win.md"
    path.write_bytes(
        b"\xef\xbb\xbf---\r\nname: win\r\ndescription: saved on Windows\r\n"
        b"tools: Read, Bash(git *)\r\n---\r\nPrompt.\r\n"
    )
    with caplog.at_level("WARNING", logger="tron_server.agent.subagents"):
        definition = parse_agent_file(path, "claude")
    assert definition.name == "win" and definition.prompt == "Prompt."
    assert definition.allowed_tools(["Read", "Bash", "Write"]) == ["Read"]
    assert "Bash(git *): rules on a tool are not supported" in caplog.text
    assert "the agent does not get Bash" in caplog.text
