"""Cached folder listings (tron_server.context.listings): a lookup sees what changed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tron_server.context import listings
from tron_server.context.skills import discover_skills


def test_a_fresh_folder_is_listed_again_at_each_lookup(tmp_path: Path) -> None:
    # Changed just now: its listing is not kept (a change in the same clock tick
    # would leave its stamps as they were), so what is added next is seen.
    assert not listings.present(tmp_path, "AGENTS.md")
    (tmp_path / "AGENTS.md").write_text("x")
    assert listings.present(tmp_path, "AGENTS.md")
    assert not listings.present(tmp_path, ".tron", "settings.json")
    (tmp_path / ".tron").mkdir()
    (tmp_path / ".tron" / "settings.json").write_text("{}")
    assert listings.present(tmp_path, ".tron", "settings.json")
    assert listings.entries(tmp_path / "AGENTS.md") is None  # a file is no folder


def test_a_kept_listing_is_used_until_the_folder_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "CLAUDE.md").write_text("x")
    monkeypatch.setattr(listings, "RACY_NS", -(10**18))  # keep whatever is listed
    assert listings.present(tmp_path, "CLAUDE.md")

    def refused(path: object) -> list[str]:
        raise AssertionError("listed again")

    with monkeypatch.context() as m:
        m.setattr(listings.os, "listdir", refused)
        assert listings.present(tmp_path, "CLAUDE.md")  # kept: no listing
        assert not listings.present(tmp_path, "AGENTS.md")
    (tmp_path / "CLAUDE.md").unlink()
    (tmp_path / "AGENTS.md").write_text("y")
    # A later change gets a later stamp (here made sure of: same clock tick otherwise).
    info = tmp_path.stat()
    os.utime(tmp_path, ns=(info.st_atime_ns, info.st_mtime_ns + 10**9))
    assert listings.present(tmp_path, "AGENTS.md")
    assert not listings.present(tmp_path, "CLAUDE.md")


def test_a_skill_added_after_a_kept_listing_is_discovered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    home, wd = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    wd.mkdir()
    monkeypatch.setattr(listings, "RACY_NS", -(10**18))
    assert discover_skills(home, wd) == []
    skill = wd / ".tron" / "skills" / "notes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: notes\ndescription: Take notes.\n---\nbody")
    info = wd.stat()
    os.utime(wd, ns=(info.st_atime_ns, info.st_mtime_ns + 10**9))
    assert [s.name for s in discover_skills(home, wd)] == ["notes"]


def test_a_folder_that_cannot_be_listed_leaves_the_lookup_to_the_caller(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Searchable but not readable: its entries may still be opened by name.
    def refused(path: object) -> list[str]:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(listings.os, "listdir", refused)
    assert listings.present(tmp_path, "AGENTS.md")  # may exist: the caller checks
    assert listings.entries(tmp_path) is None
    assert not listings.present(tmp_path / "missing", "AGENTS.md")  # no such folder


def test_a_skill_edited_after_a_kept_read_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tron_server.context import skills

    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    home, wd = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    skill_md = wd / ".tron" / "skills" / "notes" / "SKILL.md"
    skill_md.parent.mkdir(parents=True)
    skill_md.write_text("---\ndescription: Old.\n---\nbody")
    monkeypatch.setattr(listings, "RACY_NS", -(10**18))  # keep whatever is read
    assert [s.description for s in discover_skills(home, wd)] == ["Old."]

    def refused(path: Path, scope: str) -> None:
        raise AssertionError("read again")

    with monkeypatch.context() as m:
        m.setattr(skills, "_read_skill", refused)
        assert [s.description for s in discover_skills(home, wd)] == ["Old."]  # kept
    skill_md.write_text("---\ndescription: New!\n---\nbody")  # same size, new text
    info = skill_md.stat()
    os.utime(skill_md, ns=(info.st_atime_ns, info.st_mtime_ns + 10**9))  # a later stamp
    assert [s.description for s in discover_skills(home, wd)] == ["New!"]
    skill_md.unlink()
    assert discover_skills(home, wd) == []
