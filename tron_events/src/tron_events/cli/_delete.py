"""``tron-db delete``: remove a session (and, with ``--cascade``, the sessions
that depend on it) from the shell."""

from __future__ import annotations

import argparse

from .._urls import normalize_url
from ..errors import TronEventsError
from ..models import Session
from ..store import EventStore
from ._ask import confirm
from ._browse import resolve_session
from ._main import FAILED, OK

#: Dependents named in a message; the rest are counted.
SHOWN = 8


def run(args: argparse.Namespace, raw_url: str) -> int:
    url = normalize_url(raw_url)
    with EventStore.open(url, must_exist=True) as store:
        session = store.get_session(resolve_session(store, args.session))
        dependents = [store.get_session(sid) for sid in _dependents(store, session.id)]
        if dependents and not args.cascade:
            raise TronEventsError(
                f"session {session.id} has {len(dependents)} session(s) depending on it: "
                f"{_listed(dependents)}. Delete them first, or pass --cascade to delete them "
                "with it. Nothing was deleted."
            )
        what = f"deleting session {_described(session)}"
        if dependents:
            what += f" and the {len(dependents)} depending on it: {_listed(dependents)}"
        note = (
            f"No backup is made (`tron-db export --session {session.id} --with-forks "
            "-o FILE` keeps a copy)."
        )
        if not args.yes and not confirm(what, note):
            return FAILED
        store.delete_session(session.id, cascade=args.cascade)
    print(
        f"deleted {1 + len(dependents)} session(s): {session.id}"
        + "".join(f", {d.id}" for d in dependents[:SHOWN])
        + (f" and {len(dependents) - SHOWN} more" if len(dependents) > SHOWN else "")
    )
    return OK


def _dependents(store: EventStore, session_id: str) -> list[str]:
    """Every session whose history leads back to this one (forks and sub-agent
    sessions, theirs too), nearest first."""
    rec = store.recorder
    found: list[str] = []
    with rec.read() as cur:
        level = [session_id]
        while level:
            below = [child for sid in level for child in rec.fork_ids(cur, sid)]
            found += below
            level = below
    return found


def _kind(session: Session) -> str:
    return "fork" if session.fork_from_event_id is not None else "sub-agent"


def _described(session: Session) -> str:
    title = f'"{session.title}", ' if session.title else ""
    return f"{session.id} ({title}{session.event_count} event(s))"


def _listed(sessions: list[Session]) -> str:
    shown = ", ".join(f"{s.id} ({_kind(s)})" for s in sessions[:SHOWN])
    return shown + (f" and {len(sessions) - SHOWN} more" if len(sessions) > SHOWN else "")
