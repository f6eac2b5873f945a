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

__all__ = ["Violation", "validate_history"]


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
    out: list[Violation] = []
    if messages and messages[0].role != "user":
        out.append(Violation(0, "first_user", f"first message is from {messages[0].role}"))

    seen_uses: set[str] = set()
    expected: list[str] = []  # tool_use ids the current message must answer
    for index, message in enumerate(messages):
        role = message.role
        if index and messages[index - 1].role == role:
            out.append(Violation(index, "alternation", f"two {role} messages in a row"))
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
                    seen_uses.add(block.id)
    if expected:
        out.append(
            Violation(
                len(messages),
                "unanswered_tool_use",
                f"no tool_result for {', '.join(expected)} (history ends)",
            )
        )
    return out
