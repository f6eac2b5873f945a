"""The splitter pinned by mutation testing (issue 26 item 7): each test here failed on a
mutant of ``tron_server/shell`` (or on a bug one revealed) that every other test let
through. ``benchmarks/mutation.sh shell``."""

from __future__ import annotations

import pytest

from tron_server.shell import split


@pytest.mark.parametrize(
    ("line", "argv"),
    [
        # A number that ends the line is an argument: it is a redirection's file
        # descriptor only right before < or > (``sleep 5`` was read as ``sleep 5>``).
        ("sleep 5", ("sleep", "5")),
        ("init 0", ("init", "0")),
        ("git log -n 3", ("git", "log", "-n", "3")),
        ("echo 2 >x", ("echo", "2")),
        ("echo 2>x", ("echo",)),
    ],
)
def test_a_number_at_the_end_is_an_argument(line: str, argv: tuple[str, ...]) -> None:
    found = split(line)
    assert found.uncertain is None
    assert [c.argv for c in found.commands] == [argv]
