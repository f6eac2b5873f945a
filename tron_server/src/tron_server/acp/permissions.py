"""Tron's questions and approvals as ACP permission requests, and the editor's choice
back as Tron's answer.

An **approval** (a tool call the rules and mode ask about) offers:

- ``allow_once`` → ``{decision: "allow"}``;
- ``allow_always`` → ``{decision: "allow_always"}``: the server records the request's
  suggested rule (e.g. ``Bash(git push:*)``) as ``config.permission_rule``, as when the
  terminal or the web chat answers "always";
- ``reject_once`` → ``{decision: "deny"}``;
- ``reject_always`` → ``{decision: "deny_always"}``: the same rule recorded as a deny rule.

The "always" options are offered only when the request carries a rule to record. An
**AskUser question** offers its options (each an ``allow_once`` choice whose name is the
option) and a ``reject_once`` "Skip"; a question without options cannot be answered
through a permission request, so it offers "Answer in the chat" (reject), and the model
is told the user will answer in their next message. An outcome ``cancelled`` (the editor
cancelled the prompt) leaves the request to the abort that follows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from acp.schema import PermissionOption, ToolCallUpdate

from .toolcalls import diff_of, kind_of, locations_of, title_of

SKIPPED = "The user skipped this question in the editor; go on without an answer."
IN_CHAT = "The user will answer this question in their next message in the editor."


@dataclass(frozen=True)
class PermissionAsk:
    """The ``session/request_permission`` to send, and how each option answers Tron."""

    tool_call: ToolCallUpdate
    options: list[PermissionOption]
    answers: dict[str, Any]


def for_request(request: dict[str, Any], cwd: str) -> PermissionAsk:
    """The permission request for a Tron Request (``agent.approval`` / ``agent.question``)."""
    if request.get("kind") == "question":
        return _question(request)
    return _approval(request, cwd)


def _approval(request: dict[str, Any], cwd: str) -> PermissionAsk:
    name = str(request.get("toolName") or "tool")
    arguments = request.get("input") if isinstance(request.get("input"), dict) else {}
    assert isinstance(arguments, dict)
    rule = request.get("suggestion")
    options = [PermissionOption(option_id="allow", name="Allow", kind="allow_once")]
    answers: dict[str, Any] = {"allow": {"decision": "allow"}}
    if isinstance(rule, str) and rule:
        options.append(
            PermissionOption(
                option_id="allow_always", name=f"Always allow {rule}", kind="allow_always"
            )
        )
        answers["allow_always"] = {"decision": "allow_always"}
    options.append(PermissionOption(option_id="deny", name="Reject", kind="reject_once"))
    answers["deny"] = {"decision": "deny"}
    if isinstance(rule, str) and rule:
        options.append(
            PermissionOption(
                option_id="deny_always", name=f"Always reject {rule}", kind="reject_always"
            )
        )
        answers["deny_always"] = {"decision": "deny_always"}
    reason = request.get("reason")
    call = ToolCallUpdate(
        tool_call_id=str(request.get("toolCallId") or request.get("requestId")),
        title=title_of(name, arguments, cwd) + (f" ({reason})" if reason else ""),
        kind=kind_of(name, arguments),
        status="pending",
        locations=locations_of(name, arguments, cwd) or None,
        content=diff_of(name, arguments, cwd) or None,
        raw_input=arguments,
    )
    return PermissionAsk(call, options, answers)


def _question(request: dict[str, Any]) -> PermissionAsk:
    raw = request.get("options")
    choices = [str(o) for o in raw] if isinstance(raw, list) else []
    options: list[PermissionOption] = []
    answers: dict[str, Any] = {}
    multi = bool(request.get("multiSelect"))
    for i, choice in enumerate(choices):
        option_id = f"option-{i}"
        options.append(PermissionOption(option_id=option_id, name=choice, kind="allow_once"))
        answers[option_id] = [choice] if multi else choice
    if choices:
        options.append(PermissionOption(option_id="skip", name="Skip", kind="reject_once"))
        answers["skip"] = [SKIPPED] if multi else SKIPPED
    else:
        options.append(
            PermissionOption(option_id="in_chat", name="Answer in the chat", kind="reject_once")
        )
        answers["in_chat"] = IN_CHAT
    call = ToolCallUpdate(
        tool_call_id=str(request.get("toolCallId") or request.get("requestId")),
        title=str(request.get("question") or "Question"),
        kind="other",
        status="pending",
        raw_input={k: request.get(k) for k in ("question", "options", "multiSelect")},
    )
    return PermissionAsk(call, options, answers)


__all__ = ["IN_CHAT", "SKIPPED", "PermissionAsk", "for_request"]
