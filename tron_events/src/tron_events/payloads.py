"""Event types and their payload models: one registry, validated on append.

Payload keys are camelCase on disk; the models use snake_case with camelCase
aliases and accept either spelling. Extra fields are kept: the models pin down
what writers can rely on, not everything a writer may add.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticSerializationError

from ._fast_payload import SLOW, plan_for
from ._payload_json import MAX_DEPTH, check_json_value_fast
from ._storable import is_storable
from .errors import InvalidPayload, UnknownEventType
from .normalize import normalize_assistant_payload, normalize_tool_result_payload

ReasoningLevel = Literal["low", "medium", "high", "xhigh"]
Normalizer = Callable[[dict[str, Any]], dict[str, Any]]


class Payload(BaseModel):
    """Base of every payload model: camelCase aliases, extra fields kept."""

    # defer_build: a model's validator and serializer are built on its first use (the
    # store's fast path, _fast_payload.py, needs only the fields): importing this
    # module built ~60 of them, on the server's start path (issue 29, goal 2).
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        frozen=True,
        defer_build=True,
    )


class SessionStart(Payload):
    working_directory: str
    model: str
    provider: str
    system_prompt: str | None = None
    title: str | None = None
    # A sub-agent's session (a child): the session, tool call and event that spawned it.
    parent_session_id: str | None = None
    parent_tool_call_id: str | None = None
    spawned_by_event_id: str | None = None
    subagent_type: str | None = None
    #: The tools the child may use (None: every tool the runtime offers).
    tools: list[str] | None = None


class SessionFork(Payload):
    source_session_id: str
    source_event_id: str
    name: str | None = None
    model: str | None = None
    #: The fork's own folder (its git worktree), when not its source's.
    working_directory: str | None = None


class SessionEnd(Payload):
    reason: str = "completed"
    summary: str | None = None


class TokenUsagePayload(Payload):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int | None = None
    cache_creation_tokens: int | None = None


class MessageUser(Payload):
    content: str | list[Any]
    turn: int = 0


class MessageAssistant(Payload):
    content: list[Any]
    turn: int = 0
    token_usage: TokenUsagePayload | None = None
    stop_reason: str | None = None
    model: str | None = None
    latency: float | None = None
    interrupted: bool | None = None


class MessageSystem(Payload):
    content: str | list[Any]


class MessageDeleted(Payload):
    target_event_id: str
    target_type: str | None = None
    reason: str | None = None


class ToolCall(Payload):
    tool_call_id: str
    name: str
    arguments: dict[str, Any]
    turn: int | None = None


class ToolResult(Payload):
    tool_call_id: str
    content: str | list[Any]
    is_error: bool = False
    duration: float | None = None
    truncated: bool | None = None


class ModelSwitch(Payload):
    previous_model: str | None = None
    new_model: str


class WorkingDirectoryChange(Payload):
    """``config.working_directory``: the session continues in another folder from here on
    (its own is not on this machine: an imported session, a folder removed since)."""

    working_directory: str
    previous_working_directory: str | None = None


class ReasoningLevelChange(Payload):
    previous_level: ReasoningLevel | None = None
    new_level: ReasoningLevel | None = None


class PromptUpdate(Payload):
    system_prompt: str
    new_hash: str | None = None


class CompactSummary(Payload):
    summary: str
    boundary_event_id: str | None = None


class ContextCleared(Payload):
    reason: str | None = None


class HookTriggered(Payload):
    """A hook is about to run (``hook.triggered``)."""

    hook_name: str
    hook_event: str
    tool_name: str | None = None
    tool_call_id: str | None = None


class HookCompleted(Payload):
    """A hook ran (``hook.completed``); ``action`` is what it decided (or what a failure
    turned into), ``error`` why it failed."""

    hook_name: str
    hook_event: str
    action: Literal["allow", "block", "modify", "ask"]
    duration_ms: int = 0
    reason: str | None = None
    error: str | None = None
    tool_name: str | None = None
    tool_call_id: str | None = None
    #: The hook said ``{"continue": false}``: the agent's run ended after it.
    stop: bool | None = None
    stop_reason: str | None = None
    #: What the hook showed the user (``systemMessage``).
    system_message: str | None = None
    #: How long the context the hook gave the model was (the text is in ``hook.context``).
    context_chars: int | None = None


class HookContextAdded(Payload):
    """``hook.context``: text hooks gave the model (Claude Code's ``additionalContext``, the
    plain output of a SessionStart or UserPromptSubmit hook, a Stop hook's reason to go on).
    Reconstruction makes ``content`` a user text block where the event stands, so the model
    sees it exactly as recorded."""

    hook_event: str
    content: str
    #: The tool call it belongs to (PreToolUse / PostToolUse).
    tool_call_id: str | None = None
    #: SessionStart's source (``startup``, ``resume``).
    source: str | None = None


class SubagentUsage(Payload):
    """Tokens and cost of a sub-agent's run (its own, children excluded)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    cost: float | None = None


class SubagentSpawned(Payload):
    """A Task call started a child (``resumed``: an earlier child got a new message)."""

    child_session_id: str
    tool_call_id: str
    subagent_type: str
    description: str = ""
    model: str | None = None
    provider: str | None = None
    resumed: bool = False
    depth: int = 1
    spawned_by_event_id: str | None = None


class SubagentCompleted(Payload):
    """The child's run ended and its reply became the Task result."""

    child_session_id: str
    tool_call_id: str
    subagent_type: str
    stop_reason: str
    turns: int = 0
    duration_ms: float = 0
    usage: SubagentUsage | None = None
    result_chars: int = 0


class SubagentFailed(Payload):
    """The child could not give a reply: the Task result is an error saying why."""

    tool_call_id: str
    error: str
    child_session_id: str | None = None
    subagent_type: str | None = None
    stop_reason: str | None = None
    category: str | None = None
    interrupted: bool = False
    turns: int = 0
    duration_ms: float = 0
    usage: SubagentUsage | None = None


# -- files (see files.py) and git worktrees ------------------------------------------


class FileStatePayload(Payload):
    """A file's recorded state (null in a payload: the file did not exist)."""

    kind: Literal["file", "symlink"]
    #: SHA-256 of the content (of a symlink: of its target), hex.
    hash: str
    size: int
    executable: bool = False
    #: False: larger than the recording limit, known by hash only (not restorable).
    stored: bool = True


class FileChangeItem(Payload):
    """One file's change: its state before and after (null: absent)."""

    path: str
    before: FileStatePayload | None = None
    after: FileStatePayload | None = None


class FileRead(Payload):
    """Read read a file (or an image)."""

    path: str
    content_hash: str | None = None
    lines: int | None = None
    offset: int | None = None
    bytes: int | None = None
    media_type: str | None = None
    tool_call_id: str | None = None
    source: str | None = None
    """``"editor"``: the text came from the editor's buffer (a client serving the
    session's files), not from the disk."""


class FileWrite(Payload):
    """Write created or replaced a file; ``before``/``after`` its states (contents
    recorded by hash in the blob store)."""

    path: str
    content_hash: str | None = None
    bytes: int | None = None
    created: bool | None = None
    tool_call_id: str | None = None
    before: FileStatePayload | None = None
    after: FileStatePayload | None = None
    source: str | None = None
    """``"editor"``: written through the editor's buffer (``before`` is what it held)."""


class FileEdit(Payload):
    """Edit replaced text in a file; ``before``/``after`` its states."""

    path: str
    content_hash: str | None = None
    content_hash_before: str | None = None
    content_hash_after: str | None = None
    replacements: int | None = None
    tool_call_id: str | None = None
    before: FileStatePayload | None = None
    after: FileStatePayload | None = None
    source: str | None = None
    """``"editor"``: read from and written through the editor's buffer."""


class FileChanges(Payload):
    """What a shell command changed under ``root`` (found by comparing workspace
    snapshots taken before and after it)."""

    changes: list[FileChangeItem]
    root: str
    tool_call_id: str | None = None
    #: What made the changes (``"Bash"``).
    source: str | None = None
    #: Paths renamed (same content under a new name), for display: ``[{from, to}]``.
    renames: list[dict[str, str]] | None = None


class FileRestore(Payload):
    """A rewind with files wrote these files back to their state at ``toEventId``
    (``before``: what was on disk, ``after``: what was written)."""

    changes: list[FileChangeItem]
    from_event_id: str
    to_event_id: str
    #: Files restored although changed outside the agent (``force``).
    forced: list[str] = []
    #: Files left as they were (not restorable, with ``force``).
    skipped: list[str] = []


class WorktreeAcquired(Payload):
    """The session got its own git worktree: ``path`` on ``branch``, made from
    ``baseCommit`` of ``repository`` (the checkout at ``sourceWorkingDirectory``)."""

    path: str
    branch: str
    repository: str
    base_commit: str
    base_branch: str | None = None
    source_working_directory: str | None = None
    working_directory: str | None = None
    fork_event_id: str | None = None
    #: The commit holding the fork point's uncommitted files (None: there were none).
    start_commit: str | None = None


class WorktreeCommit(Payload):
    """The worktree's changes were committed on its branch."""

    branch: str
    commit: str
    message: str
    files: list[str] = []


class WorktreeMerged(Payload):
    """The worktree's branch was merged (``git merge``) into ``into``."""

    branch: str
    into: str
    commit: str
    repository: str


class WorktreeReleased(Payload):
    """The worktree was removed (its branch kept unless ``branchDeleted``)."""

    path: str
    branch: str
    branch_deleted: bool = False


PermissionModeName = Literal["default", "acceptEdits", "plan", "bypassPermissions", "dontAsk"]


class InteractionRequested(Payload):
    """The agent waits for the user (``interaction.requested``): a question (the AskUser
    tool) or an approval of a tool call. Pending until an ``interaction.resolved`` with the
    same ``requestId`` (or a ``tool.result`` for ``toolCallId``) follows on the path."""

    request_id: str
    kind: Literal["question", "approval"]
    tool_call_id: str
    turn: int | None = None
    question: str | None = None
    options: list[str] | None = None
    multi_select: bool = False
    tool_name: str | None = None
    input: dict[str, Any] | None = None
    #: Why an approval is needed (the rule or mode that asked).
    reason: str | None = None
    #: The rule "allow always" would add (``Bash(git push:*)``).
    suggestion: str | None = None
    timeout_seconds: float | None = None
    expires_at: str | None = None


class InteractionResolved(Payload):
    """How a request ended (``interaction.resolved``): ``answered`` (``answer`` for a
    question; ``decision`` and ``reason`` for an approval), ``timeout``, ``aborted`` (the
    turn was aborted) or ``cancelled`` (the user sent a new message instead)."""

    request_id: str
    kind: Literal["question", "approval"]
    outcome: Literal["answered", "timeout", "aborted", "cancelled"]
    tool_call_id: str | None = None
    answer: str | list[str] | None = None
    decision: Literal["allow", "allow_always", "deny"] | None = None
    reason: str | None = None
    #: The rule an ``allow_always`` answer added to the session.
    rule: str | None = None
    #: Answered after the run that asked had stopped (e.g. a server restart).
    resumed: bool = False


class PermissionModeChange(Payload):
    """``config.permission_mode``: the session's permission mode from here on."""

    previous_mode: PermissionModeName | None = None
    new_mode: PermissionModeName


class PermissionRuleAdded(Payload):
    """``config.permission_rule``: a rule for the rest of this session (an approval
    answered "allow always")."""

    rule: str
    behavior: Literal["allow", "ask", "deny"] = "allow"
    request_id: str | None = None
    #: The session whose request was answered (a sub-agent's, for a rule in its parent).
    from_session_id: str | None = None


class UserNotification(Payload):
    """``notification.user``: the Notify tool, or a hook (its ``systemMessage``, or the
    ``stopReason`` of a hook that stopped the agent), told the user something."""

    title: str
    body: str = ""
    urgency: Literal["low", "normal", "high"] = "normal"
    tool_call_id: str | None = None
    hook_name: str | None = None
    hook_event: str | None = None


class CommandInvoked(Payload):
    """``command.invoked``: a slash command was expanded; the ``message.user`` that follows
    is what the model was sent."""

    name: str
    arguments: str = ""
    source: str = "file"
    path: str | None = None
    allowed_tools: list[str] | None = None
    model: str | None = None
    #: Files included with ``@path`` (resolved paths).
    files: list[str] | None = None
    #: Commands run for ``!`command` `` and their exit codes.
    commands: list[dict[str, Any]] | None = None


class MetadataImport(Payload):
    """A record of an imported session (``tron-db import --from …``) that no other
    event type expresses, kept as read: ``source`` names the agent that wrote it
    (``claude-code``, ``codex``, ``pi``), ``recordType`` its kind there, ``line``
    its line in the source file, ``reason`` why it is kept this way when that is
    not simply "no equivalent"."""

    source: str
    record_type: str
    record: Any = None
    line: int | None = None
    reason: str | None = None


class HandoffCodeChange(Payload):
    """One change a handoff lists: the file and what was done to it."""

    path: str
    description: str = ""


class MemoryHandoff(Payload):
    """``memory.handoff``: episodic memory, the original Tron's handoff. A structured
    summary of a session (or of the part of it a compaction summarized), made by a side
    call whose forced tool has these fields as its input schema; ``complete`` is False
    when the model's reply did not fit that schema and only ``summary`` could be kept
    (``fallbackReason`` says why). Indexed for full-text search (``search_text.py``)."""

    summary: str
    code_changes: list[HandoffCodeChange] = []
    current_state: str = ""
    next_steps: list[str] = []
    blockers: list[str] = []
    #: Lessons: what worked or did not, worth remembering in this workspace.
    patterns: list[str] = []
    #: What made it: ``session_end``, ``manual`` (``/handoff``, ``memory.handoff``),
    #: ``compaction``, ``import`` (an importer, from another agent's summary).
    trigger: str = "manual"
    complete: bool = True
    fallback_reason: str | None = None
    model: str | None = None
    #: The last event the handoff covers (its session's head when it was made).
    through_event_id: str | None = None
    #: Set by importers: the agent whose record it came from (``claude-code``).
    source: str | None = None


class LedgerRef(Payload):
    """A ledger file as ``memory.loaded`` read it: ``scope`` ``project``
    (``.tron/ledger.md``) or ``user`` (``~/.tron/ledger.md``), ``revision`` the SHA-256
    of the bytes read, ``bytes`` their number, ``truncated`` whether the budget cut it."""

    path: str
    scope: Literal["project", "user"]
    revision: str
    bytes: int = 0
    truncated: bool = False


class MemoryLoaded(Payload):
    """``memory.loaded``: what memory was put in front of the model, recorded where it
    stands so that reconstruction reproduces the request exactly (``content`` becomes user
    text there, as ``hook.context`` does): the ledger revisions read, the ids of the
    ``memory.handoff`` events and the lessons injected, within ``budgetTokens``."""

    content: str
    ledger: list[LedgerRef] = []
    handoff_ids: list[str] = []
    patterns: list[str] = []
    budget_tokens: int | None = None
    #: Estimated tokens of ``content`` (4 characters a token).
    tokens: int | None = None
    #: ``startup`` (a session's first message), ``compact`` or ``clear`` (after them).
    source: str = "startup"


class AnyPayload(Payload):
    """For event types whose payload the store does not interpret."""


@dataclass(frozen=True, slots=True)
class EventType:
    name: str
    model: type[Payload]
    normalizer: Normalizer | None = None


_REGISTRY: dict[str, EventType] = {}
#: Each registered type's fast path (``_fast_payload.py``): its plan's ``apply``, its
#: normalizer and its ``maybe_flat``, or None when its model has no plan. Filled on
#: first use; a type registered again is derived again.
_FAST: dict[str, tuple[Callable[[dict[str, Any]], Any], Normalizer | None, bool] | None] = {}
_FAST_LOCK = threading.RLock()

_TYPED: dict[str, type[Payload]] = {
    "session.start": SessionStart,
    "session.end": SessionEnd,
    "session.fork": SessionFork,
    "message.user": MessageUser,
    "message.assistant": MessageAssistant,
    "message.system": MessageSystem,
    "message.deleted": MessageDeleted,
    "tool.call": ToolCall,
    "tool.result": ToolResult,
    "config.model_switch": ModelSwitch,
    "config.working_directory": WorkingDirectoryChange,
    "config.reasoning_level": ReasoningLevelChange,
    "config.prompt_update": PromptUpdate,
    "compact.summary": CompactSummary,
    "context.cleared": ContextCleared,
    "hook.triggered": HookTriggered,
    "hook.completed": HookCompleted,
    "hook.context": HookContextAdded,
    "subagent.spawned": SubagentSpawned,
    "subagent.completed": SubagentCompleted,
    "subagent.failed": SubagentFailed,
    "file.read": FileRead,
    "file.write": FileWrite,
    "file.edit": FileEdit,
    "file.changes": FileChanges,
    "file.restore": FileRestore,
    "worktree.acquired": WorktreeAcquired,
    "worktree.commit": WorktreeCommit,
    "worktree.merged": WorktreeMerged,
    "worktree.released": WorktreeReleased,
    "interaction.requested": InteractionRequested,
    "interaction.resolved": InteractionResolved,
    "config.permission_mode": PermissionModeChange,
    "config.permission_rule": PermissionRuleAdded,
    "notification.user": UserNotification,
    "command.invoked": CommandInvoked,
    "metadata.import": MetadataImport,
    "memory.handoff": MemoryHandoff,
    "memory.loaded": MemoryLoaded,
}

_UNTYPED = [
    "stream.turn_start",
    "stream.turn_end",
    "compact.boundary",
    "error.agent",
    "error.tool",
    "error.provider",
    "turn.failed",
    "notification.interrupted",
    "notification.subagent_result",
    "metadata.update",
    "metadata.tag",
    "todo.write",
    "subagent.status_update",
    "rules.loaded",
    "skill.added",
    "skill.removed",
]

#: The longest event type name (the ``events.type`` column holds 64 characters).
MAX_TYPE_LENGTH = 64

# Types the store writes itself; a caller cannot append them through append().
STORE_ONLY_TYPES = frozenset({"session.start", "session.fork", "session.end"})


def register_event_type(
    name: str, model: type[Payload] = AnyPayload, *, normalizer: Normalizer | None = None
) -> None:
    """Register (or replace) an event type so ``append`` accepts it.

    ``model`` should subclass :class:`Payload`; ``normalizer`` rewrites a validated
    payload before it is stored (the store uses this for content normalization).
    """
    if not isinstance(name, str) or "." not in name or name.startswith(".") or name.endswith("."):
        raise ValueError(f"event type {name!r} must look like 'namespace.name'")
    if len(name) > MAX_TYPE_LENGTH or not is_storable(name) or any(c.isspace() for c in name):
        # The type is stored in a column of 64 characters, on every backend.
        raise ValueError(
            f"event type {name!r} must be at most {MAX_TYPE_LENGTH} characters, "
            "without whitespace, NUL or lone surrogates"
        )
    with _FAST_LOCK:  # not while a fast path of the old model is being stored
        _REGISTRY[name] = EventType(name, model, normalizer)
        _FAST.pop(name, None)


def get_event_type(name: str) -> EventType:
    spec = _REGISTRY.get(name) if isinstance(name, str) else None
    if spec is None:
        raise UnknownEventType(name)
    return spec


def registered_event_types() -> list[str]:
    return sorted(_REGISTRY)


def validate_payload(event_type: str, payload: Any) -> dict[str, Any]:
    """Validate ``payload`` for ``event_type``; return the camelCase dict to store.

    :class:`InvalidPayload` unless the payload is a JSON object that comes back
    exactly (``_payload_json.py``: no NaN or infinity, no bytes or other
    objects, integers within 64 bits, valid Unicode, at most 100 levels deep)
    and its type's model accepts it.
    """
    return validate_payload_json(event_type, payload)[0]


def _fast_for(
    event_type: str,
) -> tuple[Callable[[dict[str, Any]], Any], Normalizer | None, bool] | None:
    with _FAST_LOCK:
        spec = get_event_type(event_type)
        plan = plan_for(spec.model)
        fast = None if plan is None else (plan.apply, spec.normalizer, plan.maybe_flat)
        _FAST[event_type] = fast
        return fast


#: The exact types of values a copy of the payload may share with it (immutable ones).
#: A float is not among them: a NaN or an infinity needs the read-back to be refused.
_SCALARS = frozenset({str, int, bool, type(None)})


def validate_payload_json(event_type: str, payload: Any) -> tuple[dict[str, Any], bytes | None]:
    """``validate_payload``, and the JSON text of what it returns when it has it
    already (the payload's own, when validation changed nothing), else None."""
    if type(payload) is dict and type(event_type) is str:
        # The common case without pydantic (_fast_payload.py): a payload of exact
        # JSON types, copied by orjson, that the model would only copy again.
        # exact_json_copy and the type's plan, written out (every append runs it).
        try:
            fast = _FAST[event_type]
        except KeyError:
            fast = _fast_for(event_type)
        if fast is not None:
            try:
                # Refuses what is not exact JSON but for tuples, NaN and infinities
                # (a subclass, a key that is not a str, an int beyond 64 bits, a lone
                # surrogate).
                text = orjson.dumps(payload, option=orjson.OPT_PASSTHROUGH_SUBCLASS)
            except orjson.JSONEncodeError:
                text = None
            copy: Any = None
            if text is None:
                pass
            elif fast[2] and _SCALARS.issuperset(map(type, payload.values())):
                # Only strings, ints, bools and None: one level deep, nothing a tuple
                # or a NaN could hide in, and a shallow copy is the whole copy.
                copy = payload.copy()
            elif text.count(b"[") + text.count(b"{") < MAX_DEPTH:
                copy = orjson.loads(text)
                if copy != payload:  # a tuple, a NaN, an infinity
                    copy = None
            if copy is not None:
                data = fast[0](copy)
                if data is not SLOW:
                    normalizer = fast[1]
                    if normalizer is not None:
                        data = normalizer(data)
                    return data, text if data is copy else None
    return _validated_by_model(get_event_type(event_type), payload), None


def _validated_by_model(spec: EventType, payload: Any) -> dict[str, Any]:
    """``validate_payload`` through the type's pydantic model (every payload the
    fast path does not vouch for)."""
    event_type = spec.name
    if isinstance(payload, BaseModel):
        payload = payload.model_dump(by_alias=True, exclude_unset=True)
    if not isinstance(payload, dict):
        raise InvalidPayload(
            f"{event_type} payload must be a JSON object, got {type(payload).__name__}"
        )
    # Before the model sees it: pydantic would turn bytes, tuples and NaN into
    # something else, or fail deep in serialization (_payload_json.py).
    check_json_value_fast(payload, event_type)
    try:
        model = spec.model.model_validate(payload)
        data = model.model_dump(mode="json", by_alias=True, exclude_unset=True)
    except ValidationError as exc:
        raise InvalidPayload(f"invalid {event_type} payload: {exc}") from None
    except PydanticSerializationError as exc:  # a model's own field that is not JSON
        raise InvalidPayload(f"invalid {event_type} payload: {exc}") from None
    if spec.normalizer is not None:
        data = spec.normalizer(data)
    return data


# Content normalization (DESIGN §4) runs on append, so every writer gets it.
_NORMALIZERS: dict[str, Normalizer] = {
    "message.assistant": normalize_assistant_payload,
    "tool.result": normalize_tool_result_payload,
}

for _name, _model in _TYPED.items():
    register_event_type(_name, _model, normalizer=_NORMALIZERS.get(_name))
for _name in _UNTYPED:
    register_event_type(_name, AnyPayload)
