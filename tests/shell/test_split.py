"""The splitter's view of command lines: what it finds, and what it will not guess at."""

from __future__ import annotations

import pytest

from tron_server.shell import split


def names(line: str) -> tuple[str, ...]:
    found = split(line)
    assert found.uncertain is None, (line, found.uncertain)
    return found.names


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("a && b || c; d | e & f", ("a", "b", "c", "d", "e", "f")),
        ("a|b", ("a", "b")),
        ("a|&b", ("a", "b")),
        ("a&&b||c", ("a", "b", "c")),
        ("a\nb", ("a", "b")),
        ("a \\\n b", ("a",)),  # a line continuation
        ("echo 'a && b'", ("echo",)),
        ('echo "a; b" # c; d', ("echo",)),
        ("echo a#b; c", ("echo", "c")),
        ("echo $'\\''; touch /tmp/x #'", ("echo", "touch")),
        ("echo $'a\\'b'; c", ("echo", "c")),
        ('echo $"a;b"; c', ("echo", "c")),
        ("echo \\; rm -rf ~", ("echo",)),  # the ; is escaped: rm is an argument
        ("echo \\`rm\\`", ("echo",)),  # escaped backticks run nothing
        ('echo "x $(rm -rf y) z"', ("rm", "echo")),
        ('echo $(echo "a)b"; c)', ("echo", "c", "echo")),  # quotes inside $( )
        ("echo `whoami`", ("whoami", "echo")),
        ("(cd a && make) > out 2>&1", ("cd", "make")),
        ("{ rm -rf /; }", ("rm",)),
        ("if a; then b; else c; fi", ("a", "b", "c")),
        ("if a; then b; elif c; then d; fi", ("a", "b", "c", "d")),
        ("while a; do b; done; until c; do d; done", ("a", "b", "c", "d")),
        ("if a\nthen\n{ b; }\nfi", ("a", "b")),
        ("time ( a )", ("a",)),
        ("! a | b", ("a", "b")),
        ("time -p a", ("a",)),
        ("diff <(ls a) >(wc)", ("ls", "wc", "diff")),
        ("FOO=1 rm -rf /", ("rm",)),
        ("FOO=$(a) b", ("a", "b")),
        ("X=1", ()),
        ("cmd 2>&1 >out", ("cmd",)),
        ("cat <<'EOF'\n$(rm x)\nEOF\nls", ("cat", "ls")),
        ("cat <<EOF\nplain text\nEOF\nls", ("cat", "ls")),
        ("'rm' -rf /", ("rm",)),
        ("sudo -E rm -rf /", ("sudo", "rm")),
        ("sudo -u root -- rm x", ("sudo", "rm")),
        ("sudo nohup rm -rf /", ("sudo", "nohup", "rm")),
        ('bash -x -c "rm -rf /"', ("bash", "rm")),
        ("sh -c 'a; b'", ("sh", "a", "b")),
        ("bash -o pipefail -c 'a | b'", ("bash", "a", "b")),
        ("bash script.sh", ("bash",)),
        ("env -i A=1 B=2 rm x", ("env", "rm")),
        ("nohup a &", ("nohup", "a")),
        ("timeout -s KILL 5 a", ("timeout", "a")),
        ("nice -n 5 a", ("nice", "a")),
        ("nice -5 a", ("nice", "a")),
        ("ls | xargs -0 -n 1 rm", ("ls", "xargs", "rm")),
        ("ls | xargs", ("ls", "xargs", "echo")),
        ("exec a", ("exec", "a")),
        ("env - rm x", ("env", "rm")),
        ("find . -name '*.o' -exec rm {} \\; -o -execdir wc {} +", ("find", "rm", "wc")),
        ("find . -name x", ("find",)),
        ("ls | xargs --replace rm {}", ("ls", "xargs", "rm")),
        ("/usr/bin/time rm x", ("time", "rm")),
        ("command -p a", ("command", "a")),
        ("builtin cd x", ("builtin", "cd")),
        ("[ -f x ] && y", ("[", "y")),
        ("echo $((1 + 2))", ("echo",)),
        ("echo a<(b)", ("b", "echo")),
    ],
)
def test_the_commands_of_a_line(line: str, expected: tuple[str, ...]) -> None:
    assert names(line) == expected


@pytest.mark.parametrize(
    "line",
    [
        "eval x",
        "echo 'unclosed",
        'echo "unclosed',
        "echo $'unclosed",
        "echo `unclosed",
        "echo $(unclosed",
        "a )",
        "$CMD x",
        "${CMD} x",
        "$(echo rm) -rf /",
        "`echo rm` -rf /",
        "e* x",
        "{echo,hi}",
        "~/bin/x",
        "cat <<EOF\n$(rm x)\nEOF",
        "cat <<EOF\nunended",
        "echo $(( $(rm x) ))",
        "case x in a) rm;; esac",
        "for f in a; do rm $f; done",
        "f() { rm x; }; f",
        "bash",
        "a | sh",
        'bash -c "$X"',
        "sh -c $'a\\'b'",
        "env -S 'rm x'",
        "sudo --unknown rm",
        "zsh -c '=rm x'",
        "sudo -s rm x",
        "find . -exec rm {}",
        "a && fi",
        "a; }",
        "if a; then b",
        "while a; do b",
        "a && time",
        "if a; then b; fi; fi",
        "\\time rm x",
        "$'\\x72m' -rf /",
        "(((((((((((a)))))))))))",
        "x='a[$(rm y)]'; echo $((x))",
        "echo $((echo hi) | (cat))",
        "[ -v 'a[$(rm y)]' ]",
        "trap 'rm x' EXIT",
        "alias ls='rm -rf /'",
        "hash -p ./x ls; ls",
        "echo " + "$(echo " * 12 + "a" + ")" * 12,
    ],
)
def test_what_it_cannot_read_with_certainty(line: str) -> None:
    assert split(line).uncertain is not None


def test_the_deny_forms_of_a_command() -> None:
    [command] = split("FOO=1 'rm'  -rf  /").commands
    assert command.text == "FOO=1 'rm' -rf /" and command.bare == "'rm' -rf /"
    assert command.forms == ("FOO=1 'rm' -rf /", "'rm' -rf /", "rm -rf /")


def test_eval_is_uncertain_but_what_it_runs_is_reported() -> None:
    found = split("eval 'rm -rf /'")
    assert found.uncertain == "eval" and found.names == ("eval", "rm")


def test_nesting_deeper_than_the_cap_never_raises() -> None:
    for depth in range(1, 14):
        line = "$(echo " * depth + "a" + ")" * depth
        found = split(f"echo {line}")
        if depth <= 8:
            assert found.uncertain is None and found.names == ("echo",) * (depth + 1)
        else:
            assert found.uncertain is not None


def test_redirections_are_reported() -> None:
    [command] = split("dd if=x 2>/dev/null >/dev/sda").commands
    assert command.redirects == (("2>", "/dev/null"), (">", "/dev/sda"))
    assert command.argv == ("dd", "if=x")


def test_substitutions_are_marked() -> None:
    first, outer = split("echo $(date)").commands
    assert outer.substitution and not first.substitution and first.text == "date"
