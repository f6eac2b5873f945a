"""Context for the model: rules files (AGENTS.md), skills (SKILL.md) and the system prompt."""

from __future__ import annotations

from .rules import RulesFile, RulesLoader, RulesScope, rules_loaded_payload
from .skills import (
    Skill,
    SkillNotFoundError,
    discover_skills,
    find_skill,
    load_skill,
    parse_front_matter,
)
from .system_prompt import DEFAULT_INSTRUCTIONS, build_system_prompt, render_rules, render_skills

__all__ = [
    "DEFAULT_INSTRUCTIONS",
    "RulesFile",
    "RulesLoader",
    "RulesScope",
    "Skill",
    "SkillNotFoundError",
    "build_system_prompt",
    "discover_skills",
    "find_skill",
    "load_skill",
    "parse_front_matter",
    "render_rules",
    "render_skills",
    "rules_loaded_payload",
]
