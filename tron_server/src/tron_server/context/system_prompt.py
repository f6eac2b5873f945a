"""The system prompt: default coding-agent instructions, the environment, the rules files
(with their paths) and the skills on offer (by name and description)."""

from __future__ import annotations

import platform
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from .rules import RulesFile
from .skills import Skill

__all__ = ["DEFAULT_INSTRUCTIONS", "build_system_prompt", "render_rules", "render_skills"]

DEFAULT_INSTRUCTIONS = """\
You are Tron, a coding agent working in the user's project on their own machine. You read,
search, edit and run code with the tools you are given, and you answer questions about it.

How to work:
- Understand before you change: read the relevant files and search the code base first.
  Never guess at the contents of a file you have not read.
- Make the smallest change that fully solves the task, in the style of the surrounding code.
  Prefer editing existing files to creating new ones; do not add files nobody asked for.
- Use Edit for changes to existing files (old_string must match the file exactly, once) and
  Write for new files. Paths may be absolute or relative to the working directory.
- Run the project's tests, linters or the program itself with Bash to check your work when
  that is possible, and report honestly what passed and what did not.
- Do not run destructive or irreversible commands (deleting data, force-pushing, rewriting
  history, touching files outside the project) unless the user asked for exactly that.
  Some are refused by guardrails; when a tool call is refused, the result says why: do not
  try to get around it, tell the user instead.
- When several independent tool calls are needed, make them together.
- For multi-step work keep a short plan with TodoWrite and keep it up to date.
- Be concise. Explain what you did and why in a few sentences; show code only when it helps.
  If something is ambiguous or risky, ask the user before acting.
"""


def render_rules(rules: Sequence[RulesFile]) -> str:
    """Rules files as a prompt section: each file's content under a heading with its path."""
    if not rules:
        return ""
    parts = [
        "# Rules files\n\n"
        "The user's standing instructions for this project, from these files (general first, "
        "more specific later; a later, more specific file wins where they disagree). "
        "Follow them; they override the defaults above.\n"
    ]
    for f in rules:
        where = {"global": "global", "project": "project", "directory": "folder"}[f.scope]
        parts.append(f'<rules path="{f.path}" scope="{where}">\n{f.content.strip()}\n</rules>')
    return "\n\n".join(parts)


def render_skills(skills: Sequence[Skill]) -> str:
    """Skills as a prompt section: name and description of each, and how to load one."""
    if not skills:
        return ""
    lines = [
        "# Skills\n\n"
        "Skills are instructions for particular tasks. When a task matches a skill's "
        "description, load it with the Skill tool (parameter `name`) before you start, "
        "then follow it.\n"
    ]
    lines += [f"- {s.name}: {s.description}" for s in skills]
    return "\n".join(lines)


def build_system_prompt(
    *,
    working_directory: Path,
    rules: Sequence[RulesFile] = (),
    skills: Sequence[Skill] = (),
    base: str | None = None,
    now: datetime | None = None,
    platform_name: str | None = None,
) -> str:
    """The full system prompt.

    ``base`` replaces :data:`DEFAULT_INSTRUCTIONS` (a session's custom prompt); the
    environment, rules and skills sections are added either way. ``now`` and
    ``platform_name`` default to the current date and ``platform.platform()``; pass them
    for a reproducible prompt.
    """
    moment = now or datetime.now().astimezone()
    system = platform_name or platform.platform()
    environment = (
        "# Environment\n\n"
        f"- Working directory: {working_directory}\n"
        f"- Platform: {system}\n"
        f"- Date: {moment.strftime('%A, %Y-%m-%d')}"
    )
    sections = [(base if base is not None else DEFAULT_INSTRUCTIONS).strip(), environment]
    for extra in (render_rules(rules), render_skills(skills)):
        if extra:
            sections.append(extra)
    return "\n\n".join(sections) + "\n"
