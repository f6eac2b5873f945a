"""Identifiers: a prefix plus a UUIDv7, so ids sort by creation time."""

from __future__ import annotations

import re

import uuid_utils

from .errors import InvalidPayload

_CLIENT_EVENT_ID = re.compile(r"evt_[A-Za-z0-9_-]{1,60}")


def _new(prefix: str) -> str:
    return prefix + str(uuid_utils.uuid7())


def new_event_id() -> str:
    return _new("evt_")


def new_session_id() -> str:
    return _new("sess_")


def new_workspace_id() -> str:
    return _new("ws_")


def check_client_event_id(event_id: str) -> str:
    """A client may pick its own id (for idempotent retries): ``evt_`` + 1–60 of [A-Za-z0-9_-]."""
    if not isinstance(event_id, str) or not _CLIENT_EVENT_ID.fullmatch(event_id):
        raise InvalidPayload(
            f"event id {event_id!r} is not valid: use 'evt_' followed by 1 to 60 of "
            "A-Z, a-z, 0-9, '_' or '-'"
        )
    return event_id
