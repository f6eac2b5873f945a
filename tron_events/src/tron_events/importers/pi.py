"""pi sessions (``~/.pi/agent/sessions/--<cwd>--/<timestamp>_<uuid>.jsonl``).

The first line is the header (``{type: "session", id, timestamp, cwd}``, with
``version`` 2 or 3 when the entries form a tree); every other line an entry. In
versions 2 and 3 entries carry ``id``/``parentId`` (pi branches in place: the
main line is the path to the entry written last, every other branch a fork); in
version 1 they have neither and follow one another in file order. How entries
become events:

* ``message`` by role: ``user`` → ``message.user``; ``assistant`` →
  ``message.assistant`` (text, thinking with its signature translated to the
  provider's: Anthropic's as is, OpenAI's reasoning item unpacked into
  ``signature``/``item_id``, Gemini's thought signature; ``toolCall`` →
  ``tool_use``) then a ``tool.call`` per call, and a ``stream.turn_end`` with the
  cost when pi recorded one; ``toolResult`` → ``tool.result``; the messages pi
  itself sends as user text (``bashExecution``, ``custom``/``hookMessage``,
  ``branchSummary``) → ``message.user``;
* ``model_change`` → ``config.model_switch``; ``thinking_level_change`` →
  ``config.reasoning_level``;
* ``compaction`` → ``compact.summary``, followed by copies (marked ``replayOf``)
  of the messages pi keeps after its summary (from ``firstKeptEntryId``), since
  Tron's summary replaces everything before it;
* ``branch_summary`` and ``custom_message`` (pi puts both in the context) →
  ``message.user``; ``session_info`` names the session; ``custom``, ``label``
  and unknown entries are kept as ``metadata.import``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from ._builder import ImportStream, Point, SessionBuilder
from ._detect import FORMAT_NAMES, guess_format
from ._errors import ImportFormatError
from ._jsonl import JsonlFile, Line, read_jsonl
from ._time import to_millis
from ._tree import plan_branches

__all__ = ["import_pi"]

KIND = "pi"
_KNOWN = {
    "message",
    "model_change",
    "thinking_level_change",
    "compaction",
    "branch_summary",
    "custom",
    "custom_message",
    "label",
    "session_info",
}
#: pi's ``api`` of an assistant message -> Tron's provider.
_APIS = {
    "anthropic-messages": "anthropic",
    "openai-responses": "openai-responses",
    "openai-codex-responses": "openai-responses",
    "azure-openai-responses": "openai-responses",
    "openai-completions": "openai",
    "google-generative-ai": "google",
    "google-gemini-cli": "google",
    "google-vertex": "google",
}
#: pi's provider names -> Tron's (others speak an OpenAI-compatible API).
_PROVIDERS = {
    "anthropic": "anthropic",
    "openai": "openai-responses",
    "openai-codex": "openai-responses",
    "azure-openai-responses": "openai-responses",
    "google": "google",
    "google-gemini-cli": "google",
    "google-vertex": "google",
    "google-antigravity": "google",
}
_STOP = {
    "stop": "end_turn",
    "length": "max_tokens",
    "toolUse": "tool_use",
    "error": "error",
    "aborted": "aborted",
}
_LEVELS = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "xhigh"}

Record = dict[str, Any]


def _provider(name: Any, api: Any = None) -> str | None:
    if isinstance(api, str) and api in _APIS:
        return _APIS[api]
    if not isinstance(name, str) or not name:
        return None
    return _PROVIDERS.get(name, "openai-compatible")


def _user_blocks(content: Any) -> str | list[Any]:
    """pi user/tool content (text and ``{data, mimeType}`` images) in our block shapes."""
    if isinstance(content, str):
        return content
    blocks: list[Any] = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict) and part.get("type") == "image" and "data" in part:
            blocks.append(
                {
                    "type": "image",
                    "source": {
                        "type": "base64",
                        "media_type": str(part.get("mimeType") or "image/png"),
                        "data": str(part.get("data")),
                    },
                }
            )
        else:
            blocks.append(part)
    return blocks


def _thinking(block: dict[str, Any], provider: str | None) -> dict[str, Any]:
    signature = block.get("thinkingSignature")
    text = block.get("thinking") if isinstance(block.get("thinking"), str) else ""
    if block.get("redacted") is True and isinstance(signature, str):
        return {"type": "redacted_thinking", "data": signature}
    out: dict[str, Any] = {"type": "thinking", "thinking": text}
    if provider == "openai-responses" and isinstance(signature, str):
        # pi keeps the whole reasoning item, as JSON, in the signature.
        try:
            item = orjson.loads(signature)
        except orjson.JSONDecodeError:
            item = None
        if isinstance(item, dict):
            out["provider"] = "openai"
            if isinstance(item.get("encrypted_content"), str):
                out["signature"] = item["encrypted_content"]
            if isinstance(item.get("id"), str):
                out["item_id"] = item["id"]
            out["thinkingSignature"] = signature
            return out
    if isinstance(signature, str) and signature:
        if provider in ("anthropic", "google"):
            out["signature"] = signature
            out["provider"] = provider
        else:
            out["thinkingSignature"] = signature  # whose it is is unknown: not replayed
            if provider:
                out["provider"] = provider
    elif provider and provider != "anthropic":
        out["provider"] = provider
    return out


def _assistant_blocks(content: Any, provider: str | None) -> list[Any]:
    blocks: list[Any] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text":
            block: dict[str, Any] = {"type": "text", "text": str(part.get("text", ""))}
            signature = part.get("textSignature")
            if isinstance(signature, str):
                if provider == "google":
                    block["signature"] = signature  # Gemini's thought signature on the part
                else:
                    block["textSignature"] = signature
            blocks.append(block)
        elif kind == "thinking":
            blocks.append(_thinking(part, provider))
        elif kind == "toolCall":
            arguments = part.get("arguments")
            use: dict[str, Any] = {
                "type": "tool_use",
                "id": str(part.get("id")),
                "name": str(part.get("name")),
                "input": arguments if isinstance(arguments, dict) else {"arguments": arguments},
            }
            if provider == "google" and isinstance(part.get("thoughtSignature"), str):
                use["signature"] = part["thoughtSignature"]
            blocks.append(use)
        else:
            blocks.append(part)
    return blocks


def _usage(usage: Any) -> tuple[dict[str, int] | None, float | None]:
    if not isinstance(usage, dict):
        return None, None

    def number(name: str) -> int:
        value = usage.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    # pi's ``input`` leaves the cache out; Tron counts the whole input.
    tokens = {
        "inputTokens": number("input") + number("cacheRead") + number("cacheWrite"),
        "outputTokens": number("output"),
        "cacheReadTokens": number("cacheRead"),
        "cacheCreationTokens": number("cacheWrite"),
    }
    cost = usage.get("cost")
    total = cost.get("total") if isinstance(cost, dict) else None
    if isinstance(total, bool) or not isinstance(total, int | float):
        total = None
    return tokens, (float(total) if total is not None else None)


class _Session:
    """One pi file: its header, entries, and their emission into sessions."""

    def __init__(self, stream: ImportStream, file: JsonlFile) -> None:
        self.stream = stream
        self.file = file
        first = file.lines[0].value
        self.header: dict[str, Any] = first if first.get("type") == "session" else {}
        self.entries = [line for line in file.lines if line.value is not self.header]
        version = self.header.get("version")
        self.tree = isinstance(version, int) and version >= 2
        self.points: dict[str, Point] = {}
        self.events_of: dict[str, list[str]] = {}  # entry key -> its message event ids
        self.keys: dict[int, str] = {}  # line number -> entry key
        self.model: str | None = None

    def key(self, line: Line) -> str:
        return self.keys[line.number]

    def sessions(self) -> list[SessionBuilder]:
        header = self.header
        session_id = str(header.get("id") or self.file.path.stem)
        cwd = header.get("cwd")
        if not isinstance(cwd, str) or not cwd:
            cwd = str(self.file.path.parent.resolve())
        millis = to_millis(header.get("timestamp"))
        if millis is None:
            millis = next(
                (m for m in (to_millis(x.value.get("timestamp")) for x in self.entries) if m), 0
            )
        # Node keys: the entry ids (a version-1 file has none: its line numbers).
        seen: set[str] = set()
        order: list[str] = []
        parents: dict[str, str | None] = {}
        previous: str | None = None
        for line in self.entries:
            raw = line.value.get("id")
            key = raw if self.tree and isinstance(raw, str) and raw else f"line{line.number}"
            if key in seen:
                key = f"{key}@line{line.number}"
            seen.add(key)
            self.keys[line.number] = key
            order.append(key)
            parent = line.value.get("parentId") if self.tree else previous
            if self.tree and "parentId" not in line.value:
                parent = previous  # an entry without a link continues the one before
            parents[key] = parent if isinstance(parent, str) else None
            previous = key
        by_key = {self.keys[line.number]: line for line in self.entries}
        title = None
        for line in self.entries:
            if line.value.get("type") == "session_info" and isinstance(line.value.get("name"), str):
                title = line.value["name"]
        model = header.get("modelId") if isinstance(header.get("modelId"), str) else None
        provider = _provider(header.get("provider"))
        extra = {"imported": {"header": header}}
        out: list[SessionBuilder] = []
        branches = plan_branches(order, parents)
        for branch in branches:
            if branch.fork_from is None:
                builder = SessionBuilder(
                    self.stream,
                    key=f"{KIND}:{session_id}",
                    working_directory=cwd,
                    millis=millis,
                    provider=provider,
                    model=model,
                    title=title,
                    start_extra=extra,
                )
                level = header.get("thinkingLevel")
                if isinstance(level, str) and _LEVELS.get(level):
                    builder.add(
                        "config.reasoning_level",
                        {"newLevel": _LEVELS[level], "sourceLevel": level},
                        key="header:level",
                        millis=millis,
                    )
                if not self.header:
                    builder.notice(
                        f"{self.file.path.name} has no session header line: the session id is "
                        "the file name and the working directory the file's folder"
                    )
                for problem in self.file.problems:
                    builder.notice(problem)
            else:
                point = self.points[branch.fork_from]
                first = by_key[branch.nodes[0]]
                builder = SessionBuilder(
                    self.stream,
                    key=f"{KIND}:{session_id}:fork:{branch.nodes[0]}",
                    working_directory=cwd,
                    millis=builder_time(first, point.millis),
                    title=title,
                    fork_from=point,
                )
            path: list[str] = []
            if branch.fork_from is not None:
                path = self._path_to(branch.fork_from, parents)
            for node in branch.nodes:
                path.append(node)
                self._emit(builder, by_key[node], path, by_key)
                self.points[node] = builder.point()
            out.append(builder)
        return out

    def _path_to(self, node: str, parents: dict[str, str | None]) -> list[str]:
        path: list[str] = []
        current: str | None = node
        seen: set[str] = set()
        while current is not None and current not in seen:
            seen.add(current)
            path.append(current)
            current = parents.get(current)
        path.reverse()
        return path

    # -- entries ----------------------------------------------------------------------

    def _emit(
        self,
        builder: SessionBuilder,
        line: Line,
        path: list[str],
        by_key: dict[str, Line],
        *,
        replay_of: str | None = None,
        replay_millis: int | None = None,
    ) -> None:
        value = line.value
        kind = value.get("type")
        key = self.key(line) + (f":replay:{replay_of}" if replay_of else "")
        # A copy is made when the compaction is: it gets the compaction's time.
        millis = (
            replay_millis if replay_millis is not None else builder.time(value.get("timestamp"))
        )
        replay = {"replayOf": self.events_of.get(self.key(line), [None])[0]} if replay_of else {}
        ids: list[str] = []
        if kind == "message" and isinstance(value.get("message"), dict):
            ids = self._message(builder, value, value["message"], key, millis, replay)
        elif kind == "model_change" and not replay_of:
            provider = _provider(value.get("provider"))
            model = value.get("modelId")
            switched = isinstance(model, str) and builder.use_model(
                model, provider, key=f"{key}:model", millis=millis, imported=value
            )
            if not switched:  # the first model, or the same one again: kept as read
                builder.keep(
                    str(kind),
                    value,
                    key=key,
                    millis=millis,
                    line=line.number,
                    count_as="model_change that switched nothing (first model, or the one in use)",
                )
        elif kind == "thinking_level_change" and not replay_of:
            level = value.get("thinkingLevel")
            builder.add(
                "config.reasoning_level",
                {"newLevel": _LEVELS.get(str(level)), "sourceLevel": level, "imported": value},
                key=key,
                millis=millis,
            )
        elif kind == "compaction" and not replay_of:
            self._compaction(builder, line, path, by_key, key, millis)
        elif kind in ("branch_summary", "custom_message"):
            if kind == "branch_summary":
                content: Any = (
                    "The following is a summary of a branch that this conversation came back "
                    f"from:\n\n<summary>\n{value.get('summary', '')}\n</summary>"
                )
            else:
                content = _user_blocks(value.get("content"))
            ids.append(
                builder.add(
                    "message.user",
                    {"content": content, "turn": builder.turn + 1, "imported": value, **replay},
                    key=key,
                    millis=millis,
                )
            )
        elif kind == "session_info" and not replay_of:
            builder.keep(str(kind), value, key=key, millis=millis, line=line.number)
        elif not replay_of:
            name = str(kind) if kind in _KNOWN else f"unknown entry type {kind!r}"
            builder.keep(str(kind), value, key=key, millis=millis, line=line.number, count_as=name)
        if ids and not replay_of:
            self.events_of[self.key(line)] = ids

    def _message(
        self,
        builder: SessionBuilder,
        entry: dict[str, Any],
        message: dict[str, Any],
        key: str,
        millis: int,
        replay: dict[str, Any],
    ) -> list[str]:
        role = message.get("role")
        rest = {k: v for k, v in message.items() if k not in ("role", "content")}
        imported: dict[str, Any] = {k: v for k, v in entry.items() if k not in ("message", "type")}
        if rest:
            imported["message"] = rest
        if role == "user":
            return [
                builder.add(
                    "message.user",
                    {
                        "content": _user_blocks(message.get("content")),
                        "turn": builder.turn + 1,
                        "imported": imported,
                        **replay,
                    },
                    key=key,
                    millis=millis,
                )
            ]
        if role == "assistant":
            return self._assistant(builder, message, imported, key, millis, replay)
        if role == "toolResult":
            payload: dict[str, Any] = {
                "toolCallId": str(message.get("toolCallId")),
                "content": _user_blocks(message.get("content")),
                "isError": message.get("isError") is True,
                "imported": imported,
                **replay,
            }
            return [builder.add("tool.result", payload, key=key, millis=millis)]
        if role == "bashExecution":
            if message.get("excludeFromContext") is True:
                builder.keep(
                    "message",
                    entry,
                    key=key,
                    millis=millis,
                    count_as="bashExecution left out of the context (!!)",
                )
                return []
            output = str(message.get("output") or "")
            text = f"Ran `{message.get('command', '')}`\n```\n{output}\n```"
            if message.get("cancelled"):
                text += "\n\n(command cancelled)"
            elif message.get("exitCode") not in (0, None):
                text += f"\n\nCommand exited with code {message.get('exitCode')}"
            return [
                builder.add(
                    "message.user",
                    {"content": text, "turn": builder.turn + 1, "imported": imported, **replay},
                    key=key,
                    millis=millis,
                )
            ]
        if role in ("custom", "hookMessage", "branchSummary", "compactionSummary"):
            if role == "compactionSummary" and not replay:
                summary = str(message.get("summary", ""))
                return [
                    builder.add(
                        "compact.summary",
                        {"summary": summary, "imported": imported},
                        key=key,
                        millis=millis,
                    )
                ]
            content: Any = _user_blocks(message.get("content"))
            if role in ("branchSummary", "compactionSummary"):
                content = str(message.get("summary", ""))
            return [
                builder.add(
                    "message.user",
                    {"content": content, "turn": builder.turn + 1, "imported": imported, **replay},
                    key=key,
                    millis=millis,
                )
            ]
        builder.keep(
            "message", entry, key=key, millis=millis, count_as=f"message with unknown role {role!r}"
        )
        return []

    def _assistant(
        self,
        builder: SessionBuilder,
        message: dict[str, Any],
        imported: dict[str, Any],
        key: str,
        millis: int,
        replay: dict[str, Any],
    ) -> list[str]:
        provider = _provider(message.get("provider"), message.get("api"))
        model = message.get("model") if isinstance(message.get("model"), str) else None
        if not replay:
            builder.use_model(model, provider, key=f"{key}:model", millis=millis)
        turn = builder.turn if replay else builder.next_turn()
        blocks = _assistant_blocks(message.get("content"), provider)
        tokens, cost = _usage(message.get("usage"))
        stop = message.get("stopReason")
        payload: dict[str, Any] = {"content": blocks, "turn": turn, "imported": imported, **replay}
        if tokens is not None and not replay:
            payload["tokenUsage"] = tokens
        if isinstance(stop, str):
            payload["stopReason"] = _STOP.get(stop, stop)
            if stop == "aborted":
                payload["interrupted"] = True
        if model:
            payload["model"] = model
        if isinstance(message.get("errorMessage"), str):
            payload["errorMessage"] = message["errorMessage"]
        ids = [builder.add("message.assistant", payload, key=f"{key}:assistant", millis=millis)]
        for block in blocks:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                ids.append(
                    builder.add(
                        "tool.call",
                        {
                            "toolCallId": block["id"],
                            "name": block["name"],
                            "arguments": block["input"],
                            "turn": turn,
                            **replay,
                        },
                        key=f"{key}:{block['id']}:call",
                        millis=millis,
                    )
                )
        if cost is not None and cost > 0 and not replay:
            builder.add(
                "stream.turn_end",
                {
                    "turn": turn,
                    "stopReason": payload.get("stopReason"),
                    "tokenUsage": tokens,
                    "cost": cost,
                },
                key=f"{key}:turn_end",
                millis=millis,
            )
        return ids

    def _compaction(
        self,
        builder: SessionBuilder,
        line: Line,
        path: list[str],
        by_key: dict[str, Line],
        key: str,
        millis: int,
    ) -> None:
        value = line.value
        rest = {k: v for k, v in value.items() if k not in ("type", "summary")}
        builder.add(
            "compact.summary",
            {"summary": str(value.get("summary") or ""), "imported": rest},
            key=key,
            millis=millis,
        )
        # pi keeps the messages from ``firstKeptEntryId`` on after its summary.
        kept: list[str] = []
        first = value.get("firstKeptEntryId")
        index = value.get("firstKeptEntryIndex")
        here = path[:-1]  # the path before this compaction
        if isinstance(first, str) and first in here:
            kept = here[here.index(first) :]
        elif (
            isinstance(index, int)
            and not isinstance(index, bool)
            and 0 <= index < len(self.entries)
        ):
            target = self.key(self.entries[index])
            if target in here:
                kept = here[here.index(target) :]
        # Only what follows the latest earlier compaction is in pi's context.
        for position in range(len(kept) - 1, -1, -1):
            if by_key[kept[position]].value.get("type") == "compaction":
                kept = kept[position + 1 :]
                break
        replayed = 0
        for node in kept:
            entry = by_key[node]
            if entry.value.get("type") in ("message", "branch_summary", "custom_message"):
                before = len(builder.events)
                self._emit(
                    builder, entry, path, by_key, replay_of=self.key(line), replay_millis=millis
                )
                replayed += len(builder.events) - before
        if replayed:
            builder.remarks[
                "a pi compaction keeps the messages after firstKeptEntryId in the context: "
                "they follow its compact.summary again as copies (marked replayOf)"
            ] += 1


def builder_time(line: Line, default: int) -> int:
    millis = to_millis(line.value.get("timestamp"))
    return default if millis is None else millis


def _check_format(file: JsonlFile) -> None:
    first = file.lines[0].value
    if first.get("type") == "session" and "id" in first:
        return
    guess = guess_format(file)
    if guess == KIND:
        return  # entries without their header line: imported, with a notice
    if guess is not None:
        raise ImportFormatError(
            file.path,
            f"is {FORMAT_NAMES[guess]}, not a pi session: import it with `--from {guess}`",
            line=file.lines[0].number,
        )
    raise ImportFormatError(
        file.path,
        'does not start with a pi session header ({"type": "session", "id", "cwd", …}): '
        "not a pi session",
        line=file.lines[0].number,
    )


def _records(stream: ImportStream, path: Path) -> list[Record]:
    file = read_jsonl(path)
    _check_format(file)
    records: list[Record] = []
    for builder in _Session(stream, file).sessions():
        records.extend(builder.records())
    return records


def import_pi(path: Path) -> Iterator[Record]:
    """Records for a pi session file, or for every session under a folder."""
    stream = ImportStream(KIND, str(path))
    if not path.is_dir():
        records = _records(stream, path)
        yield from stream.header()
        yield from records
        return
    yield from stream.header()
    for candidate in sorted(p for p in path.rglob("*.jsonl") if p.is_file()):
        try:
            records = _records(stream, candidate)
        except ImportFormatError as exc:
            yield stream.notice(f"skipped: {exc}")
            continue
        yield from records
