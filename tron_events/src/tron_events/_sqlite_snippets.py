"""Snippets of long texts on SQLite, at a cost that grows linearly with the text.

FTS5's ``snippet()`` scores every match of a text against every other: its
cost grows with the square of the matches. A two-word search over 80,000
characters of a repeated phrase took 0.37 s, 200,000 characters 2.3 s, and a
50 MB message did not finish in ten minutes. So a text longer than
:data:`CHUNK_CHARS` is cut into chunks of about that size (at whitespace),
the chunks are indexed in a scratch in-memory FTS5 table with the same
tokenizer as ``events_fts``, and the snippet is ``snippet()`` of the
best-ranked chunk that matches the query; failing that (the words are in
different chunks), of the best chunk holding any of its words; failing that,
the text's opening words. Indexing is linear and ``snippet()`` sees one chunk,
so a snippet costs at most a few milliseconds whatever the event.
"""

from __future__ import annotations

import contextlib
import sqlite3

from .search_text import MAX_INDEXED_CHARS, literal_words

#: Texts up to this many characters get FTS5's snippet() directly; longer ones
#: go through chunks of about this size (snippet() of 4,096 characters of a
#: repeated phrase takes ~1 ms).
CHUNK_CHARS = 4_096
#: Must be ``events_fts``'s tokenizer (migrations/versions/0001_initial.py), so
#: the chunks match the query as the index did.
TOKENIZER = "porter unicode61"
SNIPPET_WORDS = 16
ELLIPSIS = "…"


def chunks(text: str, size: int = CHUNK_CHARS) -> list[str]:
    """``text`` cut into pieces of at most ``size`` characters, at the last
    whitespace of each piece when there is one in its second half."""
    out: list[str] = []
    start, end_of_text = 0, len(text)
    while start < end_of_text:
        end = min(start + size, end_of_text)
        if end < end_of_text:
            low = start + size // 2
            cut = max(text.rfind(" ", low, end), text.rfind("\n", low, end))
            if cut > start:
                end = cut + 1
        out.append(text[start:end])
        start = end
    return out


def long_text_snippet(text: str, query: str, match: str, open_mark: str, close_mark: str) -> str:
    """The snippet of ``text`` for the FTS5 query ``match``, made of the
    user's ``query`` (see the module docstring)."""
    pieces = chunks(text[:MAX_INDEXED_CHARS])
    any_word = " OR ".join('"' + w.replace('"', '""') + '"' for w in literal_words(query))
    with contextlib.closing(sqlite3.connect(":memory:")) as db:
        db.execute(f"CREATE VIRTUAL TABLE chunks USING fts5(text, tokenize='{TOKENIZER}')")
        db.executemany("INSERT INTO chunks (rowid, text) VALUES (?, ?)", enumerate(pieces))
        for query in (match, any_word):
            if not query:
                continue
            try:
                row = db.execute(
                    "SELECT rowid, snippet(chunks, 0, ?, ?, ?, ?) FROM chunks "
                    "WHERE chunks MATCH ? ORDER BY rank LIMIT 1",
                    (open_mark, close_mark, ELLIPSIS, SNIPPET_WORDS, query),
                ).fetchone()
            except sqlite3.OperationalError:  # pragma: no cover - the main index took it
                row = None
            if row is not None:
                index, snippet = row
                # snippet() marks where its chunk was cut short, not the text.
                if index > 0 and not snippet.startswith(ELLIPSIS):
                    snippet = ELLIPSIS + snippet
                if index < len(pieces) - 1 and not snippet.endswith(ELLIPSIS):
                    snippet += ELLIPSIS
                return str(snippet)
    words = text[:CHUNK_CHARS].split(maxsplit=SNIPPET_WORDS)
    return " ".join(words[:SNIPPET_WORDS]) + (ELLIPSIS if len(words) > SNIPPET_WORDS else "")
