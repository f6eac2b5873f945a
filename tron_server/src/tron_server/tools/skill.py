"""Skill: load a skill's instructions (its SKILL.md) into the conversation on demand.

Skills are discovered at call time from ``<home>/skills``, ``~/.claude/skills`` and the
working directory's ``.claude/skills`` and ``.tron/skills``
(see :mod:`tron_server.context.skills`), so a skill added during a session is available at
once. A successful load is recorded as ``skill.added`` ``{name, path, scope, toolCallId}``.
"""

from __future__ import annotations

from pathlib import Path

import anyio
from pydantic import BaseModel, ConfigDict, Field

from ..context.skills import (
    Skill,
    SkillNotFoundError,
    discover_skills,
    find_skill,
    skill_files,
)
from .base import Tool, ToolContext, ToolResult

__all__ = ["SkillParams", "SkillTool"]


class SkillParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, description="Name of the skill to load, as listed.")


def _render(skill: Skill) -> tuple[str, int]:
    body = skill.body().strip()
    files, total = skill_files(skill)
    parts = [f'<skill name="{skill.name}" path="{skill.path}">\n{body}\n</skill>']
    if files:
        listing = "\n".join(f"- {f}" for f in files)
        more = f"\n… and {total - len(files)} more" if total > len(files) else ""
        parts.append(
            f"Other files in this skill's folder {skill.folder} (read them with Read when the "
            f"instructions refer to them):\n{listing}{more}"
        )
    return "\n\n".join(parts), total


class SkillTool(Tool[SkillParams]):
    """Return a skill's SKILL.md body and list the other files of its folder."""

    name = "Skill"
    description = (
        "Load a skill: instructions for a particular kind of task, listed by name and "
        "description in the system prompt. Call it with the skill's name before starting a "
        "task that matches the skill, then follow the instructions it returns."
    )
    Params = SkillParams

    def __init__(self, home: Path) -> None:
        self.home = home

    async def run(self, params: SkillParams, ctx: ToolContext) -> ToolResult:
        def load() -> tuple[Skill, str, int]:
            skill = find_skill(params.name, discover_skills(self.home, ctx.working_directory))
            text, total = _render(skill)
            return skill, text, total

        try:
            skill, text, total = await anyio.to_thread.run_sync(load)
        except SkillNotFoundError as exc:
            return ToolResult(str(exc), is_error=True)
        except OSError as exc:
            return ToolResult(f"Could not read skill {params.name!r}: {exc}", is_error=True)
        await ctx.record(
            "skill.added",
            {
                "name": skill.name,
                "path": str(skill.path),
                "scope": skill.scope,
                "toolCallId": ctx.tool_call_id,
            },
        )
        return ToolResult(
            text,
            details={
                "skill": skill.name,
                "path": str(skill.path),
                "files": total,
            },
        )
