"""Cached folder listings (tron_server.context.listings): a lookup sees what changed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tron_server.context import listings
from tron_server.context.skills import discover_skills


def _later_stamp(path: Path) -> None:
    """Stamp ``path`` a second later, as a change after the last look would be (the
    test's own change may fall in the same clock tick)."""
    info = path.stat()
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 10**9))


def _keep_listings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep whatever is listed, however recently its folder changed."""
    monkeypatch.setattr(listings, "RACY_NS", -(10**18))


@pytest.fixture
def skill_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """(Tron's home, a working directory), with Claude Code's user folder in tmp_path."""
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    home, wd = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    wd.mkdir()
    return home, wd


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
    _keep_listings(monkeypatch)
    assert listings.present(tmp_path, "CLAUDE.md")

    def refused(path: object) -> list[str]:
        raise AssertionError("listed again")

    with monkeypatch.context() as m:
        m.setattr(listings.os, "listdir", refused)
        assert listings.present(tmp_path, "CLAUDE.md")  # kept: no listing
        assert not listings.present(tmp_path, "AGENTS.md")
    (tmp_path / "CLAUDE.md").unlink()
    (tmp_path / "AGENTS.md").write_text("y")
    _later_stamp(tmp_path)
    assert listings.present(tmp_path, "AGENTS.md")
    assert not listings.present(tmp_path, "CLAUDE.md")


def test_a_skill_added_after_a_kept_listing_is_discovered(
    skill_folders: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    home, wd = skill_folders
    _keep_listings(monkeypatch)
    assert discover_skills(home, wd) == []
    skill = wd / ".tron" / "skills" / "notes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: notes\ndescription: Take notes.\n---\nbody")
    _later_stamp(wd)
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
    skill_folders: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tron_server.context import skills

    home, wd = skill_folders
    skill_md = wd / ".tron" / "skills" / "notes" / "SKILL.md"
    skill_md.parent.mkdir(parents=True)
    skill_md.write_text("---\ndescription: Old.\n---\nbody")
    _keep_listings(monkeypatch)
    assert [s.description for s in discover_skills(home, wd)] == ["Old."]

    def refused(path: Path, scope: str) -> None:
        raise AssertionError("read again")

    with monkeypatch.context() as m:
        m.setattr(skills, "_read_skill", refused)
        assert [s.description for s in discover_skills(home, wd)] == ["Old."]  # kept
    skill_md.write_text("---\ndescription: New!\n---\nbody")  # same size, new text
    _later_stamp(skill_md)
    assert [s.description for s in discover_skills(home, wd)] == ["New!"]
    skill_md.unlink()
    assert discover_skills(home, wd) == []
