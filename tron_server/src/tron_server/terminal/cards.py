"""What a tool card shows: a one-line summary of the call, its status, a diff for
Edit and Write (made from the tool's arguments), and the tail of its output.

Pure functions returning rich ``Text``, so they are tested without a screen.
"""

from __future__ import annotations

import difflib
import json

from rich.text import Text

from .model import ToolState, content_text

#: Output lines a collapsed card shows (the last ones).
TAIL_LINES = 6
#: Diff lines a collapsed card shows.
DIFF_LINES = 24

_SUMMARY_KEYS = {
    "Bash": "command",
    "Read": "file_path",
    "Write": "file_path",
    "Edit": "file_path",
    "Grep": "pattern",
    "Glob": "pattern",
    "Skill": "name",
    "Task": "description",
    "AskUser": "question",
    "Notify": "title",
}


def _one_line(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: max(1, width - 1)] + "…"


def summary(tool: ToolState, width: int = 80) -> str:
    """The call in one line: the main argument (command, path, pattern…)."""
    args = tool.arguments if isinstance(tool.arguments, dict) else {}
    key = _SUMMARY_KEYS.get(tool.name)
    if key and isinstance(args.get(key), str):
        main = str(args[key])
        if tool.name == "Grep" and isinstance(args.get("path"), str):
            main += f"  in {args['path']}"
        if tool.name == "Task" and isinstance(args.get("subagent_type"), str):
            main = f"[{args['subagent_type']}] {main}"
        return _one_line(main, width)
    if tool.name == "TodoWrite" and isinstance(args.get("todos"), list):
        return f"{len(args['todos'])} items"
    if not args:
        return ""
    return _one_line(json.dumps(args, ensure_ascii=False), width)


def status_mark(tool: ToolState) -> Text:
    if tool.status == "error":
        return Text("✗", style="bold red")
    if tool.status == "done":
        return Text("✓", style="bold green")
    return Text("…", style="yellow")


def header(tool: ToolState, width: int = 80) -> Text:
    """``✓ Bash  ls -la  0.2s``"""
    text = Text()
    text.append_text(status_mark(tool))
    text.append(" ")
    text.append(tool.name or "tool", style="bold")
    rest = summary(tool, max(10, width - len(tool.name) - 14))
    if rest:
        text.append("  ")
        text.append(rest, style="cyan")
    if tool.duration_ms is not None:
        seconds = tool.duration_ms / 1000
        text.append(f"  {seconds:.1f}s", style="dim")
    return text


def diff_lines(tool: ToolState) -> list[str] | None:
    """The unified diff an Edit or Write makes, from its arguments; None for other tools."""
    args = tool.arguments if isinstance(tool.arguments, dict) else {}
    path = str(args.get("file_path") or "file")
    if tool.name == "Edit" and isinstance(args.get("old_string"), str):
        old = str(args["old_string"]).splitlines()
        new = str(args.get("new_string") or "").splitlines()
        lines = list(difflib.unified_diff(old, new, f"a/{path}", f"b/{path}", n=2, lineterm=""))
        if args.get("replace_all"):
            lines.insert(0, "(every occurrence)")
        return lines
    if tool.name == "Write" and isinstance(args.get("content"), str):
        body = str(args["content"]).splitlines()
        return [f"+++ {path}", f"@@ {len(body)} lines @@", *(f"+{line}" for line in body)]
    return None


def render_diff(lines: list[str], limit: int | None = DIFF_LINES) -> Text:
    """Diff lines coloured: additions green, removals red, hunks cyan."""
    text = Text()
    shown = lines if limit is None else lines[:limit]
    for line in shown:
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("@@"):
            style = "cyan"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        else:
            style = "dim"
        text.append(line + "\n", style=style)
    if limit is not None and len(lines) > limit:
        text.append(f"… {len(lines) - limit} more lines (click or Enter on the card)\n", "dim")
    return text


def output_text(tool: ToolState) -> str:
    """The output to show: the result once there is one, else what streamed so far."""
    if tool.result is not None:
        return content_text(tool.result) if not isinstance(tool.result, str) else tool.result
    return tool.output


def tail(text: str, lines: int | None = TAIL_LINES) -> tuple[str, int]:
    """The last ``lines`` lines of ``text`` and how many were left out."""
    all_lines = text.rstrip("\n").splitlines()
    if lines is None or len(all_lines) <= lines:
        return "\n".join(all_lines), 0
    return "\n".join(all_lines[-lines:]), len(all_lines) - lines


def body(tool: ToolState, *, expanded: bool = False) -> Text:
    """Everything under the header: the diff (Edit/Write), the sub-agent's last
    activity (Task), then the output's tail (or all of it when ``expanded``)."""
    text = Text()
    diff = diff_lines(tool)
    if diff:
        text.append_text(render_diff(diff, None if expanded else DIFF_LINES))
    if tool.child_session_id or tool.child_activity:
        text.append(f"sub-agent {tool.child_session_id or ''}  ", style="magenta")
        text.append(_one_line(tool.child_activity or "starting…", 200) + "\n", style="dim")
    out = output_text(tool)
    # A successful Edit/Write's result only repeats what the diff shows.
    if diff and tool.status == "done":
        out = ""
    if out.strip():
        shown, hidden = tail(out, None if expanded else TAIL_LINES)
        if hidden:
            text.append(f"… {hidden} earlier lines\n", style="dim")
        text.append(shown + "\n", style="red" if tool.is_error else "")
    text.rstrip()
    return text


__all__ = ["body", "diff_lines", "header", "output_text", "render_diff", "summary", "tail"]
