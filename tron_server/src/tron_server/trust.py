"""Folder trust: which folders' own configuration may act.

A folder's configuration (its ``.claude/`` and ``.tron/`` settings, hooks, allow rules,
modes, shell in command files, agent definitions, ``.mcp.json`` servers) is inert until
its user trusts the folder; deny rules act either way, since they only restrict. The
home's own files (``~/.tron/…``, ``~/.claude/…``) are the user's and always act.

Trust is recorded in ``<home>/trust.json`` (user-only, mode 0600)::

    {"version": 1,
     "folders": {"/home/me/src": {"trusted": true, "at": "2025-01-02T03:04:05Z"},
                 "/home/me/src/vendor": {"trusted": false, "at": "..."}}}

Rules:

- A folder is named by its **real path** (``~`` expanded, symlinks and ``..`` resolved)
  when trust is set and when it is looked up: a symlink to an untrusted folder is
  untrusted, wherever the link lies.
- Trust is **inherited by subfolders**: the nearest recorded ancestor (the folder itself
  included) decides.
- A **git worktree Tron made** for a session (``<home>/worktrees/<name>``, see
  :mod:`tron_server.workspace.worktrees`) holds a checkout of a repository that lives
  elsewhere: with no decision recorded for the worktree itself, a folder in it is
  judged as the same folder of the repository's main checkout (trusting or revoking the
  repository holds for its worktrees). Only a worktree git links both ways is taken as
  one: its ``.git`` file names a folder of the repository's ``.git/worktrees/``, and that
  folder's ``gitdir`` names the worktree back (what ``git worktree add`` writes; a file
  planted in the worktree cannot claim another repository's trust).
- Setting or revoking trust holds for the whole subtree (what was recorded below goes);
  an entry ``"trusted": false`` is recorded only where a revoke has to override an
  ancestor's (or the repository's) trust.
- Writes are atomic (a temporary file renamed over the old one) and serialized between
  processes by ``flock`` on ``<home>/trust.json.lock``: two servers trusting different
  folders at once both keep theirs.
- A trust file that cannot be read, is not a trust file, or that another user (or group)
  could write is treated as trusting nothing (the server logs why), and is never written
  over: :meth:`TrustStore.set` raises :class:`TrustError` saying what to fix.

This module is foundation: it imports nothing of the runtime.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

__all__ = [
    "TRUST_FILE",
    "WORKTREES_FOLDER",
    "TrustEntry",
    "TrustError",
    "TrustStore",
    "claude_user_dir",
    "is_configuration_file",
    "real_folder",
]

log = logging.getLogger("tron_server.trust")

TRUST_FILE = "trust.json"
#: Where Tron makes a session's git worktrees, below the home.
WORKTREES_FOLDER = "worktrees"
_VERSION = 1
#: Folders below ``.claude/`` or ``.tron/`` whose files configure the agent.
_CONFIG_SUBFOLDERS = frozenset({"commands", "agents", "hooks"})
_CONFIG_FOLDERS = frozenset({".claude", ".tron"})


class TrustError(Exception):
    """Trust cannot be recorded (the file is unreadable, foreign, or cannot be written);
    the message names the file and what to do. Nothing was changed."""


@dataclass(frozen=True)
class TrustEntry:
    """One recorded decision: ``folder`` (a real path), ``trusted``, and when (UTC, ISO)."""

    folder: Path
    trusted: bool
    at: str


def real_folder(path: str | os.PathLike[str]) -> Path:
    """``path`` as trust names it: ``~`` expanded, made absolute, symlinks and ``..``
    resolved (a part that does not exist is kept as written)."""
    return Path(os.path.realpath(os.path.expanduser(os.fspath(path))))


def claude_user_dir() -> Path:
    """Claude Code's user folder, read as the home-level equivalent of a project's
    ``.claude/``: ``$CLAUDE_CONFIG_DIR`` when set (as Claude Code reads it), else
    ``~/.claude``. Its files are the user's own, so they act without trust."""
    configured = os.environ.get("CLAUDE_CONFIG_DIR")
    if configured:
        return Path(os.path.expanduser(configured))
    return Path(os.path.expanduser("~")) / ".claude"


def is_configuration_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names a file that configures the agent for the folder holding it,
    at any depth: ``.tron/settings*.json``, ``.claude/settings*.json``, ``.mcp.json``, or
    a file below ``.claude/`` or ``.tron/`` ``commands/``, ``agents/``, ``hooks/``.

    Purely by name (nothing is read): pass both the path as named and as resolved to
    catch a link either way."""
    parts = Path(os.fspath(path)).parts
    if not parts:
        return False
    name = parts[-1]
    if name == ".mcp.json":
        return True
    if (
        len(parts) >= 2
        and parts[-2] in _CONFIG_FOLDERS
        and name.startswith("settings")
        and name.endswith(".json")
    ):
        return True
    for i in range(len(parts) - 2):
        if parts[i] in _CONFIG_FOLDERS and parts[i + 1] in _CONFIG_SUBFOLDERS:
            return True
    return False


# Parsed trust files by path, keyed by what changes when the file is replaced, so the
# many look-ups of a turn read the file once.
_cache: dict[Path, tuple[tuple[int, int, int, int], dict[Path, TrustEntry]]] = {}
_cache_lock = threading.Lock()
_warned: set[str] = set()


class TrustStore:
    """The trust decisions of one home (``<home>/trust.json``).

    Cheap to create: every method reads the file (cached while it is unchanged), so
    several stores, processes or servers sharing a home agree."""

    def __init__(self, home: str | os.PathLike[str]) -> None:
        self.home = Path(os.path.expanduser(os.fspath(home)))
        self.path = self.home / TRUST_FILE

    # -- reading -----------------------------------------------------------------------

    def is_trusted(self, path: str | os.PathLike[str]) -> Path | None:
        """The trusted folder whose trust covers ``path`` (itself or its nearest recorded
        ancestor, by real path), or None when ``path`` is not trusted."""
        entry = self.covering(path)
        return entry.folder if entry is not None and entry.trusted else None

    def covering(self, path: str | os.PathLike[str]) -> TrustEntry | None:
        """The recorded decision that applies to ``path`` (the nearest recorded folder at
        or above its real path), trusted or not; None when nothing was recorded."""
        entries = self._entries_or_nothing()
        if not entries:
            return None
        return self._decision(entries, real_folder(path))

    def _decision(self, entries: dict[Path, TrustEntry], folder: Path) -> TrustEntry | None:
        """The decision of ``entries`` that covers the real path ``folder``."""
        origin = self._worktree_origin(folder)
        for candidate in (folder, *folder.parents):
            entry = entries.get(candidate)
            if entry is not None:
                return entry
            if origin is not None and candidate == origin[0]:
                # Nothing recorded within the worktree: its repository's decision.
                main = origin[1] / folder.relative_to(origin[0])
                for inherited in (main, *main.parents):
                    entry = entries.get(inherited)
                    if entry is not None:
                        return entry
        return None

    def _worktree_origin(self, folder: Path) -> tuple[Path, Path] | None:
        """(the worktree's top, its repository's main checkout) when ``folder`` lies in
        a worktree under ``<home>/worktrees`` that git links both ways; else None."""
        root = real_folder(self.home / WORKTREES_FOLDER)
        if not folder.is_relative_to(root) or folder == root:
            return None
        top = root / folder.relative_to(root).parts[0]
        gitdir = _gitdir_of(top)
        if gitdir is None:
            return None
        back = _small_text(gitdir / "gitdir")
        if back is None or real_folder(back) != real_folder(top / ".git"):
            return None
        common_ref = _small_text(gitdir / "commondir")
        common = real_folder(gitdir / common_ref) if common_ref else gitdir.parent.parent
        if common.name != ".git" or gitdir.parent != common / "worktrees":
            return None
        return top, common.parent

    def entries(self) -> list[TrustEntry]:
        """Every recorded decision, by folder."""
        return sorted(self._entries_or_nothing().values(), key=lambda e: str(e.folder))

    def _entries_or_nothing(self) -> dict[Path, TrustEntry]:
        try:
            return self._read()
        except TrustError as exc:
            message = str(exc)
            with _cache_lock:  # once per problem: every turn looks trust up
                first = message not in _warned
                _warned.add(message)
            if first:
                log.warning("%s; no folder is trusted until it is fixed", message)
            return {}

    def _read(self) -> dict[Path, TrustEntry]:
        """The recorded decisions; raises :class:`TrustError` for a file that cannot be
        used (nothing recorded yet is an empty dict)."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise TrustError(f"cannot read {self.path}: {exc.strerror or exc}") from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise TrustError(f"{self.path} is not a regular file; remove it")
            if st.st_uid != os.geteuid() or st.st_mode & 0o022:
                raise TrustError(
                    f"{self.path} could be written by another user (owner uid {st.st_uid}, "
                    f"mode {stat.S_IMODE(st.st_mode):o}); check it, then `chmod 600` it"
                )
            key = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
            with _cache_lock:
                cached = _cache.get(self.path)
            if cached is not None and cached[0] == key:
                return cached[1]
            with os.fdopen(os.dup(fd), "rb") as f:
                raw = f.read()
        finally:
            os.close(fd)
        entries = self._parse(raw)
        with _cache_lock:
            _cache[self.path] = (key, entries)
        return entries

    def _parse(self, raw: bytes) -> dict[Path, TrustEntry]:
        if not raw.strip():
            return {}
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise TrustError(
                f"{self.path} is not valid JSON ({exc}); fix it or remove it (every folder "
                "is then untrusted)"
            ) from None
        folders = data.get("folders") if isinstance(data, dict) else None
        if not isinstance(folders, dict):
            raise TrustError(
                f'{self.path} must hold {{"version": 1, "folders": {{...}}}}; fix it or '
                "remove it (every folder is then untrusted)"
            )
        out: dict[Path, TrustEntry] = {}
        for key, value in folders.items():
            if not isinstance(value, dict) or not isinstance(value.get("trusted"), bool):
                raise TrustError(
                    f"{self.path}: the entry for {key!r} must be an object with "
                    '"trusted": true or false'
                )
            if not os.path.isabs(key):
                raise TrustError(f"{self.path}: {key!r} is not an absolute path")
            folder = Path(os.path.normpath(key))
            at = value.get("at")
            out[folder] = TrustEntry(folder, value["trusted"], at if isinstance(at, str) else "")
        return out

    # -- writing -----------------------------------------------------------------------

    def set(self, path: str | os.PathLike[str], trusted: bool) -> Path | None:
        """Trust ``path`` (its real path, and so every folder below it) or revoke that
        trust; returns the folder whose trust covers ``path`` afterwards (None: untrusted).

        The decision holds for the whole subtree: decisions recorded below ``path`` are
        dropped. Revoking records ``"trusted": false`` only when an ancestor's trust would
        still cover ``path``. Raises :class:`TrustError` when the file cannot be read or
        written (nothing is changed)."""
        folder = real_folder(path)
        with self._locked():
            # The decision holds for the whole subtree: earlier ones below it go.
            entries = {
                p: e for p, e in self._read().items() if p != folder and folder not in p.parents
            }
            inherited = self._decision(entries, folder)
            if trusted or (inherited is not None and inherited.trusted):
                entries[folder] = TrustEntry(folder, trusted, _now())
            self._write(entries)
        return self.is_trusted(folder)

    def trust(self, path: str | os.PathLike[str]) -> Path:
        """Trust ``path`` (see :meth:`set`); returns its real path."""
        self.set(path, True)
        return real_folder(path)

    def revoke(self, path: str | os.PathLike[str]) -> None:
        """Stop trusting ``path`` (see :meth:`set`): afterwards it is untrusted."""
        self.set(path, False)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        try:
            self.home.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(
                self.home / f"{TRUST_FILE}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600
            )
        except OSError as exc:
            raise TrustError(f"cannot record trust in {self.home}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock

    def _write(self, entries: dict[Path, TrustEntry]) -> None:
        data = {
            "version": _VERSION,
            "folders": {
                str(e.folder): {"trusted": e.trusted, "at": e.at}
                for e in sorted(entries.values(), key=lambda e: str(e.folder))
            },
        }
        text = json.dumps(data, indent=2).encode() + b"\n"
        tmp = self.path.with_name(f".{TRUST_FILE}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "wb") as f:
                os.fchmod(fd, 0o600)  # O_CREAT's mode is ignored for a file left behind
                f.write(text)
                f.flush()
                os.fsync(fd)
            os.replace(tmp, self.path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise TrustError(f"cannot write {self.path}: {exc.strerror or exc}") from None


def _small_text(path: Path, limit: int = 4096) -> str | None:
    """The stripped text of a small regular file (git's link files), or None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, limit + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > limit:
        return None
    return data.decode("utf-8", "replace").strip() or None


def _gitdir_of(worktree: Path) -> Path | None:
    """The folder a worktree's ``.git`` file names (``gitdir: PATH``), resolved."""
    text = _small_text(worktree / ".git")
    if text is None or not text.startswith("gitdir:"):
        return None
    named = text.removeprefix("gitdir:").strip()
    return real_folder(worktree / named) if named else None


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
