"""The path policy: one resolution of a path, and file access through exactly what was
resolved.

Every tool that takes a path (Read, Write, Edit, Grep, Glob), the guardrails hook, and the
features built on them (permission rules, file restores) go through :class:`PathPolicy`:

``policy.resolve(raw)``
    Resolves a path **once**: ``~`` expanded, a relative path joined to the working
    directory, then walked from ``/`` one name at a time the way the kernel does: a symlink
    is replaced by its target where it is met (chains too, at most 40 links), and ``..``
    goes to the parent of the folder reached so far -- physically, not by cutting the text:
    with ``sub -> a/b``, ``sub/../x`` is ``a/x``, as for ``cat``, ``open()`` or Bash. Names
    below a folder that does not exist yet are taken as written. The result's ``path`` is
    absolute and free of symlinks, ``.`` and ``..``: the file the tool acts on, what rules
    match and what events record. A NUL byte, or text that is not a file name, raises
    :class:`InvalidPath`.

    While it walks, the resolution keeps an open handle (a file descriptor) on each folder
    it enters, and the :class:`ResolvedPath` keeps the one on the folder holding the file.
    The file is then opened, created or replaced *relative to that handle*, never by
    looking the path up again, and the last name is opened with ``O_NOFOLLOW``.

``policy.check_write(resolved)``
    Refuses (:class:`PathRefused`) a path outside the write roots or naming a protected
    file (the settings files that hold hooks, guardrails and permissions).

``policy.write_bytes(raw_or_resolved, data)`` / ``policy.remove(...)``
    Resolve (if given text), check, then replace the file atomically (a temporary file in
    the same folder, flushed, renamed over the name) or unlink it, through the handle.

No check-then-use gap
---------------------
The check is made on the resolved path, and the write goes into the very folder that
resolution opened: a symlink swapped in along the path after the check cannot redirect it
(the folders are already open), and a symlink put in place of the file itself is replaced
by the rename, never followed (reads refuse it: ``O_NOFOLLOW``). A folder that a
concurrent process *renames* elsewhere while we hold it still receives the write -- exactly
what the same rename would have done to a file written a moment earlier, so it gives that
process nothing it could not already do.

Why not ``openat2(RESOLVE_BENEATH)``: it is Linux 5.6+ only (no Python binding), checks
containment under one folder (we have several roots), and refuses absolute symlinks even
when they point inside the working directory. Walking with ``openat``/``O_NOFOLLOW`` works
on every POSIX system Python runs on and gives the same guarantee for our use.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat as st
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Literal

__all__ = [
    "MAX_SYMLINKS",
    "InvalidPath",
    "PathError",
    "PathPolicy",
    "PathRefused",
    "ResolvedPath",
    "WriteOutcome",
    "display_path",
    "settings_files",
]

MAX_SYMLINKS = 40  # the kernel's limit (MAXSYMLINKS)
_MAX_RETRIES = 100  # a name replaced between our look and our open: look again, this often

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
# O_PATH (Linux) opens a folder for walking without needing read permission on it.
_DIR_FLAGS = (getattr(os, "O_PATH", 0) or os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC
_TMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC


def _read_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# Read once at import: os.umask is process-wide and setting it from worker threads races.
_UMASK = _read_umask()


class PathError(Exception):
    """A path a tool cannot use; the message says why, for the model and the user."""


class InvalidPath(PathError):
    """The text is not a usable file name (a NUL byte, an unencodable character)."""


class PathRefused(PathError):
    """Writing this path is not allowed: ``kind`` is ``"outside"`` (not under any write
    root) or ``"protected"`` (a settings file); ``path`` is the resolved path."""

    def __init__(self, message: str, *, kind: Literal["outside", "protected"], path: Path) -> None:
        super().__init__(message)
        self.kind = kind
        self.path = path


def settings_files(working_directory: Path, home: Path) -> tuple[Path, ...]:
    """The files that configure hooks, guardrails and permissions for a project: Tron's
    (``<home>/settings.json``, ``.tron/settings.json``) and Claude Code's project files
    (``.claude/settings.json``, ``.claude/settings.local.json``)."""
    wd = working_directory.expanduser()
    return (
        home.expanduser() / "settings.json",
        wd / ".tron" / "settings.json",
        wd / ".claude" / "settings.json",
        wd / ".claude" / "settings.local.json",
    )


def display_path(path: Path, working_directory: Path) -> str:
    """``path`` relative to the working directory when it lies below it, else absolute."""
    try:
        rel = path.relative_to(working_directory)
    except ValueError:
        return str(path)
    return rel.as_posix() or "."


@dataclass(frozen=True)
class WriteOutcome:
    """What :meth:`PathPolicy.write_bytes` did: the resolved ``path`` and whether the file
    was ``created`` (False: an existing file was replaced)."""

    path: Path
    created: bool


def _close_all(fds: Iterable[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def _lstat_at(name: str, dir_fd: int) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


class ResolvedPath:
    """A resolved path with an open handle on the folder that holds it.

    Attributes: ``raw`` (as given), ``path`` (absolute, no symlinks/``.``/``..``),
    ``exists``, ``is_dir``, ``stat`` (``lstat`` of the file when resolved, or None).
    Close it (it is a context manager); :class:`PathPolicy` methods that take raw text
    close theirs themselves.
    """

    def __init__(
        self,
        raw: str,
        path: Path,
        dir_fd: int,
        name: str,
        missing: tuple[str, ...],
        stat: os.stat_result | None,
        trailing_slash: bool,
    ) -> None:
        self.raw = raw
        self.path = path
        self._dir_fd = dir_fd
        self._name = name
        self._missing = missing  # folders to create below dir_fd before the file
        self.stat = stat
        self.trailing_slash = trailing_slash

    @property
    def exists(self) -> bool:
        return self.stat is not None

    @property
    def is_dir(self) -> bool:
        return self.stat is not None and st.S_ISDIR(self.stat.st_mode)

    @property
    def is_file(self) -> bool:
        return self.stat is not None and st.S_ISREG(self.stat.st_mode)

    def close(self) -> None:
        if self._dir_fd >= 0:
            _close_all([self._dir_fd])
            self._dir_fd = -1

    def __enter__(self) -> ResolvedPath:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ResolvedPath({self.raw!r} -> {str(self.path)!r})"

    # -- reading -----------------------------------------------------------------------

    def open_read(self) -> BinaryIO:
        """The file, opened for reading through the folder handle (``O_NOFOLLOW``).

        Raises :class:`PathError` when it is missing, not a regular file, or was replaced
        by a symlink since it was resolved.
        """
        if self._dir_fd < 0:
            raise ValueError("the resolved path is closed")
        if self._missing or not self._name:
            raise PathError(f"{self.raw}: not a regular file")
        try:
            fd = os.open(self._name, _READ_FLAGS, dir_fd=self._dir_fd)
        except FileNotFoundError:
            raise PathError(f"File not found: {self.raw}") from None
        except PermissionError:
            raise PathError(f"Permission denied: {self.raw}") from None
        except OSError as exc:  # ELOOP: a symlink was put in its place meanwhile
            raise PathError(
                f"{self.raw} changed while it was being opened ({exc.strerror}); try again."
            ) from None
        try:
            info = os.fstat(fd)
            if not st.S_ISREG(info.st_mode):
                raise PathError(f"{self.raw} is not a regular file")
            os.set_blocking(fd, True)
            return os.fdopen(fd, "rb")
        except BaseException:
            os.close(fd)
            raise

    def read_bytes(self, limit: int | None = None) -> bytes:
        """The file's content; :class:`PathError` if it holds more than ``limit`` bytes."""
        with self.open_read() as f:
            size = os.fstat(f.fileno()).st_size
            if limit is not None and size > limit:
                raise PathError(f"{self.raw} is {size} bytes, above the limit of {limit} bytes")
            return f.read()

    # -- writing (PathPolicy checks first) ------------------------------------------------

    def _parent_for_write(self) -> int:
        """A handle on the folder that will hold the file, creating missing folders
        (each opened with O_NOFOLLOW right after its creation)."""
        if self._dir_fd < 0:
            raise ValueError("the resolved path is closed")
        fd = os.dup(self._dir_fd)
        try:
            for name in self._missing:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o777, dir_fd=fd)
                try:
                    new = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    raise PathError(
                        f"Cannot write {self.raw}: a folder on the way ({name}) is not a "
                        f"folder or changed while it was being created ({exc.strerror})."
                    ) from None
                os.close(fd)
                fd = new
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _replace(self, data: bytes, mode: int | None) -> bool:
        fd = self._parent_for_write()
        try:
            current = _lstat_at(self._name, fd)
            if current is not None and st.S_ISDIR(current.st_mode):
                raise PathError(f"{self.raw} is a directory; give a file path.")
            existing = current is not None and st.S_ISREG(current.st_mode)
            if mode is None:
                mode = st.S_IMODE(current.st_mode) if existing and current else 0o666 & ~_UMASK
            tmp = f".{self._name[:64]}.{secrets.token_hex(6)}.tron-tmp"
            tmp_fd = os.open(tmp, _TMP_FLAGS, 0o600, dir_fd=fd)
            try:
                with os.fdopen(tmp_fd, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                    os.fchmod(f.fileno(), mode)
                    if existing and current is not None and os.geteuid() == 0:
                        # Keep the owner when a privileged server rewrites a user's file.
                        with contextlib.suppress(OSError):
                            os.fchown(f.fileno(), current.st_uid, current.st_gid)
                # rename() replaces the name itself: a symlink put there is not followed.
                os.replace(tmp, self._name, src_dir_fd=fd, dst_dir_fd=fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=fd)
                raise
            return current is None
        finally:
            os.close(fd)

    def _link(self, link: str | bytes) -> bool:
        fd = self._parent_for_write()
        try:
            current = _lstat_at(self._name, fd)
            if current is not None and st.S_ISDIR(current.st_mode):
                raise PathError(f"{self.raw} is a directory; give a file path.")
            tmp = f".{self._name[:64]}.{secrets.token_hex(6)}.tron-tmp"
            os.symlink(link, tmp, dir_fd=fd)
            try:
                os.replace(tmp, self._name, src_dir_fd=fd, dst_dir_fd=fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=fd)
                raise
            return current is None
        finally:
            os.close(fd)

    def _unlink(self) -> bool:
        if self._missing or self._dir_fd < 0:
            return False
        try:
            os.unlink(self._name, dir_fd=self._dir_fd)
        except FileNotFoundError:
            return False
        except IsADirectoryError:
            raise PathError(f"{self.raw} is a directory") from None
        return True


@dataclass(frozen=True)
class PathPolicy:
    """How a session's tools resolve paths, and where they may write.

    ``working_directory``: relative paths are joined to it. ``write_roots``: folders
    writes must lie in (None: anywhere). ``protected``: files never written (compared after
    resolving them at each check, so a link made later cannot hide one). Built by the
    guardrails (:func:`tron_server.hooks.guardrails.path_policy`); without guardrails,
    ``PathPolicy(working_directory)`` only resolves.
    """

    working_directory: Path
    write_roots: tuple[Path, ...] | None = None
    protected: tuple[Path, ...] = ()
    real_working_directory: Path = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        wd = Path(os.path.abspath(os.path.expanduser(self.working_directory)))
        object.__setattr__(self, "working_directory", wd)
        object.__setattr__(self, "real_working_directory", Path(os.path.realpath(wd)))
        if self.write_roots is not None:
            roots = tuple(
                Path(os.path.realpath(wd / Path(os.path.expanduser(r)))) for r in self.write_roots
            )
            object.__setattr__(self, "write_roots", roots)

    def for_directory(self, working_directory: Path) -> PathPolicy:
        """The same roots and protected files, relative paths taken from another folder."""
        if Path(working_directory) == self.working_directory:
            return self
        return PathPolicy(working_directory, self.write_roots, self.protected)

    # -- resolution --------------------------------------------------------------------

    def absolute(self, raw: str | os.PathLike[str]) -> str:
        """``raw`` as absolute text (``~`` expanded, joined to the working directory),
        nothing resolved yet. Raises :class:`InvalidPath`."""
        text = os.fspath(raw)
        if not isinstance(text, str):
            raise InvalidPath("a path must be text")
        if "\x00" in text:
            raise InvalidPath(
                f"the path {text!r} contains a NUL byte (\\0); file names cannot contain one"
            )
        try:
            os.fsencode(text)
        except UnicodeEncodeError:
            raise InvalidPath(f"the path {text!r} is not a valid file name") from None
        if not text:
            raise InvalidPath("the path is empty")
        text = os.path.expanduser(text)
        return text if text.startswith("/") else os.path.join(self.working_directory, text)

    def resolve(self, raw: str | os.PathLike[str], *, follow_last: bool = True) -> ResolvedPath:
        """Resolve ``raw`` once (see the module docstring); close the result after use.

        ``follow_last=False`` stops at a symlink that is the last name (as ``lstat``
        does): the result is the link itself, which ``write_bytes``, ``write_symlink``
        and ``remove`` then replace or delete (file restores use this).

        Raises :class:`InvalidPath` for text that is no file name and :class:`PathError`
        for a path that cannot be walked (a file used as a folder, a symlink loop, a
        folder that cannot be searched).
        """
        absolute = self.absolute(raw)
        shown = os.fspath(raw)
        trailing = absolute.endswith(("/", "/.", "/.."))
        try:
            return _walk(shown, absolute, trailing, follow_last)
        except OSError as exc:
            raise PathError(f"Cannot use the path {shown}: {exc.strerror or exc}") from None

    def named(self, raw: str | os.PathLike[str]) -> Path:
        """The path as ``raw`` names it, without resolving anything: absolute, ``.`` and
        ``..`` collapsed in the text, symlinks kept; below the working directory, rebased
        onto its real path (the frame :meth:`resolve`'s results are in). Deny and ask
        permission rules match this name as well as the resolved path, so a rule naming a
        symlink (``Read(./.env)`` with ``.env -> prod.env``) still applies to it. Raises
        :class:`InvalidPath`."""
        text = os.path.normpath(self.absolute(raw))
        if text.startswith("//"):
            text = "/" + text.lstrip("/")  # POSIX keeps a leading //; the walk does not
        path = Path(text)
        wd = self.working_directory
        if path == wd or path.is_relative_to(wd):
            return self.real_working_directory / path.relative_to(wd)
        return path

    def display(self, path: Path) -> str:
        """``path`` relative to the working directory when below it, else absolute."""
        return display_path(path, self.real_working_directory)

    # -- the write policy --------------------------------------------------------------

    def check_write(self, target: ResolvedPath) -> None:
        """Raise :class:`PathRefused` unless ``target`` may be written."""
        path = target.path
        for protected in self.protected:
            real = Path(os.path.realpath(protected))
            if path == real or _same_file(target, real):
                shown = display_path(real, self.real_working_directory)
                what = (
                    f"a settings file ({shown}: hooks, guardrails and permissions live there)"
                    if real.name.endswith(".json")
                    else f"a program your hooks run ({shown}, named in settings.json)"
                )
                raise PathRefused(
                    f"Guardrails refused writing {target.raw}: it is {what}, so the agent "
                    "may not change it. Edit it yourself, or set "
                    '"guardrails": {"protectSettingsFiles": false} in settings.json.',
                    kind="protected",
                    path=path,
                )
        roots = self.write_roots
        if roots is None or any(path == r or path.is_relative_to(r) for r in roots):
            return
        shown = os.path.normpath(self.absolute(target.raw))
        via_link = "" if shown == str(path) else f" (resolves to {path})"
        where = f"the working directory {roots[0]}" if roots else "every allowed folder"
        if roots[1:]:
            where += f" and the allowed folders {', '.join(map(str, roots[1:]))}"
        raise PathRefused(
            f"Guardrails refused writing {target.raw}{via_link}: it is outside {where}. "
            "To allow it, add the folder to "
            '"guardrails": {"allowedWritePaths": [...]} in .tron/settings.json '
            "(project) or ~/.tron/settings.json.",
            kind="outside",
            path=path,
        )

    def refusal(self, raw: str | os.PathLike[str]) -> str | None:
        """Why writing ``raw`` is refused (outside, protected, not a file name), or None.
        A path that cannot be resolved for another reason is not refused here: the tool
        reports that error itself."""
        try:
            with self.resolve(raw) as target:
                self.check_write(target)
        except (PathRefused, InvalidPath) as exc:
            return str(exc)
        except PathError:
            return None
        return None

    def write_bytes(
        self, target: str | os.PathLike[str] | ResolvedPath, data: bytes, *, mode: int | None = None
    ) -> WriteOutcome:
        """Check, then atomically replace (or create) the file with ``data``.

        Parent folders are created. A write through a symlink to a file replaces the
        target and keeps the link. An existing file keeps its permission bits unless
        ``mode`` is given; a new one gets ``0o666 & ~umask``. Raises :class:`PathRefused`,
        :class:`PathError` (a directory, a folder in the way), or ``OSError`` (permission
        denied, disk full) -- nothing is left behind on failure.
        """
        with _resolved(self, target) as resolved:
            self.check_write(resolved)
            if resolved.is_dir or resolved.trailing_slash:
                raise PathError(f"{resolved.raw} is a directory; give a file path.")
            created = resolved._replace(data, mode)
            return WriteOutcome(resolved.path, created)

    def write_symlink(
        self, target: str | os.PathLike[str] | ResolvedPath, link: str | bytes
    ) -> WriteOutcome:
        """Check, then atomically make the name a symlink to ``link`` (a link made under a
        temporary name, renamed over the name: a file or link there is replaced, never
        followed). Parent folders are created. Raises like :meth:`write_bytes`."""
        with _resolved(self, target) as resolved:
            self.check_write(resolved)
            if resolved.is_dir or resolved.trailing_slash:
                raise PathError(f"{resolved.raw} is a directory; give a file path.")
            created = resolved._link(link)
            return WriteOutcome(resolved.path, created)

    def remove(self, target: str | os.PathLike[str] | ResolvedPath) -> bool:
        """Check, then unlink the file the path resolves to (through a symlink: its
        target). Returns whether it existed. Directories are refused (:class:`PathError`)."""
        with _resolved(self, target) as resolved:
            self.check_write(resolved)
            return resolved._unlink()


@contextlib.contextmanager
def _resolved(
    policy: PathPolicy, target: str | os.PathLike[str] | ResolvedPath
) -> Iterator[ResolvedPath]:
    """``target`` itself when already resolved (the caller closes it), else resolved here."""
    if isinstance(target, ResolvedPath):
        yield target
        return
    resolved = policy.resolve(target)
    try:
        yield resolved
    finally:
        resolved.close()


def _same_file(target: ResolvedPath, protected: Path) -> bool:
    if target.stat is None or not target.is_file:
        return False
    try:
        other = os.stat(protected, follow_symlinks=False)
    except OSError:
        return False
    return (other.st_dev, other.st_ino) == (target.stat.st_dev, target.stat.st_ino)


def _walk(raw: str, absolute: str, trailing: bool, follow_last: bool = True) -> ResolvedPath:
    """Walk ``absolute`` from ``/`` as the kernel would, holding a handle on each folder."""
    root = os.open("/", _DIR_FLAGS)
    stack: list[tuple[str, int]] = [("", root)]
    missing: list[str] = []
    final: tuple[str, os.stat_result] | None = None
    parts = deque(absolute.split("/"))
    links = 0
    retries = 0
    try:
        while parts:
            comp = parts.popleft()
            if comp in ("", ".") and final is None:
                continue
            if final is not None:  # "file/x", "file/..", "file/": a file used as a folder
                where = "/".join([n for n, _ in stack] + [final[0]]) or "/"
                raise PathError(f"Cannot use the path {raw}: {where} is not a directory")
            if comp == "..":
                if missing:
                    missing.pop()
                elif len(stack) > 1:
                    os.close(stack.pop()[1])
                continue
            if missing:  # below a folder that does not exist: nothing to look up
                missing.append(comp)
                continue
            dir_fd = stack[-1][1]
            info = _lstat_at(comp, dir_fd)
            if info is None:
                missing.append(comp)
                continue
            if st.S_ISLNK(info.st_mode) and not follow_last and not parts:
                final = (comp, info)  # the link itself
                continue
            if st.S_ISLNK(info.st_mode):
                links += 1
                if links > MAX_SYMLINKS:
                    raise PathError(
                        f"Cannot use the path {raw}: too many levels of symbolic links "
                        "(a symlink loop?)"
                    )
                try:
                    target = os.readlink(comp, dir_fd=dir_fd)
                except OSError:  # replaced meanwhile: look again
                    retries = _retry(retries, raw)
                    parts.appendleft(comp)
                    continue
                if target.startswith("/"):
                    _close_all(fd for _, fd in stack[1:])
                    stack = [stack[0]]
                parts.extendleft(reversed(target.split("/")))
                continue
            if st.S_ISDIR(info.st_mode):
                try:
                    fd = os.open(comp, _DIR_FLAGS, dir_fd=dir_fd)
                except (FileNotFoundError, NotADirectoryError):
                    retries = _retry(retries, raw)
                    parts.appendleft(comp)
                    continue
                except OSError as exc:
                    if exc.errno == errno.ELOOP:  # a symlink put in its place meanwhile
                        retries = _retry(retries, raw)
                        parts.appendleft(comp)
                        continue
                    raise
                stack.append((comp, fd))
                continue
            final = (comp, info)
        names = [n for n, _ in stack[1:]]
        if final is not None:
            path = Path("/" + "/".join([*names, final[0]]))
            dir_fd, keep = stack[-1][1], len(stack) - 1
            result = ResolvedPath(raw, path, dir_fd, final[0], (), final[1], trailing)
        elif missing:
            path = Path("/" + "/".join(names + missing))
            dir_fd, keep = stack[-1][1], len(stack) - 1
            result = ResolvedPath(
                raw, path, dir_fd, missing[-1], tuple(missing[:-1]), None, trailing
            )
        elif len(stack) == 1:
            result = ResolvedPath(raw, Path("/"), root, "", (), os.fstat(root), True)
            keep = 0
        else:
            path = Path("/" + "/".join(names))
            info = os.fstat(stack[-1][1])
            dir_fd, keep = stack[-2][1], len(stack) - 2
            result = ResolvedPath(raw, path, dir_fd, stack[-1][0], (), info, trailing)
        _close_all(fd for i, (_, fd) in enumerate(stack) if i != keep)
        return result
    except BaseException:
        _close_all(fd for _, fd in stack)
        raise


def _retry(retries: int, raw: str) -> int:
    if retries >= _MAX_RETRIES:
        raise PathError(f"Cannot use the path {raw}: it kept changing while it was resolved")
    return retries + 1
