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
from array import array
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ._builder import ImportStream, Point, SessionBuilder
from ._claude_scan import (
    ASSISTANT,
    COMPACT,
    HAS_TIME,
    HAS_UUID,
    KNOWN_OTHER,
    OTHER_BLOCKS,
    PARENT_KEY,
    PROMPT,
    SUMMARY,
    TREE_TYPE,
    TREE_TYPES,
    Index,
    Uuids,
    scan,
)
from ._detect import FORMAT_NAMES, guess_format
from ._errors import ImportFormatError
from ._intmap import IntMap
from ._jsonl import Line
from ._time import to_millis
from ._tree import plan_branches, plan_branches_indexed

__all__ = ["import_claude_code"]

KIND = "claude-code"
#: Characters of a compaction summary kept in its handoff (the summary event keeps all).
HANDOFF_SUMMARY_CHARS = 4_000
PROVIDER = "anthropic"
#: Fields every record repeats: kept once per session, then only where they change.
_CONTEXT = ("cwd", "version", "gitBranch", "userType", "entrypoint", "slug", "sessionId")
_SPAWN_TOOLS = {"Task", "Agent"}

Record = dict[str, Any]


# --- grouping records into messages ------------------------------------------------------

# Unit kinds, and what a prompt unit's blocks are.
_ASSISTANT, _PROMPT, _COMPACT, _SUMMARY = 0, 1, 2, 3
_KIND_NAMES = ("assistant", "prompt", "compact", "summary")
_CATEGORY_KIND = {ASSISTANT: _ASSISTANT, PROMPT: _PROMPT, COMPACT: _COMPACT, SUMMARY: _SUMMARY}
_WHOLE, _NOT_RESULTS, _ORPHANS = 0, 1, 2


@dataclass(eq=False)
class _Unit:
    """One message-to-be, with its records read again: a prompt, an API response
    (with its tool results), a compaction boundary or a compaction summary."""

    kind: str  # prompt | assistant | compact | summary
    key: str
    index: int
    lines: list[Line]
    #: For prompts split off a tool-result record: the blocks that were not results.
    blocks: list[Any] | None = None
    #: For assistants: (line, tool_result block) in file order.
    results: list[tuple[Line, dict[str, Any]]] = field(default_factory=list)
    #: Records kept as metadata.import after this unit's events.
    meta: list[Line] = field(default_factory=list)
    #: The unit it follows (-1: none).
    parent: int = -1


def _grouped(keys: array[int], count: int) -> tuple[array[int], array[int]]:
    """Positions of ``keys`` (each in -1 … count-1) grouped by key, in order
    within a key: the positions of key k are ``items[starts[k+1]:starts[k+2]]``."""
    starts = array("i", [0]) * (count + 2)
    for key in keys:
        starts[key + 2] += 1
    for k in range(1, count + 2):
        starts[k] += starts[k - 1]
    fill = array("i", starts)
    items = array("i", [0]) * len(keys)
    for position, key in enumerate(keys):
        items[fill[key + 1]] = position
        fill[key + 1] += 1
    return starts, items


class _Thread:
    """The records of one conversation (the main one or a sub-agent's), grouped
    into units in flat arrays; :meth:`unit` reads one back."""

    def __init__(self, index: Index, lines: Sequence[int], uuids: Uuids) -> None:
        self.index = index
        self.lines = lines
        self.uuids = uuids
        self.kind = bytearray()
        self.first = array("I")
        self.parent = array("i")
        self.explicit = bytearray()
        self.blocks = bytearray()
        #: line -> its result blocks answering no call of the thread (tool entries)
        self.orphans: dict[int, list[int]] = {}
        #: units in file order (by the position of their first record)
        self.order: Sequence[int] = range(0)
        self._build()

    # -- building ----------------------------------------------------------------------

    def _new(self, kind: int, line: int, *, own: bool = True) -> int:
        unit = len(self.first)
        self.kind.append(kind)
        self.first.append(line)
        self.parent.append(-1)
        self.explicit.append(0)
        self.blocks.append(_WHOLE)
        if own:
            self.index.owner[line] = unit
        return unit

    def _tools(self, line: int) -> range:
        tool_line = self.index.tool_line
        return range(bisect.bisect_left(tool_line, line), bisect.bisect_right(tool_line, line))

    def _build(self) -> None:
        """Group the thread's records into units, link each to the one it follows, and
        attach the other records to them."""
        index = self.index
        owner, tool_id = index.owner, index.tool_id
        units_by_message = IntMap()
        unit_of_tool_use = IntMap()
        extra_unit, extra_line = array("i"), array("I")
        result_unit, result_line, result_entry = array("i"), array("I"), array("I")
        pending_meta = array("I")
        deferred: list[tuple[int, list[int]]] = []  # results of no known call yet

        def answer(unit: int, line: int, entry: int) -> None:
            result_unit.append(unit)
            result_line.append(line)
            result_entry.append(entry)

        for line in self.lines:
            category = index.category[line]
            if category == ASSISTANT:
                unit = units_by_message.get(index.key[line])
                if unit < 0:
                    unit = self._new(_ASSISTANT, line)
                    units_by_message[index.key[line]] = unit
                else:
                    extra_unit.append(unit)
                    extra_line.append(line)
                    owner[line] = unit
                for entry in self._tools(line):
                    unit_of_tool_use.setdefault(tool_id[entry], unit)
            elif category == PROMPT:
                entries = self._tools(line)
                answered = -1
                unknown: list[int] = []
                for entry in entries:
                    target = unit_of_tool_use.get(tool_id[entry])
                    if target < 0:
                        unknown.append(entry)
                    else:
                        answer(target, line, entry)
                        answered = target if answered < 0 else answered
                if not entries:
                    self._new(_PROMPT, line)
                elif index.flags[line] & OTHER_BLOCKS:
                    unit = self._new(_PROMPT, line)
                    self.blocks[unit] = _NOT_RESULTS
                    if answered >= 0:
                        self.parent[unit], self.explicit[unit] = answered, 1
                elif answered >= 0:
                    owner[line] = answered
                if unknown:
                    deferred.append((line, unknown))
            elif category in (SUMMARY, COMPACT):
                self._new(_CATEGORY_KIND[category], line)
            else:
                pending_meta.append(line)
        del units_by_message
        # Results written before their call (rare) join it; results answering no call
        # of this thread stay in a message.user (the projection leaves them out).
        orphan_units = False
        for line, waiting in deferred:
            orphans: list[int] = []
            for entry in waiting:
                target = unit_of_tool_use.get(tool_id[entry])
                if target < 0:
                    orphans.append(entry)
                else:
                    answer(target, line, entry)
                    if owner[line] < 0:
                        owner[line] = target
            if orphans:
                self.orphans[line] = orphans
                unit = owner[line]
                if unit < 0 or self.kind[unit] != _PROMPT or self.blocks[unit] != _NOT_RESULTS:
                    unit = self._new(_PROMPT, line, own=False)
                    self.blocks[unit] = _ORPHANS
                    orphan_units = True
                    if owner[line] < 0:
                        owner[line] = unit
        del unit_of_tool_use, deferred
        count = len(self.first)
        number = index.number
        order: Sequence[int] = range(count)
        if orphan_units:
            order = array("I", sorted(order, key=lambda u: number[self.first[u]]))
        self.order = order
        for unit in self.order:
            if not self.explicit[unit]:
                self.parent[unit] = self._logical_parent(unit)
        self.extra = _grouped(extra_unit, count), extra_line
        self.results = _grouped(result_unit, count), result_line, result_entry
        meta_unit = self._attach_other_records(pending_meta)
        self.meta = _grouped(meta_unit, count), pending_meta

    def _walk_up(self, line: int, skip: int) -> int:
        """The first unit (other than ``skip``) on the parent chain from ``line``."""
        owner, parent = self.index.owner, self.index.parent
        seen: set[int] = set()
        while line >= 0 and line not in seen:
            seen.add(line)
            unit = owner[line]
            if unit >= 0 and unit != skip:
                return unit
            line = parent[line]
        return -1

    def _logical_parent(self, unit: int) -> int:
        first = self.first[unit]
        if self.kind[unit] == _COMPACT:
            return self._walk_up(self.index.logical.get(first, -1), unit)
        return self._walk_up(self.index.parent[first], unit)

    def _attach_other_records(self, pending_meta: array[int]) -> array[int]:
        """Records that are no message go after one: tree records after the message they
        follow, the others after the message they name or the one written before them
        (-1: before any message)."""
        index = self.index
        owner, number = index.owner, index.number
        positions = array("I", (number[self.first[u]] for u in self.order))
        ancestors = array("i", [-2]) * len(index)
        out = array("i")
        for line in pending_meta:
            found = -1
            if index.flags[line] & HAS_UUID and index.flags[line] & PARENT_KEY:
                found = self._ancestor_unit(line, ancestors)
            elif index.key[line]:
                named = index.named.get(line)
                for candidate in (
                    named if named is not None else self.uuids.lines_of(index.key[line])
                ):
                    if owner[candidate] >= 0:
                        found = owner[candidate]
            if found < 0:
                before = bisect.bisect_left(positions, number[line])
                found = self.order[before - 1] if before else -1
            out.append(found)
        return out

    def _ancestor_unit(self, line: int, cache: array[int]) -> int:
        """The unit a non-message record follows (memoised: long runs of progress
        records chained to one another would otherwise be walked again and again)."""
        owner, parent = self.index.owner, self.index.parent
        chain: list[int] = []
        seen: set[int] = set()
        current = line
        found = -1
        while current >= 0 and current not in seen:
            if cache[current] != -2:
                found = cache[current]
                break
            unit = owner[current] if current != line else -1
            if unit >= 0:
                found = unit
                break
            chain.append(current)
            seen.add(current)
            current = parent[current]
        for n in chain:
            cache[n] = found
        return found

    # -- reading back ------------------------------------------------------------------

    def leading(self) -> list[Line]:
        """Records before any message (kept right after the session's start)."""
        (starts, items), lines = self.meta
        return [self.index.line(lines[i]) for i in items[starts[0] : starts[1]]]

    def key_of(self, unit: int) -> str:
        """The unit's key: its first record's uuid (``line<n>`` without one)."""
        first = self.first[unit]
        number = self.index.number[first]
        if self.blocks[unit] == _ORPHANS:
            return f"line{number}:orphans"
        uuid = self.index.value(first).get("uuid")
        return uuid if isinstance(uuid, str) else f"line{number}"

    def unit(self, unit: int) -> _Unit:
        index = self.index
        first = self.first[unit]
        key = self.key_of(unit)
        value = index.value(first)
        number = index.number[first]
        out = _Unit(_KIND_NAMES[self.kind[unit]], key, unit, [Line(number, value)])
        out.parent = self.parent[unit]
        (starts, items), extra_line = self.extra
        out.lines.extend(
            index.line(extra_line[i]) for i in items[starts[unit + 1] : starts[unit + 2]]
        )
        if self.blocks[unit] != _WHOLE:
            orphans = [self._block(first, e) for e in self.orphans.get(first, ())]
            if self.blocks[unit] == _NOT_RESULTS:
                _, others = _split_user(_content_blocks(value.get("message")))
                orphans.extend(others)
            out.blocks = orphans
        (starts, items), result_line, result_entry = self.results
        for i in items[starts[unit + 1] : starts[unit + 2]]:
            line = index.line(result_line[i])
            out.results.append((line, self._block(result_line[i], result_entry[i])))
        (starts, items), meta_line = self.meta
        out.meta.extend(
            index.line(meta_line[i]) for i in items[starts[unit + 1] : starts[unit + 2]]
        )
        return out

    def _block(self, line: int, entry: int) -> dict[str, Any]:
        content = _content_blocks(self.index.value(line).get("message"))
        block: dict[str, Any] = content[self.index.tool_block[entry]]
        return block


def _content_blocks(message: Any) -> Any:
    return message.get("content") if isinstance(message, dict) else None


def _split_user(content: Any) -> tuple[list[dict[str, Any]], list[Any]]:
    """The tool_result blocks of a user record's content, and the other blocks."""
    if not isinstance(content, list):
        return [], []
    results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
    others = [b for b in content if not (isinstance(b, dict) and b.get("type") == "tool_result")]
    return results, others


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
    #: The tool_use ids of ``agents`` (the calls worth remembering in ``calls``).
    wanted: set[str] = field(default_factory=set)


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
        index = thread.index
        for line in thread.lines:
            if index.flags[line] & TREE_TYPE:
                value = index.value(line)
                self.context = {k: value[k] for k in _CONTEXT if k in value}
                break
        self.points: dict[Hashable, Point] = {}
        self.boundaries: dict[str, str] = {}  # compact unit key -> compact.boundary event id

    def _plan(self) -> tuple[list[tuple[Hashable, Sequence[Hashable]]], Callable[[Any], int]]:
        """The branches (``(fork_from or None, nodes)``) and the unit of a node.

        Nodes are the units in file order; in a hand-made file where two units share
        a key (a uuid written twice), they are the keys, as the importer always read
        such files (the last unit of a key stands for it)."""
        thread = self.thread
        order = thread.order
        if thread.uuids.previous:
            keys = [thread.key_of(u) for u in order]
            if len(set(keys)) < len(keys):
                by_key = dict(zip(keys, order, strict=True))
                parents: dict[Hashable, Hashable | None] = {
                    key: thread.key_of(thread.parent[u]) if thread.parent[u] >= 0 else None
                    for key, u in zip(keys, order, strict=True)
                }
                plan = [(b.fork_from, b.nodes) for b in plan_branches(keys, parents)]
                return [*plan], by_key.__getitem__
            del keys
        if isinstance(order, range):
            ranked: Sequence[int] = thread.parent
        else:
            rank = array("i", [0]) * len(order)
            for position, unit in enumerate(order):
                rank[unit] = position
            parent = thread.parent
            ranked = array("i", (rank[parent[u]] if parent[u] >= 0 else -1 for u in order))
        branches = plan_branches_indexed(ranked)
        return [(f if f >= 0 else None, nodes) for f, nodes in branches], order.__getitem__

    def sessions(self) -> list[SessionBuilder]:
        """The main line's session and one per fork, their events made (and kept on
        disk by the builders) one unit at a time."""
        thread = self.thread
        branches, unit_of = self._plan()
        forks_from = {fork_from for fork_from, _ in branches if fork_from is not None}
        cwd = self.context.get("cwd")
        if not isinstance(cwd, str) or not cwd:
            cwd = str(self.path.parent.resolve())
        first_millis = self._first_millis()
        out: list[SessionBuilder] = []
        plan: list[tuple[Hashable, Sequence[Hashable]]] = branches or [(None, ())]
        for fork_from, nodes in plan:
            if fork_from is None:
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
                    spill=True,
                )
                for line in thread.leading():
                    self._keep(builder, line)
            else:
                point = self.points[fork_from]
                first = thread.unit(unit_of(nodes[0]))
                builder = SessionBuilder(
                    self.stream,
                    key=f"{self.key}:fork:{first.key}",
                    working_directory=cwd,
                    millis=self._millis(first.lines[0], point.millis),
                    title=self.title,
                    fork_from=point,
                    spill=True,
                )
            for node in nodes:
                self._emit(builder, thread.unit(unit_of(node)))
                if node in forks_from:
                    self.points[node] = builder.point()
            out.append(builder)
        return out

    def _first_millis(self) -> int:
        index = self.thread.index
        for line in self.thread.lines:
            if index.flags[line] & HAS_TIME:
                millis = to_millis(index.value(line).get("timestamp"))
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
        elif kind not in TREE_TYPES and kind not in KNOWN_OTHER:
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
            if use_id in self.links.wanted or block.get("name") in _SPAWN_TOOLS:
                # Only the calls a sub-agent can name are remembered (not every call).
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
        parent_key = self.thread.key_of(unit.parent) if unit.parent >= 0 else None
        if parent_key in self.boundaries:
            payload["boundaryEventId"] = self.boundaries[parent_key]
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


def _title(index: Index) -> str | None:
    """``custom-title``, else ``ai-title``, else the ``summary`` naming a record of the file."""
    return index.custom_title or index.ai_title or index.summary_title


def _check_format(index: Index) -> None:
    if index.recognised:
        return
    head = index.as_head_file()
    guess = guess_format(head)
    if guess is not None and guess != KIND:
        raise ImportFormatError(
            index.path,
            f"is {FORMAT_NAMES[guess]}, not a Claude Code transcript: import it with "
            f"`--from {guess}`",
            line=head.lines[0].number,
        )
    raise ImportFormatError(
        index.path,
        "has no Claude Code record (user/assistant/system/summary lines with a uuid or "
        "sessionId): not a Claude Code transcript",
        line=head.lines[0].number,
    )


def _read(path: Path, *, split_sidechains: bool) -> Index:
    """Index a transcript, refused (ImportFormatError) if it is not one."""
    index = scan(path, split_sidechains=split_sidechains)
    _check_format(index)
    return index


def _meta(path: Path) -> dict[str, Any]:
    meta = path.with_name(path.stem + ".meta.json")
    try:
        value = orjson.loads(meta.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def _session_file_records(
    stream: ImportStream,
    path: Path,
    subagents: list[Path],
    *,
    standalone_subagent: bool = False,
) -> Iterator[Record]:
    """Every record of one main file (or one sub-agent file given alone) and the
    sub-agent files paired with it. The file is read (and refused if it is not a
    transcript) before the first record is returned; its events are then made and
    returned one session at a time, each sub-agent file read when its turn comes."""
    index = _read(path, split_sidechains=not standalone_subagent)
    return _file_records(stream, index, subagents, standalone_subagent)


def _file_records(
    stream: ImportStream, index: Index, subagents: list[Path], standalone_subagent: bool
) -> Iterator[Record]:
    path = index.path
    links = _Links()
    title = _title(index)
    if standalone_subagent:
        session_id = index.session_id or path.stem
        agent = index.agent_id or path.stem.removeprefix("agent-")
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
        session_id = path.stem
        key = f"{KIND}:{session_id}"
        extra = {}
    links.agents.update(index.agents)
    links.wanted.update(index.agents.values())
    thread = _Thread(index, index.main_lines(), index.main)
    index.release_grouping()
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
    try:
        sessions = emitter.sessions()
        index.forget()  # the last record read (it may be a large one) is not needed now
        main = sessions[0]
        for message in index.problems:
            main.notice(message)
        if not any(s.has_content for s in sessions) and not index.runs and not subagents:
            for builder in sessions:
                builder.discard()
            yield stream.notice(f"{path.name} holds no message: nothing imported from it")
            return
        for builder in sessions:
            yield from builder.records()
        del emitter, thread, sessions

        # Sub-agents written into the main file (older versions).
        for lines, uuids in index.runs:
            child = _Thread(index, lines, uuids)
            root = index.value(lines[0])
            prompt = _text_of((root.get("message") or {}).get("content"))
            use_id = next((u for u in links.prompts.get(prompt, []) if u not in links.used), None)
            yield from _child_records(
                stream,
                child,
                links,
                use_id,
                main,
                key=f"{KIND}:{session_id}:sidechain:{root.get('uuid')}",
                path=path,
                extra={"imported": {"sidechainOf": session_id}},
            )
    finally:
        index.close()
    # Sub-agents in their own files (newer versions).
    for sub_path in subagents:
        try:
            sub = _read(sub_path, split_sidechains=False)
        except ImportFormatError as exc:
            yield stream.notice(f"sub-agent transcript skipped: {exc}", main.id)
            continue
        try:
            yield from _subagent_records(stream, sub, links, main, session_id)
        finally:
            sub.close()


def _subagent_records(
    stream: ImportStream, sub: Index, links: _Links, main: SessionBuilder, session_id: str
) -> Iterator[Record]:
    sub_path = sub.path
    agent = sub.agent_id or sub_path.stem.removeprefix("agent-")
    meta = _meta(sub_path)
    use_id = links.agents.get(agent)
    extra: dict[str, Any] = {"imported": {"agentId": agent, "file": sub_path.name}}
    if meta:
        extra["imported"]["meta"] = meta
        if isinstance(meta.get("agentType"), str):
            extra["subagentType"] = meta["agentType"]
        if isinstance(meta.get("description"), str):
            extra["description"] = meta["description"]
    child = _Thread(sub, sub.main_lines(), sub.main)
    child_id: str | None = None
    for record in _child_records(
        stream,
        child,
        links,
        use_id,
        main,
        key=f"{KIND}:{session_id}:agent:{agent}",
        path=sub_path,
        extra=extra,
    ):
        if child_id is None and record.get("kind") == "session":
            child_id = record["id"]
        yield record
    for problem in sub.problems:
        yield stream.notice(problem, child_id)


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
) -> Iterator[Record]:
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
    thread.index.forget()
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
    for builder in sessions:
        yield from builder.records()


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
            records = _session_file_records(stream, main, subs)
        except ImportFormatError as exc:
            yield stream.notice(f"skipped: {exc}")
            continue
        yield from records
    for orphan in files:
        if orphan in mains or orphan in paired:
            continue
        try:
            records = _session_file_records(stream, orphan, [], standalone_subagent=True)
        except ImportFormatError as exc:
            yield stream.notice(f"skipped: {exc}")
            continue
        yield from records
