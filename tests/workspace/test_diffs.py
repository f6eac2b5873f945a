"""What differs between two events, and its unified diffs: branches of the tree,
files changed back, binary, unrecorded and missing contents."""

from __future__ import annotations

import difflib
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.workspace.conftest import Harness
from tron_events import FileState
from tron_events.files import FileChange, transitions, unified_diff

pytestmark = pytest.mark.anyio

LINES = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "dd\n", "\n"]), max_size=60) | st.lists(
    st.integers(0, 200).map(lambda n: f"line {n}\n"), max_size=60, unique=True
)


def apply(diff: str, source: list[str]) -> list[str]:
    """Apply a unified diff to the lines it was made from, checking every context and
    removed line against them, and every hunk header against its lines."""
    out: list[str] = []
    lines = diff.splitlines(keepends=True)
    position = 0
    i = 0
    while i < len(lines):
        m = re.match(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", lines[i])
        i += 1
        if m is None:
            continue
        old_len = int(m.group(2) or 1)
        new_len = int(m.group(4) or 1)
        start = int(m.group(1)) - (1 if old_len else 0)
        out += source[position:start]
        position = start
        seen_old = seen_new = 0
        while i < len(lines) and not lines[i].startswith("@@"):
            kind, text = lines[i][0], lines[i][1:]
            if kind in " -":
                assert source[position] == text
                position += 1
                seen_old += 1
            if kind in " +":
                out.append(text)
                seen_new += 1
            i += 1
        assert (seen_old, seen_new) == (old_len, new_len)
        assert len(out) - seen_new == int(m.group(3)) - (1 if new_len else 0)
    return out + source[position:]


@settings(max_examples=200)
@given(a=LINES, b=LINES)
def test_unified_diff_applies_and_matches_difflib_in_size(a: list[str], b: list[str]) -> None:
    result = unified_diff("f.txt", "".join(a).encode(), "".join(b).encode())
    assert result is not None
    text, added, removed = result
    assert apply(text, a) == b
    body = text.splitlines()[2:]
    assert added == sum(1 for line in body if line.startswith("+"))
    assert removed == sum(1 for line in body if line.startswith("-"))
    # Where the lines are not ambiguous, exactly difflib's diff of the whole file.
    if len(set(a)) == len(a) and len(set(b)) == len(b):
        assert text == "".join(difflib.unified_diff(a, b, "f.txt", "f.txt"))
    assert (text == "") == (a == b)


def test_binary_contents_have_no_text_diff() -> None:
    assert unified_diff("x", b"\x00\x01", b"\x00\x02") is None
    assert unified_diff("x", b"\xff\xfe", None) is None


def state(h: str) -> FileState:
    return FileState("file", h, 1)


def test_transitions_undo_one_side_and_do_the_other() -> None:
    undone = [
        FileChange("a", state("a0"), state("a1")),
        FileChange("b", None, state("b1")),
        FileChange("c", state("c0"), state("c1")),
        FileChange("c", state("c1"), state("c0")),  # changed back: not a difference
    ]
    done = [FileChange("a", state("a0"), state("a2")), FileChange("d", state("d0"), None)]
    got = {t.path: (t.before, t.after, t.status) for t in transitions(undone, done)}
    assert got == {
        "a": (state("a1"), state("a2"), "modified"),
        "b": (state("b1"), None, "deleted"),
        "d": (state("d0"), None, "deleted"),
    }


async def test_store_diff_between_branches_and_for_one_edit(harness: Harness) -> None:
    h = harness
    await h.write("notes.txt", "one\ntwo\nthree\n")
    start = await h.head()
    await h.edit("notes.txt", "two", "TWO")
    await h.bash("printf '\\000\\001' > data.bin && echo new > new.txt")
    head = await h.head()
    files = {f.path: f for f in await h.store.diff(start, head)}
    notes, data, new = (files[str(h.root / n)] for n in ("notes.txt", "data.bin", "new.txt"))
    assert notes.status == "modified" and (notes.added, notes.removed) == (1, 1)
    assert "-two\n+TWO\n" in (notes.diff or "")
    assert data.diff is None and data.note == "binary" and data.status == "added"
    assert new.diff is not None and new.diff.startswith("--- /dev/null\n")
    # The other way round: the same files, inverted.
    back = {f.path: f for f in await h.store.diff(head, start)}
    assert back[notes.path].diff is not None and "-TWO\n+two\n" in back[notes.path].diff
    assert back[new.path].status == "deleted"
    # One event's own change: from its parent to it.
    [edit] = await h.store.get_events(h.session_id, types=["file.edit"])
    assert edit.parent_id is not None
    [one] = await h.store.diff(edit.parent_id, edit.id)
    assert one.path == notes.path and one.added == 1
    # Across an abandoned branch: a rewind, another change, then the diff of the tips.
    await h.workspace.rewind(h.session_id, start, restore_files=True)
    await h.write("other.txt", "x\n")
    tip = await h.head()
    across = {f.path: f.status for f in await h.store.diff(head, tip)}
    assert across == {
        notes.path: "modified",
        data.path: "deleted",
        new.path: "deleted",
        str(h.root / "other.txt"): "added",
    }
