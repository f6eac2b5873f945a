"""The user in the loop: questions, approvals, permission rules and modes, notifications.

- :mod:`.rules` — Claude Code's permission rule syntax (``Bash(git push:*)``,
  ``Edit(src/**)``, ``Read(./.env)``) and how a tool call matches it;
- :mod:`.settings` — the ``permissions`` key of the settings files;
- :mod:`.modes` and :mod:`.policy` — the modes, and the allow / ask / deny decision;
- :mod:`.requests` — questions and approvals a running turn waits for;
- :mod:`.pending` and :mod:`.resume` — a request left by a stopped run, answered later;
- :mod:`.service` — :class:`Interaction`, the server's one instance of all this;
- :mod:`.tools` — the ``AskUser`` and ``Notify`` tools.
"""

from __future__ import annotations

from .modes import MODES, PermissionMode
from .policy import Verdict, decide
from .requests import AlreadyAnswered, Answer, parse_answer
from .rules import CallFacts, Rule, RuleSet, RuleSyntaxError, parse_rule, suggest_rule
from .service import Interaction
from .settings import PermissionSettings, PermissionSettingsError, load_permission_settings
from .tools import AskUserTool, NotifyTool

__all__ = [
    "MODES",
    "AlreadyAnswered",
    "Answer",
    "AskUserTool",
    "CallFacts",
    "Interaction",
    "NotifyTool",
    "PermissionMode",
    "PermissionSettings",
    "PermissionSettingsError",
    "Rule",
    "RuleSet",
    "RuleSyntaxError",
    "Verdict",
    "decide",
    "load_permission_settings",
    "parse_answer",
    "parse_rule",
    "suggest_rule",
]
