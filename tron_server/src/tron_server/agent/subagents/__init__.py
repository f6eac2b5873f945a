"""Sub-agents: the Task tool, agent definition files and child sessions.

A Task call starts a *child session* in the parent's workspace and working directory
(``parent_session_id`` set; see :mod:`.profile`), runs the child's own turn loop through the
orchestrator, and returns its final reply (:mod:`.spawner`). Agents are Markdown files in
Claude Code's sub-agent format (:mod:`.definitions`); a child is offered only its agent's
tools (:mod:`.scoped_tools`) and gets the Task tool itself only while the depth limit allows.
"""

from __future__ import annotations

from .definitions import (
    GENERAL_PURPOSE,
    AgentDefinition,
    AgentFileError,
    discover_agents,
    parse_agent_file,
)
from .models import ModelChoice, resolve_model
from .profile import TOP_LEVEL, ParentLink, SessionProfile, SubagentSettings, load_profile
from .scoped_tools import ScopedTools
from .spawner import Spawner
from .task_tool import TASK_TOOL_NAME, TaskParams, TaskTool, task_description

__all__ = [
    "GENERAL_PURPOSE",
    "TASK_TOOL_NAME",
    "TOP_LEVEL",
    "AgentDefinition",
    "AgentFileError",
    "ModelChoice",
    "ParentLink",
    "ScopedTools",
    "SessionProfile",
    "Spawner",
    "SubagentSettings",
    "TaskParams",
    "TaskTool",
    "discover_agents",
    "load_profile",
    "parse_agent_file",
    "resolve_model",
    "task_description",
]
