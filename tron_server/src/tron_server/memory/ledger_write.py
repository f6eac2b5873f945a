"""Writing the project ledger as the tools write files: through the session's path policy
(its guardrails), recorded with both contents (:class:`~tron_server.workspace.FileRecorder`)
as a ``file.write`` event, so the ledger goes back with a rewind with files like any file
the agent changed.

The ledger must stay inside the working directory: a ``.tron`` or ``ledger.md`` that is a
symlink leading elsewhere is refused (:class:`LedgerRefused`), whatever the policy allows.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import anyio

from ..paths import PathError, PathPolicy
from ..workspace.disk import OnDisk, capture
from ..workspace.recorder import Content, FileRecorder
from .ledger import SECTIONS, TEMPLATE, project_ledger_path

__all__ = ["LedgerRefused", "with_sections", "write_project_ledger"]

DEFAULT_LIMIT = 10 * 1024 * 1024


class LedgerRefused(Exception):
    """The ledger cannot be written there (the message says why)."""


def with_sections(text: str) -> str:
    """A new ledger's text: the template's sections first when the text has none of them
    (a model that answered in prose still leaves a ledger of the expected shape)."""
    lowered = text.lower()
    if any(f"## {name.lower()}" in lowered for name in SECTIONS):
        return text.strip() + "\n"
    return TEMPLATE.rstrip() + "\n\n" + text.strip() + "\n"


def _write(
    policy: PathPolicy, working_directory: Path, data: bytes, limit: int
) -> tuple[Path, bool, OnDisk | None]:
    target = project_ledger_path(working_directory)
    root = Path(os.path.realpath(working_directory))
    with policy.resolve(target) as resolved:
        if not (resolved.path == root or resolved.path.is_relative_to(root)):
            raise LedgerRefused(
                f"{target} resolves to {resolved.path}, outside the working directory: "
                "the ledger is not written there"
            )
        before = capture(resolved, limit)
        if before.data is not None and before.data == data:
            return resolved.path, False, None
        outcome = policy.write_bytes(resolved, data)
        return outcome.path, outcome.created, before


async def write_project_ledger(
    working_directory: Path,
    text: str,
    *,
    policy: PathPolicy,
    recorder: FileRecorder | None,
) -> dict[str, Any] | None:
    """Write ``.tron/ledger.md`` (folders created) and return the ``file.write`` payload
    to record (``source: "memory"``), or None when the content is unchanged. Raises
    :class:`LedgerRefused`, or :class:`~tron_server.paths.PathError` / ``OSError`` when
    the file cannot be written (nothing is recorded then)."""
    data = text.encode("utf-8", errors="surrogatepass")
    limit = recorder.max_file_bytes if recorder is not None else DEFAULT_LIMIT
    try:
        path, created, before = await anyio.to_thread.run_sync(
            _write, policy, working_directory, data, limit
        )
    except PathError as exc:
        raise LedgerRefused(str(exc)) from exc
    if before is None and not created:
        return None  # the same content: nothing changed, nothing to record
    payload: dict[str, Any] = {
        "path": str(path),
        "contentHash": hashlib.sha256(data).hexdigest(),
        "bytes": len(data),
        "created": created,
        "source": "memory",
    }
    if recorder is not None:
        executable = before is not None and before.state is not None and before.state.executable
        payload.update(await recorder.record_change(before, Content(data, executable=executable)))
    return payload
