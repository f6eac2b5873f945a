"""Snapshots of a working directory in a shadow git repository.

To see what a shell command changed, the workspace is snapshotted before and after it
(``git add -A`` then ``git write-tree``) and the two trees compared. The snapshots live
in a *shadow* repository of our own (``~/.tron/workspace/snapshots/<key>/``, a bare
repository whose work tree is the user's folder), never in the user's ``.git``: the
user's index, refs and objects are not touched, and it works the same in a folder that
is not a git repository at all.

Why git (measured in ``benchmarks/bench_workspace.py``, see RESULTS_workspace.md): its
index caches every file's ``stat`` data, so a snapshot of an unchanged 10,000-file tree
only ``lstat``s each file (in C), and its ignore rules are exactly git's (``.gitignore``
files, the user's global excludes, the repository's ``info/exclude``). A Python walk
with the same stat cache was slower before doing any ignore matching. The shadow also
keeps the *previous* content of every file, which is what makes a change found after
the fact restorable: right after each command, the contents of the changed files are
copied into the event store (see ``recorder.py``), which is the record a rewind uses.
The shadow is a cache: deleting it loses nothing recorded (the next snapshot rebuilds it).

Rules:

- what is recorded is what ``git add -A`` sees under the folder: ignored files (by
  ``.gitignore``, ``info/exclude``, the global excludes file) are not, ``.git`` never;
- contents are taken byte for byte (no end-of-line conversion, no clean filters such as
  git-lfs: the shadow's ``info/attributes`` switches them off);
- modes are git's: regular, executable, symlink; other permission bits are not recorded;
- a nested repository (a folder with its own ``.git``) is left out, as git leaves it.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import subprocess
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from . import _git
from ._git import GitError
from ._watch import ChangeWatch

__all__ = [
    "DEFAULT_MAX_FILES",
    "NO_TREE",
    "Blob",
    "ShadowRepo",
    "TooManyFiles",
    "TreeChange",
    "shadow_key",
]

log = logging.getLogger("tron_server.workspace")

#: The id of git's empty tree.
NO_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
_ZERO = "0" * 40
_ATTRIBUTES = (
    b"# Written by Tron: record files byte for byte.\n"
    b"* -text -filter -ident !eol !working-tree-encoding\n"
)
_NESTED = re.compile(rb"'(.+?)/?' does not have a commit checked out")
_CONFIG = (
    ("core.autocrlf", "false"),
    ("core.safecrlf", "false"),
    ("core.filemode", "true"),
    ("core.symlinks", "true"),
    ("core.quotepath", "false"),
    ("core.untrackedCache", "true"),
    ("core.fsmonitor", "false"),
    ("core.bigFileThreshold", "16m"),
    ("index.version", "4"),
    ("gc.auto", "0"),
    ("advice.addEmbeddedRepo", "false"),
    ("advice.addIgnoredFile", "false"),
)
_LOCK_RETRIES = 50
#: Folders with more files than this (not ignored) are not snapshotted.
DEFAULT_MAX_FILES = 100_000


def shadow_key(work_tree: Path, scope: str) -> str:
    """The folder name of the shadow repository of ``scope`` in ``work_tree``."""
    return hashlib.sha256(f"{work_tree}\0{scope}".encode("utf-8", "surrogateescape")).hexdigest()[
        :24
    ]


def _private_folder(path: Path) -> None:
    """``path`` and its missing parents, user-only (0700)."""
    missing = []
    while not path.exists():
        missing.append(path)
        path = path.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, 0o700)
            os.chmod(folder, 0o700)  # mkdir's mode is cut by the umask; never widened


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as f:
        os.fchmod(f.fileno(), 0o600)
        f.write(data)


class TooManyFiles(ValueError):
    """The folder is too large to snapshot (see :attr:`ShadowRepo.max_files`)."""


@dataclass(frozen=True, slots=True)
class TreeChange:
    """One path that differs between two snapshots (git's raw diff): modes are git's
    (``100644``, ``100755``, ``120000``; ``000000`` absent), ids are blob ids."""

    path: str
    old_mode: str
    new_mode: str
    old_id: str
    new_id: str


@dataclass(frozen=True, slots=True)
class Blob:
    """A blob's content (None when larger than the limit), SHA-256 and size."""

    data: bytes | None
    sha256: str
    size: int


class ShadowRepo:
    """The shadow repository of one folder (``work_tree``, limited to ``scope``, a path
    relative to it: the working directory when it lies inside a larger checkout, whose
    ignore rules then apply too). Thread-safe; one snapshot at a time per instance."""

    def __init__(
        self,
        git_dir: Path,
        work_tree: Path,
        scope: str = "",
        *,
        watch: bool = True,
        max_files: int = DEFAULT_MAX_FILES,
    ) -> None:
        self.git_dir = git_dir
        self.work_tree = work_tree
        self.scope = scope
        self.max_files = max_files
        self._refused: str | None = None
        self._lock = threading.Lock()
        self._watch_wanted = watch
        self._watch: ChangeWatch | None = None
        #: The tree of the last snapshot, valid while the watch saw no change.
        self._tree: str | None = None
        self._env = {"GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(work_tree)}
        self._last: tuple[tuple[int, int, int, int], str] | None = None
        self._excludes_source: tuple[float, int] | None = None
        self._nested: set[str] = set()
        self._nested_pending = False

    @classmethod
    def for_directory(
        cls,
        snapshots: Path,
        directory: Path,
        *,
        watch: bool = True,
        max_files: int = DEFAULT_MAX_FILES,
    ) -> ShadowRepo:
        """The shadow of ``directory`` under ``snapshots`` (the folder of all shadows)."""
        directory = Path(os.path.realpath(directory))
        top = _git.find_repository(directory) or directory
        scope = directory.relative_to(top).as_posix()
        scope = "" if scope == "." else scope
        key = snapshots / shadow_key(top, scope)
        return cls(key, top, scope, watch=watch, max_files=max_files)

    def _check_size(self) -> None:
        """Before the first snapshot (which copies every file into the shadow): refuse
        a folder with more files than ``max_files`` (a home folder, a data set), once."""
        if self._refused is not None:
            raise TooManyFiles(self._refused)
        if (self.git_dir / "index").is_file():
            return
        listed = self._git("ls-files", "-o", "--exclude-standard", "-z", "--", self.scope or ".")
        count = listed.stdout.count(b"\0")
        if count > self.max_files:
            self._refused = (
                f"{self.work_tree / self.scope} holds {count} files (not ignored), more than "
                f"the {self.max_files} a workspace snapshot takes: changes made by commands "
                "there are not recorded (TRON_WORKSPACE_MAX_FILES raises the limit; "
                "a .gitignore can leave folders out)"
            )
            raise TooManyFiles(self._refused)

    def _start_watch(self) -> None:
        """Watch the folder (``_watch.py``) so that snapshots of it unchanged are free."""
        self._watch_wanted = False  # once: a tree that cannot be watched is not retried
        root = self.work_tree / self.scope if self.scope else self.work_tree
        around = [self.work_tree / p for p in Path(self.scope).parents if str(p) != "."]
        if self.scope:
            around.append(self.work_tree)
        info = self.work_tree / ".git" / "info"
        if info.is_dir():
            around.append(info)  # the repository's own excludes
        self._watch = ChangeWatch.start(root, around)

    def close(self) -> None:
        """Stop watching the folder (a later snapshot starts watching again)."""
        with self._lock:
            if self._watch is not None:
                self._watch.close()
                self._watch = None
                self._watch_wanted = True
            self._tree = None

    # -- git ----------------------------------------------------------------------------

    def _git(
        self, *args: str, stdin: bytes | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[bytes]:
        return _git.run(
            ["--literal-pathspecs", *args],
            cwd=self.work_tree,
            env=self._env,
            stdin=stdin,
            check=check,
        )

    def _ensure(self) -> None:
        if not (self.git_dir / "HEAD").is_file():
            # Copies of the user's files: user-only whatever the umask (0700 folders,
            # 0600 files; git makes its objects 0400), and no sample hooks.
            _private_folder(self.git_dir.parent)
            _git.run(
                ["init", "-q", "--bare", "--shared=0600", "--template=", str(self.git_dir)],
                cwd=self.git_dir.parent,
            )
            sections: dict[str, list[str]] = {}
            for key, value in _CONFIG:
                section, name = key.split(".", 1)
                sections.setdefault(section, []).append(f"\t{name} = {value}\n")
            with open(self.git_dir / "config", "a") as config:  # one write, not a git per key
                for section, lines in sections.items():
                    config.write(f"[{section}]\n" + "".join(lines))
            info = self.git_dir / "info"
            info.mkdir(mode=0o700, exist_ok=True)
            _write_private(info / "attributes", _ATTRIBUTES)
            _write_private(
                self.git_dir / "tron-work-tree",
                f"{self.work_tree}\n{self.scope}\n".encode("utf-8", "surrogateescape"),
            )
            self._excludes_source = None
        self._sync_excludes()

    def _user_exclude(self) -> Path | None:
        """The repository's own ``info/exclude`` (also for a linked worktree)."""
        dot = self.work_tree / ".git"
        if dot.is_dir():
            return dot / "info" / "exclude"
        if dot.is_file():
            text = dot.read_text(errors="replace").strip()
            if text.startswith("gitdir:"):
                gitdir = (self.work_tree / text[len("gitdir:") :].strip()).resolve()
                common = gitdir / "commondir"
                if common.is_file():
                    gitdir = (gitdir / common.read_text().strip()).resolve()
                return gitdir / "info" / "exclude"
        return None

    def _sync_excludes(self) -> None:
        """The shadow's ``info/exclude``: the repository's own rules, then the nested
        repositories found (written only when that changes)."""
        source = self._user_exclude()
        try:
            st = source.stat() if source is not None else None
        except OSError:
            st = None
        key = (st.st_mtime, st.st_size) if st is not None else (0.0, -1)
        if key == self._excludes_source and not self._nested_pending:
            return
        parts = [b"# Written by Tron (the repository's info/exclude, then nested repositories)\n"]
        if source is not None and st is not None:
            with contextlib.suppress(OSError):
                parts.append(source.read_bytes() + b"\n")
        parts.extend(
            b"/" + p.encode("utf-8", "surrogateescape") + b"/\n" for p in sorted(self._nested)
        )
        target = self.git_dir / "info" / "exclude"
        data = b"".join(parts)
        with contextlib.suppress(OSError):
            if target.read_bytes() == data:
                self._excludes_source = key
                self._nested_pending = False
                return
        target.parent.mkdir(mode=0o700, exist_ok=True)
        _write_private(target, data)
        self._excludes_source = key
        self._nested_pending = False

    def _index_stamp(self) -> tuple[int, int, int, int]:
        try:
            st = os.stat(self.git_dir / "index")
        except FileNotFoundError:
            return (0, 0, 0, 0)
        return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)

    def _add_all(self) -> None:
        """``git add -A`` of the scope; nested repositories without a commit (which make
        git give up) are excluded and the add is run again."""
        pathspec = self.scope or "."
        for attempt in range(_LOCK_RETRIES):
            done = self._git("add", "-A", "--ignore-errors", "--", pathspec, check=False)
            if done.returncode == 0:
                return
            nested = {
                m.group(1).decode("utf-8", "surrogateescape") for m in _NESTED.finditer(done.stderr)
            }
            if nested - self._nested:
                self._nested |= nested
                self._nested_pending = True
                self._sync_excludes()
                continue
            if b"index.lock" in done.stderr and attempt < _LOCK_RETRIES - 1:
                time.sleep(0.05)  # another process is snapshotting this folder
                continue
            if nested or (done.returncode == 1 and b"fatal" not in done.stderr):
                # --ignore-errors: unreadable files were skipped, the rest is in the index.
                log.debug("git add in %s skipped files: %s", self.work_tree, done.stderr[:500])
                return
            raise GitError(["add", "-A"], done.returncode, done.stderr.decode("utf-8", "replace"))

    def unchanged_tree(self) -> str | None:
        """The last snapshot's tree when the change watch has seen nothing since (what
        :meth:`snapshot` would return without scanning), else None; never blocks, never
        scans: callable on an event loop's thread, saving the hop to a worker thread."""
        if not self._lock.acquire(blocking=False):
            return None
        try:
            watch = self._watch
            if watch is None or self._tree is None or not watch.quiet():
                return None
            return self._tree
        finally:
            self._lock.release()

    def snapshot(self) -> str:
        """Record the folder's current files; returns the id of their tree. Free when
        the change watch saw nothing since the last snapshot."""
        with self._lock:
            if self._watch_wanted:
                self._start_watch()
            watch = self._watch
            if watch is not None and self._tree is not None and not watch.changed():
                return self._tree
            self._tree = None
            self._ensure()
            self._check_size()
            if watch is not None:
                watch.clean()  # before the scan: a change during it marks the folder again
            before = self._index_stamp()
            self._add_all()
            stamp = self._index_stamp()
            if stamp == before and self._last is not None and self._last[0] == stamp:
                tree = self._last[1]  # the index did not change: neither did the tree
            else:
                tree = self._git("write-tree").stdout.strip().decode()
                self._last = (stamp, tree)
            self._tree = tree
            return tree

    def changes(self, old_tree: str, new_tree: str) -> list[TreeChange]:
        """The paths that differ between two snapshots (nested repositories left out)."""
        if old_tree == new_tree:
            return []
        out = self._git("diff-tree", "-r", "-z", "--no-renames", "--raw", old_tree, new_tree).stdout
        fields = out.split(b"\0")
        changes: list[TreeChange] = []
        i = 0
        while i + 1 < len(fields):
            meta, path = fields[i], fields[i + 1]
            i += 2
            if not meta.startswith(b":"):
                continue
            old_mode, new_mode, old_id, new_id, _status = meta[1:].decode().split(" ")
            if "160000" in (old_mode, new_mode):
                continue
            changes.append(
                TreeChange(
                    path.decode("utf-8", "surrogateescape"), old_mode, new_mode, old_id, new_id
                )
            )
        return changes

    def read_blobs(self, ids: Iterable[str], limit: int) -> dict[str, Blob]:
        """The contents of blob ``ids`` (hashed whole, kept only up to ``limit`` bytes).
        An id the shadow lacks is left out of the result."""
        wanted = [i for i in dict.fromkeys(ids) if i != _ZERO]
        if not wanted:
            return {}
        proc = subprocess.Popen(
            ["git", "cat-file", "--batch"],
            cwd=self.work_tree,
            env=_git._environment(self._env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert proc.stdin is not None and proc.stdout is not None
        stdin = proc.stdin

        def feed() -> None:
            with contextlib.suppress(OSError):
                stdin.write(b"".join(i.encode() + b"\n" for i in wanted))
            with contextlib.suppress(OSError):
                stdin.close()

        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        found: dict[str, Blob] = {}
        out = proc.stdout
        try:
            for _ in wanted:
                header = out.readline()
                parts = header.split()
                if len(parts) < 3 or parts[1] == b"missing":
                    continue
                oid, size = parts[0].decode(), int(parts[2])
                digest = hashlib.sha256()
                chunks: list[bytes] = []
                left = size
                while left:
                    chunk = out.read(min(left, 1 << 20))
                    if not chunk:
                        raise GitError(["cat-file"], -1, "the output ended early")
                    digest.update(chunk)
                    if size <= limit:
                        chunks.append(chunk)
                    left -= len(chunk)
                out.read(1)  # the newline after the content
                data = b"".join(chunks) if size <= limit else None
                found[oid] = Blob(data, digest.hexdigest(), size)
        finally:
            out.close()
            writer.join(timeout=5)
            proc.wait(timeout=30)
        return found
