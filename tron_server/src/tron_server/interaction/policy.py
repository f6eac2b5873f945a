"""The permission decision for one tool call: allow, ask or deny, and why.

In this order (the first that applies decides):

1. a ``deny`` rule matches → deny (every mode, bypassPermissions included);
2. ``plan`` mode and the tool is not read-only → deny;
3. a file edit of a configuration file, at any depth (``.tron/settings*.json``,
   ``.claude/settings*.json``, ``.mcp.json``, a file below ``.claude/`` or ``.tron/``
   ``commands/``, ``agents/``, ``hooks/``: :func:`~tron_server.trust.is_configuration_file`)
   → ask, whatever the rules, hooks and mode say, except in bypassPermissions: a folder's
   configuration acts for every later session there (trust is inherited by subfolders);
4. an ``ask`` rule matches, or a PreToolUse hook answered "ask" → ask;
5. an ``allow`` rule matches (settings, this session's "allow always" answers, the running
   command file's ``allowed-tools``), or a hook answered "allow" → allow;
6. the mode: bypassPermissions allows; a read-only tool is allowed; acceptEdits allows file
   edits inside the working directory (or an additional directory); otherwise ask.

WebFetch and the Browser (``docs/browser.md``): a URL whose host resolves to a loopback or
private address (``CallFacts.private``) is allowed only by an allow rule that names its
domain (``WebFetch(domain:localhost)``) or a hook; otherwise it asks, in every mode. A
Browser action on the page already open (``snapshot``, ``click``…: anything but
``navigate``) and a ``navigate`` to a ``file:`` URL (the tool keeps those inside the
working directory) need no approval: the browser checks every page it opens by itself.

Finally ``dontAsk`` turns every "ask" into a deny. The guardrails are a PreToolUse hook
and have refused what they refuse before this is consulted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..shell import split
from ..trust import is_configuration_file
from .modes import EDIT_TOOLS, NO_APPROVAL_TOOLS, PATH_TOOLS, PermissionMode
from .rules import Behavior, CallFacts, Rule, RuleSet, url_host

__all__ = ["Verdict", "decide"]

HookPermission = Literal["ask", "allow"] | None


@dataclass(frozen=True)
class Verdict:
    """What to do with a call; ``reason`` is said to the user (ask) or the model (deny)."""

    behavior: Behavior
    reason: str
    rule: Rule | None = None


def _inside(path: Path, roots: tuple[Path, ...]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def _configuration_file(call: CallFacts) -> str | None:
    """The configuration file ``call`` writes (as resolved, as named, or as written in its
    input), or None."""
    raw = call.input.get(PATH_TOOLS.get(call.tool, "file_path"))
    candidates = [str(p) for p, _ in (*call.paths, *call.named)]
    if isinstance(raw, str):
        candidates.append(raw)
    return next((c for c in candidates if is_configuration_file(c)), None)


def _source(rule: Rule) -> str:
    return f" ({rule.source})" if rule.source else ""


def decide(
    call: CallFacts,
    *,
    mode: PermissionMode,
    rules: RuleSet,
    hook: HookPermission = None,
    hook_reason: str | None = None,
    edit_roots: tuple[Path, ...] = (),
) -> Verdict:
    """The verdict for ``call`` (see the module docstring). ``edit_roots``: the folders
    acceptEdits lets the agent write without asking (besides the working directory)."""
    verdict = _decide(call, mode, rules, hook, hook_reason, edit_roots)
    if verdict.behavior == "ask" and mode == "dontAsk":
        return Verdict(
            "deny",
            f"{verdict.reason}; the session is in dontAsk mode, which refuses instead of "
            "asking (allow it with a permissions rule, or switch the mode)",
            verdict.rule,
        )
    return verdict


def _decide(
    call: CallFacts,
    mode: PermissionMode,
    rules: RuleSet,
    hook: HookPermission,
    hook_reason: str | None,
    edit_roots: tuple[Path, ...],
) -> Verdict:
    tool = call.tool
    denied = rules.first("deny", call)
    if denied is not None:
        return Verdict("deny", f"denied by the rule {denied.text}{_source(denied)}", denied)
    if mode == "plan" and tool not in NO_APPROVAL_TOOLS:
        return Verdict(
            "deny",
            f"the session is in plan mode: {tool} cannot run. Read the code (Read, Grep, "
            "Glob) and present your plan; the user switches the mode to carry it out",
        )
    if tool in EDIT_TOOLS and mode != "bypassPermissions":
        configuration = _configuration_file(call)
        if configuration is not None:
            return Verdict(
                "ask",
                f"{configuration} configures the agent (hooks, permissions, commands or "
                "agents): writing it always needs your approval",
            )
    asked = rules.first("ask", call)
    if asked is not None:
        return Verdict("ask", f"the rule {asked.text}{_source(asked)} asks", asked)
    if hook == "ask":
        return Verdict("ask", hook_reason or "a PreToolUse hook asks")
    if call.private:
        return _private(call, rules, hook, hook_reason)
    if tool == "Browser" and _on_open_page(call):
        return Verdict("allow", "a browser action on the page already open")
    allowed = rules.allowing(call)
    if allowed is not None:
        return Verdict("allow", f"allowed by the rule {allowed.text}{_source(allowed)}", allowed)
    if hook == "allow":
        return Verdict("allow", hook_reason or "allowed by a PreToolUse hook")
    if mode == "bypassPermissions":
        return Verdict("allow", "bypassPermissions mode")
    if tool in NO_APPROVAL_TOOLS:
        return Verdict("allow", f"{tool} needs no approval")
    if mode == "acceptEdits" and tool in EDIT_TOOLS and call.paths:
        roots = (call.working_directory, *edit_roots)
        if all(_inside(path, roots) for path, _ in call.paths):
            return Verdict("allow", "acceptEdits mode: a file edit inside the working directory")
    return Verdict("ask", f"{tool} needs your approval{_doubt(call)}")


def _doubt(call: CallFacts) -> str:
    """For a Bash line the splitter cannot read with certainty: why no rule allowed it."""
    if call.tool != "Bash":
        return ""
    why = split(call.command).uncertain
    if why is None:
        return ""
    return f" (the command line cannot be read with certainty: {why}; no Bash(…) rule allows it)"


def _on_open_page(call: CallFacts) -> bool:
    """A Browser call that opens no new page from the network."""
    if call.input.get("action") != "navigate":
        return True
    return str(call.input.get("url") or "").strip().lower().startswith("file:")


def _private(
    call: CallFacts, rules: RuleSet, hook: HookPermission, hook_reason: str | None
) -> Verdict:
    named = rules.naming_domain(call)
    if named is not None:
        return Verdict("allow", f"allowed by the rule {named.text}{_source(named)}", named)
    if hook == "allow":
        return Verdict("allow", hook_reason or "allowed by a PreToolUse hook")
    host = url_host(call.input.get("url"))
    shown = ", ".join(call.private[:3])
    return Verdict(
        "ask",
        f"{host} is on your machine or private network ({shown}): {call.tool} asks before "
        f"reaching it unless a rule names the domain, e.g. {call.tool}(domain:{host})",
    )
