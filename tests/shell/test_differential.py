"""The splitter against bash itself (issue 26, item 2): command lines generated from a
grammar of quotes of every kind, escapes, separators, subshells, groups, substitutions and
wrappers run under bash with ``PATH`` set to a folder of stub commands that only log their
own name (nothing real runs; wrappers log, then exec the real program so that what they
wrap is looked up among the stubs too). Every name bash ran must be among the commands
:func:`tron_server.shell.split` reports, or the line must be classified uncertain."""

from __future__ import annotations

import itertools
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tron_server.shell import split

NAMES = ["aa", "bb", "cc", "dd"]
#: Wrappers run for real (after logging), so that what they run is a stub too.
WRAPPERS = {"env": "/usr/bin/env", "nohup": "/usr/bin/nohup", "timeout": "/usr/bin/timeout",
            "xargs": "/usr/bin/xargs", "nice": "/usr/bin/nice", "bash": "/bin/bash",
            "sh": "/bin/sh"}  # fmt: skip
BASH = "/bin/bash"
#: Each example starts bash (and the wrappers' programs): few in CI, many under the dev
#: profile (HYPOTHESIS_PROFILE=dev), fewer for each mutant of benchmarks/mutation.sh.
EXAMPLES = {"dev": 2000, "mutation": 25}.get(os.environ.get("HYPOTHESIS_PROFILE", "ci"), 40)

pytestmark = pytest.mark.skipif(
    not all(Path(p).exists() for p in [BASH, *WRAPPERS.values()]),
    reason="bash and coreutils are needed",
)


@pytest.fixture(scope="module")
def stubs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("differential") / "stubs"
    folder.mkdir()
    log = 'printf "%s\\n" "${0##*/}" >> "$STUB_LOG"\n'
    for name in NAMES:
        (folder / name).write_text(f"#!{BASH}\n{log}")
    for name, real in WRAPPERS.items():
        (folder / name).write_text(f'#!{BASH}\n{log}exec {real} "$@"\n')
    for path in folder.iterdir():
        path.chmod(0o755)
    return folder


_runs = itertools.count()


def executed(line: str, stubs: Path) -> list[str]:
    """The names of the stubs bash ran for ``line``, in a folder of its own next to the
    stubs (a fresh log each time: a background job finishing late writes to its own)."""
    work = stubs.parent / f"run{next(_runs)}"
    work.mkdir()
    log = work / "log"
    log.touch()
    subprocess.run(
        [BASH, "-c", line],
        env={"PATH": str(stubs), "STUB_LOG": str(log), "HOME": str(work)},
        cwd=work,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=20,
        check=False,
    )
    return [n for n in log.read_text().split("\n") if n]


# -- the grammar -------------------------------------------------------------------------

NASTY = "'\"\\;&|()$`#{}<> \n\t!*~="
plain = st.text(alphabet="abcdz0-_./", min_size=1, max_size=4)
nasty = st.text(alphabet=NASTY + "ab", min_size=1, max_size=4)
inside = st.one_of(plain, nasty, st.sampled_from(NAMES)).map(str)


def _squote(t: str) -> str:
    return "'" + t.replace("'", "") + "'"


def _dquote(t: str) -> str:
    return '"' + t.replace('"', '\\"') + '"'


def _ansi(t: str) -> str:
    return "$'" + t.replace("'", "\\'") + "'"


quoted = st.one_of(
    inside.map(_squote),
    inside.map(_dquote),
    inside.map(_ansi),
    inside.map(lambda t: '$"' + t.replace('"', '\\"') + '"'),
    st.sampled_from(["$'\\''", "$'\\\\'", "\"\\\"\"", "'\\'", "\\'", '\\"', "\\;", "\\|",
                     "\\&", "\\\n", "#", " #", "\\#", "$'\\x61a'", "$'a\\'; bb #'"]),
)  # fmt: skip


@st.composite
def word(draw: st.DrawFn, depth: int) -> str:
    pieces = st.one_of(plain, quoted, nasty) if depth > 1 else st.one_of(plain, quoted)
    parts = draw(st.lists(pieces, min_size=1, max_size=3))
    if depth < 2 and draw(st.integers(0, 4)) == 0:
        inner = draw(command_list(depth + 1))
        form = draw(st.sampled_from(["$(%s)", "`%s`", "<(%s)", ">(%s)", '"$(%s)"', "$((%s))"]))
        parts.insert(draw(st.integers(0, len(parts))), form % inner)
    return "".join(parts)


@st.composite
def name(draw: st.DrawFn) -> str:
    n = draw(st.sampled_from(NAMES))
    return draw(st.sampled_from([n, f"'{n}'", f'"{n}"', f"{n[0]}\\{n[1]}", f"$'{n}'",
                                 f'$"{n}"', f"{n[0]}''{n[1]}", f"V=1 {n}"]))  # fmt: skip


@st.composite
def simple(draw: st.DrawFn, depth: int) -> str:
    args = draw(st.lists(word(depth), max_size=3))
    head = draw(name())
    wrapper = draw(st.sampled_from(["", "", "", "env ", "env A=1 ", "nohup ", "timeout 5 ",
                                    "nice -n 1 ", "command ", "exec ", "builtin ",
                                    "xargs ", "time ", "! "]))  # fmt: skip
    line = " ".join([wrapper + head, *args])
    if depth < 2 and draw(st.integers(0, 5)) == 0:
        shell = draw(st.sampled_from(["bash -c", "sh -c", "bash -x -c", "bash -o pipefail -c"]))
        script = draw(command_list(depth + 1))
        quote = draw(st.sampled_from([_squote, _dquote, _ansi]))
        line = f"{shell} {quote(script)}"
    return line


@st.composite
def command(draw: st.DrawFn, depth: int) -> str:
    kind = draw(st.integers(0, 9)) if depth < 2 else 0
    if kind == 7:
        return f"( {draw(command_list(depth + 1))} )"
    if kind == 8:
        return f"{{ {draw(command_list(depth + 1))}; }}"
    if kind == 6:
        body = draw(st.one_of(nasty, word(depth + 1)))
        delimiter = draw(st.sampled_from(["X", "'X'", '"X"', "\\X"]))
        dash = draw(st.sampled_from(["", "-"]))
        return f"{draw(simple(depth))} <<{dash}{delimiter}\n{body}\nX\n"
    if kind == 9:
        return f"if {draw(simple(depth))}; then {draw(command_list(depth + 1))}; fi"
    return draw(simple(depth))


@st.composite
def command_list(draw: st.DrawFn, depth: int = 0) -> str:
    commands = draw(st.lists(command(depth), min_size=1, max_size=3))
    seps = st.sampled_from([";", " ; ", "&&", " || ", "|", " |& ", "\n", " & ", ";"])
    out = commands[0]
    for c in commands[1:]:
        out += draw(seps) + c
    if depth == 0 and draw(st.integers(0, 6)) == 0:
        out += draw(nasty)
    return out


ISSUE = "echo $'\\''; touch /tmp/x #'".replace("touch", "aa").replace("/tmp/x", "x")


@settings(max_examples=EXAMPLES)
@given(line=command_list())
@example(line=ISSUE)
@example(line="aa $'\\''; bb #'")
@example(line="aa \\; bb")
@example(line="{ aa; }")
@example(line='bash -x -c "aa"')
@example(line="aa | xargs")
@example(line="cat <<EOF\n$(aa)\nEOF")
@example(line="echo $((aa) | (bb))")
def test_every_command_bash_runs_is_found_or_the_line_is_uncertain(line: str, stubs: Path) -> None:
    ran = executed(line, stubs)
    found = split(line)
    if found.uncertain is None:
        missing = [n for n in ran if n not in found.names]
        assert not missing, (line, ran, found)
