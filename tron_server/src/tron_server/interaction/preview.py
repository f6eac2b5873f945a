"""What an Edit or a Write would change, for the approval that asks before it runs.

The approval shows the diff the call would make to the file *as it is on disk now*
(a Write over an existing file is its lines replaced, not all of them added), in
the shape of a ``session.diff`` file entry (``path``, ``status``, ``diff``,
``added``, ``removed``) so that clients render both alike. Only read here: the
tool itself reads and writes again when it runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tron_events.files import unified_diff

from ..paths import PathError, PathPolicy
from ..tools.edit import EditRefused, plan_edit

#: Files larger than this get no preview (the client shows the arguments instead).
MAX_PREVIEW_BYTES = 512 * 1024


def change_preview(
    policy: PathPolicy, tool: str, arguments: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The change ``tool`` (Edit or Write) would make with ``arguments``, or None
    (another tool, a path that cannot be read, an edit that would not apply: the
    tool reports those when it runs)."""
    raw = arguments.get("file_path")
    if tool not in ("Edit", "Write") or not isinstance(raw, str) or not raw:
        return None
    try:
        with policy.resolve(raw) as target:
            if target.is_dir:
                return None
            shown = policy.display(target.path)
            if target.stat is not None and target.stat.st_size > MAX_PREVIEW_BYTES:
                return None
            before = target.read_bytes(MAX_PREVIEW_BYTES) if target.exists else None
    except (PathError, OSError, ValueError):
        return None
    if tool == "Write":
        content = arguments.get("content")
        if not isinstance(content, str):
            return None
        after = content.encode("utf-8", errors="surrogatepass")
    else:
        old, new = arguments.get("old_string"), arguments.get("new_string")
        if before is None or not isinstance(old, str) or not isinstance(new, str):
            return None
        try:
            after = plan_edit(before, old, new, bool(arguments.get("replace_all")), shown).after
        except EditRefused:
            return None
    if len(after) > MAX_PREVIEW_BYTES:
        return None
    try:
        result = unified_diff(shown, before, after)
    except UnicodeDecodeError:
        result = None
    if result is None:
        return None
    diff, added, removed = result
    status = "added" if before is None else "modified"
    return {"path": shown, "status": status, "diff": diff, "added": added, "removed": removed}


__all__ = ["MAX_PREVIEW_BYTES", "change_preview"]
