"""Command files in Claude Code's format, and the substitutions of their bodies."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tests.support.trust import trust_folder
from tron_server.commands import discover_commands, parse_command, resolve
from tron_server.commands.expand import substitute
from tron_server.commands.files import split_tools


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_discovery_namespaces_and_precedence(tmp_path: Path) -> None:
    home, wd = tmp_path / "home", tmp_path / "wd"
    write(home / "commands" / "review.md", "---\ndescription: home review\n---\nReview.")
    write(wd / ".claude/commands/review.md", "---\ndescription: claude review\n---\nReview!")
    write(wd / ".tron/commands/review.md", "---\ndescription: our review\n---\nReview!!")
    write(wd / ".claude/commands/frontend/component.md", "Make a component named $1.\n")
    write(wd / ".claude/commands/bad name.md", "skipped: not a command name")
    found = discover_commands(home, wd)
    assert sorted(found) == ["frontend:component", "review"]
    assert found["review"].description == "our review" and found["review"].scope == "project"
    component = found["frontend:component"]
    assert component.description == "Make a component named $1."  # the body's first line
    assert component.label == "(project:frontend)"
    assert resolve("component", found) is component  # the last part, while unambiguous
    write(home / "commands" / "backend" / "component.md", "Another.")
    assert resolve("component", discover_commands(home, wd)) is None


def test_front_matter_keys(tmp_path: Path) -> None:
    path = write(
        tmp_path / ".tron/commands/commit.md",
        "---\n"
        "description: Create a git commit\n"
        "argument-hint: [message] [--amend]\n"
        "allowed-tools: Bash(git add:*), Bash(git status:*), Read\n"
        "model: haiku\n"
        "disable-model-invocation: true\n"
        "---\n"
        "Commit with $ARGUMENTS\n",
    )
    trust_folder(tmp_path / "nohome", tmp_path)
    [command] = discover_commands(tmp_path / "nohome", tmp_path).values()
    assert command.path == path
    assert command.argument_hint == "[message] [--amend]"
    assert command.allowed_tools == ("Bash(git add:*)", "Bash(git status:*)", "Read")
    assert command.model == "haiku"
    assert command.body == "Commit with $ARGUMENTS"


def test_split_tools() -> None:
    assert split_tools("Bash(a, b), Read") == ("Bash(a, b)", "Read")
    assert split_tools(["Read", " Edit "]) == ("Read", "Edit")


def test_parse_command() -> None:
    assert parse_command("/review the api") == ("review", "the api")
    assert parse_command("  /help") == ("help", "")
    assert parse_command("/fix\nsecond line") == ("fix", "second line")
    assert parse_command("/usr/bin/env python") is None
    assert parse_command("//not a command") is None
    assert parse_command("hello /help") is None


def test_substitutions() -> None:
    body = "All: $ARGUMENTS. First: $1. Second: $2. Tenth: $10."
    assert substitute(body, '"the login page" high') == (
        'All: "the login page" high. First: the login page. Second: high. Tenth: .'
    )
    assert substitute("No placeholders.", "x y") == "No placeholders.\n\nARGUMENTS: x y"
    assert substitute("No placeholders.", "") == "No placeholders."
    assert substitute("Quote: $1", "'unclosed") == "Quote: 'unclosed"


_words = st.lists(
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789._-", min_size=1, max_size=6),
    max_size=5,
)


@given(words=_words)
def test_arguments_and_positions_agree(words: list[str]) -> None:
    arguments = " ".join(words)
    positions = " ".join(f"<${i}>" for i in range(1, len(words) + 1))
    assert substitute("$ARGUMENTS", arguments) == arguments
    assert substitute(positions, arguments) == " ".join(f"<{w}>" for w in words)
