"""Commands that run another command: ``sudo rm …``, ``timeout 5 make``, ``bash -c '…'``.

:func:`unwrap` looks at a simple command's words and says what it runs: the words of the
command it wraps (after the wrapper's own options), a script (``bash -c`` / ``sh -c``), or
why that cannot be known (an option this reader does not know, a script that expands).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from .reader import ASSIGNMENT, Word

__all__ = ["Unwrapped", "unwrap"]

#: name -> (short options taking a value, long options taking a value, short flags,
#: long flags). An option outside these makes the wrapped command uncertain.
_OPTIONS: dict[str, tuple[str, frozenset[str], str, frozenset[str]]] = {
    "sudo": ("ugChpUrtDT", frozenset({"--user", "--group", "--close-from", "--host",
             "--prompt", "--other-user", "--role", "--type", "--chdir", "--command-timeout"}),
             "EHnPSbAB", frozenset({"--preserve-env", "--set-home", "--non-interactive",
             "--preserve-groups", "--stdin", "--background", "--askpass", "--bell"})),
    "doas": ("uC", frozenset(), "ns", frozenset()),
    "nohup": ("", frozenset(), "", frozenset()),
    "env": ("uC", frozenset({"--unset", "--chdir"}), "i0v",
            frozenset({"--ignore-environment", "--null", "--debug"})),
    "nice": ("n", frozenset({"--adjustment"}), "", frozenset()),
    "timeout": ("sk", frozenset({"--signal", "--kill-after"}), "v",
                frozenset({"--preserve-status", "--foreground", "--verbose"})),
    "exec": ("a", frozenset(), "cl", frozenset()),
    "command": ("", frozenset(), "pvV", frozenset()),
    "builtin": ("", frozenset(), "", frozenset()),
    "setsid": ("", frozenset(), "cfw", frozenset({"--ctty", "--fork", "--wait"})),
    "ionice": ("cnpP", frozenset({"--class", "--classdata", "--pid", "--pgid"}), "t",
               frozenset({"--ignore"})),
    "busybox": ("", frozenset(), "", frozenset()),
    "stdbuf": ("ioe", frozenset({"--input", "--output", "--error"}), "", frozenset()),
    "xargs": ("ILnPsdEa", frozenset({"--max-args", "--max-procs", "--max-chars",
              "--delimiter", "--arg-file", "--process-slot-var"}), "0rtpx",
              frozenset({"--null", "--no-run-if-empty", "--verbose", "--interactive", "--exit",
              "--open-tty",
              # their value is optional, so only ever attached (--replace=R)
              "--replace", "--eof", "--max-lines"})),
    "time": ("fo", frozenset({"--format", "--output"}), "apvq",
             frozenset({"--append", "--portability", "--verbose", "--quiet"})),
}  # fmt: skip
#: Short options whose value, when given, is attached (``xargs -I{}`` also takes one apart).
_ATTACHED_ONLY = {"xargs": "ile"}
#: Wrappers followed by operands before the command (``timeout 5 cmd``).
_OPERANDS = {"timeout": 1}
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "fish", "csh", "tcsh"})
#: Shells whose grammar this reader follows (dash's is, for finding commands, a subset).
_READ = frozenset({"sh", "bash", "dash"})
#: Shell options taking a value (``bash -o pipefail -c …``).
_SHELL_VALUES = frozenset({"o", "O"})
_SHELL_LONG_VALUES = frozenset({"--rcfile", "--init-file"})


@dataclass
class Unwrapped:
    """What a wrapper runs: ``words`` of the wrapped command, or a ``script`` (``-c``);
    ``implicit``: the command it runs when none is named (``xargs`` runs ``echo``);
    ``doubt``: why what it runs is not known."""

    words: list[Word] = field(default_factory=list)
    #: Further commands it runs (each ``find -exec … ;``).
    also: list[list[Word]] = field(default_factory=list)
    script: str | None = None
    implicit: str | None = None
    doubt: str | None = None


def unwrap(words: list[Word]) -> Unwrapped | None:
    """What the command ``words`` runs inside it, or None when it is no wrapper."""
    if not words:
        return None
    name = os.path.basename(words[0].value)
    if name in SHELLS:
        return _shell(words)
    if name == "find":
        return _find(words)
    spec = _OPTIONS.get(name)
    if spec is None:
        return None
    with_value, long_value, flags, long_flags = spec
    attached = _ATTACHED_ONLY.get(name, "")
    i = 1
    while i < len(words):
        word = words[i]
        arg = word.value
        if word.dynamic and arg.startswith("-"):
            return Unwrapped(doubt=f"an option of {name} that expands")
        if arg == "--":
            i += 1
            break
        if arg == "-" and name == "env":  # env - cmd: env -i cmd
            i += 1
            continue
        if name == "nice" and len(arg) > 1 and arg[0] == "-" and arg[1:].isdigit():
            i += 1  # nice -10 cmd
            continue
        if arg.startswith("--"):
            key = arg.split("=", 1)[0]
            if key in long_value:
                i += 1 if "=" in arg else 2
            elif key in long_flags:
                i += 1
            else:
                return Unwrapped(doubt=f"the option {arg} of {name}")
            continue
        if arg.startswith("-") and len(arg) > 1:
            taken = _short(arg[1:], with_value, flags + attached, attached)
            if taken is None:
                return Unwrapped(doubt=f"the option {arg} of {name}")
            i += 1 + taken
            continue
        if name == "env" and ASSIGNMENT.match(word.raw):
            i += 1
            continue
        break
    # -S as an option is refused above; as another option's value (env -u -S rm) env
    # runs what follows, but the check stays conservative: uncertain, and what follows is
    # still reported, so that deny rules see it.
    split = name == "env" and any(w.value in ("-S", "--split-string") for w in words[1:i])
    i += _OPERANDS.get(name, 0)
    rest = words[i:]
    if split:
        return Unwrapped(words=rest, doubt="env -S splits its own command line")
    if not rest:
        if name == "xargs":
            return Unwrapped(implicit="echo")
        return Unwrapped()
    return Unwrapped(words=rest)


def _find(words: list[Word]) -> Unwrapped | None:
    """``find … -exec cmd {} ;`` (also ``-execdir``, ``-ok``, ``-okdir``, ending with ``+``)
    runs each ``cmd``."""
    found: list[list[Word]] = []
    current: list[Word] | None = None
    for word in words[1:]:
        if current is None:
            if word.value in ("-exec", "-execdir", "-ok", "-okdir"):
                current = []
        elif word.value in (";", "+") and current:
            found.append(current)
            current = None
        else:
            current.append(word)
    if current is not None:
        return Unwrapped(doubt="a find -exec without its ; or +")
    if not found:
        return None
    return Unwrapped(words=found[0], also=found[1:])


def _short(cluster: str, with_value: str, flags: str, attached: str) -> int | None:
    """How many following words a cluster of short options (``-Eu``) takes: 0 or 1, or
    None when it holds an unknown option."""
    for k, letter in enumerate(cluster):
        if letter in with_value:
            return 0 if cluster[k + 1 :] else 1
        if letter in attached:
            return 0
        if letter not in flags:
            return None
    return 0


def _shell(words: list[Word]) -> Unwrapped:
    found = _shell_script(words)
    if found.script is not None and os.path.basename(words[0].value) not in _READ:
        found.doubt = f"a {os.path.basename(words[0].value)} script (read with bash's grammar)"
    return found


def _shell_script(words: list[Word]) -> Unwrapped:
    """``bash [options] -c script`` runs ``script``; ``bash file`` runs a file (no
    doubt: that is the command); ``bash`` alone or with ``-s`` reads commands from its
    input, which this reader cannot see."""
    command_mode = False
    reads_input = False
    i = 1
    while i < len(words):
        word = words[i]
        arg = word.value
        if word.dynamic and arg[:1] in "-+":
            return Unwrapped(doubt="an option of a shell that expands")
        if arg == "--" or arg == "-":
            i += 1
            break
        if arg.startswith("--"):
            i += 2 if arg in _SHELL_LONG_VALUES else 1
            continue
        if arg[:1] in "-+" and len(arg) > 1:
            cluster = arg[1:]
            command_mode = command_mode or "c" in cluster
            reads_input = reads_input or "s" in cluster
            takes = sum(1 for letter in cluster if letter in _SHELL_VALUES)
            i += 1 + takes
            continue
        break
    rest = words[i:]
    if command_mode:
        if not rest:
            return Unwrapped(doubt="a shell's -c without its script")
        if rest[0].dynamic:
            return Unwrapped(doubt="a shell's -c script that expands")
        return Unwrapped(script=rest[0].value)
    if reads_input or not rest:
        return Unwrapped(doubt="a shell reading commands from its input")
    return Unwrapped()
