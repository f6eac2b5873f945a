"""One read of a Claude Code transcript into a compact index; records read again
from the file when their events are made.

Rebuilding a transcript's sessions needs its whole tree before the first event
(the main line is the path to the record written last), but not its records:
per line the index keeps where it is in the file, what kind of record it is, the
line its ``parentUuid`` names (resolved as the importer reads it: the latest
record of that uuid before it, else the first after), and 64-bit hashes of the
ids that group records (``message.id``, tool-use ids). That is flat ``array``
columns, under 100 bytes a line, where the parsed records took several KB each.

Lines of one *thread* (the main conversation, or one inline sub-agent run of the
old layout) only name lines of the same thread.
"""

from __future__ import annotations

import contextlib
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson

from . import _jsonl
from ._errors import ImportFormatError
from ._intmap import IntMap, stable_hash
from ._jsonl import JsonlFile, Line, check_lines, iter_lines, parse_line
from ._time import to_millis

__all__ = [
    "ASSISTANT",
    "COMPACT",
    "OTHER",
    "PROMPT",
    "SUMMARY",
    "Index",
    "Uuids",
    "scan",
]

# Categories of a line (what _build_units makes of it).
OTHER, ASSISTANT, PROMPT, SUMMARY, COMPACT = 0, 1, 2, 3, 4
# Flags of a line.
TREE_TYPE, HAS_UUID, PARENT_KEY, SIDECHAIN, HAS_TIME, OTHER_BLOCKS = 1, 2, 4, 8, 16, 32

TREE_TYPES = {"user", "assistant", "system", "progress", "attachment"}
KNOWN_OTHER = {
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


def _hash(value: Any) -> int:
    return stable_hash(value) if isinstance(value, str) else 0


def is_synthetic(value: dict[str, Any]) -> bool:
    message = value.get("message")
    model = message.get("model") if isinstance(message, dict) else None
    return bool(value.get("isApiErrorMessage")) or model == "<synthetic>"


class Uuids:
    """The uuids of one thread's lines: which line a uuid names as seen from a
    given line (the latest one before it, else the first one after)."""

    def __init__(self) -> None:
        self.latest = IntMap()
        #: line -> the previous line of the same uuid (repeats are rare)
        self.previous: dict[int, int] = {}
        #: uuid -> (line, slot) references to it not resolved yet (it comes later)
        self.pending: dict[int, list[tuple[int, int]]] = {}

    def refer(self, index: Index, line: int, uuid: int, slot: int) -> None:
        """Resolve line ``line``'s reference (slot 0 its parent, 1 its logical
        parent) to ``uuid``, now or when that uuid's first line is read."""
        if not uuid:
            return
        found = self.latest.get(uuid)
        if found >= 0:
            index.set_ref(line, slot, found)
        else:
            self.pending.setdefault(uuid, []).append((line, slot))

    def register(self, index: Index, line: int, uuid: int) -> None:
        if not uuid:
            return
        before = self.latest.get(uuid)
        if before >= 0:
            self.previous[line] = before
        else:
            for waiting, slot in self.pending.pop(uuid, ()):
                index.set_ref(waiting, slot, line)
        self.latest[uuid] = line

    def lines_of(self, uuid: int) -> list[int]:
        """The thread's lines with this uuid, in file order."""
        out: list[int] = []
        line = self.latest.get(uuid) if uuid else -1
        while line >= 0:
            out.append(line)
            line = self.previous.get(line, -1)
        out.reverse()
        return out

    def __contains__(self, uuid: int) -> bool:
        return self.latest.get(uuid) >= 0


@dataclass
class Index:
    """What of each line the importer needs before reading it again."""

    path: Path
    number: array[int] = field(default_factory=lambda: array("I"))
    offset: array[int] = field(default_factory=lambda: array("Q"))
    category: bytearray = field(default_factory=bytearray)
    flags: bytearray = field(default_factory=bytearray)
    #: The line the record's ``parentUuid`` names (-1: none, or not in its thread).
    parent: array[int] = field(default_factory=lambda: array("i"))
    #: Hash of the unit key of an assistant record (``message.id``, else its uuid,
    #: else ``line<n>``); of ``messageId``/``leafUuid`` for the other records.
    key: array[int] = field(default_factory=lambda: array("q"))
    #: Compaction boundaries: line -> the line ``logicalParentUuid`` names.
    logical: dict[int, int] = field(default_factory=dict)
    #: Tool blocks, in file order: the line, the hash of the tool-use id, the
    #: block's place in the content (tool_use of assistant lines, tool_result of
    #: user lines).
    tool_line: array[int] = field(default_factory=lambda: array("I"))
    tool_id: array[int] = field(default_factory=lambda: array("q"))
    tool_block: array[int] = field(default_factory=lambda: array("I"))
    #: Skipped lines, and why.
    problems: list[str] = field(default_factory=list)
    #: The first lines parsed, while no line is a Claude Code record (to guess the
    #: format of a file that is not a transcript).
    head: list[Line] = field(default_factory=list)
    recognised: int = 0
    session_id: str | None = None
    agent_id: str | None = None
    custom_title: str | None = None
    ai_title: str | None = None
    #: (hash of leafUuid, summary) of ``summary`` records, in file order.
    summaries: list[tuple[int, str]] = field(default_factory=list)
    #: The last summary naming a record of the file.
    summary_title: str | None = None
    #: Main-thread records naming another by ``messageId``/``leafUuid``: the lines
    #: of that uuid.
    named: dict[int, list[int]] = field(default_factory=dict)
    #: agentId -> tool-use id, as the records link them (first one wins).
    agents: dict[str, str] = field(default_factory=dict)
    main: Uuids = field(default_factory=Uuids)
    #: For the old layout's inline sub-agents: line -> (uuid, parentUuid,
    #: logicalParentUuid) hashes, and each run's lines and uuids once grouped.
    side: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    runs: list[tuple[array[int], Uuids]] = field(default_factory=list)
    #: line -> the unit (of its thread) it belongs to, -1 if none (filled by the importer)
    owner: array[int] = field(default_factory=lambda: array("i"))
    _handle: IO[bytes] | None = None
    _cache: tuple[int, dict[str, Any]] | None = None

    def __len__(self) -> int:
        return len(self.number)

    def set_ref(self, line: int, slot: int, target: int) -> None:
        if slot == 0:
            self.parent[line] = target
        else:
            self.logical[line] = target

    def main_lines(self) -> range | array[int]:
        if not self.side:
            return range(len(self))
        return array("I", (i for i in range(len(self)) if not self.flags[i] & SIDECHAIN))

    # -- reading a line again --------------------------------------------------------

    def value(self, line: int) -> dict[str, Any]:
        """The record of index line ``line``, read again from the file."""
        if self._cache is not None and self._cache[0] == line:
            return self._cache[1]
        if self._handle is None:
            try:
                self._handle = self.path.open("rb")
            except OSError as exc:
                raise ImportFormatError(
                    self.path, f"cannot be read again ({exc.strerror or exc})"
                ) from None
        self._handle.seek(self.offset[line])
        # One line, as when it was read (the size is not kept: 4 bytes a line).
        raw = self._handle.readline(_jsonl.MAX_LINE_BYTES + 1)
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            value = None
        if not isinstance(value, dict):
            raise ImportFormatError(
                self.path,
                "changed while it was being imported (a line read again differs)",
                line=self.number[line],
            )
        self._cache = (line, value)
        return value

    def release_grouping(self) -> None:
        """Drop what only grouping records into units needs (once the main thread is
        grouped, unless inline sub-agent runs still are to be)."""
        if not self.runs:
            self.key = array("q")
            self.tool_line = array("I")
            self.tool_id = array("q")

    def line(self, line: int) -> Line:
        return Line(self.number[line], self.value(line))

    def forget(self) -> None:
        """Drop the record kept from the last read."""
        self._cache = None

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        self._cache = None

    def as_head_file(self) -> JsonlFile:
        return JsonlFile(self.path, list(self.head), list(self.problems))


def scan(path: Path, *, split_sidechains: bool) -> Index:
    """Index ``path`` (raises :class:`ImportFormatError` if it is not JSONL, and
    :class:`~._errors.LineTooLongError` at a line over the limit). With
    ``split_sidechains`` (a main file), ``isSidechain`` records are inline
    sub-agents: threads of their own, grouped by their parent links."""
    index = Index(path)
    with contextlib.suppress(OSError):
        if path.stat().st_size < 1 << 32:
            index.offset = array("I")  # 4 bytes a line where they suffice
    for number, offset, raw in iter_lines(path):
        value, problem = parse_line(path, number, raw)
        if value is None:
            index.problems.append(str(problem))
            continue
        _add(index, number, offset, value, split_sidechains)
    check_lines(path, len(index), len(index.problems))
    if index.side:
        _group_sidechains(index)
    _resolve_names(index)
    index.owner = array("i", [-1]) * len(index)
    return index


def _resolve_names(index: Index) -> None:
    """Resolve what the main thread's uuid table is still needed for (the records a
    ``messageId``/``leafUuid`` names, the summary giving the title), then drop it:
    the largest table of the index, gone before units are grouped."""
    main = index.main
    for leaf, text in index.summaries:
        if leaf and (leaf in main or any(leaf in uuids for _, uuids in index.runs)):
            index.summary_title = text
    for line in range(len(index)):
        flags = index.flags[line]
        if (
            index.category[line] == OTHER
            and index.key[line]
            and not (flags & HAS_UUID and flags & PARENT_KEY)
            and line not in index.side
        ):
            index.named[line] = main.lines_of(index.key[line])
    main.latest = IntMap()


def _add(index: Index, number: int, offset: int, value: dict[str, Any], split: bool) -> None:
    line = len(index)
    kind = value.get("type")
    uuid = value.get("uuid")
    message = value.get("message")
    flags = 0
    if kind in TREE_TYPES:
        flags |= TREE_TYPE
    if isinstance(uuid, str):
        flags |= HAS_UUID
    if "parentUuid" in value:
        flags |= PARENT_KEY
    if value.get("isSidechain") is True:
        flags |= SIDECHAIN
    if to_millis(value.get("timestamp")) is not None:
        flags |= HAS_TIME
    key = 0
    category = OTHER
    if kind == "assistant" and isinstance(message, dict) and not is_synthetic(value):
        category = ASSISTANT
        message_id = message.get("id")
        unit_key = uuid if isinstance(uuid, str) else f"line{number}"
        key = stable_hash(message_id if isinstance(message_id, str) and message_id else unit_key)
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                use_id = block.get("id")
                if isinstance(use_id, str):
                    _tool(index, line, stable_hash(use_id), 0)
    elif kind == "user" and isinstance(message, dict) and "content" in message:
        if value.get("isCompactSummary"):
            category = SUMMARY
        else:
            category = PROMPT
            content = message.get("content")
            for place, block in enumerate(content if isinstance(content, list) else []):
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    _tool(index, line, stable_hash(str(block.get("tool_use_id"))), place)
                else:
                    flags |= OTHER_BLOCKS
    elif kind == "system" and value.get("subtype") == "compact_boundary":
        category = COMPACT
    else:
        named = value.get("messageId") or value.get("leafUuid")
        key = _hash(named)
    index.number.append(number)
    index.offset.append(offset)
    index.category.append(category)
    index.flags.append(flags)
    index.parent.append(-1)
    index.key.append(key)
    parent_hash = _hash(value.get("parentUuid"))
    logical_hash = _hash(value.get("logicalParentUuid") or value.get("parentUuid"))
    uuid_hash = _hash(uuid)
    if split and flags & SIDECHAIN:
        index.side[line] = (uuid_hash, parent_hash, logical_hash)
    else:
        index.main.refer(index, line, parent_hash, 0)
        if category == COMPACT:
            index.logical[line] = -1
            index.main.refer(index, line, logical_hash, 1)
        index.main.register(index, line, uuid_hash)
    _facts(index, number, value)


def _tool(index: Index, line: int, use_id: int, place: int) -> None:
    index.tool_line.append(line)
    index.tool_id.append(use_id)
    index.tool_block.append(place)


def _facts(index: Index, number: int, value: dict[str, Any]) -> None:
    """What the file says as a whole: its format, session, agent, title, links."""
    kind = value.get("type")
    if kind in TREE_TYPES | KNOWN_OTHER and (
        "uuid" in value or "sessionId" in value or kind in KNOWN_OTHER
    ):
        index.recognised += 1
        index.head.clear()  # a transcript: no format to guess (and no large line kept)
    elif not index.recognised and len(index.head) < 50:
        index.head.append(Line(number, value))
    if index.session_id is None and isinstance(value.get("sessionId"), str) and value["sessionId"]:
        index.session_id = value["sessionId"]
    if index.agent_id is None and isinstance(value.get("agentId"), str) and value["agentId"]:
        index.agent_id = value["agentId"]
    if kind == "custom-title" and isinstance(value.get("customTitle"), str):
        index.custom_title = value["customTitle"]
    elif kind == "ai-title" and isinstance(value.get("aiTitle"), str):
        index.ai_title = value["aiTitle"]
    elif kind == "summary" and isinstance(value.get("summary"), str):
        index.summaries.append((_hash(value.get("leafUuid")), value["summary"]))
    result = value.get("toolUseResult")
    if isinstance(result, dict) and isinstance(result.get("agentId"), str):
        message = value.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                if isinstance(block.get("tool_use_id"), str):
                    index.agents.setdefault(result["agentId"], block["tool_use_id"])
                break
    data = value.get("data")
    if (
        kind == "progress"
        and isinstance(data, dict)
        and isinstance(data.get("agentId"), str)
        and isinstance(value.get("parentToolUseID"), str)
    ):
        index.agents.setdefault(data["agentId"], value["parentToolUseID"])


def _group_sidechains(index: Index) -> None:
    """The inline sub-agent runs: sidechain records connected by their parent
    links (each run a thread, in the order of its first line)."""
    by_uuid: dict[int, int] = {}
    for line, (uuid, _parent, _logical) in index.side.items():
        if uuid:
            by_uuid[uuid] = line  # the last one, as a dict of them would keep
    group: dict[int, int] = {}

    def find(number: int) -> int:
        root = number
        while group.get(root, root) != root:
            root = group[root]
        group[number] = root
        return root

    for line, (_uuid, parent_hash, _logical) in index.side.items():
        group.setdefault(line, line)
        parent = by_uuid.get(parent_hash) if parent_hash else None
        if parent is not None:
            group.setdefault(parent, parent)
            a, b = find(line), find(parent)
            if a != b:
                group[max(a, b)] = min(a, b)
    runs: dict[int, array[int]] = {}
    for line in index.side:
        runs.setdefault(find(line), array("I")).append(line)
    for root in sorted(runs):
        lines, uuids = runs[root], Uuids()
        for line in lines:
            uuid, parent_hash, logical_hash = index.side[line]
            uuids.refer(index, line, parent_hash, 0)
            if index.category[line] == COMPACT:
                index.logical[line] = -1
                uuids.refer(index, line, logical_hash, 1)
            uuids.register(index, line, uuid)
        index.runs.append((lines, uuids))
