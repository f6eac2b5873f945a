"""Agent definitions: Markdown files with front matter, in Claude Code's sub-agent format.

Where they are read (later wins on a name clash)::

    built-in                                  general-purpose
    ~/.claude/agents/*.md                     scope "home" (Claude Code's user agents)
    <home>/agents/*.md                        scope "home" (~/.tron/agents: ours win)
    <working directory>/.claude/agents/*.md   scope "claude" (Claude Code's project agents)
    <working directory>/.tron/agents/*.md     scope "project" (ours win over Claude Code's)

The working directory's agents are read only once the user trusts the folder
(:mod:`tron_server.trust`); the home-level ones always.

A file::

    ---
    name: code-reviewer
    description: Reviews a diff for bugs. Use after every change.
    tools: Read, Grep, Glob          # or a list: [Read, Grep] or "- Read" lines; omit for all
    disallowedTools: Bash            # removed from whatever tools allows
    model: haiku                     # inherit (default), sonnet, opus, haiku or a model id
    maxTurns: 20
    ---
    You are a meticulous reviewer...  (the body is the sub-agent's system prompt)

``name`` and ``description`` are required. ``tools`` entries ``Task(a, b)`` (or Claude Code's
``Agent(a, b)``) allow the Task tool restricted to those agents (it is only offered when the
depth limit allows). Other keys Claude Code knows (``color``, ``permissionMode``, ``skills``,
``hooks`` …) are accepted and ignored. A file that cannot be used is skipped with a warning
saying which file and why (:func:`discover_agents` never raises for a bad file).
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ...context.listings import folder_name, present, user_dir
from ...trust import TrustStore, claude_user_dir

__all__ = [
    "GENERAL_PURPOSE",
    "AgentDefinition",
    "AgentFileError",
    "discover_agents",
    "parse_agent_file",
    "parse_front_matter",
]

log = logging.getLogger("tron_server.agent.subagents")

Scope = Literal["builtin", "home", "claude", "project"]
FrontMatter = dict[str, str | list[str]]

MAX_FILE_BYTES = 256 * 1024
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_TASK_ENTRY = re.compile(r"^(Task|Agent)\s*\((.*)\)$")
#: Keys of Claude Code's format we accept without using them.
_IGNORED_KEYS = frozenset(
    {
        "color",
        "permissionMode",
        "skills",
        "hooks",
        "mcpServers",
        "memory",
        "background",
        "effort",
        "disabled",
        "isolation",
    }
)


class AgentFileError(ValueError):
    """An agent file cannot be used; the message names the file and the problem."""


@dataclass(frozen=True)
class AgentDefinition:
    """One agent a Task call can start.

    ``tools`` None means every tool the runtime offers; ``task_agents`` is the set of
    agents the child may itself start (from ``Task(a, b)`` entries; None: any, when the
    depth limit lets it use Task at all). ``model`` None means inherit the parent's.
    """

    name: str
    description: str
    prompt: str
    tools: tuple[str, ...] | None = None
    disallowed_tools: tuple[str, ...] = ()
    model: str | None = None
    max_turns: int | None = None
    task_agents: tuple[str, ...] | None = None
    scope: Scope = "builtin"
    source: Path | None = None
    ignored_keys: tuple[str, ...] = field(default=())

    def allowed_tools(self, available: list[str]) -> list[str]:
        """The tools of ``available`` this agent may use, in ``available``'s order."""
        allowed = set(available) if self.tools is None else set(self.tools)
        allowed -= set(self.disallowed_tools)
        return [name for name in available if name in allowed]


GENERAL_PURPOSE = AgentDefinition(
    name="general-purpose",
    description=(
        "General-purpose agent for researching complex questions, searching for code and "
        "carrying out multi-step tasks on its own. Use it when a task needs several rounds "
        "of searching and reading, or to work on independent parts in parallel."
    ),
    prompt=(
        "You are a sub-agent of Tron, a coding agent: another agent gave you a task. Do it "
        "with the tools you have, on your own: nobody can answer questions while you work. "
        "Read and search before you conclude; make only the changes the task asks for.\n\n"
        "Your final message is the only thing the other agent sees: make it a complete, "
        "self-contained report of what you found or did (with file paths and line numbers "
        "where they help), and say plainly what you could not do."
    ),
)


# -- front matter ---------------------------------------------------------------------------


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _flow_list(value: str) -> list[str]:
    inner = value.strip()[1:-1]
    return [_unquote(part) for part in _split_top_level(inner) if part.strip()]


def _split_top_level(text: str) -> list[str]:
    """Split on commas outside parentheses (``Read, Task(a, b)`` is two entries)."""
    parts: list[str] = []
    depth = 0
    current = ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return [p.strip() for p in parts]


def parse_front_matter(text: str, where: str = "file") -> tuple[FrontMatter, str]:
    """Split ``text`` into (front matter, body).

    Values are strings, except YAML lists (``[a, b]`` or ``- a`` lines), which are lists
    of strings. ``>``/``|`` blocks and indented continuation lines are joined. Raises
    :class:`AgentFileError` when there is no front matter or it never ends.
    """
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise AgentFileError(f"{where}: no front matter (the file must start with a '---' line)")
    end = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
    if end is None:
        raise AgentFileError(f"{where}: the front matter has no closing '---' line")
    meta: FrontMatter = {}
    key: str | None = None
    block: list[str] | None = None
    folded = False
    for number, line in enumerate(lines[1:end], start=2):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        current = meta.get(key) if key is not None else None
        is_item = stripped.startswith("- ") or stripped == "-"
        if (
            is_item
            and key is not None
            and block is None
            and (isinstance(current, list) or current == "")
        ):
            items = current if isinstance(current, list) else []
            items.append(_unquote(stripped[1:].strip()))
            meta[key] = items
            continue
        if line[:1] in (" ", "\t") and key is not None:
            if block is not None:
                block.append(stripped)
                meta[key] = (" " if folded else "\n").join(block)
            elif isinstance(current, str):
                meta[key] = f"{current} {stripped}".strip()
            continue
        block = None
        if ":" not in stripped:
            raise AgentFileError(f"{where}: line {number}: expected 'key: value', got {stripped!r}")
        key, _, value = stripped.partition(":")
        key = key.strip()
        value = value.strip()
        if value in (">", ">-", "|", "|-"):
            block = []
            folded = value.startswith(">")
            meta[key] = ""
        elif value.startswith("[") and value.endswith("]"):
            meta[key] = _flow_list(value)
        else:
            meta[key] = _unquote(value)
    body = "\n".join(lines[end + 1 :]).strip()
    return meta, body


# -- one file ---------------------------------------------------------------------------------


def _tool_list(value: str | list[str], where: str, key: str) -> list[str]:
    items = value if isinstance(value, list) else _split_top_level(value)
    names = [item.strip() for item in items if item.strip()]
    for item in names:
        if not re.fullmatch(r"[A-Za-z0-9_.:*-]+(\s*\(.*\))?", item):
            raise AgentFileError(f"{where}: {key}: {item!r} is not a tool name")
    return names


def _split_task_entries(names: list[str]) -> tuple[list[str], tuple[str, ...] | None]:
    """``Task(a, b)`` / ``Agent(a, b)`` entries → ("Task" in the list, allowed agents)."""
    plain: list[str] = []
    agents: list[str] | None = None
    for name in names:
        match = _TASK_ENTRY.match(name)
        if match is None:
            plain.append("Task" if name == "Agent" else name)
            continue
        plain.append("Task")
        agents = (agents or []) + [a for a in _split_top_level(match.group(2)) if a]
    deduped = list(dict.fromkeys(plain))
    return deduped, tuple(agents) if agents is not None else None


def parse_agent_file(path: Path, scope: Scope) -> AgentDefinition:
    """Read one agent file; raises :class:`AgentFileError` saying what is wrong."""
    where = str(path)
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise AgentFileError(f"{where}: larger than {MAX_FILE_BYTES // 1024} KiB")
        text = path.read_text(encoding="utf-8-sig")  # editors on Windows write a BOM
    except UnicodeDecodeError:
        raise AgentFileError(f"{where}: not UTF-8 text") from None
    except OSError as exc:
        raise AgentFileError(f"{where}: cannot be read ({exc.strerror or exc})") from None
    meta, body = parse_front_matter(text, where)

    def text_field(key: str, *, required: bool = False) -> str | None:
        value = meta.get(key)
        if value is None or value == "":
            if required:
                raise AgentFileError(f"{where}: '{key}' is required in the front matter")
            return None
        if not isinstance(value, str):
            raise AgentFileError(f"{where}: '{key}' must be text, not a list")
        return value

    name = text_field("name", required=True)
    assert name is not None
    if not _NAME.match(name):
        raise AgentFileError(
            f"{where}: name {name!r} must be 1-64 letters, digits, '-', '_' or '.' "
            "(Claude Code uses lowercase letters and hyphens)"
        )
    description = text_field("description", required=True)
    assert description is not None
    tools: tuple[str, ...] | None = None
    task_agents: tuple[str, ...] | None = None
    if meta.get("tools", "") != "":  # an empty `tools:` is YAML null: every tool
        names, task_agents = _split_task_entries(_tool_list(meta["tools"], where, "tools"))
        ruled = [n for n in names if "(" in n]
        if ruled:
            # Claude Code's rules on a tool (``Bash(git *)``) need permission rules: the
            # agent does not get those tools at all rather than get them unrestricted.
            log.warning(
                "%s: tools: %s: rules on a tool are not supported in agent files; the agent "
                "does not get %s",
                where, ", ".join(ruled), ", ".join(sorted({n.split("(")[0] for n in ruled})),
            )  # fmt: skip
        tools = None if names == ["*"] else tuple(names)
    disallowed: tuple[str, ...] = ()
    if meta.get("disallowedTools", "") != "":
        listed = _tool_list(meta["disallowedTools"], where, "disallowedTools")
        disallowed = tuple(_split_task_entries(listed)[0])
    model = text_field("model")
    if model is not None and model.strip().lower() == "inherit":
        model = None
    max_turns: int | None = None
    raw_turns = text_field("maxTurns")
    if raw_turns is not None:
        try:
            max_turns = int(raw_turns)
        except ValueError:
            raise AgentFileError(
                f"{where}: maxTurns must be a whole number, got {raw_turns!r}"
            ) from None
        if max_turns < 1:
            raise AgentFileError(f"{where}: maxTurns must be at least 1")
    known = {"name", "description", "tools", "disallowedTools", "model", "maxTurns"}
    ignored = tuple(sorted(k for k in meta if k not in known))
    unknown = [k for k in ignored if k not in _IGNORED_KEYS]
    if unknown:
        log.info("%s: ignoring front matter keys %s", where, ", ".join(unknown))
    return AgentDefinition(
        name=name,
        description=" ".join(description.split()),
        prompt=body or GENERAL_PURPOSE.prompt,
        tools=tools,
        disallowed_tools=disallowed,
        model=model,
        max_turns=max_turns,
        task_agents=task_agents,
        scope=scope,
        source=path,
        ignored_keys=ignored,
    )


# -- discovery --------------------------------------------------------------------------------


def agent_dirs(home: Path, working_directory: Path) -> list[tuple[Scope, Path]]:
    """The folders read, lowest precedence first."""
    return [
        ("home", claude_user_dir() / "agents"),
        ("home", home.expanduser() / "agents"),
        ("claude", working_directory / ".claude" / "agents"),
        ("project", working_directory / ".tron" / "agents"),
    ]


def discover_agents(
    home: Path, working_directory: Path, *, trusted: bool | None = None
) -> dict[str, AgentDefinition]:
    """Every usable agent by name (the built-in general-purpose one included), sorted by name.
    ``trusted``: whether the working directory's own agents are read (None: as recorded in
    ``home``'s trust store).

    Malformed files are skipped with a warning naming the file and the problem."""
    found: dict[str, AgentDefinition] = {GENERAL_PURPOSE.name: GENERAL_PURPOSE}
    # agent_dirs's folders, as (a folder, the path below it): strings, no paths made
    # for folders that are not there.
    wd = os.fspath(working_directory)
    roots: tuple[tuple[Scope, str, tuple[str, ...]], ...] = (
        ("home", user_dir(), ("agents",)),
        ("home", folder_name(home), ("agents",)),
        ("claude", wd, (".claude", "agents")),
        ("project", wd, (".tron", "agents")),
    )
    for scope, base, rel in roots:
        # Most folders do not exist: the cached listings of the folders on the way say so
        # (a stat of each such folder), no glob, and the trust store is read only for a
        # project's folder that does (every run looks its agents up).
        if not present(base, *rel):
            continue
        folder = Path(base, *rel)
        if not os.path.isdir(folder):
            continue
        if scope != "home":
            if trusted is None:
                trusted = TrustStore(home).is_trusted(working_directory) is not None
            if not trusted:
                continue
        try:
            files = sorted(p for p in folder.glob("*.md") if p.is_file())
        except OSError:
            continue
        for path in files:
            try:
                definition = parse_agent_file(path, scope)
            except AgentFileError as exc:
                log.warning("agent file skipped: %s", exc)
                continue
            found[definition.name] = definition
    return {name: found[name] for name in sorted(found)}
