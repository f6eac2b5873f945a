"""Slash commands: built-ins (:mod:`.builtins`) and Markdown command files in Claude Code's
format (:mod:`.files`, expanded by :mod:`.expand`), routed by :mod:`.router`, installed on
the method registry by :func:`register` (:mod:`.install`)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .install import register
from .router import command_list, parse_command, resolve, run_command_message

# The built-ins, command files and expansion load when first used (a command, or a name
# read from here): the server's start, which installs the commands, needs none of them.
if TYPE_CHECKING:
    from .builtins import BUILTINS, Builtin
    from .expand import ExpansionError, expand_body, split_arguments
    from .files import CommandFile, discover_commands, parse_command_file

_LAZY = {
    "BUILTINS": "builtins",
    "Builtin": "builtins",
    "ExpansionError": "expand",
    "expand_body": "expand",
    "split_arguments": "expand",
    "CommandFile": "files",
    "discover_commands": "files",
    "parse_command_file": "files",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "BUILTINS",
    "Builtin",
    "CommandFile",
    "ExpansionError",
    "command_list",
    "discover_commands",
    "expand_body",
    "parse_command",
    "parse_command_file",
    "register",
    "resolve",
    "run_command_message",
    "split_arguments",
]
