"""Checks a history against the rules a provider request enforces.

The server calls :func:`validate_history` before every LLM request; the tests call
it on every reconstructed history. It checks the Anthropic Messages rules, the
strictest of the providers we speak to:

* ``first_user``: the first message is from the user;
* ``alternation``: roles alternate (consecutive same-role messages must have been
  merged);
* ``empty_text``: no text block (or text part of a tool result) is empty or blank;
* ``empty_message``: no message has an empty content list;
* ``unanswered_tool_use``: every ``tool_use`` is answered by a ``tool_result`` with
  its id in the next message (which must be a user message);
* ``unexpected_tool_result``: a user message holds no ``tool_result`` except the
  answers to the ``tool_use`` blocks of the assistant message right before it;
* ``duplicate_tool_result``: each ``tool_use`` is answered once;
* ``duplicate_tool_use``: ``tool_use`` ids are unique in the history;
* ``tool_result_order``: in a user message, ``tool_result`` blocks come before any
  other block;
* ``misplaced_block``: ``tool_use``/thinking blocks only in assistant messages,
  ``tool_result``/image blocks only in user messages.

Pure: imports only the message model.
"""

from __future__ import annotations

from dataclasses import dataclass

from .messages import (
    ImageBlock,
    Message,
    NativeBlock,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)

__all__ = ["HistoryChecker", "Violation", "validate_history"]


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule: the index of the offending message, the rule, and details."""

    index: int
    rule: str
    detail: str


_USER_ONLY = (ToolResultBlock, ImageBlock)
_ASSISTANT_ONLY = (ToolUseBlock, ThinkingBlock, RedactedThinkingBlock, NativeBlock)


def validate_history(messages: list[Message]) -> list[Violation]:
    """Every rule ``messages`` breaks, in message order (empty when it is valid)."""
    walk = _Walk()
    walk.extend(messages, 0)
    return walk.result(len(messages))


class _Walk:
    """The state of one walk over a history: the violations so far, the ``tool_use``
    ids seen, the ids the next message must answer and the role of the last message.

    The walk is strictly left to right, so the state after ``messages[:n]`` is all
    that checking ``messages[n:]`` needs; ``undo_last`` takes the last message back
    out (the state before it), for a history whose last message was replaced.
    """

    __slots__ = ("expected", "last", "out", "role", "seen_uses")

    def __init__(self) -> None:
        self.out: list[Violation] = []
        self.seen_uses: set[str] = set()
        self.expected: list[str] = []  # tool_use ids the next message must answer
        self.role: str | None = None  # role of the last message walked
        #: What the last message walked changed: (violations before it, its role
        #: before it, expected before it, ids it added to seen_uses).
        self.last: tuple[int, str | None, list[str], list[str]] | None = None

    def undo_last(self) -> bool:
        """Take the last message walked back out; False when that is not known."""
        if self.last is None:
            return False
        count, role, expected, added = self.last
        del self.out[count:]
        self.role = role
        self.expected = expected
        self.seen_uses.difference_update(added)
        self.last = None
        return True

    def result(self, length: int) -> list[Violation]:
        """The violations of the walked history of ``length`` messages."""
        out = list(self.out)
        if self.expected:
            out.append(
                Violation(
                    length,
                    "unanswered_tool_use",
                    f"no tool_result for {', '.join(self.expected)} (history ends)",
                )
            )
        return out

    def extend(self, messages: list[Message], start: int) -> None:
        """Walk ``messages[start:]`` (the state is that after ``messages[:start]``)."""
        out = self.out
        seen_uses = self.seen_uses
        expected = self.expected
        previous = self.role
        for index in range(start, len(messages)):
            message = messages[index]
            self.last = (len(out), previous, expected, [])
            role = message.role
            if index == 0 and role != "user":
                out.append(Violation(0, "first_user", f"first message is from {role}"))
            if index and previous == role:
                out.append(Violation(index, "alternation", f"two {role} messages in a row"))
            expected = self._message(index, message, expected, seen_uses, self.last[3])
            previous = role
        self.expected = expected
        self.role = previous

    def _message(
        self,
        index: int,
        message: Message,
        expected: list[str],
        seen_uses: set[str],
        added: list[str],
    ) -> list[str]:
        """Check one message; returns the ids the next message must answer."""
        out = self.out
        role = message.role
        if not message.content:
            out.append(Violation(index, "empty_message", f"{role} message has no content"))

        answered: set[str] = set()
        seen_other = False
        for position, block in enumerate(message.content):
            where = f"block {position}"
            if isinstance(block, TextBlock):
                seen_other = True
                # A signed empty part is Gemini's and must be replayed; adapters for
                # other providers drop it.
                if not block.text.strip() and block.signature is None:
                    out.append(Violation(index, "empty_text", f"{where}: empty text"))
            elif isinstance(block, ToolResultBlock):
                if role != "user":
                    out.append(
                        Violation(index, "misplaced_block", f"{where}: tool_result in {role}")
                    )
                    continue
                use_id = block.tool_use_id
                if seen_other:
                    out.append(
                        Violation(
                            index,
                            "tool_result_order",
                            f"{where}: tool_result {use_id} after other content",
                        )
                    )
                if use_id in answered:
                    out.append(
                        Violation(index, "duplicate_tool_result", f"{where}: {use_id} again")
                    )
                elif use_id not in expected:
                    out.append(
                        Violation(
                            index,
                            "unexpected_tool_result",
                            f"{where}: no tool_use {use_id} in the previous message",
                        )
                    )
                answered.add(use_id)
                if isinstance(block.content, list):
                    for part in block.content:
                        if isinstance(part, TextBlock) and not part.text.strip():
                            out.append(
                                Violation(
                                    index, "empty_text", f"{where}: empty text in tool_result"
                                )
                            )
            else:
                seen_other = True
                misplaced = (isinstance(block, _ASSISTANT_ONLY) and role != "assistant") or (
                    isinstance(block, _USER_ONLY) and role != "user"
                )
                if misplaced:
                    out.append(
                        Violation(index, "misplaced_block", f"{where}: {block.type} in {role}")
                    )

        # The previous message's tool_use blocks must all be answered here.
        missing = [u for u in expected if u not in answered]
        if missing:
            out.append(
                Violation(
                    index,
                    "unanswered_tool_use",
                    f"no tool_result for {', '.join(missing)} (message {index - 1})",
                )
            )

        expected = []
        if role == "assistant":
            for block in message.content:
                if isinstance(block, ToolUseBlock):
                    if block.id in seen_uses or block.id in expected:
                        out.append(
                            Violation(index, "duplicate_tool_use", f"tool_use id {block.id} reused")
                        )
                    else:
                        expected.append(block.id)
                    if block.id not in seen_uses:
                        seen_uses.add(block.id)
                        added.append(block.id)
        return expected


class HistoryChecker:
    """:func:`validate_history`, incremental over a history that grows.

    Keeps the walk's state at the end of the last history checked (and the history
    itself, so its messages stay alive). When the next history starts with the same
    messages, only the new ones are walked; when only the last message differs (a
    projection replaces its last message when it merges into it), the walk goes back
    one message. Anything else is walked in full. Messages are frozen, so a message
    equal to the one checked before gives the same walk: the prefix is compared with
    list equality, which is an identity check for the same objects. The result is
    always that of :func:`validate_history` on the whole list.
    """

    __slots__ = ("_checked", "_walk")

    def __init__(self) -> None:
        self._checked: list[Message] = []
        self._walk = _Walk()

    def check(self, messages: list[Message]) -> list[Violation]:
        """The violations of ``messages`` (as :func:`validate_history`)."""
        checked = self._checked
        walk = self._walk
        count = len(checked)
        if count and len(messages) >= count and messages[:count] == checked:
            start = count
        elif (
            count > 1
            and len(messages) >= count - 1
            and messages[: count - 1] == checked[:-1]
            and walk.undo_last()
        ):
            start = count - 1
        else:
            walk = self._walk = _Walk()
            start = 0
        walk.extend(messages, start)
        self._checked = list(messages)
        return walk.result(len(messages))
