"""Which session to open: a new one, this folder's latest (``-c``), one picked or
named (``-r``), or a fork (``--fork EVENT``); and how a session is described
in a list (title, age, messages, cost)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tron_events.titles import title_from_prompt

from ..client import RpcCallError, TronClient
from .errors import EXIT_NOT_FOUND, EXIT_USAGE, TerminalError

#: The most of this folder's sessions listed (the protocol's maximum page).
LIST_LIMIT = 1000


def is_subagent(session: dict[str, Any]) -> bool:
    """A child session a ``Task`` call started (not something a user opens first)."""
    if "kind" in session:
        return bool(session.get("kind") == "subagent")
    return bool(session.get("parentSessionId")) and not session.get("forkFromEventId")


async def folder_sessions(client: TronClient, folder: Path) -> list[dict[str, Any]]:
    """This folder's sessions (not sub-agents' child sessions), most recently active first."""
    wanted = str(folder)
    try:
        result = await client.call(
            "session.list", {"workingDirectory": wanted, "limit": LIST_LIMIT}
        )
    except RpcCallError as exc:
        if exc.code != -32602:
            raise
        # A server without the folder filter: its most recent sessions, this folder's kept.
        result = await client.call("session.list", {"limit": LIST_LIMIT})
    return [
        s for s in result["sessions"] if s.get("workingDirectory") == wanted and not is_subagent(s)
    ]


async def latest_session(client: TronClient, folder: Path) -> dict[str, Any]:
    """The most recent active session of ``folder`` (``tron -c``)."""
    for session in await folder_sessions(client, folder):
        if session.get("status") == "active":
            return session
    raise TerminalError(
        f"No session to continue in {folder}: run `tron` to start one "
        "(or `tron -r` to pick an ended one to fork).",
        EXIT_NOT_FOUND,
    )


async def all_sessions(client: TronClient) -> list[dict[str, Any]]:
    """Every folder's sessions (not sub-agents'), the most recently active first (at
    most :data:`LIST_LIMIT`)."""
    result = await client.call("session.list", {"limit": LIST_LIMIT})
    return [s for s in result["sessions"] if not is_subagent(s)]


async def get_session(client: TronClient, session_id: str, folder: Path) -> dict[str, Any]:
    """A session by id, or by a unique prefix of one (``sess_`` may be left out, as
    ``tron-db show`` takes it): this folder's sessions first, then any folder's."""
    try:
        session: dict[str, Any] = await client.call("session.get", {"sessionId": session_id})
        return session
    except RpcCallError as exc:
        if exc.code != -32000:
            raise
    prefix = session_id if session_id.startswith("sess_") else "sess_" + session_id
    for where, found in (
        (f"of {folder}", await folder_sessions(client, folder)),
        ("(of several folders)", await all_sessions(client)),
    ):
        matches = [s for s in found if s["id"].startswith(prefix)]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            shown = "\n".join(
                f"  {describe(s)}  ({s.get('workingDirectory')})" for s in matches[:5]
            )
            raise TerminalError(
                f"{session_id!r} is the start of {len(matches)} sessions {where}: give more of "
                f"the id.\n{shown}" + ("\n  …" if len(matches) > 5 else ""),
                EXIT_USAGE,
            )
    raise TerminalError(
        f"Unknown session {session_id!r}: no session's id starts with it (among the "
        f"{LIST_LIMIT} most recent). `tron -r` lists this folder's sessions, "
        "`tron-db sessions` every folder's.",
        EXIT_NOT_FOUND,
    )


async def fork_session(client: TronClient, event_id: str) -> dict[str, Any]:
    """A new session continuing from ``event_id`` (``tron --fork EVENT``)."""
    try:
        result = await client.call("session.fork", {"eventId": event_id})
    except RpcCallError as exc:
        if exc.code in (-32000, -32004) or exc.category == "not_found":
            raise TerminalError(
                f"Cannot fork from {event_id!r}: {exc.message}. The tree view (Ctrl+T in `tron`) "
                "shows a session's event ids.",
                EXIT_NOT_FOUND,
            ) from None
        raise
    session: dict[str, Any] = result["session"]
    return session


def usable(session: dict[str, Any]) -> None:
    """Refuse an ended session (it takes no more messages: fork it instead)."""
    if session.get("status") != "active":
        raise TerminalError(
            f"Session {session['id']} has ended and takes no more messages: fork it with "
            f"`tron --fork {session.get('headEventId')}`.",
            EXIT_USAGE,
        )


def elsewhere(session: dict[str, Any], folder: Path) -> str | None:
    """A word when ``session`` works in another folder than ``folder``."""
    where = session.get("workingDirectory")
    if not where or where == str(folder):
        return None
    return f"Session {session['id']} works in {where} (not in this folder): its tools act there."


def missing_folder_note(session_id: str, folder: str) -> str:
    """The warning for a session whose folder is not on this machine: what is missing and
    what acting there would do."""
    return (
        f"Session {session_id} worked in {folder}, which is not a folder on this machine "
        "(an imported session?): its tools cannot act there."
    )


def title_of(prompt: str | None) -> str | None:
    """A session title from its first message: the first line, at most 60 characters
    (:func:`tron_events.titles.title_from_prompt`, as every reader derives one)."""
    return title_from_prompt(prompt)


def age(timestamp: str | None, now: datetime | None = None) -> str:
    """``5s``, ``3m``, ``2h``, ``4d`` since ``timestamp`` (ISO 8601)."""
    if not timestamp:
        return "?"
    try:
        then = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return "?"
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    seconds = max(0, int(((now or datetime.now(UTC)) - then).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def money(cost: float | None) -> str:
    """``$0.0123``-style cost; ``–`` when unknown."""
    if cost is None:
        return "–"
    return f"${cost:.4f}" if cost < 1 else f"${cost:.2f}"


def describe(session: dict[str, Any], now: datetime | None = None) -> str:
    """One line: title (or first words of the id), age, messages, cost."""
    title = session.get("title") or "(untitled)"
    status = "" if session.get("status") == "active" else "  [ended]"
    return (
        f"{title}  ·  {age(session.get('lastActivityAt'), now)} ago  ·  "
        f"{session.get('messageCount', 0)} messages  ·  {money(session.get('cost'))}"
        f"  ·  {session['id']}{status}"
    )


__all__ = [
    "LIST_LIMIT",
    "age",
    "all_sessions",
    "describe",
    "elsewhere",
    "folder_sessions",
    "fork_session",
    "get_session",
    "is_subagent",
    "latest_session",
    "missing_folder_note",
    "money",
    "title_of",
    "usable",
]
