"""Deterministic ids for imported sessions.

An imported event, session or workspace gets the usual ``evt_``/``sess_``/``ws_``
prefix and a UUIDv7-shaped id, but derived from what it was imported from instead
of drawn at random: the first 48 bits are the source's timestamp in milliseconds
(so ids sort by time, as v7 ids do), the rest come from a SHA-256 of a key naming
the source item (agent, source session id, record id, role). Importing the same
file again yields the same ids, so the import recognises it as already present.
"""

from __future__ import annotations

import hashlib
import uuid

__all__ = ["stable_uuid7"]


def stable_uuid7(key: str, millis: int | None = None) -> str:
    """A UUIDv7-shaped id for ``key``; ``millis`` fills its time field (None: the hash)."""
    digest = bytearray(hashlib.sha256(b"tron-import\x00" + key.encode()).digest()[:16])
    if millis is not None:
        digest[0:6] = max(0, min(millis, (1 << 48) - 1)).to_bytes(6, "big")
    digest[6] = 0x70 | (digest[6] & 0x0F)  # version 7
    digest[8] = 0x80 | (digest[8] & 0x3F)  # RFC 4122 variant
    return str(uuid.UUID(bytes=bytes(digest)))
