"""Configuration in Claude Code's formats, without a server: where servers come from and
which wins, ``${VAR}`` expansion, broken entries, approvals, names, results."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tron_server.interaction.rules import parse_rule
from tron_server.mcp import Approvals, mcp_allowed, mcp_name, parse_server, split_name
from tron_server.mcp.approvals import remember
from tron_server.mcp.config import ConfigError, ConfigFiles, expand_vars, load_servers
from tron_server.mcp.results import content_blocks, tool_result


def write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def servers(data: dict[str, Any]) -> dict[str, Any]:
    return {"mcpServers": data}


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, ConfigFiles]:
    home = tmp_path / "home"
    home.mkdir()
    project = tmp_path / "work" / "project"
    project.mkdir(parents=True)
    return project, ConfigFiles(home=home, claude_json=tmp_path / "claude.json")


def test_every_source_and_its_precedence(layout: tuple[Path, ConfigFiles]) -> None:
    project, files = layout
    assert files.claude_json is not None
    write(files.claude_json, {
        "mcpServers": {"a": {"command": "user-claude"}, "b": {"command": "user-claude"},
                       "c": {"command": "user-claude"}, "d": {"command": "user-claude"}},
        "projects": {str(project): servers({"d": {"command": "local"}}),
                     "/elsewhere": servers({"z": {"command": "not here"}})},
    })  # fmt: skip
    write(files.home / "settings.json", servers({"b": {"command": "user-tron"}}))
    write(project.parent / ".mcp.json", servers({"c": {"command": "parent-mcp-json"},
                                                 "p": {"command": "parent"}}))  # fmt: skip
    write(project / ".mcp.json", servers({"c": {"command": "project-mcp-json"}}))
    write(
        project / ".tron" / "settings.json", servers({"e": {"type": "http", "url": "http://x/mcp"}})
    )
    found, errors = load_servers(project, files, {"e": {"command": "session"}})
    assert errors == []
    by_name = {s.name: (s.scope, s.command or s.url) for s in found}
    assert by_name == {
        "a": ("user", "user-claude"),
        "b": ("user", "user-tron"),  # Tron's file wins at the same scope
        "c": ("project", "project-mcp-json"),  # the nearest .mcp.json wins
        "p": ("project", "parent"),  # a parent folder's .mcp.json counts
        "d": ("local", "local"),  # local > project > user
        "e": ("session", "session"),  # the session's own win over all
    }


def test_a_broken_file_loses_only_its_servers(layout: tuple[Path, ConfigFiles]) -> None:
    project, files = layout
    (project / ".mcp.json").write_text("{not json")
    write(files.home / "settings.json", servers({"ok": {"command": "x"},
                                                 "bad": {"type": "ws", "url": "ws://x"},
                                                 "nocmd": {"args": ["a"]},
                                                 "bad name!": {"command": "x"}}))  # fmt: skip
    found, errors = load_servers(project, files)
    assert len(errors) == 1 and ".mcp.json: not valid JSON" in errors[0]
    by_name = {s.name: s.error for s in found}
    assert by_name["ok"] is None
    assert "unknown type 'ws'" in str(by_name["bad"])
    assert "command must be the program to run" in str(by_name["nocmd"])
    assert "a server name is 1 to 64" in str(by_name["bad name!"])


def test_the_homes_own_settings_are_the_users_in_the_folder_holding_it(tmp_path: Path) -> None:
    """A session in ``~`` sees ``~/.tron/settings.json`` as ``.tron/settings.json`` too: it
    is the user's file (needs no trust), not the folder's."""
    home = tmp_path / ".tron"
    write(home / "settings.json", servers({"mine": {"command": "x"}}))
    files = ConfigFiles(home=home, claude_json=None)
    [found], errors = load_servers(tmp_path, files)
    assert errors == [] and found.scope == "user" and not found.needs_approval


def test_a_configuration_file_that_is_not_a_regular_file_is_not_read(
    layout: tuple[Path, ConfigFiles],
) -> None:
    project, files = layout
    os.mkfifo(project / ".mcp.json")  # reading a FIFO with no writer would block
    found, errors = load_servers(project, files)
    assert found == [] and errors == [
        f"{project / '.mcp.json'}: not a regular file; it is not read"
    ]


def test_transport_inference_and_expansion_in_every_field(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKEN", "s3cret")
    monkeypatch.delenv("UNSET_X", raising=False)
    raw = {"url": "https://${HOSTNAME_X:-example.com}/mcp",
           "headers": {"Authorization": "Bearer ${TOKEN}"}}  # fmt: skip
    http = parse_server("h", raw, "user", "f")
    assert (http.transport, http.url, dict(http.headers)) == (
        "http", "https://example.com/mcp", {"Authorization": "Bearer s3cret"})  # fmt: skip
    stdio = parse_server("s", {"command": "${CMD_X:-npx}", "args": ["-y", "$TOKEN", "${TOKEN}"],
                               "env": {"K": "${TOKEN}", "N": 3}}, "user", "f")  # fmt: skip
    assert stdio.command == "npx" and stdio.args == ("-y", "$TOKEN", "s3cret")
    assert dict(stdio.env) == {"K": "s3cret", "N": "3"}
    unset = parse_server("u", {"command": "x", "env": {"K": "${UNSET_X}"}}, "user", "f")
    assert unset.error is not None and "UNSET_X is not set" in unset.error
    sse = parse_server("o", {"type": "sse", "url": "http://h/sse"}, "user", "f")
    assert sse.transport == "sse"
    # The fingerprint changes with what makes the connection, not with the name's scope.
    assert stdio.fingerprint() != parse_server("s", {"command": "npx"}, "user", "f").fingerprint()


names_st = st.from_regex(r"[A-Z_][A-Z0-9_]{0,8}", fullmatch=True)
values = st.text(alphabet=st.characters(blacklist_characters="${}"), max_size=12)
defaults = st.text(alphabet=st.characters(blacklist_characters="${}"), max_size=12)


@given(st.dictionaries(names_st, values, max_size=4), st.lists(
    st.tuples(names_st, st.none() | defaults, values), max_size=5))  # fmt: skip
def test_expansion_is_claude_codes(env: dict[str, str], parts: list[tuple[str, Any, str]]) -> None:
    """``${V}`` is V's value (an error when unset), ``${V:-d}`` V's value unless it is unset
    or empty, then d; the text around is kept as it is."""
    text = "".join(
        (f"${{{name}}}" if default is None else f"${{{name}:-{default}}}") + tail
        for name, default, tail in parts
    )
    unset = [n for n, d, _ in parts if d is None and n not in env]
    if unset:
        with pytest.raises(ConfigError, match=re.escape(unset[0])):
            expand_vars(text, env, "where")
        return
    expected = "".join(
        (env[n] if n in env and (env[n] or d is None) else (d or "")) + tail for n, d, tail in parts
    )
    assert expand_vars(text, env, "where") == expected


def test_nested_default() -> None:
    assert expand_vars("${A:-${B:-z}}", {}, "w") == "z"
    assert expand_vars("${A:-${B}}", {"B": "b"}, "w") == "b"


def test_approvals_as_claude_code_reads_them(layout: tuple[Path, ConfigFiles]) -> None:
    project, files = layout
    assert files.claude_json is not None
    write(project / ".mcp.json", servers({n: {"command": "x"} for n in "abcde"}))
    write(files.home / "settings.json", {**servers({"u": {"command": "x"}}),
                                         "enabledMcpjsonServers": ["a"]})  # fmt: skip
    write(project / ".claude" / "settings.local.json", {"disabledMcpjsonServers": ["b", "a"]})
    entry = {"enabledMcpjsonServers": ["c"], "disabledMcpServers": ["u"]}
    write(files.claude_json, {"projects": {str(project): entry}})
    found = {s.name: s for s in load_servers(project, files)[0]}
    approvals, errors = Approvals.load(project, files)
    assert errors == []
    decided = {n: approvals.decision(found[n]) for n in "abcde"}
    # disabled wins over enabled; c from ~/.claude.json; d, e pending
    assert decided == {"a": "rejected", "b": "rejected", "c": "approved", "d": "pending",
                       "e": "pending"}  # fmt: skip
    assert approvals.is_switched_off(found["u"]) and approvals.decision(found["u"]) == "approved"
    write(project / ".claude" / "settings.json", {"enableAllProjectMcpServers": True})
    remember(files.home, project, "a", True)  # the user's answer in Tron wins over files
    remember(files.home, project, "d", False)
    approvals, _ = Approvals.load(project, files)
    decided = {n: approvals.decision(found[n]) for n in "abcde"}
    assert decided == {"a": "approved", "b": "rejected", "c": "approved", "d": "rejected",
                       "e": "approved"}  # fmt: skip
    stored = files.home / "mcp-approvals.json"
    assert stored.stat().st_mode & 0o777 == 0o600
    assert json.loads(stored.read_text())["folders"][os.path.realpath(project)] == {
        "approved": ["a"], "rejected": ["d"]}  # fmt: skip


def test_names_as_claude_code_writes_them() -> None:
    assert mcp_name("my.db", "run query") == "mcp__my_db__run_query"
    assert split_name("mcp__github__create_issue") == ("github", "create_issue")
    assert split_name("Read") is None
    long = mcp_name("server", "x" * 100)
    assert len(long) == 64 and long == mcp_name("server", "x" * 100)
    assert long != mcp_name("server", "x" * 99)


@given(st.text(max_size=80), st.text(max_size=80))
def test_every_name_is_one_every_provider_takes(server: str, tool: str) -> None:
    name = mcp_name(server, tool)
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name)


def test_allow_lists_and_rules_name_servers_and_tools() -> None:
    assert mcp_allowed("mcp__gh__issue", None)
    assert mcp_allowed("mcp__gh__issue", ["Read", "mcp__gh"])
    assert mcp_allowed("mcp__gh__issue", ["mcp__gh__*"])
    assert not mcp_allowed("mcp__gh__issue", ["Read", "mcp__g", "mcp__gh__pr"])
    rule = parse_rule("mcp__gh", "deny")
    assert rule.covers_tool("mcp__gh__issue") and not rule.covers_tool("mcp__ghx__issue")
    assert parse_rule("mcp__gh__*", "allow").covers_tool("mcp__gh__pr")
    assert not parse_rule("mcp__gh__issue", "allow").covers_tool("mcp__gh__pr")


def test_results_map_to_tron_blocks() -> None:
    blocks = content_blocks([
        {"type": "text", "text": "hi"},
        {"type": "image", "data": "aGk=", "mimeType": "image/png"},
        {"type": "image", "data": "aGk=", "mimeType": "image/tiff"},
        {"type": "audio", "data": "aGk=", "mimeType": "audio/wav"},
        {"type": "resource", "resource": {"uri": "x://a", "mimeType": "text/plain", "text": "T"}},
        {"type": "resource", "resource": {"uri": "x://b", "mimeType": "image/png", "blob": "aGk="}},
        {"type": "resource", "resource": {"uri": "x://c", "blob": "aGk="}},
        {"type": "resource_link", "uri": "x://d", "name": "d", "description": "a link"},
    ])  # fmt: skip
    kinds = [b["type"] for b in blocks]
    assert kinds == ["text", "image", "text", "text", "text", "text", "image", "text", "text"]
    assert blocks[1]["source"] == {"type": "base64", "media_type": "image/png", "data": "aGk="}
    assert "image/tiff, 2 bytes" in blocks[2]["text"] and "audio/wav" in blocks[3]["text"]
    assert blocks[4]["text"] == '<resource uri="x://a" mimeType="text/plain">\nT\n</resource>'
    assert "binary resource x://c" in blocks[7]["text"]
    assert blocks[8]["text"] == "[resource link: x://d (d)] a link"
    failed = tool_result({"content": [{"type": "text", "text": "no"}], "isError": True}, "s")
    assert failed.is_error and failed.content == "no" and failed.details == {"server": "s"}
    structured = tool_result({"content": [], "structuredContent": {"t": 1}}, "s")
    assert structured.content == '{"t": 1}' and structured.details == {
        "server": "s", "structuredContent": {"t": 1}}  # fmt: skip
