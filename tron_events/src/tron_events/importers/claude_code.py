"""Claude Code transcripts (``~/.claude/projects/<folder>/<session>.jsonl``).

Each line is a record. Conversation records (``user``, ``assistant``, ``system``,
``progress``, ``attachment``) carry ``uuid``/``parentUuid`` and form a tree; the
others (``summary``, ``file-history-snapshot``, ``queue-operation``, titles, …)
sit beside it. How they become events:

* one API response is written as several ``assistant`` records sharing
  ``message.id`` (one content block each, and with parallel tool calls their
  results interleave): they make one ``message.assistant`` (every block, the
  model, the final usage and stop reason), then a ``tool.call`` per ``tool_use``
  and a ``tool.result`` per ``tool_result`` found in the ``user`` records that
  answer it; what else such a user record says follows as a ``message.user``;
* a ``user`` prompt is a ``message.user`` (content as written: a string, or
  blocks — text, images, documents);
* a ``system``/``compact_boundary`` is a ``compact.boundary`` (its parent is
  ``logicalParentUuid``) and the ``isCompactSummary`` user record after it a
  ``compact.summary``, followed by a summary-only ``memory.handoff`` holding the same
  text (``trigger: "import"``), so Tron's memory finds it;
* everything else (hook progress, attachments, API-error retries, snapshots,
  titles, …) is kept as read in ``metadata.import`` events, placed after the
  message it follows, and counted in the import summary. The API-error messages
  Claude Code writes as assistant records (``isApiErrorMessage``, model
  ``<synthetic>``) are kept that way too: Claude Code never sends them to the model.

The tree of messages gives the sessions: the main line is the path to the record
written last, and a branch (an edited prompt, a rewind) becomes a fork.
Sub-agents become child sessions: the newer layout keeps each in
``<session>/subagents/agent-<id>.jsonl`` (with ``agent-<id>.meta.json``), linked to
the ``Task``/``Agent`` call whose result names ``agentId``; older versions write
their records into the main file (``isSidechain``), linked by the prompt the call
gave. Fields of a record that no payload field holds are kept in the event's
``imported`` field, the ones every record repeats (``cwd``, ``version``,
``gitBranch``, …) once in the session's ``session.start``.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ._builder import ImportStream, Point, SessionBuilder
from ._detect import FORMAT_NAMES, guess_format
from ._errors import ImportFormatError
from ._jsonl import JsonlFile, Line, read_jsonl
from ._time import to_millis
from ._tree import Branch, plan_branches

__all__ = ["import_claude_code"]

KIND = "claude-code"
#: Characters of a compaction summary kept in its handoff (the summary event keeps all).
HANDOFF_SUMMARY_CHARS = 4_000
PROVIDER = "anthropic"
_TREE_TYPES = {"user", "assistant", "system", "progress", "attachment"}
_KNOWN_OTHER = {
    "summary",
    "file-history-snapshot",
    "queue-operation",
    "permission-mode",
    "last-prompt",
    "ai-title",
    "custom-title",
    "agent-name",
    "worktree-state",
    "pr-link",
    "mode",
    "tag",
}
#: Fields every record repeats: kept once per session, then only where they change.
_CONTEXT = ("cwd", "version", "gitBranch", "userType", "entrypoint", "slug", "sessionId")
_SPAWN_TOOLS = {"Task", "Agent"}

Record = dict[str, Any]


# --- grouping records into messages ------------------------------------------------------


@dataclass(eq=False)
class _Unit:
    """One message-to-be: a prompt, an API response (with its tool results), a
    compaction boundary or a compaction summary."""

    kind: str  # prompt | assistant | compact | summary
    key: str
    position: int
    lines: list[Line] = field(default_factory=list)
    #: For prompts split off a tool-result record: the blocks that were not results.
    blocks: list[Any] | None = None
    #: For assistants: (line, tool_result block) in file order.
    results: list[tuple[Line, dict[str, Any]]] = field(default_factory=list)
    #: Records kept as metadata.import after this unit's events.
    meta: list[Line] = field(default_factory=list)
    parent: _Unit | None = None
    explicit_parent: bool = False


@dataclass
class _Thread:
    """The records of one conversation: the main one or a sub-agent's."""

    lines: list[Line]
    units: list[_Unit] = field(default_factory=list)
    #: Records before any message (kept right after the session's start).
    leading: list[Line] = field(default_factory=list)
    by_uuid: dict[str, list[Line]] = field(default_factory=dict)
    owner: dict[int, _Unit] = field(default_factory=dict)  # line number -> unit
    #: line number -> the unit it follows (see _ancestor_unit)
    ancestors: dict[int, _Unit | None] = field(default_factory=dict)


def _content_blocks(message: Any) -> Any:
    return message.get("content") if isinstance(message, dict) else None


def _is_synthetic(value: Record) -> bool:
    message = value.get("message")
    model = message.get("model") if isinstance(message, dict) else None
    return bool(value.get("isApiErrorMessage")) or model == "<synthetic>"


def _split_user(content: Any) -> tuple[list[dict[str, Any]], list[Any]]:
    """The tool_result blocks of a user record's content, and the other blocks."""
    if not isinstance(content, list):
        return [], []
    results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
    others = [b for b in content if not (isinstance(b, dict) and b.get("type") == "tool_result")]
    return results, others


def _build_units(thread: _Thread) -> None:
    """Group the thread's records into units, link each to the one it follows, and
    attach the other records to them."""
    units_by_message: dict[str, _Unit] = {}
    unit_of_tool_use: dict[str, _Unit] = {}
    for line in thread.lines:
        uuid = line.value.get("uuid")
        if isinstance(uuid, str):
            thread.by_uuid.setdefault(uuid, []).append(line)

    def new_unit(kind: str, line: Line, key: str) -> _Unit:
        unit = _Unit(kind, key, line.number, [line])
        thread.units.append(unit)
        thread.owner[line.number] = unit
        return unit

    pending_meta: list[Line] = []  # tree records attached once units exist
    deferred: list[tuple[Line, list[dict[str, Any]]]] = []  # results of no known call yet
    for line in thread.lines:
        value = line.value
        kind = value.get("type")
        raw_uuid = value.get("uuid")
        uuid = raw_uuid if isinstance(raw_uuid, str) else f"line{line.number}"
        message = value.get("message")
        if kind == "assistant" and isinstance(message, dict) and not _is_synthetic(value):
            message_id = message.get("id")
            key = message_id if isinstance(message_id, str) and message_id else uuid
            unit = units_by_message.get(key)
            if unit is None:
                unit = units_by_message[key] = new_unit("assistant", line, uuid)
            else:
                unit.lines.append(line)
                thread.owner[line.number] = unit
            content = _content_blocks(message)
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    use_id = block.get("id")
                    if isinstance(use_id, str):
                        unit_of_tool_use.setdefault(use_id, unit)
        elif kind == "user" and isinstance(message, dict) and "content" in message:
            if value.get("isCompactSummary"):
                new_unit("summary", line, uuid)
                continue
            results, others = _split_user(message.get("content"))
            answered: _Unit | None = None
            unknown: list[dict[str, Any]] = []
            for block in results:
                target = unit_of_tool_use.get(str(block.get("tool_use_id")))
                if target is None:
                    unknown.append(block)
                else:
                    target.results.append((line, block))
                    answered = answered or target
            if not results:
                new_unit("prompt", line, uuid)
            elif others:
                unit = new_unit("prompt", line, uuid)
                unit.blocks = others
                if answered is not None:
                    unit.parent, unit.explicit_parent = answered, True
            elif answered is not None:
                thread.owner[line.number] = answered
            if unknown:
                deferred.append((line, unknown))
        elif kind == "system" and value.get("subtype") == "compact_boundary":
            new_unit("compact", line, uuid)
        else:
            pending_meta.append(line)

    _place_deferred_results(thread, deferred, unit_of_tool_use)
    thread.units.sort(key=lambda u: u.position)
    for unit in thread.units:
        if not unit.explicit_parent:
            unit.parent = _logical_parent(thread, unit)
    _attach_other_records(thread, pending_meta)


def _place_deferred_results(
    thread: _Thread,
    deferred: list[tuple[Line, list[dict[str, Any]]]],
    unit_of_tool_use: dict[str, _Unit],
) -> None:
    """Results written before their call (rare) join it; results answering no call
    of this thread stay in a message.user (the projection leaves them out)."""
    for line, blocks in deferred:
        orphans: list[dict[str, Any]] = []
        for block in blocks:
            target = unit_of_tool_use.get(str(block.get("tool_use_id")))
            if target is None:
                orphans.append(block)
            else:
                target.results.append((line, block))
                thread.owner.setdefault(line.number, target)
        if orphans:
            unit = thread.owner.get(line.number)
            if unit is not None and unit.kind == "prompt" and unit.blocks is not None:
                unit.blocks[0:0] = orphans
            else:
                orphan = _Unit("prompt", f"line{line.number}:orphans", line.number, [line])
                orphan.blocks = orphans
                thread.units.append(orphan)
                thread.owner.setdefault(line.number, orphan)


def _attach_other_records(thread: _Thread, pending_meta: list[Line]) -> None:
    """Records that are no message go after one: tree records after the message they
    follow, the others after the message they name or the one written before them."""
    positions = [u.position for u in thread.units]
    for line in pending_meta:
        value = line.value
        found: _Unit | None = None
        if isinstance(value.get("uuid"), str) and "parentUuid" in value:
            found = _ancestor_unit(thread, line)
        else:
            named = value.get("messageId") or value.get("leafUuid")
            if isinstance(named, str):
                for candidate in thread.by_uuid.get(named, []):
                    found = thread.owner.get(candidate.number) or found
        if found is None:
            found = _unit_before(thread, positions, line.number)
        if found is None:
            thread.leading.append(line)
        else:
            found.meta.append(line)


def _unit_before(thread: _Thread, positions: list[int], number: int) -> _Unit | None:
    index = bisect.bisect_left(positions, number)
    return thread.units[index - 1] if index else None


def _resolve(thread: _Thread, uuid: Any, before: int) -> Line | None:
    """The record ``uuid`` names: the latest one written before line ``before``
    (a uuid may repeat in hand-made files), else the first one."""
    candidates = thread.by_uuid.get(uuid) if isinstance(uuid, str) else None
    if not candidates:
        return None
    earlier = [c for c in candidates if c.number < before]
    return earlier[-1] if earlier else candidates[0]


def _walk_up(thread: _Thread, start: Any, number: int, skip: _Unit | None) -> _Unit | None:
    """The first unit (other than ``skip``) on the parent chain from ``start``."""
    seen: set[int] = set()
    current = _resolve(thread, start, number)
    while current is not None and current.number not in seen:
        seen.add(current.number)
        unit = thread.owner.get(current.number)
        if unit is not None and unit is not skip:
            return unit
        current = _resolve(thread, current.value.get("parentUuid"), current.number)
    return None


def _logical_parent(thread: _Thread, unit: _Unit) -> _Unit | None:
    first = unit.lines[0]
    start = first.value.get("parentUuid")
    if unit.kind == "compact":
        start = first.value.get("logicalParentUuid") or start
    return _walk_up(thread, start, first.number, unit)


def _ancestor_unit(thread: _Thread, line: Line) -> _Unit | None:
    """The unit a non-message record follows (memoised: long runs of progress
    records chained to one another would otherwise be walked again and again)."""
    cache = thread.ancestors
    chain: list[int] = []
    seen: set[int] = set()
    current: Line | None = line
    found: _Unit | None = None
    while current is not None and current.number not in seen:
        if current.number in cache:
            found = cache[current.number]
            break
        unit = thread.owner.get(current.number) if current is not line else None
        if unit is not None:
            found = unit
            break
        chain.append(current.number)
        seen.add(current.number)
        current = _resolve(thread, current.value.get("parentUuid"), current.number)
    for number in chain:
        cache[number] = found
    return found


# --- payloads -------------------------------------------------------------------------------


def _imported(value: Record, context: dict[str, Any], drop: tuple[str, ...]) -> dict[str, Any]:
    """What of ``value`` no payload field holds: everything but ``drop`` and the
    context fields equal to the session's."""
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key in drop or (key in context and context[key] == item):
            continue
        out[key] = item
    return out


def _usage(usage: Any) -> dict[str, int] | None:
    if not isinstance(usage, dict):
        return None

    def number(name: str) -> int:
        value = usage.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    read, write = number("cache_read_input_tokens"), number("cache_creation_input_tokens")
    # Tron counts the whole input, cache reads and writes included (Anthropic reports
    # them apart).
    return {
        "inputTokens": number("input_tokens") + read + write,
        "outputTokens": number("output_tokens"),
        "cacheReadTokens": read,
        "cacheCreationTokens": write,
    }


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", ""))
            for b in content
            if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


# --- one file -------------------------------------------------------------------------------


@dataclass
class _Links:
    """What links sub-agents to the calls that started them (from the parent's side)."""

    #: tool_use id -> (the session holding its tool.call, the tool.call event id, input)
    calls: dict[str, tuple[SessionBuilder, str, dict[str, Any]]] = field(default_factory=dict)
    #: agentId -> tool_use id (from Task results' toolUseResult and agent progress)
    agents: dict[str, str] = field(default_factory=dict)
    #: prompt text -> tool_use ids of spawn calls with that prompt, in order
    prompts: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    used: set[str] = field(default_factory=set)


class _Emitter:
    """Turns a thread's units into sessions (the main line and its forks)."""

    def __init__(
        self,
        stream: ImportStream,
        thread: _Thread,
        *,
        key: str,
        path: Path,
        links: _Links,
        title: str | None,
        start_extra: dict[str, Any],
        parent_session_id: str | None,
    ) -> None:
        self.stream = stream
        self.thread = thread
        self.key = key
        self.path = path
        self.links = links
        self.title = title
        self.start_extra = start_extra
        self.parent_session_id = parent_session_id
        self.context: dict[str, Any] = {}
        for line in thread.lines:
            if line.value.get("type") in _TREE_TYPES:
                self.context = {k: line.value[k] for k in _CONTEXT if k in line.value}
                break
        self.points: dict[str, Point] = {}
        self.boundaries: dict[str, str] = {}  # compact unit key -> compact.boundary event id

    def sessions(self) -> list[SessionBuilder]:
        thread = self.thread
        order = [u.key for u in thread.units]
        by_key = {u.key: u for u in thread.units}
        parents = {u.key: (u.parent.key if u.parent else None) for u in thread.units}
        branches = plan_branches(order, parents)
        cwd = self.context.get("cwd")
        if not isinstance(cwd, str) or not cwd:
            cwd = str(self.path.parent.resolve())
        first_millis = self._first_millis()
        out: list[SessionBuilder] = []
        plan: list[Branch[str] | None] = list(branches) or [None]
        for branch in plan:
            if branch is None or branch.fork_from is None:
                extra = dict(self.start_extra)
                extra["imported"] = {**extra.get("imported", {}), "context": self.context}
                builder = SessionBuilder(
                    self.stream,
                    key=self.key,
                    working_directory=cwd,
                    millis=first_millis,
                    provider=PROVIDER,
                    title=self.title,
                    start_extra=extra,
                    parent_session_id=self.parent_session_id,
                )
                for line in thread.leading:
                    self._keep(builder, line)
            else:
                point = self.points[branch.fork_from]
                first = by_key[branch.nodes[0]]
                builder = SessionBuilder(
                    self.stream,
                    key=f"{self.key}:fork:{first.key}",
                    working_directory=cwd,
                    millis=self._millis(first.lines[0], point.millis),
                    title=self.title,
                    fork_from=point,
                )
            for node in branch.nodes if branch is not None else []:
                self._emit(builder, by_key[node])
                self.points[node] = builder.point()
            out.append(builder)
        return out

    def _first_millis(self) -> int:
        for line in self.thread.lines:
            millis = to_millis(line.value.get("timestamp"))
            if millis is not None:
                return millis
        try:
            return int(self.path.stat().st_mtime * 1000)
        except OSError:
            return 0

    def _millis(self, line: Line, default: int) -> int:
        millis = to_millis(line.value.get("timestamp"))
        return default if millis is None else millis

    def _keep(self, builder: SessionBuilder, line: Line, reason: str | None = None) -> None:
        value = line.value
        kind = str(value.get("type"))
        name = f"{kind}/{value['subtype']}" if isinstance(value.get("subtype"), str) else kind
        if kind == "assistant":
            name = "assistant (API error shown by Claude Code)"
        elif kind not in _TREE_TYPES and kind not in _KNOWN_OTHER:
            name = f"unknown record type {kind!r}"
        uuid = value.get("uuid")
        builder.keep(
            kind,
            value,
            key=f"{uuid if isinstance(uuid, str) else 'line'}:line{line.number}:meta",
            millis=builder.time(value.get("timestamp")) if "timestamp" in value else None,
            line=line.number,
            count_as=name,
        )

    def _emit(self, builder: SessionBuilder, unit: _Unit) -> None:
        if unit.kind == "assistant":
            self._assistant(builder, unit)
        elif unit.kind == "prompt":
            self._prompt(builder, unit)
        elif unit.kind == "compact":
            self._compact(builder, unit)
        else:
            self._summary(builder, unit)
        for line in unit.meta:
            self._keep(builder, line)

    def _prompt(self, builder: SessionBuilder, unit: _Unit) -> None:
        line = unit.lines[0]
        value = line.value
        message = value.get("message") or {}
        content = message.get("content") if unit.blocks is None else unit.blocks
        if not isinstance(content, str | list):
            content = "" if content is None else str(content)
        imported = _imported(value, self.context, ("message", "type", "timestamp"))
        rest = {k: v for k, v in message.items() if k not in ("content", "role")}
        if rest:
            imported["message"] = rest
        if unit.blocks is not None and len(unit.blocks) != len(message.get("content") or []):
            imported["splitFromToolResults"] = True
        builder.add(
            "message.user",
            {"content": content, "turn": builder.turn + 1, "imported": imported},
            key=f"{unit.key}:user",
            millis=builder.time(value.get("timestamp")),
        )
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "document" for b in content
        ):
            builder.remarks[
                "a document block is kept in its message.user event; the reconstructed "
                "history sends only text and images"
            ] += 1

    def _assistant(self, builder: SessionBuilder, unit: _Unit) -> None:
        blocks: list[Any] = []
        records: list[dict[str, Any]] = []
        model: str | None = None
        usage: dict[str, int] | None = None
        stop_reason: str | None = None
        for line in unit.lines:
            value = line.value
            message = value["message"]
            content = message.get("content")
            if isinstance(content, list):
                blocks.extend(content)
            elif isinstance(content, str) and content:
                blocks.append({"type": "text", "text": content})
            if isinstance(message.get("model"), str):
                model = message["model"]
            usage = _usage(message.get("usage")) or usage
            if isinstance(message.get("stop_reason"), str):
                stop_reason = message["stop_reason"]
            record = _imported(value, self.context, ("message", "type"))
            record["message"] = {k: v for k, v in message.items() if k != "content"}
            records.append(record)
        first = unit.lines[0].value
        millis = builder.time(first.get("timestamp"))
        builder.use_model(model, PROVIDER, key=f"{unit.key}:model", millis=millis)
        turn = builder.next_turn()
        payload: dict[str, Any] = {"content": blocks, "turn": turn}
        if usage is not None:
            payload["tokenUsage"] = usage
        if stop_reason is not None:
            payload["stopReason"] = stop_reason
        if model is not None:
            payload["model"] = model
        payload["imported"] = {"records": records}
        builder.add("message.assistant", payload, key=f"{unit.key}:assistant", millis=millis)
        unknown = {
            str(b.get("type"))
            for b in blocks
            if isinstance(b, dict)
            and b.get("type") not in ("text", "thinking", "redacted_thinking", "tool_use")
        }
        for name in sorted(unknown):
            builder.remarks[
                f"assistant content of type {name!r} is kept in its message.assistant event; "
                "the reconstructed history leaves it out"
            ] += 1
        uses: list[dict[str, Any]] = []
        for block in blocks:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                uses.append(block)
        for block in uses:
            use_id = str(block.get("id"))
            arguments = block.get("input")
            if not isinstance(arguments, dict):
                arguments = {"input": arguments}
            event_id = builder.add(
                "tool.call",
                {
                    "toolCallId": use_id,
                    "name": str(block.get("name")),
                    "arguments": arguments,
                    "turn": turn,
                },
                key=f"{use_id}:call",
                millis=millis,
            )
            self.links.calls.setdefault(use_id, (builder, event_id, arguments))
            if block.get("name") in _SPAWN_TOOLS and isinstance(arguments.get("prompt"), str):
                self.links.prompts[arguments["prompt"]].append(use_id)
        order = {str(b.get("id")): i for i, b in enumerate(uses)}
        results = sorted(
            unit.results, key=lambda r: (order.get(str(r[1].get("tool_use_id")), len(order)),)
        )
        for line, block in results:
            self._result(builder, line, block)

    def _result(self, builder: SessionBuilder, line: Line, block: dict[str, Any]) -> None:
        value = line.value
        use_id = str(block.get("tool_use_id"))
        content = block.get("content")
        if content is None:
            content = ""
        elif not isinstance(content, str | list):
            content = str(content)
        imported = _imported(value, self.context, ("message", "type"))
        extra = {
            k: v
            for k, v in block.items()
            if k not in ("type", "tool_use_id", "content", "is_error")
        }
        if extra:
            imported["block"] = extra
        payload: dict[str, Any] = {
            "toolCallId": use_id,
            "content": content,
            "isError": block.get("is_error") is True,
            "imported": imported,
        }
        builder.add(
            "tool.result",
            payload,
            key=f"{use_id}:result:{value.get('uuid')}",
            millis=builder.time(value.get("timestamp")),
        )

    def _compact(self, builder: SessionBuilder, unit: _Unit) -> None:
        value = unit.lines[0].value
        metadata = value.get("compactMetadata")
        payload: dict[str, Any] = {
            "reason": "auto",
            "imported": _imported(value, self.context, ("type",)),
        }
        if isinstance(metadata, dict):
            if isinstance(metadata.get("trigger"), str):
                payload["reason"] = metadata["trigger"]
            if isinstance(metadata.get("preTokens"), int):
                payload["originalTokens"] = metadata["preTokens"]
        self.boundaries[unit.key] = builder.add(
            "compact.boundary",
            payload,
            key=f"{unit.key}:boundary",
            millis=builder.time(value.get("timestamp")),
        )

    def _summary(self, builder: SessionBuilder, unit: _Unit) -> None:
        value = unit.lines[0].value
        message = value.get("message") or {}
        summary = _text_of(message.get("content"))
        imported = _imported(value, self.context, ("message", "type"))
        rest = {k: v for k, v in message.items() if k not in ("content", "role")}
        if rest:
            imported["message"] = rest
        payload: dict[str, Any] = {"summary": summary, "imported": imported}
        if unit.parent is not None and unit.parent.key in self.boundaries:
            payload["boundaryEventId"] = self.boundaries[unit.parent.key]
        millis = builder.time(value.get("timestamp"))
        summary_id = builder.add("compact.summary", payload, key=f"{unit.key}:summary",
                                 millis=millis)  # fmt: skip
        if summary.strip():
            # The summary is also a handoff (memory across sessions): prose, no fields.
            handoff = {
                "summary": summary[:HANDOFF_SUMMARY_CHARS],
                "trigger": "import",
                "source": "claude-code",
                "complete": False,
                "fallbackReason": "a Claude Code compaction summary (prose, no handoff fields)",
                "throughEventId": summary_id,
            }
            builder.add("memory.handoff", handoff, key=f"{unit.key}:handoff", millis=millis)


def _titles(lines: list[Line], uuids: set[str]) -> str | None:
    custom = ai = summary = None
    for line in lines:
        value = line.value
        kind = value.get("type")
        if kind == "custom-title" and isinstance(value.get("customTitle"), str):
            custom = value["customTitle"]
        elif kind == "ai-title" and isinstance(value.get("aiTitle"), str):
            ai = value["aiTitle"]
        elif (
            kind == "summary"
            and isinstance(value.get("summary"), str)
            and value.get("leafUuid") in uuids
        ):
            summary = value["summary"]
    return custom or ai or summary


def _check_format(file: JsonlFile) -> None:
    recognised = sum(
        1
        for line in file.lines
        if line.value.get("type") in _TREE_TYPES | _KNOWN_OTHER
        and (
            "uuid" in line.value
            or "sessionId" in line.value
            or line.value.get("type") in _KNOWN_OTHER
        )
    )
    if recognised:
        return
    guess = guess_format(file)
    if guess is not None and guess != KIND:
        raise ImportFormatError(
            file.path,
            f"is {FORMAT_NAMES[guess]}, not a Claude Code transcript: import it with "
            f"`--from {guess}`",
            line=file.lines[0].number,
        )
    raise ImportFormatError(
        file.path,
        "has no Claude Code record (user/assistant/system/summary lines with a uuid or "
        "sessionId): not a Claude Code transcript",
        line=file.lines[0].number,
    )


def _agent_id(path: Path, file: JsonlFile) -> str:
    for line in file.lines:
        agent = line.value.get("agentId")
        if isinstance(agent, str) and agent:
            return agent
    return path.stem.removeprefix("agent-")


def _meta(path: Path) -> dict[str, Any]:
    meta = path.with_name(path.stem + ".meta.json")
    try:
        value = orjson.loads(meta.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def _main_session_key(path: Path, file: JsonlFile) -> str:
    for line in file.lines:
        session = line.value.get("sessionId")
        if isinstance(session, str) and session:
            return session
    return path.stem


def _sidechain_threads(file: JsonlFile) -> tuple[list[Line], list[list[Line]]]:
    """The main thread's records and each inline sidechain's (the old layout): the
    sidechain records connected by their parent links."""
    sidechain = {
        line.value["uuid"]: line
        for line in file.lines
        if line.value.get("isSidechain") is True and isinstance(line.value.get("uuid"), str)
    }
    group: dict[int, int] = {}

    def find(number: int) -> int:
        root = number
        while group.get(root, root) != root:
            root = group[root]
        group[number] = root
        return root

    main: list[Line] = []
    members: list[Line] = []
    for line in file.lines:
        if line.value.get("isSidechain") is not True:
            main.append(line)
            continue
        members.append(line)
        group.setdefault(line.number, line.number)
        parent = sidechain.get(line.value.get("parentUuid"))
        if parent is not None:
            group.setdefault(parent.number, parent.number)
            a, b = find(line.number), find(parent.number)
            if a != b:
                group[max(a, b)] = min(a, b)
    runs: dict[int, list[Line]] = {}
    for line in members:
        runs.setdefault(find(line.number), []).append(line)
    return main, [runs[k] for k in sorted(runs)]


def _session_file_records(
    stream: ImportStream,
    path: Path,
    subagents: list[Path],
    *,
    standalone_subagent: bool = False,
) -> list[Record]:
    """Every record of one main file (or one sub-agent file given alone) and the
    sub-agent files paired with it, built before any is returned."""
    file = read_jsonl(path)
    _check_format(file)
    out: list[Record] = []
    links = _Links()
    problems = list(file.problems)
    uuids = {x.value["uuid"] for x in file.lines if isinstance(x.value.get("uuid"), str)}
    title = _titles(file.lines, uuids)

    if standalone_subagent:
        main_lines, sidechains = file.lines, list[list[Line]]()
        session_id = _main_session_key(path, file)
        agent = _agent_id(path, file)
        key = f"{KIND}:{session_id}:agent:{agent}"
        meta = _meta(path)
        extra: dict[str, Any] = {
            "imported": {"agentId": agent, "parentSourceSessionId": session_id}
        }
        if isinstance(meta.get("agentType"), str):
            extra["subagentType"] = meta["agentType"]
        if meta:
            extra["imported"]["meta"] = meta
    else:
        main_lines, sidechains = _sidechain_threads(file)
        session_id = path.stem
        key = f"{KIND}:{session_id}"
        extra = {}

    _collect_agent_links(file, links)
    thread = _Thread(main_lines)
    _build_units(thread)
    emitter = _Emitter(
        stream,
        thread,
        key=key,
        path=path,
        links=links,
        title=title,
        start_extra=extra,
        parent_session_id=None,
    )
    sessions = emitter.sessions()
    main = sessions[0]
    for message in problems:
        main.notice(message)
    if not any(s.has_content for s in sessions) and not sidechains and not subagents:
        return [stream.notice(f"{path.name} holds no message: nothing imported from it")]
    for builder in sessions:
        out.extend(builder.records())

    # Sub-agents written into the main file (older versions).
    for lines in sidechains:
        child = _Thread(lines)
        _build_units(child)
        root = lines[0]
        prompt = _text_of((root.value.get("message") or {}).get("content"))
        use_id = next((u for u in links.prompts.get(prompt, []) if u not in links.used), None)
        out.extend(
            _child_records(
                stream,
                child,
                links,
                use_id,
                main,
                key=f"{KIND}:{session_id}:sidechain:{root.value.get('uuid')}",
                path=path,
                extra={"imported": {"sidechainOf": session_id}},
            )
        )
    # Sub-agents in their own files (newer versions).
    for sub_path in subagents:
        try:
            sub_file = read_jsonl(sub_path)
            _check_format(sub_file)
        except ImportFormatError as exc:
            out.append(stream.notice(f"sub-agent transcript skipped: {exc}", main.id))
            continue
        agent = _agent_id(sub_path, sub_file)
        meta = _meta(sub_path)
        use_id = links.agents.get(agent)
        extra = {"imported": {"agentId": agent, "file": sub_path.name}}
        if meta:
            extra["imported"]["meta"] = meta
            if isinstance(meta.get("agentType"), str):
                extra["subagentType"] = meta["agentType"]
            if isinstance(meta.get("description"), str):
                extra["description"] = meta["description"]
        child = _Thread(sub_file.lines)
        _build_units(child)
        records = _child_records(
            stream,
            child,
            links,
            use_id,
            main,
            key=f"{KIND}:{session_id}:agent:{agent}",
            path=sub_path,
            extra=extra,
        )
        if sub_file.problems:
            child_id = next(r["id"] for r in records if r.get("kind") == "session")
            records.extend(stream.notice(p, child_id) for p in sub_file.problems)
        out.extend(records)
    return out


def _collect_agent_links(file: JsonlFile, links: _Links) -> None:
    """Which tool call started which sub-agent, as the parent's records say: a
    ``Task``/``Agent`` result's ``toolUseResult.agentId``, or an ``agent_progress``
    record's ``data.agentId`` and ``parentToolUseID``."""
    for line in file.lines:
        value = line.value
        result = value.get("toolUseResult")
        if isinstance(result, dict) and isinstance(result.get("agentId"), str):
            blocks, _ = _split_user(_content_blocks(value.get("message")))
            for block in blocks[:1]:
                if isinstance(block.get("tool_use_id"), str):
                    links.agents.setdefault(result["agentId"], block["tool_use_id"])
        data = value.get("data")
        if (
            value.get("type") == "progress"
            and isinstance(data, dict)
            and isinstance(data.get("agentId"), str)
            and isinstance(value.get("parentToolUseID"), str)
        ):
            links.agents.setdefault(data["agentId"], value["parentToolUseID"])


def _child_records(
    stream: ImportStream,
    thread: _Thread,
    links: _Links,
    use_id: str | None,
    main: SessionBuilder,
    *,
    key: str,
    path: Path,
    extra: dict[str, Any],
) -> list[Record]:
    parent = main
    extra = dict(extra)
    if use_id is not None and use_id in links.calls:
        links.used.add(use_id)
        parent, event_id, arguments = links.calls[use_id]
        extra["parentToolCallId"] = use_id
        extra["spawnedByEventId"] = event_id
        if isinstance(arguments.get("subagent_type"), str):
            extra.setdefault("subagentType", arguments["subagent_type"])
        if isinstance(arguments.get("description"), str):
            extra.setdefault("description", arguments["description"])
    emitter = _Emitter(
        stream,
        thread,
        key=key,
        path=path,
        links=links,
        title=extra.get("description") if isinstance(extra.get("description"), str) else None,
        start_extra=extra,
        parent_session_id=parent.id,
    )
    sessions = emitter.sessions()
    if use_id is None and key.split(":agent:")[-1].startswith("acompact"):
        sessions[0].notice(
            "the transcript of a compaction run of Claude Code (no tool call started it): "
            "a child session of the one it compacted, without parentToolCallId"
        )
    elif use_id is None:
        sessions[0].notice(
            "no tool call in the parent session names this sub-agent: it is a child of the "
            "session without a parentToolCallId"
        )
    records: list[Record] = []
    for builder in sessions:
        records.extend(builder.records())
    return records


# --- files and folders ----------------------------------------------------------------------


def _is_subagent_file(path: Path) -> bool:
    return path.parent.name == "subagents" and path.name.startswith("agent-")


def _subagents_of(main: Path) -> list[Path]:
    folder = main.with_suffix("") / "subagents"
    return sorted(folder.glob("agent-*.jsonl")) if folder.is_dir() else []


def import_claude_code(path: Path) -> Iterator[Record]:
    """Records for a transcript file, or for every transcript under a folder."""
    stream = ImportStream(KIND, str(path))
    if not path.is_dir():
        if _is_subagent_file(path):
            records = _session_file_records(stream, path, [], standalone_subagent=True)
        else:
            records = _session_file_records(stream, path, _subagents_of(path))
        yield from stream.header()
        yield from records
        return
    yield from stream.header()
    files = sorted(p for p in path.rglob("*.jsonl") if p.is_file())
    mains = {p for p in files if not _is_subagent_file(p)}
    paired: set[Path] = set()
    for main in sorted(mains):
        subs = _subagents_of(main)
        paired.update(subs)
        try:
            yield from _session_file_records(stream, main, subs)
        except ImportFormatError as exc:
            yield stream.notice(f"skipped: {exc}")
    for orphan in files:
        if orphan in mains or orphan in paired:
            continue
        try:
            yield from _session_file_records(stream, orphan, [], standalone_subagent=True)
        except ImportFormatError as exc:
            yield stream.notice(f"skipped: {exc}")
