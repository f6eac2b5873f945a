"""Permission modes: what a session may do without asking.

==================  ==========================================================================
``default``         read-only tools run; anything else asks, unless a rule allows it
``acceptEdits``     as default, and file edits (Write, Edit) inside the working directory (or a
                    ``permissions.additionalDirectories`` folder) run without asking
``plan``            read-only tools only: the agent reads and proposes, nothing changes (Write,
                    Edit, Bash and every other tool are refused, whatever the rules say)
``dontAsk``         never asks: what would ask is refused (for scripts and CI)
``bypassPermissions``  nothing asks (explicit ``ask`` rules and hooks still do); only when
                    the server was started with ``--allow-bypass-permissions``
==================  ==========================================================================

In every mode ``deny`` rules refuse and the guardrails still refuse what they refuse.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = [
    "CYCLE",
    "EDIT_TOOLS",
    "MODES",
    "MODE_DESCRIPTIONS",
    "NO_APPROVAL_TOOLS",
    "PATH_TOOLS",
    "READ_TOOLS",
    "PermissionMode",
    "is_mode",
]

PermissionMode = Literal["default", "acceptEdits", "plan", "dontAsk", "bypassPermissions"]
MODES: tuple[PermissionMode, ...] = get_args(PermissionMode)

#: What Shift+Tab cycles through (bypassPermissions follows plan when the server allows it).
CYCLE: tuple[PermissionMode, ...] = ("default", "acceptEdits", "plan")

MODE_DESCRIPTIONS: dict[str, str] = {
    "default": "Ask before anything that is not read-only, unless a rule allows it",
    "acceptEdits": "Also edit files in the working directory without asking",
    "plan": "Read-only: the agent reads and proposes a plan, nothing changes",
    "dontAsk": "Never ask: refuse what a rule does not allow",
    "bypassPermissions": "Never ask (deny rules, ask rules and guardrails still apply)",
}

#: Tools that read, or only talk to the user: they run in every mode without approval
#: (Task starts a sub-agent whose own tool calls are checked in its turn; Recall reads the
#: workspace's own past sessions).
NO_APPROVAL_TOOLS = frozenset(
    {"Read", "Grep", "Glob", "TodoWrite", "AskUser", "Notify", "Skill", "Task", "Recall"}
)
#: Tools that change files (what ``Edit(...)`` rules and acceptEdits cover).
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
#: Tools that read files (what ``Read(...)`` rules cover).
READ_TOOLS = frozenset({"Read", "Grep", "Glob"})
#: Tools whose calls name a path, and the argument that holds it.
PATH_TOOLS: dict[str, str] = {
    "Read": "file_path",
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
    "Grep": "path",
    "Glob": "path",
}


def is_mode(value: object) -> bool:
    """Whether ``value`` names a permission mode."""
    return isinstance(value, str) and value in MODES
