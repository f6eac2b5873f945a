"""The path policy pinned by mutation testing (issue 26 item 7): each test here failed on
a mutant of ``tron_server/paths.py`` that every other test let through.
``benchmarks/mutation.sh paths``."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tron_server.paths import (
    PathError,
    PathPolicy,
    PathRefused,
    display_path,
)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    d = tmp_path / "work"
    d.mkdir()
    return d.resolve()


def test_a_hard_link_to_a_settings_file_is_refused(work: Path) -> None:
    settings = work / ".tron" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{}")
    os.link(settings, work / "innocent.txt")
    policy = PathPolicy(work, (work,), (settings,))
    with pytest.raises(PathRefused) as caught:
        policy.write_bytes("innocent.txt", b"{}")
    assert caught.value.kind == "protected" and caught.value.path == work / "innocent.txt"
    assert str(caught.value) == (
        "Guardrails refused writing innocent.txt: it is a settings file (.tron/settings.json: "
        "hooks, guardrails and permissions live there), so the agent may not change it. "
        'Edit it yourself, or set "guardrails": {"protectSettingsFiles": false} in '
        "settings.json."
    )
    # A file that is not a link to it, and a symlink named like it elsewhere, are not it.
    (work / "other.txt").write_text("x")
    assert policy.refusal("other.txt") is None
    os.symlink(settings, work / "via-symlink")
    assert policy.refusal("via-symlink") is not None  # resolved to the settings file
    assert settings.read_text() == "{}"


def test_a_hook_program_is_named_as_such(work: Path) -> None:
    program = work / "check.sh"
    program.write_text("exit 0\n")
    policy = PathPolicy(work, (work,), (program,))
    reason = policy.refusal("check.sh")
    assert reason is not None and "a program your hooks run (check.sh, named in" in reason


def test_the_outside_refusal_names_every_root_and_a_link(work: Path, tmp_path: Path) -> None:
    extra, more = tmp_path / "extra", tmp_path / "more"
    extra.mkdir()
    more.mkdir()
    policy = PathPolicy(work, (work, extra, more))
    with pytest.raises(PathRefused) as caught:
        policy.write_bytes("/etc/x", b"")
    assert caught.value.kind == "outside" and caught.value.path == Path("/etc/x")
    assert str(caught.value) == (
        f"Guardrails refused writing /etc/x: it is outside the working directory {work} and "
        f"the allowed folders {extra}, {more}. To allow it, add the folder to "
        '"guardrails": {"allowedWritePaths": [...]} in .tron/settings.json (project) or '
        "~/.tron/settings.json."
    )
    (work / "out").symlink_to("/etc")
    reason = PathPolicy(work, (work,)).refusal("out/x")
    assert reason is not None
    assert reason.startswith(
        f"Guardrails refused writing out/x (resolves to /etc/x): it is outside the working "
        f"directory {work}. To allow"
    )
    none = PathPolicy(work, ()).refusal("x")
    assert none is not None and "it is outside every allowed folder. To allow" in none


def test_a_trailing_slash_names_a_folder(work: Path) -> None:
    """``newdir/`` written as a file: refused, nothing created."""
    policy = PathPolicy(work, (work,))
    with pytest.raises(PathError, match="newdir/ is a directory; give a file path"):
        policy.write_bytes("newdir/", b"x")
    assert not (work / "newdir").exists()
    (work / "folder").mkdir()
    with pytest.raises(PathError, match="folder is a directory; give a file path"):
        policy.write_bytes("folder", b"x")
    with pytest.raises(PathError, match="newlink/ is a directory"):
        policy.write_symlink("newlink/", "target")


def test_for_directory_keeps_roots_and_protected_files(work: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    protected = work / ".tron" / "settings.json"
    policy = PathPolicy(work, (work,), (protected,))
    assert policy.for_directory(work) is policy
    moved = policy.for_directory(other)
    assert moved.working_directory == other
    assert moved.write_roots == (work,) and moved.protected == (protected,)
    assert moved.refusal("x") is not None  # other/x is outside the roots
    assert moved.refusal(str(work / "x")) is None
    assert moved.refusal(str(protected)) is not None


def test_new_files_get_the_umask_mode_and_an_existing_file_keeps_its_own(work: Path) -> None:
    policy = PathPolicy(work)
    mask = os.umask(0o022)
    os.umask(mask)
    policy.write_bytes("new.txt", b"x")
    assert stat.S_IMODE((work / "new.txt").stat().st_mode) == 0o666 & ~mask
    (work / "run.sh").write_text("x")
    (work / "run.sh").chmod(0o751)
    policy.write_bytes("run.sh", b"y")
    assert stat.S_IMODE((work / "run.sh").stat().st_mode) == 0o751
    policy.write_bytes("run.sh", b"z", mode=0o600)
    assert stat.S_IMODE((work / "run.sh").stat().st_mode) == 0o600
    policy.write_bytes("sub/deeper/f", b"")
    assert stat.S_IMODE((work / "sub").stat().st_mode) == 0o777 & ~mask
    assert sorted(p.name for p in work.iterdir()) == ["new.txt", "run.sh", "sub"]  # no tmp


def test_read_bytes_limit_and_errors(work: Path) -> None:
    policy = PathPolicy(work)
    (work / "f").write_bytes(b"12345")
    with policy.resolve("f") as r:
        assert r.read_bytes(limit=5) == b"12345"
    with policy.resolve("f") as r, pytest.raises(PathError) as caught:
        r.read_bytes(limit=4)
    assert str(caught.value) == "f is 5 bytes, above the limit of 4 bytes"
    with policy.resolve("f") as r:
        assert r.read_bytes() == b"12345"
        with r.open_read() as f:
            assert os.get_blocking(f.fileno())
    with policy.resolve("missing") as r, pytest.raises(PathError) as caught:
        r.open_read()
    assert str(caught.value) == "File not found: missing"
    with policy.resolve("no/such/f") as r, pytest.raises(PathError) as caught:
        r.open_read()
    assert str(caught.value) == "no/such/f: not a regular file"
    (work / "d").mkdir()
    with policy.resolve("d") as r, pytest.raises(PathError) as caught:
        r.open_read()
    assert str(caught.value) == "d is not a regular file"
    r = policy.resolve("f")
    r.close()
    with pytest.raises(ValueError, match=r"^the resolved path is closed$"):
        r.open_read()


def test_remove_of_what_is_not_there(work: Path) -> None:
    policy = PathPolicy(work)
    assert policy.remove("no/such/file") is False
    (work / "d").mkdir()
    with pytest.raises(PathError) as caught:
        policy.remove("d")
    assert str(caught.value) == "d is a directory"


def test_walk_details(work: Path) -> None:
    policy = PathPolicy(work)
    with policy.resolve("/../../etc/./hosts") as r:  # .. at the root stays at the root
        assert r.path == Path("/etc/hosts")
    (work / "file").write_text("x")
    with pytest.raises(PathError) as caught:
        policy.resolve("file/..")
    assert str(caught.value) == f"Cannot use the path file/..: {work}/file is not a directory"
    # follow_last=False stops at a final link, and only there
    (work / "link").symlink_to("file")
    with policy.resolve("link", follow_last=False) as r:
        assert r.path == work / "link"
    (work / "dirlink").symlink_to(work)
    with policy.resolve("dirlink/file", follow_last=False) as r:
        assert r.path == work / "file"
    # 40 links are followed, the 41st is refused
    previous = "file"
    for i in range(40):
        (work / f"l{i}").symlink_to(previous)
        previous = f"l{i}"
    with policy.resolve("l39") as r:
        assert r.path == work / "file"
    (work / "l40").symlink_to("l39")
    with pytest.raises(PathError, match="too many levels"):
        policy.resolve("l40")


def test_display_path(work: Path) -> None:
    assert display_path(work / "a" / "b", work) == "a/b"
    assert display_path(work, work) == "."
    assert display_path(Path("/etc/x"), work) == "/etc/x"
