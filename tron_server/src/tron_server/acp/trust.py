"""Folder trust in the editor: the question ``tron`` asks on opening an untrusted folder
(:mod:`tron_server.terminal.trust`), asked through ``session/request_permission``.

A folder's own configuration (hooks, allow rules, modes, shell in command files, agents,
MCP servers) is inert until its user trusts it (``trust.get`` / ``trust.set``). A session
the editor opens (``session/new``, ``load``, ``resume``, ``fork``) in an untrusted folder
that defines any of it is asked about once, at the start of its first prompt and before
the message is sent, so that turn already runs with the answer:

- a ``tool_call`` (kind ``other``, the folder as its location) titled "Trust this folder?
  It defines: …", then a permission request for it with "Trust this folder"
  (``allow_once``: recorded with ``trust.set``, for this folder and its subfolders, in
  every client) and "Continue without its settings" (``reject_once``: nothing recorded);
- the call then ends (``completed``) saying what was decided.

Why at the prompt and not inside ``session/new``: the editor learns the session's id
from ``session/new``'s answer, and editors (Zed) refuse a permission request for a
session they do not know yet; every client handles one during a prompt. A folder is
asked about once per ``tron acp`` connection (sessions in it share the answer); a
trusted folder is never asked about again. A cancelled question (the editor cancelled
the prompt) cancels the prompt, and is asked again at the next one.
"""

from __future__ import annotations

import itertools
import logging
from typing import Any, Protocol

from acp.schema import (
    AllowedOutcome,
    PermissionOption,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
)

from ..terminal.trust import defined_items
from .live import Editor
from .toolcalls import text_content

log = logging.getLogger("tron_server.acp")

TRUST = "trust"
WITHOUT = "without"
OPTIONS = [
    PermissionOption(option_id=TRUST, name="Trust this folder", kind="allow_once"),
    PermissionOption(option_id=WITHOUT, name="Continue without its settings", kind="reject_once"),
]
_ids = itertools.count(1)


class Call(Protocol):
    """A tron-server call (raising ``acp.RequestError`` on failure)."""

    async def __call__(self, method: str, params: dict[str, Any] | None = None) -> Any: ...


def needs_asking(answer: dict[str, Any]) -> bool:
    """Whether ``trust.get``'s answer is of an untrusted folder that defines something."""
    return not answer.get("trusted") and bool(defined_items(answer.get("defines") or {}))


def title(answer: dict[str, Any]) -> str:
    """The question's title: what the folder defines."""
    return "Trust this folder? It defines: " + ", ".join(defined_items(answer["defines"]))


def explanation(folder: str) -> str:
    return (
        f"{folder} has configuration of its own that can run commands on this machine or "
        "widen what the agent may do without asking. Trust it only if you trust its "
        "contents (your own code, or a project you know): trust covers its subfolders and "
        "holds in every Tron client. Without it, its deny rules still apply and the rest "
        "is ignored."
    )


async def ask(editor: Editor, call: Call, session_id: str, answer: dict[str, Any]) -> bool | None:
    """Ask about the folder of ``answer`` (``trust.get``'s) in ``session_id``; record
    trust when given. True: trusted; False: continue without (also when the editor
    failed to ask); None: cancelled (the editor cancelled the prompt)."""
    folder = str(answer["path"])
    call_id = f"tron-trust-{next(_ids)}"
    asked = title(answer)
    await editor.session_update(
        session_id,
        ToolCallStart(
            session_update="tool_call",
            tool_call_id=call_id,
            title=asked,
            kind="other",
            status="pending",
            locations=[ToolCallLocation(path=folder)],
            content=[text_content(explanation(folder))],
            raw_input={"folder": folder, "defines": answer.get("defines")},
        ),
    )
    try:
        reply = await editor.request_permission(
            session_id,
            ToolCallUpdate(tool_call_id=call_id, title=asked, kind="other", status="pending"),
            OPTIONS,
        )
    except Exception as exc:  # the editor cannot ask: go on without (as `tron -p` does)
        log.warning("the editor did not ask whether to trust %s: %s", folder, exc)
        return False
    outcome = getattr(reply, "outcome", None)
    if not isinstance(outcome, AllowedOutcome) or outcome.option_id not in (TRUST, WITHOUT):
        await _done(editor, session_id, call_id, "Cancelled: asked again at the next prompt")
        return None
    if outcome.option_id == WITHOUT:
        await _done(editor, session_id, call_id, "Continuing without this folder's settings")
        return False
    try:
        await call("trust.set", {"path": folder, "trusted": True})
    except Exception as exc:  # the trust file cannot be written: say why, go on without
        message = getattr(exc, "message", None) or str(exc)
        await _done(editor, session_id, call_id, f"Trust was not recorded: {message}", failed=True)
        return False
    await _done(editor, session_id, call_id, f"Trusted {folder} (and its subfolders)")
    return True


async def _done(
    editor: Editor, session_id: str, call_id: str, text: str, *, failed: bool = False
) -> None:
    await editor.session_update(
        session_id,
        ToolCallProgress(
            session_update="tool_call_update",
            tool_call_id=call_id,
            status="failed" if failed else "completed",
            content=[text_content(text)],
        ),
    )


__all__ = ["OPTIONS", "TRUST", "WITHOUT", "ask", "needs_asking", "title"]
