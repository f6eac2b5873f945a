"""The path policy pinned by mutation testing (issue 26 item 7): each test here failed on
a mutant of ``tron_server/paths.py`` that every other test let through.
``benchmarks/mutation.sh paths``."""

from __future__ import annotations

import errno
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tron_server import paths
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


# -- what only a race, a failing disk or an unusual process reaches ----------------------
# The paths below are taken when another process changes the tree between two of our
# system calls, or when the kernel refuses a call that normally succeeds. Each test makes
# that happen at one precise call: ``paths.os`` is replaced by ``_Os``, which runs a hook
# before (or instead of) the real call; the files and folders are real.


class _Os:
    """The ``os`` module with some functions replaced (for the path module only)."""

    def __init__(self, **replaced: Callable[..., Any]) -> None:
        self.__dict__.update(replaced)

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)


def _temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tron-tmp"))


def test_the_umask_is_read_and_left_as_it_was() -> None:
    mask = os.umask(0o027)
    try:
        assert paths._read_umask() == 0o027
        assert os.umask(0o027) == 0o027  # left in place
    finally:
        os.umask(mask)


def test_a_folder_made_meanwhile_where_a_file_is_written(work: Path) -> None:
    policy = PathPolicy(work, (work,))
    for symlink in (False, True):
        with policy.resolve("name") as resolved:  # missing when resolved...
            (work / "name").mkdir()  # ...a folder when written
            with pytest.raises(PathError) as caught:
                if symlink:
                    policy.write_symlink(resolved, "t")
                else:
                    policy.write_bytes(resolved, b"x")
        assert str(caught.value) == "name is a directory; give a file path."
        (work / "name").rmdir()
    assert list(work.iterdir()) == []


def test_missing_folders_made_meanwhile(work: Path) -> None:
    policy = PathPolicy(work, (work,))
    with policy.resolve("a/b/f") as resolved:
        (work / "a").mkdir()  # another process makes the first folder first
        assert policy.write_bytes(resolved, b"x").created
    assert (work / "a" / "b" / "f").read_bytes() == b"x"
    with policy.resolve("c/d/f") as resolved:
        (work / "c").write_text("")  # a file where a folder was to be made
        with pytest.raises(PathError) as caught:
            policy.write_bytes(resolved, b"x")
    assert str(caught.value).startswith(
        "Cannot write c/d/f: a folder on the way (c) is not a folder or changed while it was "
        "being created ("
    )
    assert (work / "c").read_text() == "" and sorted(os.listdir(work)) == ["a", "c"]


@pytest.mark.parametrize("kind", ["file", "symlink"])
def test_a_failed_rename_leaves_no_temporary_file(
    work: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder appears at the name just before the rename: the rename fails (EISDIR), the
    temporary file is removed and the error reaches the caller."""

    def replace(src: str, dst: str, *, src_dir_fd: int, dst_dir_fd: int) -> None:
        assert _temporaries(work) == [src]
        os.mkdir(dst, dir_fd=dst_dir_fd)
        os.replace(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)

    monkeypatch.setattr(paths, "os", _Os(replace=replace))
    policy = PathPolicy(work, (work,))
    with pytest.raises(IsADirectoryError):
        if kind == "file":
            policy.write_bytes("f", b"x")
        else:
            policy.write_symlink("f", "target")
    assert os.listdir(work) == ["f"] and (work / "f").is_dir()


@pytest.mark.parametrize("kind", ["file", "symlink"])
def test_a_temporary_file_removed_by_another_process(
    work: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Someone deletes our temporary file before the rename (a cleaner of stray files):
    the rename's error is the one reported, the clean-up's own is not."""

    def delete_temporaries() -> None:
        for name in _temporaries(work):
            os.unlink(work / name)

    def fsync(fd: int) -> None:
        delete_temporaries()
        os.fsync(fd)

    def symlink(src: str, dst: str, *, dir_fd: int) -> None:
        os.symlink(src, dst, dir_fd=dir_fd)
        delete_temporaries()

    monkeypatch.setattr(paths, "os", _Os(fsync=fsync, symlink=symlink))
    (work / "f").write_bytes(b"old")
    policy = PathPolicy(work, (work,))
    with pytest.raises(FileNotFoundError):
        if kind == "file":
            policy.write_bytes("f", b"new")
        else:
            policy.write_symlink("f", "target")
    assert os.listdir(work) == ["f"] and (work / "f").read_bytes() == b"old"


def test_the_temporary_file_is_private_until_it_is_complete(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its content is written while only the owner may read it; the mode is set after."""
    seen: list[int] = []

    def fsync(fd: int) -> None:
        seen.append(stat.S_IMODE(os.fstat(fd).st_mode))
        os.fsync(fd)

    monkeypatch.setattr(paths, "os", _Os(fsync=fsync))
    PathPolicy(work).write_bytes("secret", b"x", mode=0o644)
    assert seen == [0o600]
    assert stat.S_IMODE((work / "secret").stat().st_mode) == 0o644


def test_a_symlink_replaced_by_a_file_gets_a_new_files_mode(work: Path) -> None:
    mask = os.umask(0o022)
    os.umask(mask)
    (work / "link").symlink_to("elsewhere")
    policy = PathPolicy(work)
    with policy.resolve("link", follow_last=False) as resolved:
        assert policy.write_bytes(resolved, b"x").created is False
    assert not (work / "link").is_symlink()
    assert stat.S_IMODE((work / "link").stat().st_mode) == 0o666 & ~mask


@pytest.mark.skipif(os.geteuid() != 0, reason="only a privileged server changes owners")
def test_a_privileged_server_keeps_owners_of_files_only(work: Path) -> None:
    """A symlink replaced by a file: the file is the server's (a link's owner means
    nothing for the file put in its place)."""
    (work / "link").symlink_to("elsewhere")
    os.lchown(work / "link", 12345, 23456)
    policy = PathPolicy(work)
    with policy.resolve("link", follow_last=False) as resolved:
        policy.write_bytes(resolved, b"x")
    info = (work / "link").lstat()
    assert (info.st_uid, info.st_gid) == (0, 0)


@pytest.mark.skipif(os.geteuid() != 0, reason="only a privileged server changes owners")
def test_a_file_system_that_refuses_chown_still_gets_the_write(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fchown(fd: int, uid: int, gid: int) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted")  # NFS root squash

    monkeypatch.setattr(paths, "os", _Os(fchown=fchown))
    (work / "users.txt").write_text("x")
    PathPolicy(work).write_bytes("users.txt", b"y")
    assert (work / "users.txt").read_bytes() == b"y"


def test_reading_a_file_replaced_by_a_symlink_or_unreadable(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = PathPolicy(work)
    (work / "f").write_text("x")
    with policy.resolve("f") as resolved:
        (work / "f").unlink()
        (work / "f").symlink_to("/etc/hostname")  # swapped after the resolution
        with pytest.raises(PathError) as caught:
            resolved.read_bytes()
    message = str(caught.value)
    assert message.startswith("f changed while it was being opened (") and message.endswith(
        "); try again."
    )

    def denied(*args: Any, **kwargs: Any) -> int:
        raise PermissionError(errno.EACCES, "Permission denied")  # root reads anything

    with policy.resolve("f", follow_last=False) as resolved:
        monkeypatch.setattr(paths, "os", _Os(open=denied))
        with pytest.raises(PathError) as caught:
            resolved.read_bytes()
    assert str(caught.value) == "Permission denied: f"


def test_a_handle_that_fails_to_close_does_not_fail_the_resolution(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    closed: list[int] = []

    def close(fd: int) -> None:
        closed.append(fd)
        os.close(fd)
        raise OSError(errno.EIO, "Input/output error")  # closed, but reported as failed

    (work / "f").write_text("x")
    monkeypatch.setattr(paths, "os", _Os(close=close))
    resolved = PathPolicy(work).resolve("f")
    assert resolved.path == work / "f" and closed  # the walk closed the folders above
    resolved.close()
    assert len(closed) == len(work.parts)  # "/" and every folder but the one kept, then it


def test_remove_below_a_missing_folder_touches_nothing(work: Path) -> None:
    (work / "file").write_text("x")  # named like the path's last name, one level up
    assert PathPolicy(work).remove("no/such/file") is False
    assert (work / "file").read_text() == "x"


def test_a_closed_resolution_is_neither_written_nor_removed(work: Path) -> None:
    policy = PathPolicy(work)
    (work / "f").write_text("x")
    resolved = policy.resolve("f")
    assert repr(resolved) == f"ResolvedPath('f' -> {str(work / 'f')!r})"
    resolved.close()
    with pytest.raises(ValueError) as caught:
        policy.write_bytes(resolved, b"y")
    assert str(caught.value) == "the resolved path is closed"
    assert policy.remove(resolved) is False
    assert (work / "f").read_text() == "x"


_FD0 = """
import os, sys
from pathlib import Path
from tron_server.paths import PathPolicy, ResolvedPath

work = Path(sys.argv[1])
os.close(0)  # a server started with stdin closed: its next handle is 0
fd = os.open(work, os.O_RDONLY | os.O_DIRECTORY)
assert fd == 0, fd
policy = PathPolicy(work, (work,))
resolved = ResolvedPath("f", work / "f", fd, "f", (), None, False)
policy.write_bytes(resolved, b"data")
assert resolved.read_bytes() == b"data"
assert policy.remove(resolved) is True
resolved.close()
try:
    os.fstat(0)
except OSError:
    print("closed")
"""


def test_a_folder_handle_may_be_descriptor_0(work: Path) -> None:
    """Read, write, remove and close through a handle that is file descriptor 0 (a
    server started with stdin closed). In a child process, which imports the module this
    test process imported (the same source; under mutmut, the same mutant)."""
    source = Path(paths.__file__).parents[1]
    done = subprocess.run(
        [sys.executable, "-c", _FD0, str(work)],
        env={**os.environ, "PYTHONPATH": str(source)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "closed\n", "")
    assert list(work.iterdir()) == []


class _Flapper:
    """``work/a`` turned from a symlink (to ``t``) into a real folder and back each time
    the walk reads it as what it saw a moment before (``readlink``, ``open``), ``swaps``
    times; ``error``: the errno the open then fails with instead of the kernel's (ELOOP is
    what systems without ``O_PATH`` answer for a symlink opened as a folder)."""

    def __init__(self, work: Path, swaps: float, error: int | None = None) -> None:
        self.a, self.left, self.error, self.looks = work / "a", swaps, error, 0
        (work / "t").mkdir()
        (work / "t" / "f").write_text("t")
        self.a.symlink_to("t")

    def _swap(self, name: str) -> bool:
        if name != "a" or self.left <= 0:
            return False
        self.left -= 1
        self.looks += 1
        if self.a.is_symlink():
            self.a.unlink()
            self.a.mkdir()
            (self.a / "f").write_text("a")
        else:
            shutil.rmtree(self.a)
            self.a.symlink_to("t")
        return True

    def readlink(self, path: str, *, dir_fd: int | None = None) -> str:
        self._swap(path)
        return os.readlink(path, dir_fd=dir_fd)

    def open(self, path: str, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if self._swap(path) and self.error is not None:
            raise OSError(self.error, os.strerror(self.error), path)
        return os.open(path, flags, mode, dir_fd=dir_fd)

    def os(self) -> _Os:
        return _Os(readlink=self.readlink, open=self.open)


@pytest.mark.parametrize(("swaps", "ends_in"), [(1, "a"), (2, "t"), (3, "a"), (4, "t")])
def test_a_name_replaced_while_it_is_walked_is_looked_at_again(
    work: Path, swaps: int, ends_in: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A symlink that becomes a folder before ``readlink``, a folder that becomes a
    symlink before ``open``: each time the walk looks again and goes where the name
    leads now."""
    flapper = _Flapper(work, swaps)
    monkeypatch.setattr(paths, "os", flapper.os())
    with PathPolicy(work).resolve("a/f") as resolved:
        assert resolved.path == work / ends_in / "f"
        assert resolved.read_bytes() == ends_in.encode()
    assert flapper.looks == swaps


@pytest.mark.parametrize("error", [errno.ELOOP, errno.ENOENT])
def test_a_folder_replaced_before_its_open_is_looked_at_again(
    work: Path, error: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    flapper = _Flapper(work, 3, error)  # link -> folder (readlink), -> link (open), -> folder
    monkeypatch.setattr(paths, "os", flapper.os())
    with PathPolicy(work).resolve("a/f") as resolved:
        assert resolved.path == work / "a" / "f"
    assert flapper.looks == 3


@pytest.mark.parametrize("error", [errno.ENOENT, errno.ENOTDIR, errno.ELOOP])
def test_a_name_that_keeps_changing_is_given_up_after_100_looks(
    work: Path, error: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``d`` is a folder each time the walk looks, and something else each time it opens
    it (swapped back and forth by another process between the two calls)."""
    (work / "d").mkdir()
    opens: list[str] = []

    def open_(path: str, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if path == "d":
            opens.append(path)
            raise OSError(error, os.strerror(error), path)
        return os.open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(paths, "os", _Os(open=open_))
    with pytest.raises(PathError) as caught:
        PathPolicy(work).resolve("d/f")
    assert str(caught.value) == "Cannot use the path d/f: it kept changing while it was resolved"
    assert len(opens) == 101  # the first look and 100 more


def test_a_folder_the_walk_may_not_open(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (work / "d").mkdir()

    def open_(path: str, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if path == "d":  # root opens anything: the refusal a user's server gets
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return os.open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(paths, "os", _Os(open=open_))
    with pytest.raises(PathError) as caught:
        PathPolicy(work).resolve("d/f")
    assert str(caught.value) == "Cannot use the path d/f: Permission denied"


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts open descriptors")
def test_no_folder_handle_is_left_open(work: Path) -> None:
    (work / "sub" / "deeper").mkdir(parents=True)
    (work / "sub" / "deeper" / "f").write_text("x")
    (work / "sub" / "abs").symlink_to(work / "sub" / "deeper")  # resets the walk to /
    policy = PathPolicy(work)
    before = len(os.listdir("/proc/self/fd"))
    for raw in ("sub/abs/f", "sub/abs/../abs/f", "/", "sub/deeper", "sub/new/x"):
        policy.resolve(raw).close()
    assert len(os.listdir("/proc/self/fd")) == before


def test_what_a_resolution_reports(work: Path) -> None:
    policy = PathPolicy(work)
    (work / "d").mkdir()
    (work / "d" / "f").write_text("x")
    with policy.resolve("/") as root:
        assert (root.raw, root.path, root.is_dir, root.trailing_slash) == (
            "/",
            Path("/"),
            True,
            True,
        )
        with pytest.raises(PathError) as caught:
            root.open_read()
        assert str(caught.value) == "/: not a regular file"
        assert policy.remove(root) is False  # "/" names no entry of a folder
    for raw, trailing in (("d", False), ("d/", True), ("d/.", True), ("d/f/..", None)):
        if trailing is None:
            with pytest.raises(PathError, match="is not a directory"):
                policy.resolve(raw)
            continue
        with policy.resolve(raw) as folder:
            assert folder.is_dir and folder.exists and folder.trailing_slash is trailing
            assert folder.stat is not None and folder.stat.st_ino == (work / "d").stat().st_ino
    # "." is the folder itself, not a name to look up: ".." after it leaves d
    with policy.resolve("d/./../x") as resolved:
        assert resolved.path == work / "x"
    (work / "loop").symlink_to("loop")
    with pytest.raises(PathError) as caught:
        policy.resolve("loop")
    assert str(caught.value) == (
        "Cannot use the path loop: too many levels of symbolic links (a symlink loop?)"
    )


def test_a_missing_file_next_to_a_protected_one_may_be_written(work: Path) -> None:
    settings = work / "settings.json"
    settings.write_text("{}")
    assert PathPolicy(work, (work,), (settings,)).refusal("brand-new.txt") is None


def test_named_strips_only_slashes(work: Path) -> None:
    assert PathPolicy(work).named("//Xdir/f") == Path("/Xdir/f")


def test_closing_a_resolution_of_the_root_closes_its_own_handle_only(work: Path) -> None:
    """The handle on ``/`` is the resolution's: not closed by the walk (the descriptor
    number would be reused by the next open, which closing the resolution then closes)."""
    (work / "f").write_text("x")
    root = PathPolicy(work).resolve("/")
    fd = os.open(work / "f", os.O_RDONLY)  # the lowest free descriptor
    try:
        root.close()
        assert os.read(fd, 1) == b"x"
    finally:
        os.close(fd)
