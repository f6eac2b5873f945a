"""The public names of tron_events and tron_llm: ``__all__`` is the surface, every
name in it resolves, nothing public is left out of it, and the names DESIGN §3
makes a contract are all there (httpx's ``test_exported_members`` pattern).

A rename or a forgotten export fails here before it reaches a user's import.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import types
from pathlib import Path

import pytest

import tron_events
import tron_events.messages
import tron_events.reconstruct
import tron_llm

# DESIGN §3: "names are a contract; add, don't rename".
STORE_METHODS = [
    "get_or_create_workspace",
    "create_session",
    "get_session",
    "list_sessions",
    "end_session",
    "delete_session",
    "append",
    "append_many",
    "get_event",
    "get_events",
    "get_ancestors",
    "get_children",
    "get_since",
    "fork",
    "rewind",
    "get_messages_at",
    "get_state_at",
    "get_state_at_head",
    "search",
]
ERRORS = [
    "TronEventsError",
    "SessionNotFound",
    "EventNotFound",
    "ConcurrencyConflict",
    "EventIdConflict",
    "InvalidRewind",
    "InvalidParent",
    "InvalidPayload",
    "UnknownEventType",
    "SessionNotActive",
    "SessionHasForks",
    "InvalidCursor",
    "InvalidQuery",
]
FIELDS = {
    tron_events.Event: [
        "id",
        "parent_id",
        "session_id",
        "workspace_id",
        "sequence",
        "depth",
        "type",
        "timestamp",
        "payload",
    ],
    tron_events.Session: [
        "id",
        "workspace_id",
        "root_event_id",
        "head_event_id",
        "status",
        "model",
        "provider",
        "working_directory",
        "title",
        "parent_session_id",
        "fork_from_event_id",
    ],
    tron_events.messages.Message: ["role", "content", "event_ids"],
    tron_events.reconstruct.SessionState: [
        "messages",
        "model",
        "provider",
        "working_directory",
        "system_prompt",
        "reasoning_level",
        "token_usage",
        "turn_count",
        "head_event_id",
    ],
    tron_events.messages.TokenUsage: [
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_creation_tokens",
    ],
    tron_events.ForkResult: ["session", "fork_event"],
    tron_events.EventPage: ["events", "next_cursor", "has_more"],
    tron_events.SearchHit: ["event_id", "session_id", "type", "timestamp", "snippet", "score"],
}


def _attribute_names(cls: type) -> set[str]:
    """What an instance of ``cls`` has: pydantic fields, dataclass fields, slots, properties."""
    names = set(getattr(cls, "model_fields", {})) | set(dir(cls))
    if dataclasses.is_dataclass(cls):
        names |= {f.name for f in dataclasses.fields(cls)}
    return names


@pytest.mark.parametrize("package", [tron_events, tron_llm], ids=lambda p: p.__name__)
def test_every_exported_name_resolves_to_our_own_object(package: types.ModuleType) -> None:
    names = package.__all__
    assert len(names) == len(set(names)), "a name is listed twice in __all__"
    for name in names:
        value = getattr(package, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            # a re-export of a third-party class would make its API ours
            assert value.__module__.split(".")[0] == package.__name__, (name, value.__module__)


def test_tron_llm_exports_every_public_member() -> None:
    # Submodules (``tron_llm.anthropic``...) are attributes once imported; they are
    # reached by their dotted path, not part of ``from tron_llm import *``.
    public = {
        name
        for name, value in vars(tron_llm).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public == set(tron_llm.__all__)


def test_tron_events_lazy_table_type_block_and_all_agree() -> None:
    # tron_events imports its names lazily (so ``tron_events.messages`` loads no
    # database code); the lazy table, the TYPE_CHECKING imports mypy reads and
    # ``__all__`` are three lists of one surface.
    lazy = set(tron_events._EXPORTS)  # type: ignore[attr-defined]
    tree = ast.parse(Path(tron_events.__file__).read_text())
    typed: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for stmt in ast.walk(node):
                if isinstance(stmt, ast.ImportFrom):
                    typed.update(alias.asname or alias.name for alias in stmt.names)
    assert lazy == set(tron_events.__all__)
    assert typed == set(tron_events.__all__)
    with pytest.raises(AttributeError):
        tron_events.NoSuchName  # type: ignore[attr-defined]  # noqa: B018


def test_the_names_design_section_3_makes_a_contract() -> None:
    for name in ["EventStore", "AsyncEventStore", *ERRORS, *(c.__name__ for c in FIELDS)]:
        if name not in {"Message", "TokenUsage", "SessionState"}:
            assert name in tron_events.__all__, name
    for name in ERRORS:
        assert issubclass(getattr(tron_events, name), tron_events.TronEventsError), name
    for method in STORE_METHODS:
        assert callable(getattr(tron_events.EventStore, method)), method
        assert inspect.iscoroutinefunction(getattr(tron_events.AsyncEventStore, method)), method
    assert callable(tron_events.EventStore.open)
    assert callable(tron_events.AsyncEventStore.subscribe)  # returns an async iterator
    for model, fields in FIELDS.items():
        missing = [f for f in fields if f not in _attribute_names(model)]
        assert not missing, (model.__name__, missing)
