"""Rules files, skills, the Skill tool and the system prompt, on real temporary folders."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.hooks.conftest import StoreRecorder
from tron_events import Session
from tron_server.context import (
    RulesLoader,
    SkillNotFoundError,
    build_system_prompt,
    discover_skills,
    load_skill,
    parse_front_matter,
    rules_loaded_payload,
)
from tron_server.tools.base import ToolContext, ToolRegistry
from tron_server.tools.skill import SkillTool

pytestmark = pytest.mark.anyio


def put(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# -- rules ---------------------------------------------------------------------------------


def test_initial_rules_in_hierarchical_order(workdir: Path, home: Path) -> None:
    put(home / "rules" / "AGENTS.md", "global rule")
    put(workdir / "AGENTS.md", "root agents")
    put(workdir / "CLAUDE.md", "root claude")
    put(workdir / ".tron" / "AGENTS.md", "tron dir")
    put(workdir / ".claude" / "AGENTS.md", "claude dir")
    put(workdir / "sub" / "AGENTS.md", "not yet")
    files = RulesLoader(home, workdir).initial()
    assert [(f.content, f.scope) for f in files] == [
        ("global rule", "global"),
        ("claude dir", "project"),
        ("tron dir", "project"),
        ("root claude", "project"),
        ("root agents", "project"),
    ]
    assert files[0].path == home / "rules" / "AGENTS.md"
    assert rules_loaded_payload(files[:1]) == {
        "files": [{"path": str(home / "rules" / "AGENTS.md"), "scope": "global", "bytes": 11}]
    }


def test_no_rules_files_is_fine(workdir: Path, home: Path) -> None:
    loader = RulesLoader(home, workdir)
    assert loader.initial() == []
    assert loader.on_path_touched("src/main.py") == []


def test_symlinked_or_duplicate_root_files_load_once(workdir: Path, home: Path) -> None:
    put(workdir / "CLAUDE.md", "shared text")
    (workdir / "AGENTS.md").symlink_to(workdir / "CLAUDE.md")
    put(workdir / ".tron" / "AGENTS.md", "shared text")  # same content copied
    files = RulesLoader(home, workdir).initial()
    # .tron/AGENTS.md comes first; CLAUDE.md repeats its text, AGENTS.md is CLAUDE.md
    assert [f.path for f in files] == [workdir / ".tron" / "AGENTS.md"]


def test_a_rules_file_reached_through_a_linked_folder_is_the_same_file(
    workdir: Path, home: Path
) -> None:
    put(workdir / "docs" / "AGENTS.md", "v1")
    (workdir / ".claude").symlink_to(workdir / "docs")
    loader = RulesLoader(home, workdir)
    assert [(f.path, f.content) for f in loader.initial()] == [
        (workdir / ".claude" / "AGENTS.md", "v1")
    ]
    (workdir / "docs" / "AGENTS.md").write_text("v2")  # edited: only its path says it
    assert loader.on_path_touched("docs/x.py") == []  # the file loaded, by its real path
    assert loader.initial() == []  # and at the next run, through the link


def test_subfolder_rules_added_on_first_touch_only(workdir: Path, home: Path) -> None:
    put(workdir / "AGENTS.md", "root")
    put(workdir / "pkg" / "AGENTS.md", "pkg rules")
    put(workdir / "pkg" / "core" / "CLAUDE.md", "core rules")
    put(workdir / "pkg" / "core" / "x.py", "")
    put(workdir / "other" / "AGENTS.md", "other rules")
    loader = RulesLoader(home, workdir)
    assert [f.content for f in loader.initial()] == ["root"]
    touched = loader.on_path_touched(workdir / "pkg" / "core" / "x.py")
    assert [(f.content, f.scope) for f in touched] == [
        ("pkg rules", "directory"),
        ("core rules", "directory"),
    ]
    assert loader.on_path_touched("pkg/core/x.py") == []
    assert loader.on_path_touched("pkg/new_file.py") == []
    assert loader.on_path_touched("AGENTS.md") == []  # the root was loaded by initial()
    assert [f.content for f in loader.on_path_touched("other")] == ["other rules"]  # a dir
    assert [f.content for f in loader.loaded] == ["root", "pkg rules", "core rules", "other rules"]


def test_touches_outside_or_through_escaping_symlinks_are_ignored(
    workdir: Path, home: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    put(outside / "AGENTS.md", "evil")
    put(outside / "f.py", "")
    (workdir / "link").symlink_to(outside)
    loader = RulesLoader(home, workdir)
    assert loader.on_path_touched(outside / "f.py") == []
    assert loader.on_path_touched("link/f.py") == []
    assert loader.on_path_touched("../outside/f.py") == []
    put(workdir / "node_modules" / "lib" / "AGENTS.md", "vendored")
    assert loader.on_path_touched("node_modules/lib/index.js") == []


def test_huge_and_non_utf8_rules_files(workdir: Path, home: Path) -> None:
    (workdir / "AGENTS.md").write_bytes(b"caf\xe9 " + b"x" * 200_000)
    [f] = RulesLoader(home, workdir).initial()
    assert f.size == 200_005
    assert f.content.startswith("caf\ufffd ")
    assert "[truncated: 100005 more bytes" in f.content


def test_restore_on_resume(workdir: Path, home: Path) -> None:
    put(workdir / "AGENTS.md", "root")
    put(workdir / "a" / "AGENTS.md", "a rules")
    first = RulesLoader(home, workdir)
    first.initial()
    recorded = [f.to_payload()["path"] for f in first.on_path_touched("a/f.py")]
    resumed = RulesLoader(home, workdir)
    resumed.initial()
    assert [f.content for f in resumed.restore(recorded)] == ["a rules"]
    assert resumed.on_path_touched("a/f.py") == []


# -- skills --------------------------------------------------------------------------------

SKILL = """---
name: release-notes
description: "Write release notes from the git log."
# a comment
tags: [docs, git]
---
# Release notes

1. Run `git log`.
"""


def test_front_matter_parsing() -> None:
    meta, body = parse_front_matter(SKILL)
    assert meta == {
        "name": "release-notes",
        "description": "Write release notes from the git log.",
        "tags": "[docs, git]",
    }
    assert body.startswith("# Release notes")
    folded, _ = parse_front_matter("---\ndescription: >\n  one\n  two\nname: n\n---\nbody")
    assert folded == {"description": "one two", "name": "n"}
    cont, _ = parse_front_matter("---\ndescription: first\n  second\n---\n")
    assert cont == {"description": "first second"}
    assert parse_front_matter("no front matter") == ({}, "no front matter")
    assert parse_front_matter("---\nname: x\nnever closed") == ({}, "---\nname: x\nnever closed")


@given(st.text(max_size=200))
def test_front_matter_never_raises(text: str) -> None:
    meta, body = parse_front_matter(text)
    assert isinstance(meta, dict) and isinstance(body, str)


def test_discovery_override_and_load(workdir: Path, home: Path) -> None:
    put(home / "skills" / "release" / "SKILL.md", SKILL)
    put(home / "skills" / "deploy" / "SKILL.md", "---\ndescription: home deploy\n---\nhome body")
    put(home / "skills" / "not-a-skill" / "README.md", "no SKILL.md here")
    put(
        workdir / ".tron" / "skills" / "deploy" / "SKILL.md", "# Deploy the project\n\nproject body"
    )
    skills = discover_skills(home, workdir)
    assert [(s.name, s.description, s.scope) for s in skills] == [
        ("deploy", "Deploy the project", "project"),
        ("release-notes", "Write release notes from the git log.", "home"),
    ]
    assert load_skill("deploy", home=home, working_directory=workdir).endswith("project body")
    assert load_skill("release-notes", home=home, working_directory=workdir).startswith(
        "# Release notes"
    )
    with pytest.raises(SkillNotFoundError, match="Available skills: deploy, release-notes"):
        load_skill("nope", home=home, working_directory=workdir)


async def test_skill_tool_returns_body_and_lists_files(
    workdir: Path, home: Path, session: Session, recorder: StoreRecorder
) -> None:
    folder = workdir / ".tron" / "skills" / "release"
    put(folder / "SKILL.md", SKILL)
    put(folder / "scripts" / "collect.sh", "#!/bin/sh\n")
    put(folder / "template.md", "t")
    put(folder / ".hidden", "h")

    async def record(event_type: str, payload: dict[str, Any]) -> None:
        await recorder(session.id, event_type, payload)

    registry = ToolRegistry([SkillTool(home)])
    ctx = ToolContext(
        session_id=session.id, working_directory=workdir, tool_call_id="toolu_s", record=record
    )
    result = await registry.execute("Skill", {"name": "release-notes"}, ctx)
    assert not result.is_error
    assert isinstance(result.content, str)
    assert "1. Run `git log`." in result.content and "description:" not in result.content
    assert (
        "- scripts/collect.sh\n- template.md" in result.content and ".hidden" not in result.content
    )
    events = [(e.type, dict(e.payload)) for e in await recorder.store.get_events(session.id)]
    assert events[-1] == (
        "skill.added",
        {
            "name": "release-notes",
            "path": str(folder / "SKILL.md"),
            "scope": "project",
            "toolCallId": "toolu_s",
        },
    )
    missing = await registry.execute("Skill", {"name": "nope"}, ctx)
    assert missing.is_error and "Available skills: release-notes" in str(missing.content)
    assert registry.specs()[0].input_schema["required"] == ["name"]


# -- system prompt -------------------------------------------------------------------------


def test_system_prompt_contains_environment_rules_and_skills(workdir: Path, home: Path) -> None:
    put(home / "rules" / "AGENTS.md", "Always answer in English.")
    put(workdir / "AGENTS.md", "Use uv run for everything.")
    put(home / "skills" / "release" / "SKILL.md", SKILL)
    rules = RulesLoader(home, workdir).initial()
    skills = discover_skills(home, workdir)
    now = datetime(2025, 3, 4, 12, 0, tzinfo=UTC)
    prompt = build_system_prompt(
        working_directory=workdir, rules=rules, skills=skills, now=now, platform_name="Linux-test"
    )
    assert prompt.startswith("You are Tron, a coding agent")
    assert f"- Working directory: {workdir}" in prompt
    assert "- Platform: Linux-test" in prompt and "- Date: Tuesday, 2025-03-04" in prompt
    global_rules = home / "rules" / "AGENTS.md"
    expected = f'<rules path="{global_rules}" scope="global">\nAlways answer in English.\n</rules>'
    assert expected in prompt
    assert prompt.index("Always answer in English.") < prompt.index("Use uv run for everything.")
    assert "- release-notes: Write release notes from the git log." in prompt
    assert "Skill tool" in prompt
    # deterministic for the same inputs
    assert prompt == build_system_prompt(
        working_directory=workdir, rules=rules, skills=skills, now=now, platform_name="Linux-test"
    )


def test_system_prompt_with_custom_base_and_nothing_else(workdir: Path) -> None:
    prompt = build_system_prompt(
        working_directory=workdir, base="Be a pirate.", now=datetime(2025, 1, 1)
    )
    assert prompt.startswith("Be a pirate.\n\n# Environment")
    assert "# Rules files" not in prompt and "# Skills" not in prompt
