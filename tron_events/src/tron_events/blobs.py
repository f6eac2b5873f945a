"""File contents by hash: how a content is kept in the ``file_blobs`` table.

A content is stored once, under the SHA-256 of its bytes (hex), whatever the number
of events, sessions and files that recorded it. A row holds it one of three ways:

``raw``
    the bytes as they are (when compressing would not make them smaller);
``zlib``
    the bytes compressed with zlib;
``delta``
    the bytes that differ from another stored content (``base_hash``): zlib of a
    16-byte header (lengths of the common prefix and suffix) and the middle. An edit
    of a few lines in a large file costs a few hundred bytes, not the file again.
    Chains are at most :data:`MAX_DELTA_DEPTH` long, so reading one never decodes
    more than that many rows.

Every decoded content is checked against its hash: a damaged or missing row raises
:class:`~tron_events.errors.MissingContent`, never wrong bytes.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from .errors import MissingContent

__all__ = [
    "MAX_DELTA_DEPTH",
    "BlobRow",
    "common_prefix_suffix",
    "content_hash",
    "decode_all",
    "encode",
]

#: The longest chain of deltas a content may be stored as: a read rebuilds at most this
#: many versions (a copy of the file each), and every this many versions of a file one is
#: stored whole.
MAX_DELTA_DEPTH = 48
_ZLIB_LEVEL = 6
_HEADER = struct.Struct(">QQ")
_BLOCK = 4096
#: A delta is used when it is at most this share of the content's full encoding.
_DELTA_GAIN = 0.5


def content_hash(data: bytes) -> str:
    """The key a content is stored under: SHA-256 of its bytes, hex."""
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True)
class BlobRow:
    """One row of ``file_blobs``."""

    hash: str
    size: int
    encoding: str  # "raw" | "zlib" | "delta"
    base_hash: str | None
    depth: int
    data: bytes


def _prefix(a: bytes, b: bytes, limit: int) -> int:
    i = 0
    # Whole blocks first (each comparison is a memcmp), then bytes of the first
    # block that differs.
    while i + _BLOCK <= limit and a[i : i + _BLOCK] == b[i : i + _BLOCK]:
        i += _BLOCK
    end = min(limit, i + _BLOCK)
    while i < end and a[i] == b[i]:
        i += 1
    return i


def _suffix(a: bytes, b: bytes, limit: int) -> int:
    la, lb = len(a), len(b)
    n = 0
    while n + _BLOCK <= limit and a[la - n - _BLOCK : la - n] == b[lb - n - _BLOCK : lb - n]:
        n += _BLOCK
    end = min(limit, n + _BLOCK)
    while n < end and a[la - n - 1] == b[lb - n - 1]:
        n += 1
    return n


def common_prefix_suffix(a: bytes, b: bytes) -> tuple[int, int]:
    """Lengths of the longest common prefix and suffix of ``a`` and ``b`` (not
    overlapping in either)."""
    shortest = min(len(a), len(b))
    p = _prefix(a, b, shortest)
    s = _suffix(a, b, shortest - p)
    return p, s


def _full(h: str, content: bytes) -> BlobRow:
    packed = zlib.compress(content, _ZLIB_LEVEL)
    if len(packed) < len(content):
        return BlobRow(h, len(content), "zlib", None, 0, packed)
    return BlobRow(h, len(content), "raw", None, 0, content)


def encode(
    content: bytes, *, base: tuple[str, bytes, int] | None = None, content_id: str | None = None
) -> BlobRow:
    """The row to store ``content`` as.

    ``base`` is ``(hash, content, depth)`` of a stored content it likely resembles
    (the file's previous version): the row is a delta against it when that is much
    smaller than storing the content whole. ``content_id`` is the content's hash
    when the caller has it already.
    """
    h = content_id or content_hash(content)
    if base is not None and base[0] != h and base[2] < MAX_DELTA_DEPTH and content:
        base_hash, base_content, base_depth = base
        p, s = common_prefix_suffix(base_content, content)
        if p + s >= len(content) // 2:  # worth trying: most of it is shared
            middle = content[p : len(content) - s]
            delta = zlib.compress(_HEADER.pack(p, s) + middle, _ZLIB_LEVEL)
            if len(delta) <= max(64, int(len(content) * _DELTA_GAIN * 0.25)):
                # Far smaller than any whole encoding could be: no need to compress it all.
                return BlobRow(h, len(content), "delta", base_hash, base_depth + 1, delta)
            full = _full(h, content)
            if len(delta) < len(full.data) * _DELTA_GAIN:
                return BlobRow(h, len(content), "delta", base_hash, base_depth + 1, delta)
            return full
    return _full(h, content)


def _decode_one(row: BlobRow, base: bytes | None) -> bytes:
    if row.encoding == "raw":
        return row.data
    if row.encoding == "zlib":
        return zlib.decompress(row.data)
    if row.encoding == "delta":
        if base is None:  # pragma: no cover - the caller resolves bases first
            raise ValueError("a delta without its base")
        raw = zlib.decompress(row.data)
        p, s = _HEADER.unpack_from(raw)
        if p + s > len(base):
            raise ValueError("delta does not fit its base")
        return base[:p] + raw[_HEADER.size :] + base[len(base) - s :]
    raise ValueError(f"unknown blob encoding {row.encoding!r}")


def decode_all(
    wanted: Iterable[str], fetch: Callable[[list[str]], Mapping[str, BlobRow]]
) -> dict[str, bytes]:
    """The contents of ``wanted`` hashes, reading rows with ``fetch`` (hashes → the
    rows found) a chain level at a time and checking every content against its hash.

    Raises :class:`MissingContent` naming every hash that is absent, damaged or whose
    chain is broken; nothing is returned then.
    """
    wanted = list(dict.fromkeys(wanted))
    rows: dict[str, BlobRow] = {}
    missing: list[str] = []
    pending = list(wanted)
    while pending:
        found = fetch(pending)
        next_level: list[str] = []
        for h in pending:
            row = found.get(h)
            if row is None:
                missing.append(h)
                continue
            rows[h] = row
            if row.base_hash is not None and row.base_hash not in rows:
                next_level.append(row.base_hash)
        pending = list(dict.fromkeys(b for b in next_level if b not in rows))
    decoded: dict[str, bytes] = {}
    broken: set[str] = set(missing)

    def resolve(h: str) -> bytes | None:
        if h in decoded:
            return decoded[h]
        if h in broken:
            return None
        chain: list[BlobRow] = []
        current: str | None = h
        while current is not None and current not in decoded:
            row = rows.get(current)
            if row is None or current in broken or len(chain) > MAX_DELTA_DEPTH + 1:
                broken.update(r.hash for r in chain)
                broken.add(current)
                return None
            chain.append(row)
            current = row.base_hash
        base = decoded.get(current) if current is not None else None
        for row in reversed(chain):
            try:
                content = _decode_one(row, base)
            except (ValueError, zlib.error, struct.error):
                content = None
            if content is None or content_hash(content) != row.hash:
                broken.add(row.hash)
                return None
            decoded[row.hash] = content
            base = content
        return decoded[h]

    for h in wanted:
        resolve(h)
    bad = [h for h in wanted if h not in decoded]
    if bad:
        raise MissingContent(bad)
    return {h: decoded[h] for h in wanted}
