"""What the running turn has produced so far, for a client that joins late.

``agent.getState`` returns it: the current turn's streamed text and thinking and
its tool calls with their status and streamed output. Everything finished before
the current turn is already stored as events (``events.sync`` has it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..tools._text import MAX_OUTPUT_CHARS as RESULT_MAX_CHARS
from ..tools._text import HeadTailBuffer

__all__ = ["ToolCallProgress", "TurnProgress"]

# Streamed tool output kept for late clients; the full result goes to tool.result.
MAX_OUTPUT_CHARS = 64 * 1024

ToolStatus = Literal["pending", "running", "done", "error"]


@dataclass
class ToolCallProgress:
    """One tool call of the running turn."""

    tool_call_id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    status: ToolStatus = "pending"
    output: str = ""
    # Head and tail of everything streamed, capped as a tool result is: what an
    # interrupted call's result keeps.
    kept: HeadTailBuffer = field(default_factory=lambda: HeadTailBuffer(RESULT_MAX_CHARS))

    def add_output(self, chunk: str) -> None:
        self.kept.append(chunk)
        if len(self.output) < MAX_OUTPUT_CHARS:
            self.output = (self.output + chunk)[:MAX_OUTPUT_CHARS]

    def interrupted_content(self, note: str) -> str:
        """The result of a call cut short: its output so far, then ``[note]``."""
        printed = self.kept.text().rstrip("\n")
        return f"{printed}\n\n[{note}]" if printed else note

    def to_json(self) -> dict[str, Any]:
        return {
            "toolCallId": self.tool_call_id,
            "name": self.name,
            "arguments": self.arguments,
            "status": self.status,
            "output": self.output,
        }


@dataclass
class TurnProgress:
    """The running turn, as far as it got. Reset at each turn start."""

    turn: int = 0
    text: str = ""
    thinking: str = ""
    tool_calls: dict[str, ToolCallProgress] = field(default_factory=dict)

    def begin(self, turn: int) -> None:
        self.turn = turn
        self.text = ""
        self.thinking = ""
        self.tool_calls = {}

    def tool(self, tool_call_id: str, name: str = "") -> ToolCallProgress:
        call = self.tool_calls.get(tool_call_id)
        if call is None:
            call = self.tool_calls[tool_call_id] = ToolCallProgress(tool_call_id, name)
        return call

    def to_json(self) -> dict[str, Any]:
        return {
            "turn": self.turn,
            "text": self.text,
            "thinking": self.thinking,
            "toolCalls": [c.to_json() for c in self.tool_calls.values()],
        }
