"""``tron-db delete``: asks first (``--yes`` without a terminal), refuses while forks
or sub-agent sessions depend on the session unless ``--cascade``, one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.events.test_cli import answer_on_a_terminal
from tron_events import EventStore, SessionNotFound
from tron_events.cli import main


def family(url: str) -> dict[str, str]:
    """A session with a fork, a fork of that fork and a sub-agent session, and an
    unrelated session."""
    with EventStore.open(url) as store:
        root = store.create_session(
            working_directory="/src/app", model="m", provider="anthropic", title="the root"
        )
        asked = store.append(root.id, "message.user", {"content": "zanzibar plans", "turn": 1})
        fork = store.fork(asked.id, name="another way").session
        later = store.append(fork.id, "message.user", {"content": "and then", "turn": 2})
        fork_of_fork = store.fork(later.id).session
        child = store.create_session(
            working_directory="/src/app", model="m", provider="anthropic", parent_session_id=root.id
        )
        other = store.create_session(working_directory="/src/other", model="m", provider="p")
        store.append(other.id, "message.user", {"content": "zanzibar elsewhere", "turn": 1})
    return {
        "root": root.id,
        "fork": fork.id,
        "fork_of_fork": fork_of_fork.id,
        "child": child.id,
        "other": other.id,
    }


def existing(url: str, ids: dict[str, str]) -> set[str]:
    with EventStore.open(url, read_only=True) as store:
        found = set()
        for name, sid in ids.items():
            try:
                store.get_session(sid)
            except SessionNotFound:
                continue
            found.add(name)
        return found


def test_delete_needs_yes_and_refuses_while_sessions_depend_on_it(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = family(store_url)
    everything = set(ids)

    # Without a terminal and without --yes: says so, deletes nothing.
    assert main(["delete", ids["other"], "-d", store_url]) == 2
    err = capsys.readouterr().err
    assert f"deleting session {ids['other']} (2 event(s))" in err and "--yes" in err
    assert existing(store_url, ids) == everything

    # Forks and sub-agent sessions depend on the root: refused, naming every one.
    assert main(["delete", ids["root"], "--yes", "-d", store_url]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tron-db delete: session {ids['root']} has 3 session(s) depending")
    assert err.count("\n") == 1 and "--cascade" in err and "Nothing was deleted" in err
    for name, kind in (("fork", "fork"), ("fork_of_fork", "fork"), ("child", "sub-agent")):
        assert f"{ids[name]} ({kind})" in err
    assert existing(store_url, ids) == everything

    # A unique prefix names a session; --cascade takes its dependents with it.
    prefix = ids["root"][: len("sess_") + 30]
    assert main(["delete", prefix, "--cascade", "--yes", "-d", store_url]) == 0
    assert capsys.readouterr().out.startswith(f"deleted 4 session(s): {ids['root']}")
    assert existing(store_url, ids) == {"other"}
    with EventStore.open(store_url, read_only=True) as store:
        hits = store.search("zanzibar")
        assert [hit.session_id for hit in hits] == [ids["other"]]  # its search rows went too


def test_errors_are_one_line_and_create_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no" / "such.db"
    assert main(["delete", "sess_x", "--yes", "-d", str(missing)]) == 2
    assert "no database at" in capsys.readouterr().err and not missing.parent.exists()
    db = str(tmp_path / "t.db")
    ids = family(db)
    for wrong, said in (("sess_nope", "does not exist"), ("sess_", "the start of several")):
        assert main(["delete", wrong, "--yes", "-d", db]) == 2
        err = capsys.readouterr().err
        assert err.startswith("tron-db delete: ") and said in err and err.count("\n") == 1, err
    assert existing(db, ids) == set(ids)


@pytest.mark.parametrize(("answer", "status"), [(b"no\n", 2), (b"yes\n", 0)])
def test_delete_asks_on_a_terminal(tmp_path: Path, answer: bytes, status: int) -> None:
    db = str(tmp_path / "t.db")
    ids = family(db)
    seen, code, answered = answer_on_a_terminal(["delete", ids["other"], "-d", db], answer)
    assert answered and b"No backup is made" in seen, seen
    assert code == status, seen
    assert ("other" in existing(db, ids)) is (status == 2)
    assert existing(db, ids) - {"other"} == set(ids) - {"other"}
