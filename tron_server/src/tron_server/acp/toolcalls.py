"""Tron's tool calls as ACP tool calls: kind, title, locations and content.

Pure functions of a call's name and arguments (and, at its end, its result), shared by
the live stream of a prompt (:mod:`.live`) and the replay of a stored session
(:mod:`.replay`), so an editor shows a call the same way both times.
"""

from __future__ import annotations

import os
import shlex
from functools import lru_cache
from typing import Any

from acp.schema import (
    AgentPlanUpdate,
    ContentToolCallContent,
    FileEditToolCallContent,
    ImageContentBlock,
    PlanEntry,
    PlanEntryStatus,
    TerminalToolCallContent,
    TextContentBlock,
    ToolCallLocation,
    ToolKind,
)

ToolContent = ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent

#: The kind of each built-in tool (MCP tools and unknown names are ``other``).
KINDS: dict[str, ToolKind] = {
    "Read": "read",
    "Write": "edit",
    "Edit": "edit",
    "NotebookEdit": "edit",
    "Bash": "execute",
    "Grep": "search",
    "Glob": "search",
    "WebFetch": "fetch",
    "WebSearch": "fetch",
    "Browser": "fetch",
    "TodoWrite": "think",
    "Task": "think",
    "Recall": "search",
}

#: The argument holding the path a tool acts on.
PATH_KEYS = {
    "Read": "file_path",
    "Write": "file_path",
    "Edit": "file_path",
    "NotebookEdit": "notebook_path",
    "Grep": "path",
    "Glob": "path",
}

#: Output kept in a running Bash call's update (the editor shows the end of it).
MAX_LIVE_OUTPUT = 50_000


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


@lru_cache(maxsize=4096)
def absolute(path: str, cwd: str) -> str:
    """``path`` made absolute against the session's folder (ACP wants absolute paths)."""
    full = os.path.expanduser(path)
    return os.path.normpath(full if os.path.isabs(full) else os.path.join(cwd, full))


# The updates are built with ``model_construct``: their values are ours and of the right
# types (the tests check every message against the schema), and a replay of a long
# session builds tens of thousands of them, where validating each would cost seconds.


def text_content(text: str) -> ContentToolCallContent:
    """Text as tool call content."""
    block = TextContentBlock.model_construct(type="text", text=text)
    return ContentToolCallContent.model_construct(type="content", content=block)


def _diff(path: str, new: str, old: str | None) -> FileEditToolCallContent:
    return FileEditToolCallContent.model_construct(
        type="diff", path=path, new_text=new, old_text=old
    )


def kind_of(name: str, arguments: dict[str, Any]) -> ToolKind:
    """ACP's kind: from the tool, and for Bash from the command (``rm`` deletes, ``mv``
    moves), so an editor can show the right icon."""
    if name == "Bash":
        try:
            words = shlex.split(_text(arguments.get("command")))
        except ValueError:
            words = []
        first = words[0] if words else ""
        if first in ("rm", "rmdir", "unlink"):
            return "delete"
        if first in ("mv", "git") and (first == "mv" or words[1:2] == ["mv"]):
            return "move"
        return "execute"
    return KINDS.get(name, "other")


def title_of(name: str, arguments: dict[str, Any], cwd: str) -> str:
    """A one-line title, as the terminal shows the call."""
    key = PATH_KEYS.get(name)
    path = _text(arguments.get(key)) if key else ""
    if name in ("Read", "Write", "Edit", "NotebookEdit") and path:
        return f"{name} {_shown(path, cwd)}"
    if name == "Bash":
        command = _text(arguments.get("command")).strip().splitlines()
        return f"`{command[0]}`" if command else "Bash"
    if name == "Grep":
        where = f" in {_shown(path, cwd)}" if path else ""
        return f"grep {_text(arguments.get('pattern'))!r}{where}"
    if name == "Glob":
        return f"glob {_text(arguments.get('pattern'))}"
    if name == "WebFetch":
        return f"Fetch {_text(arguments.get('url'))}"
    if name == "Task":
        return f"Task: {_text(arguments.get('description')) or 'sub-agent'}"
    if name == "TodoWrite":
        return "Update the plan"
    if name == "AskUser":
        return _text(arguments.get("question")) or "Question"
    if name.startswith("mcp__"):
        parts = name.split("__", 2)
        return f"{parts[2]} ({parts[1]})" if len(parts) == 3 else name
    return name


def _shown(path: str, cwd: str) -> str:
    full = absolute(path, cwd)
    prefix = cwd.rstrip("/") + "/"
    return full[len(prefix) :] if full.startswith(prefix) else full


def locations_of(name: str, arguments: dict[str, Any], cwd: str) -> list[ToolCallLocation]:
    """Where the call acts: absolute paths, with the first line for a Read window."""
    key = PATH_KEYS.get(name)
    path = _text(arguments.get(key)) if key else ""
    if not path:
        return []
    line = arguments.get("offset") if name == "Read" else None
    return [
        ToolCallLocation(path=absolute(path, cwd), line=line if isinstance(line, int) else None)
    ]


def diff_of(name: str, arguments: dict[str, Any], cwd: str) -> list[ToolContent]:
    """Edit and Write as ACP ``diff`` content (old and new text)."""
    path = _text(arguments.get("file_path"))
    if not path:
        return []
    if name == "Edit":
        old, new = arguments.get("old_string"), arguments.get("new_string")
        if isinstance(old, str) and isinstance(new, str):
            return [_diff(absolute(path, cwd), new, old)]
    if name == "Write" and isinstance(arguments.get("content"), str):
        return [_diff(absolute(path, cwd), arguments["content"], None)]
    return []


def plan_of(arguments: dict[str, Any]) -> AgentPlanUpdate | None:
    """A TodoWrite call's list as an ACP plan (None when the arguments are not a list)."""
    todos = arguments.get("todos")
    if not isinstance(todos, list):
        return None
    entries: list[PlanEntry] = []
    for todo in todos:
        if not isinstance(todo, dict) or not isinstance(todo.get("content"), str):
            continue
        status: PlanEntryStatus = "pending"
        if todo.get("status") in ("in_progress", "completed"):
            status = todo["status"]
        entries.append(
            PlanEntry.model_construct(content=todo["content"], priority="medium", status=status)
        )
    return AgentPlanUpdate.model_construct(session_update="plan", entries=entries)


def result_content(
    name: str, arguments: dict[str, Any], content: Any, cwd: str, *, is_error: bool
) -> list[ToolContent]:
    """What the editor shows when a call ended: a successful Edit or Write its diff,
    anything else (a failed edit too) its result: text, images."""
    diff = [] if is_error else diff_of(name, arguments, cwd)
    return diff or result_blocks(content)


def result_blocks(content: Any) -> list[ToolContent]:
    """A tool result (text, or Anthropic-shaped text and image blocks) as ACP content."""
    if isinstance(content, str):
        return [text_content(content)] if content else []
    out: list[ToolContent] = []
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                out.append(text_content(block["text"]))
            elif block.get("type") == "image":
                source = block.get("source") or {}
                if source.get("type") == "base64" and isinstance(source.get("data"), str):
                    image = ImageContentBlock.model_construct(
                        type="image",
                        data=source["data"],
                        mime_type=str(source.get("media_type") or "image/png"),
                    )
                    out.append(
                        ContentToolCallContent.model_construct(type="content", content=image)
                    )
    return out


def live_output(text: str) -> list[ToolContent]:
    """A running call's output so far (its end, at most :data:`MAX_LIVE_OUTPUT` characters)."""
    if len(text) > MAX_LIVE_OUTPUT:
        text = "…" + text[-MAX_LIVE_OUTPUT:]
    return [text_content(text)] if text else []


__all__ = [
    "KINDS",
    "ToolContent",
    "absolute",
    "diff_of",
    "kind_of",
    "live_output",
    "locations_of",
    "plan_of",
    "result_blocks",
    "result_content",
    "text_content",
    "title_of",
]
