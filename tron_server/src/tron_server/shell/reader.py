"""Reading a bash command line into the simple commands it runs.

A reader of bash's grammar for what permission rules need, not a shell: it finds every
simple command of a line — across ``;``, ``&``, ``&&``, ``||``, ``|``, ``|&`` and new lines,
in subshells ``( … )`` and groups ``{ …; }``, in ``if``/``while``/``until`` bodies, and inside
``$( … )``, backticks, ``<( … )`` and ``>( … )`` — with each word as bash sees it after quote
removal (``'…'``, ``"…"``, ``$'…'`` with its backslash escapes, ``$"…"``, ``\\`` escapes,
line continuations, comments).

What it cannot read with certainty it does not guess at: it records why in
:attr:`Reading.uncertain` (an unclosed quote, ``eval``, a heredoc whose body expands, an
arithmetic expression it cannot read, a ``$`` expansion or a glob in command position,
``case``/``for``/functions, a syntax error…), and still reports every command it found.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = [
    "ASSIGNMENT", "LEADING", "MAX_DEPTH", "UNREAD", "Reading", "Redirect", "Simple", "Word",
    "read_line",
]  # fmt: skip

#: Substitutions nested deeper than this are not read (the line is uncertain).
MAX_DEPTH = 8

_META = frozenset(" \t\n;&|<>()")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
#: Reserved words that may start a command and are followed by one (skipped).
LEADING = frozenset({"!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done",
                      "while", "until", "time"})  # fmt: skip
#: Reserved words this reader does not follow: the line is uncertain.
UNREAD = frozenset({"case", "esac", "for", "select", "function", "coproc", "[["})
_BRACKET = re.compile(r"\[[^\s;&|<>()]*\]")
_BRACES = re.compile(r"\{[^\s;&|<>()]*(,|\.\.)[^\s;&|<>()]*\}")
#: Reserved words that open a compound command, those that continue one (and what must
#: be open for them), and those that close one.
_OPENS = frozenset({"if", "while", "until", "{"})
_NEEDS = {"then": ("if", "elif"), "elif": ("then",), "else": ("then",), "fi": ("then", "else"),
          "do": ("while", "until"), "done": ("do",), "}": ("{",)}  # fmt: skip
_CLOSES = frozenset({"fi", "done", "}"})
_ARITHMETIC = re.compile(r"[\w\s+\-*/%<>=!&|^~?:,()\[\]$#]*")
_HEX = {"x": "[0-9A-Fa-f]{0,2}", "u": "[0-9A-Fa-f]{0,4}", "U": "[0-9A-Fa-f]{0,8}"}
_ESCAPES = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
            "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}  # fmt: skip


@dataclass
class Word:
    """One word: ``raw`` as written, ``value`` after quote removal; ``dynamic`` when it
    expands (``$x``, ``$(…)``, a glob, ``~``, braces), so ``value`` is not what runs."""

    raw: str
    value: str
    dynamic: bool = False
    substitution: bool = False


@dataclass
class Redirect:
    """A redirection: ``op`` with its file descriptor (``2>``, ``&>>``, ``<<``) and its
    ``target`` word (a heredoc's delimiter)."""

    raw: str
    op: str
    target: Word | None


@dataclass
class Simple:
    """A simple command as read: its words and redirections, in order."""

    words: list[Word]
    parts: list[Word | Redirect]


@dataclass
class Reading:
    """The simple commands of a line (outermost first) and, when it could not be read
    with certainty, why (the first reason found)."""

    commands: list[Simple] = field(default_factory=list)
    uncertain: str | None = None

    def doubt(self, why: str) -> None:
        if self.uncertain is None:
            self.uncertain = why


class _Reader:
    def __init__(self, text: str, out: Reading, depth: int) -> None:
        self.s = text
        self.i = 0
        self.out = out
        self.depth = depth
        self.heredocs: list[tuple[str, bool, bool]] = []  # (delimiter, strip tabs, expands)
        self.open: list[str] = []  # the compound commands open in the current list

    # -- helpers -------------------------------------------------------------------------

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def at(self, text: str) -> bool:
        return self.s.startswith(text, self.i)

    def blanks(self) -> None:
        while self.i < len(self.s):
            if self.s[self.i] in " \t":
                self.i += 1
            elif self.at("\\\n"):
                self.i += 2
            else:
                return

    def nested(self, text: str) -> None:
        """Read ``text`` (a backtick substitution, a ``bash -c`` script) as a line."""
        if self.depth >= MAX_DEPTH:
            self.out.doubt("substitutions nested too deep")
            return
        reader = _Reader(text, self.out, self.depth + 1)
        reader.read_list(None)

    # -- lists ---------------------------------------------------------------------------

    def read_list(self, end: str | None) -> None:
        """Commands until the end of the text, or the ``)`` closing a subshell or a
        ``$(`` / ``<(`` / ``>(`` when ``end`` is ``")"``; the reserved words in it must
        pair up (``if``…``then``…``fi``, ``while``…``do``…``done``, ``{``…``}``)."""
        outer, self.open = self.open, []
        try:
            self._read_list(end)
        finally:
            if self.open:
                self.out.doubt(f"{self.open[-1]} without its end")
            self.open = outer

    def _read_list(self, end: str | None) -> None:
        while True:
            self.blanks()
            if self.i >= len(self.s):
                if end is not None:
                    self.out.doubt("an unclosed parenthesis")
                if self.heredocs:
                    self.out.doubt("a heredoc without its body")
                return
            c = self.s[self.i]
            if c == "#":
                self.skip_comment()
            elif c == "\n":
                self.i += 1
                self.read_heredocs()
            elif c == ")":
                self.i += 1
                if end == ")":
                    return
                self.out.doubt("an unmatched )")
            elif c in ";&|":
                self.operator()
            elif c == "(":
                if self.at("(("):
                    self.out.doubt("an arithmetic command (( … ))")
                self.i += 1
                if self.depth >= MAX_DEPTH:
                    self.out.doubt("subshells nested too deep")
                    return
                self.depth += 1
                self.read_list(")")
                self.depth -= 1
            else:
                self.read_command()

    def operator(self) -> None:
        for op in (";;&", ";;", ";&"):
            if self.at(op):
                self.out.doubt(f"{op} outside a case")
                self.i += len(op)
                return
        for op in ("&&", "||", "|&", ";", "&", "|"):
            if self.at(op):
                self.i += len(op)
                return

    def skip_comment(self) -> None:
        end = self.s.find("\n", self.i)
        self.i = len(self.s) if end < 0 else end

    def read_heredocs(self) -> None:
        pending, self.heredocs = self.heredocs, []
        for delimiter, strip, expands in pending:
            while True:
                if self.i >= len(self.s):
                    self.out.doubt(f"a heredoc not ended by {delimiter}")
                    return
                end = self.s.find("\n", self.i)
                end = len(self.s) if end < 0 else end
                line = self.s[self.i : end]
                self.i = min(end + 1, len(self.s))
                if (line.lstrip("\t") if strip else line) == delimiter:
                    break
                if expands and ("$" in line or "`" in line or "\\" in line):
                    self.out.doubt("a heredoc whose body expands")

    # -- simple commands -----------------------------------------------------------------

    def read_command(self) -> None:
        words: list[Word] = []
        parts: list[Word | Redirect] = []
        subshell = False
        while True:
            self.blanks()
            if self.i >= len(self.s):
                break
            c = self.s[self.i]
            if c == "&" and self.peek(1) == ">":
                parts.append(self.redirection(""))
                continue
            if c in "\n;&|)":
                break
            if c == "#":
                self.skip_comment()
                break
            if c == "(":
                # After ``if``, ``!``, ``time``…: a subshell. After a name, ``name ( )``
                # defines a function; anything else here is a syntax error.
                if not all(w.raw in LEADING for w in words):
                    self.out.doubt("a function definition or a ( inside a command")
                subshell = True
                self.i += 1
                self.depth += 1
                self.read_list(")")
                self.depth -= 1
                continue
            if c in "<>" and self.peek(1) != "(":
                parts.append(self.redirection(""))
                continue
            word = self.read_word()
            follows = self.peek()
            # ``follows`` is "" at the end of the line, which ``in "<>"`` would accept:
            # ``sleep 5`` read as ``sleep 5>`` lost its 5 and was uncertain.
            if follows in ("<", ">") and self.peek(1) != "(" and _fd_prefix(word.raw):
                parts.append(self.redirection(word.raw))
                continue
            words.append(word)
            parts.append(word)
        self.reserved(words, subshell)
        if words or parts:
            self.out.commands.append(Simple(words, parts))

    def reserved(self, words: list[Word], subshell: bool) -> None:
        """Follow the reserved words that start a command: each must stand where bash
        takes it (``fi`` closes an ``if`` after its ``then``…), else the line is a
        syntax error to bash, and uncertain here."""
        k = 0
        while k < len(words) and words[k].raw in LEADING:
            word = words[k].raw
            top = self.open[-1] if self.open else ""
            needs = _NEEDS.get(word)
            if needs is not None and top not in needs:
                self.out.doubt(f"{word} out of place")
            elif word in _CLOSES:
                self.open.pop()
            elif needs is not None:
                self.open[-1] = word
            elif word in _OPENS:
                self.open.append(word)
            k += 1
        if k and k == len(words) and words[k - 1].raw in ("!", "time") and not subshell:
            self.out.doubt(f"{words[k - 1].raw} without a command")

    def redirection(self, prefix: str) -> Redirect:
        start = self.i
        for op in ("<<<", "<<-", "<<", "<>", "<&", ">>", ">&", ">|", "&>>", "&>", "<", ">"):
            if self.at(op):
                self.i += len(op)
                break
        op = self.s[start : self.i]
        self.blanks()
        if self.i >= len(self.s) or self.s[self.i] in "\n;&|()<>":
            self.out.doubt(f"a redirection {op} without its target")
            return Redirect(prefix + op, prefix + op, None)
        target = self.read_word()
        if op in ("<<", "<<-"):
            quoted = any(q in target.raw for q in "'\"\\")
            self.heredocs.append((target.value, op == "<<-", not quoted))
        return Redirect(f"{prefix}{op}{target.raw}", prefix + op, target)

    # -- words ---------------------------------------------------------------------------

    def read_word(self) -> Word:
        start = self.i
        value: list[str] = []
        word = Word("", "")
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c in "<>" and self.peek(1) == "(":  # also inside a word: a<(b) is a/dev/fd/63
                self.i += 2
                self.substitution(word)
                continue
            if c in _META:
                break
            if c == "\\":
                if self.peek(1) == "\n":
                    self.i += 2
                elif self.i + 1 < len(s):
                    value.append(s[self.i + 1])
                    self.i += 2
                else:
                    value.append("\\")
                    self.i += 1
            elif c == "'":
                end = s.find("'", self.i + 1)
                if end < 0:
                    self.out.doubt("an unclosed single quote")
                    end = len(s)  # the rest is its value (len(s) - 1 lost a character)
                value.append(s[self.i + 1 : end])
                self.i = end + 1
            elif c == '"':
                self.i += 1
                self.double_quoted(word, value)
            elif c == "$":
                self.dollar(word, value, quoted=False)
            elif c == "`":
                self.backtick(word, value, quoted=False)
            else:
                if c in "*?" or (c == "~" and self.i == start):
                    word.dynamic = True
                elif c == "[" and _BRACKET.match(s, self.i):
                    word.dynamic = True  # a glob's bracket expression
                elif c == "{" and _BRACES.match(s, self.i):
                    word.dynamic = True  # brace expansion, perhaps
                value.append(c)
                self.i += 1
        word.raw = s[start : self.i]
        word.value = "".join(value)
        if "[" in word.value and ("$(" in word.value or "`" in word.value):
            # bash evaluates an array subscript as arithmetic wherever a name is taken
            # (``x='a[$(rm y)]'; echo $((x))``, ``test -v``, ``printf -v``): it would run.
            self.out.doubt("a subscript holding a command substitution")
        return word

    def double_quoted(self, word: Word, value: list[str]) -> None:
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c == '"':
                self.i += 1
                return
            if c == "\\" and self.i + 1 < len(s):
                nxt = s[self.i + 1]
                if nxt == "\n":
                    pass
                elif nxt in '$`"\\':
                    value.append(nxt)
                else:
                    value.append("\\" + nxt)
                self.i += 2
            elif c == "$":
                self.dollar(word, value, quoted=True)
            elif c == "`":
                self.backtick(word, value, quoted=True)
            else:
                value.append(c)
                self.i += 1
        self.out.doubt("an unclosed double quote")

    def dollar(self, word: Word, value: list[str], *, quoted: bool) -> None:
        s = self.s
        nxt = self.peek(1)
        if nxt == "'" and not quoted:
            self.i += 2
            value.append(self.ansi_c())
        elif nxt == '"' and not quoted:
            self.i += 2
            self.double_quoted(word, value)
        elif nxt == "(":
            start = self.i
            if self.at("$(("):
                self.arithmetic(word)
            else:
                self.i += 2
                self.substitution(word)
            value.append(s[start : self.i])
        elif nxt == "{":
            end = _closing_brace(s, self.i + 2)
            inner = s[self.i + 2 : end] if end > 0 else ""
            if end < 0 or any(t in inner for t in ("$(", "`", "<(", ">(", "'", '"', "\\")):
                self.out.doubt("a ${…} expansion this reader does not follow")
            self.i = len(s) if end < 0 else end + 1
            word.dynamic = True
            value.append("${" + inner + "}")
        elif nxt and (nxt in "@*#?$!-0123456789" or _NAME.match(nxt)):
            found = _NAME.match(s, self.i + 1)
            start, self.i = self.i, found.end() if found else self.i + 2
            word.dynamic = True
            value.append(s[start : self.i])
        else:
            value.append("$")
            self.i += 1

    def ansi_c(self) -> str:
        """The value of ``$'…'`` from after its opening quote, consuming the closing one."""
        s = self.s
        out: list[str] = []
        while self.i < len(s):
            c = s[self.i]
            if c == "'":
                self.i += 1
                return "".join(out)
            if c == "\\" and self.i + 1 < len(s):
                nxt = s[self.i + 1]
                self.i += 2
                if nxt in _ESCAPES:
                    out.append(_ESCAPES[nxt])
                elif nxt in "01234567":
                    digits = re.match(r"[0-7]{0,2}", s[self.i :])
                    self.i += len(digits.group()) if digits else 0
                    out.append(chr(int(nxt + (digits.group() if digits else ""), 8) & 0xFF))
                elif nxt in "xuUc":
                    # Hexadecimal, Unicode and control escapes: a value this reader does
                    # not compute; in a command name that is a doubt, elsewhere data.
                    out.append("\x00")
                    skip = re.match(_HEX.get(nxt, "."), s[self.i :])
                    self.i += len(skip.group()) if skip else 0
                else:
                    out.append("\\" + nxt)
                continue
            out.append(c)
            self.i += 1
        self.out.doubt("an unclosed $' quote")
        return "".join(out)

    def arithmetic(self, word: Word) -> None:
        """``$(( … ))``: read when it holds only operators, numbers and names."""
        s = self.s
        end = s.find("))", self.i + 3)
        inner = s[self.i + 3 : end] if end > 0 else ""
        word.dynamic = True
        if end < 0 or not _ARITHMETIC.fullmatch(inner) or "$(" in inner or not _nested(inner):
            # ``$((a) | (b))`` is a command substitution to bash: find those commands.
            self.out.doubt("an arithmetic expansion this reader cannot read")
            self.i += 2
            self.substitution(word)
            return
        self.i = end + 2

    def substitution(self, word: Word) -> None:
        """``$(``, ``<(`` or ``>(`` was read: its commands, up to the closing ``)``."""
        word.dynamic = word.substitution = True
        if self.depth >= MAX_DEPTH:
            self.out.doubt("substitutions nested too deep")
            self.i = len(self.s)
            return
        self.depth += 1
        self.read_list(")")
        self.depth -= 1

    def backtick(self, word: Word, value: list[str], *, quoted: bool) -> None:
        """A backtick substitution: its commands; its text, as written, into ``value``."""
        s = self.s
        begin = self.i
        word.dynamic = word.substitution = True
        j = self.i + 1
        inner: list[str] = []
        while j < len(s):
            c = s[j]
            if c == "`":
                break
            if c == "\\" and j + 1 < len(s):
                nxt = s[j + 1]
                if nxt in "$`\\":
                    inner.append(nxt)
                elif nxt == '"' and quoted:
                    self.out.doubt('a \\" inside backticks inside double quotes')
                    inner.append(nxt)
                else:
                    inner.append("\\" + nxt)
                j += 2
                continue
            inner.append(c)
            j += 1
        if j >= len(s):
            self.out.doubt("an unclosed backtick")
        self.i = j + 1
        value.append(s[begin : self.i])
        self.nested("".join(inner))


def _fd_prefix(raw: str) -> bool:
    """Whether a word right before ``<``/``>`` is its file descriptor (``2>``, ``{fd}>``)."""
    return raw.isdigit() or re.fullmatch(r"\{[A-Za-z_][A-Za-z0-9_]*\}", raw) is not None


def _nested(text: str) -> bool:
    """Whether the parentheses of ``text`` pair up in order (none closes before it opens)."""
    depth = 0
    for c in text:
        depth += (c == "(") - (c == ")")
        if depth < 0:
            return False
    return depth == 0


def _closing_brace(s: str, start: int) -> int:
    depth = 1
    i = start
    while i < len(s):
        if s[i] == "\\":
            i += 2
            continue
        if s[i] == "{":
            depth += 1
        elif s[i] == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def read_line(text: str, depth: int = 0) -> Reading:
    """The simple commands of ``text`` as read (see the module docstring)."""
    out = Reading()
    if depth > MAX_DEPTH:
        out.doubt("substitutions nested too deep")
        return out
    _Reader(text, out, depth).read_list(None)
    return out
