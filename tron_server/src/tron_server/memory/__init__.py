"""Memory across sessions: the original Tron's ledger and handoffs on the event store,
lessons, and Recall (``docs/memory.md``).

- :mod:`.ledger` / :mod:`.ledger_write`: ``.tron/ledger.md`` and ``~/.tron/ledger.md``,
  working memory in Markdown; the project's is brought up to date at compaction and session
  end, written as the tools write files (recorded, so it rewinds with the tree).
- :mod:`.handoffs`: ``memory.handoff`` events (episodic memory) made by a side call with a
  forced tool (:mod:`.sidecall`), and which of them are relevant to a prompt.
- :mod:`.lessons`: the handoffs' ``patterns``, counted per workspace.
- :mod:`.loader`: the ``memory.loaded`` text put before the first prompt, within a budget.
- :mod:`.recall`: searching a workspace's past sessions and reading around a hit (the
  Recall tool lives in ``tools/``, above this package).
- :mod:`.settings`: the ``memory`` key of settings.json, each part on or off.

The runtime uses these from ``agent/`` (:mod:`tron_server.agent.session_memory`).
"""

from __future__ import annotations

from .handoffs import (
    HANDOFF_TYPE,
    MEMORY_TOOL,
    ParsedReply,
    handoff_json,
    keywords,
    memory_tool,
    parse_reply,
    recent_handoffs,
    relevant_handoffs,
    render_handoff,
)
from .ledger import (
    SECTIONS,
    TEMPLATE,
    LedgerFile,
    cut_text,
    project_ledger_path,
    read_ledger,
    read_ledgers,
    user_ledger_path,
)
from .ledger_write import LedgerRefused, with_sections, write_project_ledger
from .lessons import Lesson, collect_lessons
from .loader import MEMORY_BUDGET_TOKENS, Injection, compose
from .recall import NotInWorkspace, RecallHit, excerpt, render_hits, search_workspace
from .settings import MemorySettings, load_memory_settings
from .sidecall import MemoryCallFailed, SideCall, memory_call

__all__ = [
    "HANDOFF_TYPE",
    "MEMORY_BUDGET_TOKENS",
    "MEMORY_TOOL",
    "SECTIONS",
    "TEMPLATE",
    "Injection",
    "LedgerFile",
    "LedgerRefused",
    "Lesson",
    "MemoryCallFailed",
    "MemorySettings",
    "NotInWorkspace",
    "ParsedReply",
    "RecallHit",
    "SideCall",
    "collect_lessons",
    "compose",
    "cut_text",
    "excerpt",
    "handoff_json",
    "keywords",
    "load_memory_settings",
    "memory_call",
    "memory_tool",
    "parse_reply",
    "project_ledger_path",
    "read_ledger",
    "read_ledgers",
    "recent_handoffs",
    "relevant_handoffs",
    "render_handoff",
    "render_hits",
    "search_workspace",
    "user_ledger_path",
    "with_sections",
    "write_project_ledger",
]
