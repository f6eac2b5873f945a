"""The ``memory`` key of the settings files: which parts of memory are on.

Read from ``<home>/settings.json`` (``~/.tron/settings.json``) and the project's
``.tron/settings.json``::

    {"memory": false}                                  every part off
    {"memory": {"ledger": false}}                      one part off
    {"memory": {"handoffs": false, "lessons": false, "recall": false}}

The parts: ``ledger`` (read at session start, brought up to date at compaction and
session end), ``handoffs`` (made at session end, ``/handoff`` and compaction; the relevant
ones put before the first prompt), ``lessons`` (the handoffs' ``patterns`` shown at session
start) and ``recall`` (the Recall tool). Every part is on unless a file turns it off: a
``false`` in either file wins, so a project can switch memory off for itself but not on
against the user's own file. A ``memory`` value of the wrong shape, or a file that is not
JSON, switches every part off (the user meant to say something about memory; the
conservative reading is "less") and :attr:`MemorySettings.error` says which file and why.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..context.listings import present

__all__ = ["PARTS", "MemorySettings", "load_memory_settings", "memory_settings_files"]

PARTS = ("ledger", "handoffs", "lessons", "recall")


@dataclass(frozen=True)
class MemorySettings:
    """Which parts of memory are on (all by default); ``error`` why a file could not be
    used (then every part is off)."""

    ledger: bool = True
    handoffs: bool = True
    lessons: bool = True
    recall: bool = True
    error: str | None = None

    @property
    def any(self) -> bool:
        """Whether any part is on."""
        return self.ledger or self.handoffs or self.lessons or self.recall

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {part: getattr(self, part) for part in PARTS}
        if self.error:
            data["error"] = self.error
        return data


_OFF = MemorySettings(False, False, False, False)


def memory_settings_files(working_directory: Path, home: Path) -> list[Path]:
    """The files read, in order."""
    return [home.expanduser() / "settings.json", working_directory / ".tron" / "settings.json"]


def _apply(settings: MemorySettings, value: Any, where: Path) -> MemorySettings:
    if value is None or value is True:
        return settings
    if value is False:
        return replace(_OFF, error=settings.error)
    if not isinstance(value, dict):
        raise ValueError(f'"memory" in {where} must be true, false or an object')
    for key, flag in value.items():
        if key not in PARTS:
            raise ValueError(f'"memory" in {where} has an unknown part {key!r} (use {PARTS})')
        if not isinstance(flag, bool):
            raise ValueError(f'"memory.{key}" in {where} must be true or false')
    on = {part: bool(getattr(settings, part) and value.get(part, True)) for part in PARTS}
    return MemorySettings(on["ledger"], on["handoffs"], on["lessons"], on["recall"], settings.error)


def _read(working_directory: Path, home: Path) -> MemorySettings:
    settings = MemorySettings()
    for path in memory_settings_files(working_directory, home):
        try:
            raw = path.read_text(encoding="utf-8")
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            return replace(_OFF, error=f"cannot read {path}: {exc.strerror or exc}")
        try:
            data = json.loads(raw) if raw.strip() else {}
            if not isinstance(data, dict):
                raise ValueError(f"{path} is not a JSON object")
            settings = _apply(settings, data.get("memory"), path)
        except ValueError as exc:  # JSONDecodeError is one
            reason = str(exc) if str(path) in str(exc) else f"{path}: {exc}"
            return replace(_OFF, error=f"memory is off: {reason}")
    return settings


_lock = threading.Lock()
#: (working directory, home) -> (the files' stamps, the settings, the files)
_cache: dict[tuple[str, str], tuple[tuple[Any, ...], MemorySettings, list[Path]]] = {}


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_size, info.st_ino)


def load_memory_settings(working_directory: Path, home: Path) -> MemorySettings:
    """The memory settings for sessions in ``working_directory`` (see the module
    docstring). Cached per folder until one of the files changes (a few ``stat`` calls
    per use), so each run may ask."""
    key = (str(working_directory), str(home))
    with _lock:
        cached = _cache.get(key)
    paths = cached[2] if cached is not None else memory_settings_files(working_directory, home)
    # The project's file needs no stat when the working directory's cached listing has
    # no .tron (most projects; the agents' lookup in the same trip looked at it already).
    stamp = (
        _stamp(paths[0]),
        _stamp(paths[1]) if present(key[0], ".tron", "settings.json") else None,
    )
    if cached is not None and cached[0] == stamp:
        return cached[1]
    settings = _read(working_directory, home)
    with _lock:
        if len(_cache) > 256:
            _cache.clear()
        _cache[key] = (stamp, settings, paths)
    return settings
