"""The path policy pinned by mutation testing (issue 26 item 7): each test here failed on
a mutant of ``tron_server/paths.py`` that every other test let through.
``benchmarks/mutation.sh paths``."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tron_server.paths import (
    InvalidPath,
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


def test_named_keeps_links_and_rebases_onto_the_real_working_directory(
    work: Path, tmp_path: Path
) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(work)
    policy = PathPolicy(alias)
    (work / "link").symlink_to("/etc")
    assert policy.named("link/x") == work / "link" / "x"  # the link is kept, not followed
    assert policy.named("a/../b") == work / "b"
    assert policy.named(".") == work
    assert policy.named("//etc/hosts") == Path("/etc/hosts")
    assert policy.named("/elsewhere/y") == Path("/elsewhere/y")
    assert policy.named(f"{alias}x/z") == Path(f"{alias}x/z")  # a sibling, not below


def test_write_symlink_replaces_the_name_and_never_follows(work: Path, tmp_path: Path) -> None:
    policy = PathPolicy(work, (work,))
    assert policy.write_symlink("a/l", "target").created
    assert os.readlink(work / "a" / "l") == "target"
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    (work / "to-outside").symlink_to(outside)
    with policy.resolve("to-outside", follow_last=False) as resolved:
        outcome = policy.write_symlink(resolved, "new")
    assert not outcome.created and os.readlink(work / "to-outside") == "new"
    assert outside.read_text() == "keep"
    (work / "d").mkdir()
    with pytest.raises(PathError, match="d is a directory"):
        policy.write_symlink("d", "x")
    with pytest.raises(PathRefused):
        policy.write_symlink(str(tmp_path / "x"), "y")
    assert sorted(p.name for p in (work / "a").iterdir()) == ["l"]  # no temporary left


def test_dotdot_one_level_below_the_root(work: Path) -> None:
    with PathPolicy(work).resolve("/etc/../tmp") as r:
        assert r.path == Path("/tmp")


@pytest.mark.skipif(os.geteuid() != 0, reason="only a privileged server changes owners")
def test_a_privileged_server_keeps_the_owner_of_a_file_it_rewrites(work: Path) -> None:
    target = work / "users.txt"
    target.write_text("x")
    os.chown(target, 12345, 23456)
    PathPolicy(work).write_bytes("users.txt", b"y")
    info = target.stat()
    assert (info.st_uid, info.st_gid) == (12345, 23456)
    PathPolicy(work).write_bytes("fresh.txt", b"y")
    assert (work / "fresh.txt").stat().st_uid == 0


def test_text_that_is_no_path_is_refused_with_why(work: Path) -> None:
    policy = PathPolicy(work)
    for raw, message in (
        ("", "the path is empty"),
        ("\ud800", "the path '\\ud800' is not a valid file name"),
        (b"x", "a path must be text"),
    ):
        with pytest.raises(InvalidPath) as caught:
            policy.absolute(raw)  # type: ignore[arg-type]
        assert str(caught.value) == message


def test_policy_fields_are_absolute_and_resolved(work: Path) -> None:
    policy = PathPolicy(work / "a" / ".." / "b", ("rel",))
    assert policy.working_directory == work / "b"
    assert policy.write_roots == (work / "b" / "rel",)
    assert policy.absolute("x") == str(work / "b" / "x")


def test_a_trailing_dot_names_a_folder_too(work: Path) -> None:
    policy = PathPolicy(work, (work,))
    for raw in ("newdir/.", "newdir/sub/.."):
        with pytest.raises(PathError, match="is a directory; give a file path"):
            policy.write_bytes(raw, b"x")
    outcome = policy.write_symlink("l", "t")
    assert outcome.path == work / "l"


def test_two_roots_are_both_named(work: Path, tmp_path: Path) -> None:
    reason = PathPolicy(work, (work, tmp_path / "extra")).refusal("/etc/x")
    assert reason is not None and f"and the allowed folders {tmp_path / 'extra'}." in reason
