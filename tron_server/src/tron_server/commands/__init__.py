"""Slash commands: built-ins (:mod:`.builtins`) and Markdown command files in Claude Code's
format (:mod:`.files`, expanded by :mod:`.expand`), routed by :mod:`.router`, installed on
the method registry by :func:`register` (:mod:`.install`)."""

from __future__ import annotations

from .builtins import BUILTINS, Builtin
from .expand import ExpansionError, expand_body, split_arguments
from .files import CommandFile, discover_commands, parse_command_file
from .install import register
from .router import command_list, parse_command, resolve, run_command_message

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
