"""The ``/`` commands the input completes, all learned from the server.

Two sources, both through RPC:

* the server's own commands, from ``command.list`` when the server has that
  method (built-ins and Markdown command files: the client sends ``/name args``
  as a message and the server expands it);
* the client's commands, each a thin wrapper over one protocol method, offered
  only when ``system.info`` lists that method (``/model`` → ``model.switch``,
  ``/compact`` → ``context.compact``, ``/tree`` → ``session.getTree`` …).

A server command wins over a client command of the same name, except for the
few that only make sense on this screen (``/help``, ``/quit``, ``/tree``,
``/sessions``, ``/new``).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Literal

from .capabilities import Capabilities

Source = Literal["server", "client", "mention"]


@dataclass(frozen=True)
class Command:
    name: str
    """Without the leading ``/``."""
    description: str
    source: Source
    argument_hint: str = ""
    builtin: bool = False
    """A server built-in (acts on a session), rather than a command file (a prompt)."""


#: name, needed method (None: always), argument hint, description.
_CLIENT: tuple[tuple[str, str | None, str, str], ...] = (
    ("help", None, "", "Commands and keys"),
    ("tree", "session.getTree", "", "The session's tree: fork or rewind at any message"),
    ("model", "model.switch", "[name]", "Switch the model (no name: list the models)"),
    ("compact", "context.compact", "", "Summarize the older history now"),
    ("context", "context.get", "", "How much of the context window is in use"),
    ("cost", "session.get", "", "Tokens and cost of this session"),
    ("fork", "session.fork", "", "Continue in a new session forked at the head"),
    ("diff", "session.diff", "", "The files the agent changed in this session, as diffs"),
    ("sessions", "session.list", "", "Switch to another session of this folder"),
    ("new", "session.create", "", "Start a new session in this folder"),
    ("answer", "agent.respond", "", "Show the pending question or approval again"),
    ("web", "system.loginUrl", "", "A login URL for the web chat (it works once)"),
    ("retry", "session.rewind", "", "After a failed turn: send its message again"),
    ("edit", "session.rewind", "", "After a failed turn: put its message back in the input"),
    ("quit", None, "", "Quit (the session stays: `tron -c` continues it)"),
)
#: Client commands a server command of the same name does not replace.
SCREEN_ONLY = frozenset({"help", "quit", "tree", "sessions", "new", "answer", "retry", "edit"})


def client_commands(caps: Capabilities) -> list[Command]:
    return [
        Command(name, description, "client", hint)
        for name, method, hint, description in _CLIENT
        if method is None or caps.has(method)
    ]


def parse_server_commands(result: Any) -> list[Command]:
    """``command.list``'s answer (``{commands: [{name, description, argumentHint?}]}``)."""
    raw = result.get("commands") if isinstance(result, dict) else result
    out: list[Command] = []
    for entry in raw if isinstance(raw, list) else []:
        if isinstance(entry, str):
            entry = {"name": entry}
        if not isinstance(entry, dict) or not entry.get("name"):
            continue
        name = str(entry["name"]).lstrip("/")
        hint = entry.get("argumentHint") or entry.get("argument_hint") or ""
        builtin = entry.get("source") == "builtin"
        out.append(Command(name, str(entry.get("description") or ""), "server", str(hint), builtin))
    return out


def parse_mentions(listing: Any) -> list[Command]:
    """``mcp.list``'s resources as ``@server:uri`` completions (``name``: without ``@``)."""
    out: list[Command] = []
    servers = listing.get("servers") if isinstance(listing, dict) else None
    for server in servers if isinstance(servers, list) else []:
        for resource in server.get("resources") or [] if isinstance(server, dict) else []:
            mention = str(resource.get("mention") or "").lstrip("@")
            if mention:
                about = resource.get("name") or resource.get("description") or ""
                out.append(Command(mention, str(about), "mention"))
    return out


def mention_word(text: str) -> str | None:
    """The ``@word`` being typed at the end of ``text`` (without ``@``), or None."""
    if not text or text[-1].isspace():
        return None
    word = text.split()[-1] if text.split() else ""
    return word[1:] if word.startswith("@") else None


def merge(client: list[Command], server: list[Command]) -> list[Command]:
    """One list by name: server commands, plus the client's it does not replace."""
    by_name = {c.name: c for c in server}
    for command in client:
        if command.name in SCREEN_ONLY or command.name not in by_name:
            by_name[command.name] = command
    return sorted(by_name.values(), key=lambda c: c.name)


def split(text: str) -> tuple[str, str] | None:
    """``("model", "opus")`` for ``/model opus``; None when ``text`` is not a command
    (no leading ``/``, or a path such as ``/usr/bin/env …``)."""
    stripped = text.strip()
    if not stripped.startswith("/") or stripped.startswith("//"):
        return None
    word, _, rest = stripped[1:].partition(" ")
    head = word.split("\n", 1)[0]
    if not head or "/" in head:
        return None
    if head != word:  # "/name\nmore" — the rest starts on the next line
        rest = word[len(head) :].lstrip("\n") + (" " + rest if rest else "")
    return head, rest.strip()


def matching(commands: list[Command], prefix: str) -> list[Command]:
    """Commands whose name starts with ``prefix`` (then those that contain it)."""
    prefix = prefix.lower()
    starts = [c for c in commands if c.name.lower().startswith(prefix)]
    contains = [c for c in commands if prefix in c.name.lower() and c not in starts]
    return starts + contains


def nearest(commands: list[Command], name: str) -> list[str]:
    """The closest names, for an unknown command's message."""
    return difflib.get_close_matches(name, [c.name for c in commands], n=3, cutoff=0.5)


__all__ = [
    "SCREEN_ONLY",
    "Command",
    "client_commands",
    "matching",
    "mention_word",
    "merge",
    "nearest",
    "parse_mentions",
    "parse_server_commands",
    "split",
]
