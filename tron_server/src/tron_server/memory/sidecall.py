"""The memory side call: one non-streamed model call over a session's transcript, like
compaction's summary, whose reply is one call of a forced tool (:func:`.handoffs.memory_tool`)
carrying the handoff's fields and/or the ledger brought up to date.

The call uses the session's own model without thinking (a forced tool and thinking do not
go together on every provider) and without the session's tools, so any provider takes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tron_events.messages import Message, TextBlock
from tron_llm import LLMError, LLMRequest, Provider

from .handoffs import MEMORY_TOOL, ParsedReply, memory_tool, parse_reply
from .ledger import SECTIONS, TEMPLATE

__all__ = ["MEMORY_MAX_TOKENS", "MemoryCallFailed", "SideCall", "memory_call"]

MEMORY_MAX_TOKENS = 4_096
#: Characters of the transcript sent (its end, where the latest state is, is kept).
MAX_TRANSCRIPT_CHARS = 400_000

SYSTEM = (
    "You keep the memory of an AI coding agent across its sessions. You read a session "
    "between a user and the agent and record what a later session must know. Be specific "
    "and brief; record only what the conversation shows, never invent anything."
)


class MemoryCallFailed(Exception):
    """The side call failed (the provider's error, or no usable reply)."""

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable


@dataclass(frozen=True)
class SideCall:
    """What one memory side call asks for."""

    transcript: str
    handoff: bool = True
    ledger: bool = False
    #: The project ledger as it is now (None: there is none yet).
    current_ledger: str | None = None
    #: ``compaction``: only the part being compacted is shown.
    trigger: str = "manual"


def _instructions(call: SideCall) -> str:
    asks: list[str] = []
    if call.handoff:
        part = "the part of the session above" if call.trigger == "compaction" else "the session"
        asks.append(
            f"a handoff of {part}: summary, codeChanges (every file changed, with what "
            "changed), currentState, nextSteps, blockers, and patterns (lessons for this "
            "project the session shows: conventions, commands that work, pitfalls; an empty "
            "list if none)"
        )
    if call.ledger:
        sections = ", ".join(SECTIONS)
        asks.append(
            "ledger: the project's ledger brought up to date, complete, in Markdown with the "
            f"sections {sections}. Keep what is still true, update what changed, drop what "
            "is done or obsolete; keep it short"
        )
    text = f"Call the {MEMORY_TOOL} tool once with " + "; and ".join(asks) + "."
    if call.ledger:
        current = call.current_ledger if call.current_ledger is not None else TEMPLATE
        state = (
            "The ledger now"
            if call.current_ledger is not None
            else "There is no ledger yet; its template"
        )
        text += f"\n\n{state}:\n<ledger>\n{current.strip()}\n</ledger>"
    return text


def _cut(transcript: str) -> str:
    if len(transcript) <= MAX_TRANSCRIPT_CHARS:
        return transcript
    left = len(transcript) - MAX_TRANSCRIPT_CHARS
    return f"[... the first {left} characters left out]\n{transcript[-MAX_TRANSCRIPT_CHARS:]}"


async def memory_call(
    provider: Provider, model: str, call: SideCall, *, extra: Mapping[str, Any] | None = None
) -> ParsedReply:
    """Make the side call and parse its reply (``extra`` goes into the handoff payload).
    Raises :class:`MemoryCallFailed` when the call fails or gives nothing usable."""
    tool = memory_tool(handoff=call.handoff, ledger=call.ledger)
    request = LLMRequest(
        model=model,
        system=SYSTEM,
        messages=[
            Message(
                role="user",
                content=[
                    TextBlock(
                        text=f"<conversation>\n{_cut(call.transcript)}\n</conversation>\n\n"
                        + _instructions(call)
                    )
                ],
            )
        ],
        tools=[tool],
        tool_choice=tool.name,
        max_tokens=MEMORY_MAX_TOKENS,
    )
    try:
        done = await provider.complete(request)
    except LLMError as exc:
        raise MemoryCallFailed(
            f"the memory call failed: {exc.message}", retryable=exc.retryable
        ) from exc
    except ValueError as exc:  # unknown provider or model: a configuration problem
        raise MemoryCallFailed(f"the memory call failed: {exc}") from exc
    parsed = parse_reply(
        done.message, handoff=call.handoff, ledger=call.ledger, extra=dict(extra or {})
    )
    if parsed.handoff is None and parsed.ledger is None:
        raise MemoryCallFailed("the model's reply to the memory call was empty")
    return parsed
