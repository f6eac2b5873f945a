"""The splitter pinned by mutation testing (issue 26 item 7): each test here failed on a
mutant of ``tron_server/shell`` (or on a bug one revealed) that every other test let
through. ``benchmarks/mutation.sh shell``."""

from __future__ import annotations

import pytest

from tron_server.shell import split
from tron_server.shell.reader import MAX_DEPTH, read_line


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


def _read(
    line: str,
) -> tuple[str | None, list[tuple[tuple[str, ...], tuple[tuple[str, str], ...]]]]:
    found = split(line)
    return found.uncertain, [(c.argv, c.redirects) for c in found.commands]


@pytest.mark.parametrize(
    ("line", "uncertain", "commands"),
    [
        # ${…}: read to its closing brace (nested ones too), then the line goes on.
        ("echo ${HOME}; rm x", None, [(("echo", "${HOME}"), ()), (("rm", "x"), ())]),
        ("echo ${a:-${b}}; rm x", None, [(("echo", "${a:-${b}}"), ()), (("rm", "x"), ())]),
        ("echo ${a:-{b}} c; rm x", None,
         [(("echo", "${a:-{b}}", "c"), ()), (("rm", "x"), ())]),
        # an escaped brace does not close it (and escapes are not followed: a doubt)
        ("echo ${a:-\\}} b; c", "a ${…} expansion this reader does not follow",
         [(("echo", "${a:-\\}}", "b"), ()), (("c",), ())]),
        ("echo ${a", "a ${…} expansion this reader does not follow", [(("echo", "${}"), ())]),
        # braces count in pairs (an escaped one does not), so a ; inside does not end it
        ("echo ${a:-\\{} b; c", "a ${…} expansion this reader does not follow",
         [(("echo", "${a:-\\{}", "b"), ()), (("c",), ())]),
        ("echo ${a:-{b};} c", None, [(("echo", "${a:-{b};}", "c"), ())]),
        ("echo ${a:-{{b}};} c", None, [(("echo", "${a:-{{b}};}", "c"), ())]),
        ("echo ${a:-\\", "a ${…} expansion this reader does not follow",
         [(("echo", "${}"), ())]),
        # Backticks: \`, \$ and \\ are unescaped inside, other backslashes are kept.
        ("echo `echo \\`rm x\\``", None, [(("rm", "x"), ()), (("echo", "`rm x`"), ()),
                                          (("echo", "`echo \\`rm x\\``"), ())]),
        ("echo `echo \\$HOME \\\\`", None,
         [(("echo", "$HOME", "\\"), ()), (("echo", "`echo \\$HOME \\\\`"), ())]),
        ("echo `a \\b`", None, [(("a", "b"), ()), (("echo", "`a \\b`"), ())]),
        ("echo `a \\\"b\\\"`", None, [(("a", '"b"'), ()), (("echo", '`a \\"b\\"`'), ())]),
        ('echo "`echo \\"x\\"`"', 'a \\" inside backticks inside double quotes',
         [(("echo", "x"), ()), (("echo", '`echo \\"x\\"`'), ())]),
        ("echo `rm x", "an unclosed backtick", [(("rm", "x"), ()), (("echo", "`rm x"), ())]),
        ("echo `a\\", "an unclosed backtick", [(("a\\",), ()), (("echo", "`a\\"), ())]),
        ("echo x`a`b; c", None, [(("a",), ()), (("echo", "x`a`b"), ()), (("c",), ())]),
        # A comment ends at its own line's end.
        ("a\nb # c\nd", None, [(("a",), ()), (("b",), ()), (("d",), ())]),
        ("a # x\nb # y\nc", None, [(("a",), ()), (("b",), ()), (("c",), ())]),
        # Redirections: without a target (a doubt), a target starting like anything else,
        # a file descriptor held in a variable ({fd}>), a word that is no descriptor.
        ("echo >", "a redirection > without its target", [(("echo",), ((">", ""),))]),
        ("echo 2> ;x", "a redirection > without its target",
         [(("echo",), (("2>", ""),)), (("x",), ())]),
        ("echo >Xfile", None, [(("echo",), ((">", "Xfile"),))]),
        ("exec {fd}>log; rm x", None, [(("exec",), (("{fd}>", "log"),)), (("rm", "x"), ())]),
        ("exec {FD}>log", None, [(("exec",), (("{FD}>", "log"),))]),
        ("echo a>x {a b}>y", None, [(("echo", "a", "{a", "b}"), ((">", "x"), (">", "y")))]),
        # Heredocs: <<- strips leading tabs from the delimiter's line, << does not; a
        # quoted delimiter (any of ' " \) keeps the body from expanding.
        ("cat <<-EOF\n\thello\n\tEOF\nrm x", None,
         [(("cat",), (("<<-", "EOF"),)), (("rm", "x"), ())]),
        ("cat <<EOF\n\tEOF\nEOF\nrm x", None, [(("cat",), (("<<", "EOF"),)), (("rm", "x"), ())]),
        ("cat <<XEOF\n$HOME\nXEOF", "a heredoc whose body expands",
         [(("cat",), (("<<", "XEOF"),))]),
        ("cat <<\\X\n$HOME\nX", None, [(("cat",), (("<<", "X"),))]),
        # Double quotes: \" does not end them; a backslash at the very end.
        ('echo "a\\"; rm x"', None, [(("echo", 'a"; rm x'), ())]),
        ('echo "a\\', "an unclosed double quote", [(("echo", "a\\"), ())]),
        ('echo "a\\"', "an unclosed double quote", [(("echo", 'a"'), ())]),
        # a line continuation inside them is removed; other escapes keep their backslash;
        # $'…' and $"…" are not quotes there
        ('echo "a\\\nb" "\\X" "\\a"', None, [(("echo", "ab", "\\X", "\\a"), ())]),
        ("echo \"$'x'\" \"$\\\"x\\\"\"", None, [(("echo", "$'x'", '$"x"'), ())]),
        # $(( … )): read to its own )), not an earlier or a later one; then the line goes on
        ("echo $(echo $(a)) $((1+2)); b", None,
         [(("a",), ()), (("echo", "$(a)"), ()), (("echo", "$(echo $(a))", "$((1+2))"), ()),
          (("b",), ())]),
        ("echo $((1+2)) $((3))", None, [(("echo", "$((1+2))", "$((3))"), ())]),
        ("echo $((a))$((1)); b", None, [(("echo", "$((a))$((1))"), ()), (("b",), ())]),
        ("echo $(()) x", None, [(("echo", "$(())", "x"), ())]),
        ("echo $((1));c", None, [(("echo", "$((1))"), ()), (("c",), ())]),
        ("echo $(( (1) )); c", None, [(("echo", "$(( (1) ))"), ()), (("c",), ())]),
        ("$((1+2)) x", "an expansion in command position ($((1+2)))", [(("$((1+2))", "x"), ())]),
        # … and what it cannot read is a command substitution to bash: its commands
        ("echo $((a) | (b)); c", "an arithmetic expansion this reader cannot read",
         [(("a",), ()), (("b",), ()), (("echo", "$((a) | (b))"), ()), (("c",), ())]),
        ("echo $((1", "an arithmetic expansion this reader cannot read",
         [(("1",), ()), (("echo", "$((1"), ())]),
        # $'…' octal escapes: up to three digits, the value's low byte.
        ("echo $'\\101x' $'\\1011' $'\\777' $'\\0'", None,
         [(("echo", "Ax", "A1", "\xff", "\x00"), ())]),
        # $'…': \x \u \U \c take their digits (a value not computed: NUL), unknown
        # escapes keep their backslash, an unclosed one is a doubt.
        ("echo $'\\x41b' $'\\cAb' $'\\X' $'\\U41' $'\\q' $'ab'", None,
         [(("echo", "\x00b", "\x00b", "\\X", "\x00", "\\q", "ab"), ())]),
        ("echo $'\\c", "an unclosed $' quote", [(("echo", "\x00"), ())]),
        ("echo $'abc", "an unclosed $' quote", [(("echo", "abc"), ())]),
        ("echo $'a\\", "an unclosed $' quote", [(("echo", "a\\"), ())]),
        ("echo $'a\\n", "an unclosed $' quote", [(("echo", "a\n"), ())]),
        # Heredocs: <<- strips tabs only; each of two heredocs gets its body; a body with
        # a backtick or a backslash expands.
        ("cat <<-EOF\n  EOF\nEOF\nrm x", None, [(("cat",), (("<<-", "EOF"),)), (("rm", "x"), ())]),
        ("cat <<-EOF\nXEOF\nEOF\nrm x", None, [(("cat",), (("<<-", "EOF"),)), (("rm", "x"), ())]),
        ("cat <<A <<B\nA\nB\nrm x", None,
         [(("cat",), (("<<", "A"), ("<<", "B"))), (("rm", "x"), ())]),
        ("cat <<EOF\n`x`\nEOF", "a heredoc whose body expands", [(("cat",), (("<<", "EOF"),))]),
        ("cat <<EOF\na\\b\nEOF", "a heredoc whose body expands", [(("cat",), (("<<", "EOF"),))]),
        # Every redirection operator.
        ("cat <<<word <>rw <&3 >>app >|clob &>>both &>all <in", None,
         [(("cat",), (("<<<", "word"), ("<>", "rw"), ("<&", "3"), (">>", "app"), (">|", "clob"),
                      ("&>>", "both"), ("&>", "all"), ("<", "in")))]),
        # Shells: an option that expands, a script that does; -- and - end the options.
        ('bash -$x -c "rm y"', "an option of a shell that expands",
         [(("bash", "-$x", "-c", "rm y"), ())]),
        ('bash -c "$s"', "a shell's -c script that expands", [(("bash", "-c", "$s"), ())]),
        ("bash -c X$s", "a shell's -c script that expands", [(("bash", "-c", "X$s"), ())]),
        ("bash -- -c x", None, [(("bash", "--", "-c", "x"), ())]),
        ("bash -c - x", None, [(("bash", "-c", "-", "x"), ()), (("x",), ())]),
        ("bash -c -- 'rm y'", None, [(("bash", "-c", "--", "rm y"), ()), (("rm", "y"), ())]),
        ("zsh -c 'x'", "a zsh script (read with bash's grammar)",
         [(("zsh", "-c", "x"), ()), (("x",), ())]),
        # $ before nothing it expands is a $; $? takes one character
        ("echo a$ b $? x", None, [(("echo", "a$", "b", "$?", "x"), ())]),
        ("$% x", None, [(("$%", "x"), ())]),
        ("echo ${a:-'x'}", "a ${…} expansion this reader does not follow",
         [(("echo", "${a:-'x'}"), ())]),
        ('echo ${a:-"x"}', "a ${…} expansion this reader does not follow",
         [(("echo", '${a:-"x"}'), ())]),
        # Wrappers: an unknown option, an option that expands.
        ("sudo -X rm y", "the option -X of sudo", [(("sudo", "-X", "rm", "y"), ())]),
        ("sudo -$x rm y", "an option of sudo that expands", [(("sudo", "-$x", "rm", "y"), ())]),
        # Long options: one word, or two for those taking a value; + alone is a file.
        ("bash --login -c 'rm x'", None,
         [(("bash", "--login", "-c", "rm x"), ()), (("rm", "x"), ())]),
        ("bash --rcfile f -c 'rm x'", None,
         [(("bash", "--rcfile", "f", "-c", "rm x"), ()), (("rm", "x"), ())]),
        ("bash + -c x", None, [(("bash", "+", "-c", "x"), ())]),
        ("bash -xs arg", "a shell reading commands from its input",
         [(("bash", "-xs", "arg"), ())]),
        # Wrapper options: - after env, nice -N, --opt=value and --opt value, long flags;
        # a lone - is the command; after an assignment sudo takes no more options.
        ("env - -i rm x", None, [(("env", "-", "-i", "rm", "x"), ()), (("rm", "x"), ())]),
        ("nice -5 -n 1 rm x", None,
         [(("nice", "-5", "-n", "1", "rm", "x"), ()), (("rm", "x"), ())]),
        ("sudo --user=root rm x", None,
         [(("sudo", "--user=root", "rm", "x"), ()), (("rm", "x"), ())]),
        ("env --chdir=/a=b rm x", None,
         [(("env", "--chdir=/a=b", "rm", "x"), ()), (("rm", "x"), ())]),
        ("sudo --user root rm x", None,
         [(("sudo", "--user", "root", "rm", "x"), ()), (("rm", "x"), ())]),
        ("sudo --non-interactive -u root rm x", None,
         [(("sudo", "--non-interactive", "-u", "root", "rm", "x"), ()), (("rm", "x"), ())]),
        ("sudo - rm x", None, [(("sudo", "-", "rm", "x"), ()), (("-", "rm", "x"), ())]),
        ("sudo A=1 -u root rm x", None,
         [(("sudo", "A=1", "-u", "root", "rm", "x"), ()), (("-u", "root", "rm", "x"), ())]),
        ("sudo A=1 rm x", None, [(("sudo", "A=1", "rm", "x"), ()), (("rm", "x"), ())]),
        ("sudo A=1", None, [(("sudo", "A=1"), ())]),
        ("env A=1 B=2 rm x", None, [(("env", "A=1", "B=2", "rm", "x"), ()), (("rm", "x"), ())]),
        # env -S (also as another option's value: the check is conservative, and what
        # follows is still found, for the deny rules)
        ("env -u -S rm x", "env -S splits its own command line",
         [(("env", "-u", "-S", "rm", "x"), ()), (("rm", "x"), ())]),
        ("env -u --split-string rm x", "env -S splits its own command line",
         [(("env", "-u", "--split-string", "rm", "x"), ()), (("rm", "x"), ())]),
        # eval: what it evaluates is read when written out, not when it expands
        ("eval rm $x", "eval", [(("eval", "rm", "$x"), ())]),
        ("eval $x rm", "eval", [(("eval", "$x", "rm"), ())]),
        ("eval rm x", "eval", [(("eval", "rm", "x"), ()), (("rm", "x"), ())]),
        ("eval 'rm \"x'", "eval", [(("eval", 'rm "x'), ()), (("rm", "x"), ())]),
        # case's own operators outside a case
        ("a;; b", ";; outside a case", [(("a",), ()), (("b",), ())]),
        ("a ;;& b", ";;& outside a case", [(("a",), ()), (("b",), ())]),
        ("a ;& b", ";& outside a case", [(("a",), ()), (("b",), ())]),
        ("bash -c", "a shell's -c without its script", [(("bash", "-c"), ())]),
        # Words: globs and braces in command position, a subscript holding a substitution,
        # a line continuation inside a word, empty and unclosed single quotes.
        ("Xa b", None, [(("Xa", "b"), ())]),
        ("a; [ab] x", "an expansion in command position ([ab])",
         [(("a",), ()), (("[ab]", "x"), ())]),
        ("a; {b} x", None, [(("a",), ()), (("{b}", "x"), ())]),
        ("a; {b,c} x", "an expansion in command position ({b,c})",
         [(("a",), ()), (("{b,c}", "x"), ())]),
        ("echo a[`b`]", "a subscript holding a command substitution",
         [(("b",), ()), (("echo", "a[`b`]"), ())]),
        ("echo a[$(b)]", "a subscript holding a command substitution",
         [(("b",), ()), (("echo", "a[$(b)]"), ())]),
        ("cat x<(b)y", None, [(("b",), ()), (("cat", "xy"), ())]),
        ("ec\\\nho x", None, [(("echo", "x"), ())]),
        ("echo '' x", None, [(("echo", "", "x"), ())]),
        ("echo 'abc", "an unclosed single quote", [(("echo", "abc"), ())]),
        ("A=1 B=2 rm x", None, [(("rm", "x"), ())]),
        ("select x", "select (this reader does not follow it)", []),
        # $"…" outside double quotes is a quote; ${…} holding a substitution is not read;
        # a ( inside a word.
        ("echo $\"x\" y", None, [(("echo", "x", "y"), ())]),
        ("echo ${} x; b", None, [(("echo", "${}", "x"), ()), (("b",), ())]),
        ("echo ${a:-$(rm x)}", "a ${…} expansion this reader does not follow",
         [(("echo", "${a:-$(rm x)}"), ())]),
        ("echo ${a:-`b`}", "a ${…} expansion this reader does not follow",
         [(("echo", "${a:-`b`}"), ())]),
        ("echo ${a:-<(b)}", "a ${…} expansion this reader does not follow",
         [(("echo", "${a:-<(b)}"), ())]),
        ("echo ${a:->(b)}", "a ${…} expansion this reader does not follow",
         [(("echo", "${a:->(b)}"), ())]),
        ("echo aX(b)", "a function definition or a ( inside a command",
         [(("b",), ()), (("echo", "aX"), ())]),
        # ! or time with nothing after; a descriptor before <; 2>( is a word and >(…)
        ("!", "! without a command", []),
        ("! time", "time without a command", []),
        ("cat 2<x", None, [(("cat",), (("2<", "x"),))]),
        ("cat 2>(b)", None, [(("b",), ()), (("cat", "2"), ())]),
        # What a list cannot hold: (, ), ((…)), a heredoc with no body; $ alone is a word.
        ("(a", "an unclosed parenthesis", [(("a",), ())]),
        ("cat <<EOF", "a heredoc without its body", [(("cat",), (("<<", "EOF"),))]),
        ("a)", "an unmatched )", [(("a",), ())]),
        ("((a))", "an arithmetic command (( … ))", [(("a",), ())]),
        ("$", None, [(("$",), ())]),
        ("a \\\nbc", None, [(("a", "bc"), ())]),
        # An escaped backtick does not close one; assignments and redirections of a
        # wrapped command; $'…' and $"…" in a sh script (dash reads them otherwise).
        ("echo `a\\`", "an unclosed backtick", [(("a`",), ()), (("echo", "`a\\`"), ())]),
        ("sudo A=1 B=2 rm x", None,
         [(("sudo", "A=1", "B=2", "rm", "x"), ()), (("rm", "x"), ())]),
        ("sudo rm x >out", None,
         [(("sudo", "rm", "x"), ((">", "out"),)), (("rm", "x"), ((">", "out"),))]),
        ("sh -c 'echo $\"x\"'", "bash's quoting in a sh script",
         [(("sh", "-c", 'echo $"x"'), ()), (("echo", "x"), ())]),
        ("sh -c \"echo \\$'x'\"", "bash's quoting in a sh script",
         [(("sh", "-c", "echo $'x'"), ()), (("echo", "x"), ())]),
        ("bash -c \"echo \\$'x'\"", None, [(("bash", "-c", "echo $'x'"), ()), (("echo", "x"), ())]),
        ("a \\\n b", None, [(("a", "b"), ())]),
        # find's -exec family, ended by \; or +.
        ("find -exec rm {} \\;", None, [(("find", "-exec", "rm", "{}", ";"), ()),
                                        (("rm", "{}"), ())]),
        ("find . -ok rm {} \\;", None, [(("find", ".", "-ok", "rm", "{}", ";"), ()),
                                        (("rm", "{}"), ())]),
        ("find . -okdir rm {} +", None, [(("find", ".", "-okdir", "rm", "{}", "+"), ()),
                                         (("rm", "{}"), ())]),
        ("find . -exec rm {}", "a find -exec without its ; or +",
         [(("find", ".", "-exec", "rm", "{}"), ())]),
        # Short options: a value attached to its letter (-u0) takes no further word; an
        # xargs option whose value can only be attached (-i) neither.
        ("sudo -u0 rm x", None, [(("sudo", "-u0", "rm", "x"), ()), (("rm", "x"), ())]),
        ("sudo -Eu0 rm x", None, [(("sudo", "-Eu0", "rm", "x"), ()), (("rm", "x"), ())]),
        ("sudo -u 0 rm x", None, [(("sudo", "-u", "0", "rm", "x"), ()), (("rm", "x"), ())]),
        ("xargs -i rm {}", None, [(("xargs", "-i", "rm", "{}"), ()), (("rm", "{}"), ())]),
    ],
)  # fmt: skip
def test_what_is_read(
    line: str,
    uncertain: str | None,
    commands: list[tuple[tuple[str, ...], tuple[tuple[str, str], ...]]],
) -> None:
    assert _read(line) == (uncertain, commands)


def test_the_nesting_cap_counts_backticks_as_one_level() -> None:
    """Seven substitutions inside a backtick are read, eight are too deep."""

    def line(n: int) -> str:
        return "echo `echo " + "$(echo " * n + "a" + ")" * n + "`"

    assert split(line(7)).uncertain is None
    assert split(line(8)).uncertain == "substitutions nested too deep"


def test_every_form_of_every_command() -> None:
    assert split("FOO=1 'rm' -rf / && FOO=1 'rm' -rf /; ls").texts() == (
        "FOO=1 'rm' -rf /", "'rm' -rf /", "rm -rf /", "ls",
    )  # fmt: skip


def test_a_substitution_inside_arithmetic_is_found() -> None:
    found = split("echo $(($(a)+1))")
    assert found.uncertain == "an arithmetic expansion this reader cannot read"
    assert "a" in found.names


def test_a_scripts_substitutions_count_from_the_scripts_own_depth() -> None:
    """A ``bash -c`` script is one level down: seven substitutions in it are read, eight
    are too deep."""

    def line(n: int) -> str:
        return "bash -c 'echo " + "$(echo " * n + "a" + ")" * n + "'"

    assert split(line(7)).uncertain is None
    assert split(line(8)).uncertain == "substitutions nested too deep"


def test_how_deep_wrappers_and_eval_are_followed() -> None:
    """Eight wrappers (or evals) deep are followed, the ninth is not."""
    assert split("sudo " * 8 + "rm x").names[-1] == "rm"
    assert split("sudo " * 8 + "rm x").uncertain is None
    deep = split("sudo " * 9 + "rm x")
    assert (deep.names[-1], deep.uncertain) == ("sudo", "commands wrapped too deep")
    assert split("eval " * 8 + "rm x").names == ("eval",) * 8 + ("rm",)
    assert split("eval " * 9 + "rm x").names == ("eval",) * 9


def test_texts_of_wrapped_commands_and_continued_lines() -> None:
    assert [c.text for c in split("env A=1 rm x").commands] == ["env A=1 rm x", "rm x"]
    assert [(c.text, c.bare) for c in split("xargs").commands] == [
        ("xargs", "xargs"), ("echo", "echo"),
    ]  # fmt: skip
    assert [c.text for c in split("echo a\\\nb").commands] == ["echo ab"]


def test_a_backtick_at_the_nesting_cap_is_not_read() -> None:
    def line(n: int) -> str:
        return "echo " + "$(echo " * n + "`a`" + ")" * n

    assert split(line(7)).uncertain is None
    assert split(line(8)).uncertain == "substitutions nested too deep"


def test_read_line_below_the_cap() -> None:
    assert read_line("rm x", MAX_DEPTH).uncertain is None
    deeper = read_line("rm x", MAX_DEPTH + 1)
    assert (deeper.commands, deeper.uncertain) == ([], "substitutions nested too deep")


def test_a_subshell_after_a_reserved_word_leaves_the_depth_as_it_was() -> None:
    def line(n: int) -> str:
        return "! (a); echo " + "$(echo " * n + "x" + ")" * n

    assert split(line(8)).uncertain is None
    assert split(line(9)).uncertain == "substitutions nested too deep"


def test_what_read_line_reports() -> None:
    """The simple commands as read: words and parts, redirections alone included."""
    assert [len(s.parts) for s in read_line("! (a) >x").commands] == [1, 2]
    assert [[w.raw for w in s.words] for s in read_line(">x; a b").commands] == [[], ["a", "b"]]
    assert [c.text for c in split("env A=1 B=2 rm x").commands] == ["env A=1 B=2 rm x", "rm x"]


def test_subshells_nest_eight_deep() -> None:
    assert split("( " * 8 + "a" + " )" * 8).uncertain is None
    assert split("( " * 9 + "a" + " )" * 9).uncertain == "subshells nested too deep"

    def after(n: int) -> str:  # the depth is back where it was after a subshell
        return "(a); echo " + "$(echo " * n + "x" + ")" * n

    assert split(after(8)).uncertain is None
    assert split(after(9)).uncertain == "substitutions nested too deep"


def test_the_depth_after_a_substitution_is_back_where_it_was() -> None:
    def line(n: int) -> str:
        return "echo $(a); echo " + "$(echo " * n + "x" + ")" * n

    assert split(line(8)).uncertain is None
    assert split(line(9)).uncertain == "substitutions nested too deep"
    assert [(c.text, c.bare) for c in split("sudo rm x").commands] == [
        ("sudo rm x", "sudo rm x"), ("rm x", "rm x"),
    ]  # fmt: skip


def test_a_subshell_after_a_reserved_word_is_one_level_down() -> None:
    def line(n: int) -> str:
        return "echo $(! ( echo " + "$(echo " * n + "x" + ")" * n + " ))"

    assert split(line(6)).uncertain is None
    assert split(line(7)).uncertain == "substitutions nested too deep"
