"""The trust store: real files in a temporary home, real processes writing at once."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tron_server.trust import TrustError, TrustStore, is_configuration_file, real_folder


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for sub in ("src/app/lib", "src/other", "elsewhere/evil"):
        (tmp_path / sub).mkdir(parents=True)
    return tmp_path


def test_nothing_is_trusted_in_a_new_home(tmp_path: Path, tree: Path) -> None:
    store = TrustStore(tmp_path / "home")
    assert store.is_trusted(tree / "src") is None
    assert store.entries() == []
    assert not (tmp_path / "home").exists()  # looking does not create the home


def test_trust_covers_the_folder_and_its_subfolders_only(tmp_path: Path, tree: Path) -> None:
    store = TrustStore(tmp_path / "home")
    assert store.set(tree / "src", True) == tree / "src"
    assert store.is_trusted(tree / "src") == tree / "src"
    assert store.is_trusted(tree / "src" / "app" / "lib") == tree / "src"
    assert store.is_trusted(tree / "src" / "app" / "not-yet-made") == tree / "src"
    assert store.is_trusted(tree) is None
    assert store.is_trusted(tree / "elsewhere") is None
    # A sibling whose name starts the same is not below it.
    (tree / "src2").mkdir()
    assert store.is_trusted(tree / "src2") is None


def test_a_symlink_is_judged_by_where_it_leads(tmp_path: Path, tree: Path) -> None:
    store = TrustStore(tmp_path / "home")
    store.trust(tree / "src")
    inside = tree / "src" / "link-out"
    inside.symlink_to(tree / "elsewhere" / "evil")
    assert store.is_trusted(inside) is None  # a link inside a trusted folder, to outside
    outside = tree / "elsewhere" / "link-in"
    outside.symlink_to(tree / "src" / "app")
    assert store.is_trusted(outside) == tree / "src"
    dotted = tree / "src" / "app" / ".." / ".." / "elsewhere"
    assert store.is_trusted(dotted) is None


def test_trusting_through_a_symlink_records_the_real_folder(tmp_path: Path, tree: Path) -> None:
    store = TrustStore(tmp_path / "home")
    link = tree / "to-other"
    link.symlink_to(tree / "src" / "other")
    assert store.trust(link) == tree / "src" / "other"
    assert [e.folder for e in store.entries()] == [tree / "src" / "other"]
    # Pointing the link elsewhere does not carry the trust along.
    link.unlink()
    link.symlink_to(tree / "elsewhere" / "evil")
    assert store.is_trusted(link) is None


def test_revoking(tmp_path: Path, tree: Path) -> None:
    store = TrustStore(tmp_path / "home")
    store.trust(tree / "src")
    assert store.set(tree / "src", False) is None
    assert store.is_trusted(tree / "src" / "app") is None
    assert store.entries() == []  # nothing left to record


def test_revoking_a_subfolder_of_a_trusted_folder(tmp_path: Path, tree: Path) -> None:
    store = TrustStore(tmp_path / "home")
    store.trust(tree / "src")
    store.revoke(tree / "src" / "app")
    assert store.is_trusted(tree / "src" / "app" / "lib") is None
    assert store.is_trusted(tree / "src" / "other") == tree / "src"
    # Trusting the parent again decides for the whole subtree.
    store.trust(tree / "src")
    assert store.is_trusted(tree / "src" / "app") == tree / "src"


def test_revoking_a_parent_revokes_what_was_trusted_below(tmp_path: Path, tree: Path) -> None:
    store = TrustStore(tmp_path / "home")
    store.trust(tree / "src" / "app")
    store.trust(tree / "src")
    store.revoke(tree / "src")
    assert store.is_trusted(tree / "src" / "app") is None


def test_the_file_is_user_only_and_valid_json(tmp_path: Path, tree: Path) -> None:
    home = tmp_path / "home"
    old = os.umask(0)
    try:
        TrustStore(home).trust(tree / "src")
    finally:
        os.umask(old)
    path = home / "trust.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((home / "trust.json.lock").stat().st_mode) == 0o600
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    data = json.loads(path.read_text())
    assert data["version"] == 1
    assert data["folders"][str(tree / "src")]["trusted"] is True
    assert [p.name for p in home.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"[1, 2]",
        b'{"folders": []}',
        b'{"folders": {"rel/path": {"trusted": true}}}',
        b'{"folders": {"/x": {"trusted": "yes"}}}',
    ],
)
def test_a_broken_file_trusts_nothing_and_is_not_written_over(
    tmp_path: Path, tree: Path, content: bytes
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    path = home / "trust.json"
    path.write_bytes(content)
    path.chmod(0o600)
    store = TrustStore(home)
    assert store.is_trusted(tree / "src") is None
    with pytest.raises(TrustError, match=r"trust\.json"):
        store.set(tree / "src", True)
    assert path.read_bytes() == content


def test_a_file_others_could_write_trusts_nothing(tmp_path: Path, tree: Path) -> None:
    home = tmp_path / "home"
    store = TrustStore(home)
    store.trust(tree / "src")
    (home / "trust.json").chmod(0o666)
    assert store.is_trusted(tree / "src") is None
    with pytest.raises(TrustError, match="chmod 600"):
        store.trust(tree / "elsewhere")
    (home / "trust.json").chmod(0o600)
    assert store.is_trusted(tree / "src") == tree / "src"


def test_a_symlinked_trust_file_is_not_followed(tmp_path: Path, tree: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    planted = tmp_path / "planted.json"
    planted.write_text(json.dumps({"version": 1, "folders": {str(tree): {"trusted": True}}}))
    planted.chmod(0o600)
    (home / "trust.json").symlink_to(planted)
    assert TrustStore(home).is_trusted(tree / "src") is None


def test_a_change_by_another_store_is_seen(tmp_path: Path, tree: Path) -> None:
    home = tmp_path / "home"
    reader, writer = TrustStore(home), TrustStore(home)
    assert reader.is_trusted(tree / "src") is None
    writer.trust(tree / "src")
    assert reader.is_trusted(tree / "src") == tree / "src"
    writer.revoke(tree / "src")
    assert reader.is_trusted(tree / "src") is None


_WRITER = """
import sys
from tron_server.trust import TrustStore
store = TrustStore(sys.argv[1])
for folder in sys.argv[2:]:
    store.trust(folder)
"""


def test_processes_writing_at_once_keep_every_decision(tmp_path: Path) -> None:
    home = tmp_path / "home"
    folders = [tmp_path / f"p{i}" / f"f{j}" for i in range(6) for j in range(15)]
    for f in folders:
        f.mkdir(parents=True)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(home), *map(str, folders[i * 15 : (i + 1) * 15])]
        )
        for i in range(6)
    ]
    for p in procs:
        assert p.wait(timeout=120) == 0
    store = TrustStore(home)
    assert {e.folder for e in store.entries()} == set(folders)
    assert all(store.is_trusted(f) == f for f in folders)


def test_a_home_that_cannot_be_written_is_a_clear_error(tmp_path: Path, tree: Path) -> None:
    home = tmp_path / "home"
    home.write_text("a file, not a folder")
    with pytest.raises(TrustError, match="cannot record trust"):
        TrustStore(home).trust(tree / "src")


# -- a model of the rules ---------------------------------------------------------------

_FOLDERS = ["a", "a/b", "a/b/c", "a/d", "e"]


@settings(max_examples=60)
@given(ops=st.lists(st.tuples(st.sampled_from(_FOLDERS), st.booleans()), max_size=12))
def test_the_latest_decision_about_a_folder_or_an_ancestor_wins(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, bool]]
) -> None:
    root = tmp_path_factory.mktemp("model")
    for f in _FOLDERS:
        (root / f).mkdir(parents=True, exist_ok=True)
    store = TrustStore(root / "home")
    for folder, trusted in ops:
        store.set(root / folder, trusted)
    for folder in _FOLDERS:
        expected = False
        for decided, trusted in ops:
            if folder == decided or folder.startswith(decided + "/"):
                expected = trusted
        covering = store.is_trusted(root / folder)
        assert (covering is not None) == expected, (folder, ops)
        if covering is not None:
            assert (root / folder) == covering or covering in (root / folder).parents


@pytest.mark.parametrize(
    "path",
    [
        ".tron/settings.json",
        "sub/deep/.tron/settings.local.json",
        "x/.claude/settings.json",
        "x/.claude/settings.local.json",
        ".mcp.json",
        "vendor/pkg/.mcp.json",
        "a/.claude/commands/deploy.md",
        "a/.claude/commands/ns/deep/x.md",
        "a/.tron/agents/evil.md",
        "a/.tron/hooks/check.sh",
        "/abs/.claude/hooks/x.py",
    ],
)
def test_configuration_files_at_any_depth(path: str) -> None:
    assert is_configuration_file(path)


@pytest.mark.parametrize(
    "path",
    [
        "settings.json",
        "src/settings.json",
        ".tron/notes.md",
        ".claude/CLAUDE.md",
        "a/.claude/skills/x/SKILL.md",
        "mcp.json",
        "a/commands/x.md",
        ".claude/commands",  # the folder itself is not a file below it
        "a/tron/settings.json",
    ],
)
def test_other_files_are_not_configuration(path: str) -> None:
    assert not is_configuration_file(path)


def test_real_folder_expands_the_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert real_folder("~/x") == Path(os.path.realpath(tmp_path)) / "x"
