"""Bash rules over the splitter (issue 26, items 2 and 7): a deny rule is checked against
every command a line runs, however it is quoted or wrapped, in every mode; an allow rule
allows a line only when it covers every command found, and never a line the splitter
cannot read with certainty."""

from __future__ import annotations

from pathlib import Path

import pytest

from tron_server.interaction import MODES, CallFacts, RuleSet, decide, parse_rule
from tron_server.interaction.rules import suggest_rule

WD = Path("/work/project")
ISSUE = "echo $'\\''; touch /tmp/x #'"


def bash(command: str) -> CallFacts:
    return CallFacts("Bash", {"command": command}, WD, (), Path("/home/user"))


def rules(allow: tuple[str, ...] = (), deny: tuple[str, ...] = ()) -> RuleSet:
    return RuleSet(
        [*(parse_rule(r, "allow") for r in allow), *(parse_rule(r, "deny") for r in deny)]
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("allow", [(), ("Bash(echo:*)",), ("Bash(echo:*)", "Bash(touch:*)")])
def test_the_issue_line_is_refused_by_a_deny_rule_in_every_mode(
    mode: str, allow: tuple[str, ...]
) -> None:
    verdict = decide(bash(ISSUE), mode=mode, rules=rules(allow, ("Bash(touch:*)",)))  # type: ignore[arg-type]
    assert verdict.behavior == "deny" and "Bash(touch:*)" in verdict.reason


@pytest.mark.parametrize(
    ("mode", "expected"),
    [("default", "ask"), ("acceptEdits", "ask"), ("dontAsk", "deny"), ("plan", "deny")],
)
def test_the_issue_line_is_not_allowed_by_an_echo_rule(mode: str, expected: str) -> None:
    verdict = decide(bash(ISSUE), mode=mode, rules=rules(("Bash(echo:*)",)))  # type: ignore[arg-type]
    assert verdict.behavior == expected


DENIED_RM = [
    "FOO=1 rm -rf /",
    "sudo -E rm -rf /",
    "sudo nohup rm -rf /",
    "{ rm -rf /; }",
    'bash -x -c "rm -rf /"',
    "'rm' -rf /",
    "r\\m -rf /",
    "$'rm' -rf /",
    "echo $'\\''; rm -rf / #'",
    "a|rm x",
    "echo $(rm x)",
    "echo `rm x`",
    'echo "$(echo "a)"; rm x)"',
    "env -i rm x",
    "timeout 5 rm x",
    "ls | xargs rm",
    "eval 'rm -rf /'",
    "cat <(rm x)",
    "if true; then rm x; fi",
    "find . -exec rm {} \\;",
    "env -u -S rm x",  # -S is -u's value: env runs rm
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("command", DENIED_RM)
def test_a_deny_rule_sees_every_command(mode: str, command: str) -> None:
    verdict = decide(bash(command), mode=mode, rules=rules(("Bash",), ("Bash(rm:*)",)))  # type: ignore[arg-type]
    assert verdict.behavior == "deny", (command, verdict)


@pytest.mark.parametrize(
    ("allow", "command", "allowed"),
    [
        (("Bash(echo:*)",), "echo 'x' && rm -rf ~", False),
        (("Bash(echo:*)",), 'echo "$HOME" && rm -rf ~', False),
        (("Bash(echo:*)",), "echo `echo hi`", False),
        (("Bash(echo:*)",), "echo $(echo hi)", False),
        (("Bash(echo:*)",), ISSUE, False),
        (("Bash(echo:*)",), "echo a|rm b", False),
        (("Bash(echo:*)",), "echo hi", True),
        (("Bash(echo:*)",), "echo 'a; rm b'", True),
        # The ; is escaped: bash runs echo alone, with rm, -rf and ~ as its arguments.
        (("Bash(echo:*)",), "echo \\; rm -rf ~", True),
        (("Bash(echo:*)",), "echo \\`rm\\`", True),
        (("Bash(echo:*)",), "eval echo hi", False),
        (("Bash(echo:*)",), "echo 'unclosed", False),
        (("Bash(echo:*)",), "$X hi", False),
        (("Bash(echo:*)", "Bash(eval:*)"), "eval echo hi", False),
        # Every command of a wrapper must be allowed, the wrapper and what it runs.
        (("Bash(npm test:*)",), "timeout 60 npm test", False),
        (("Bash(timeout:*)",), "timeout 60 rm -rf x", False),
        (("Bash(timeout:*)", "Bash(npm test:*)"), "timeout 60 npm test", True),
        (("Bash(sudo:*)",), "sudo rm x", False),
        (("Bash(bash:*)",), "bash -c 'rm x'", False),
        # An assignment before a command changes what runs: it is part of the command.
        (("Bash(npm test:*)",), "LD_PRELOAD=x.so npm test", False),
        # Only Bash itself, or the exact line, allows a line read with doubt.
        (("Bash",), "eval echo hi", True),
        (("Bash(eval echo hi)",), "eval echo hi", True),
    ],
)
def test_allow_rules_cover_every_command_or_nothing(
    allow: tuple[str, ...], command: str, allowed: bool
) -> None:
    assert (rules(allow).allowing(bash(command)) is not None) is allowed


@pytest.mark.parametrize(
    ("command", "suggested"),
    [
        ("git push origin main", "Bash(git push:*)"),
        ("npm test && rm x", "Bash(npm test && rm x)"),
        ("eval x", "Bash(eval x)"),
        ("FOO=1 make", "Bash(FOO=1 make)"),
        ("echo $(date)", "Bash(echo $(date))"),
    ],
)
def test_the_suggested_rule_is_exact_unless_one_plain_command(command: str, suggested: str) -> None:
    assert suggest_rule("Bash", {"command": command}) == suggested


def test_the_approval_says_why_a_line_is_uncertain() -> None:
    verdict = decide(bash("eval echo hi"), mode="default", rules=rules(("Bash(echo:*)",)))
    assert verdict.behavior == "ask" and "cannot be read with certainty: eval" in verdict.reason
    plain = decide(bash("ls"), mode="default", rules=rules(("Bash(echo:*)",)))
    assert plain.reason == "Bash needs your approval"
