"""Permission rules pinned by mutation testing (issue 26 item 7): each test here failed on
a mutant of ``interaction/rules.py`` that every other test let through.
``benchmarks/mutation.sh rules``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tron_server.interaction import CallFacts, RuleSet, RuleSyntaxError, parse_rule
from tron_server.interaction.rules import suggest_rule, url_host

WD = Path("/work/project")
HOME = Path("/home/user")


def call(tool: str, *, path: str | None = None, is_dir: bool = False, **input: object) -> CallFacts:
    paths = ((Path(path), is_dir),) if path is not None else ()
    return CallFacts(tool, input, WD, paths, HOME)


def bash(command: str) -> CallFacts:
    return call("Bash", command=command)


def denies(rule: str, facts: CallFacts, *, base: Path | None = None) -> bool:
    return RuleSet([parse_rule(rule, "deny", base=base)]).first("deny", facts) is not None


def allows(rules: list[str], facts: CallFacts) -> bool:
    return RuleSet(parse_rule(r, "allow") for r in rules).allowing(facts) is not None


@pytest.mark.parametrize(
    ("rule", "tool", "covered"),
    [
        ("mcp__github", "mcp__github__get_issue", True),
        ("mcp__github", "mcp__githubx__get_issue", False),
        ("mcp__github", "mcp__gitlab__get_issue", False),
        ("mcp__github__get_issue", "mcp__github__get_issue", True),
        # a tool's name is not a server's: it covers no tool "below" it
        ("mcp__github__get_issue", "mcp__github__get_issue__x", False),
    ],
)
def test_an_mcp_server_rule_covers_its_tools_only(rule: str, tool: str, covered: bool) -> None:
    assert parse_rule(rule, "deny").covers_tool(tool) is covered


def test_a_bash_rule_matches_the_whole_line_without_a_segment() -> None:
    rule = parse_rule("Bash(ls:*)", "deny")
    assert rule.matches(bash("ls -la"))
    assert not rule.matches(bash("cat x"))
    assert rule.matches(bash("cat x"), "ls -la")


def test_specifiers_of_tools_without_one_match_nothing() -> None:
    assert not denies("WebSearch(cats)", call("WebSearch", query="cats"))
    assert not denies("Skill(X*)", call("Skill"))  # no name: the empty name
    assert denies("Skill(X*)", call("Skill", name="Xray"))


@pytest.mark.parametrize(
    ("rule", "named"),
    [
        ("WebFetch(domain:x)", True),
        ("WebFetch(domain:docs.rs)", True),
        ("WebFetch(domain:)", False),
        ("WebFetch(domain:*)", False),
        ("WebFetch", False),
    ],
)
def test_which_rules_name_a_domain(rule: str, named: bool) -> None:
    assert parse_rule(rule, "allow").names_domain() is named


@pytest.mark.parametrize("tool", ["Grep", "Glob"])
def test_a_folder_rule_denies_a_search_of_that_folder(tool: str) -> None:
    """``Read(secrets/)`` names a folder: a Grep or Glob of it is a read of it."""
    assert denies("Read(secrets/)", call(tool, path=str(WD / "secrets"), is_dir=True))
    assert not denies("Read(secrets/)", call("Read", path=str(WD / "secrets")))  # a file


@pytest.mark.parametrize(
    ("rule", "path", "matched"),
    [
        ("Read(//foo)", "/foo", True),
        ("Read(//foo)", "/srv/foo", False),  # // anchors at the root
        ("Read(//etc/hosts)", "/srv/etc/hosts", False),
        ("Read(//X1)", "/X1", True),
        ("Read(~)", str(HOME / ".bashrc"), True),
        ("Read(~)", str(HOME), True),
        ("Read(~)", str(WD / "a"), False),
        ("Read(.)", str(WD / "a/b.txt"), True),
        ("Read(./)", str(WD / "a/b.txt"), True),
        ("Read(.)", "/elsewhere/b.txt", False),
        ("Read(X*)", str(WD), False),  # the working directory itself is no name in it
        ("Read(X*)", str(WD / "Xa"), True),
    ],
)
def test_rule_bases(rule: str, path: str, matched: bool) -> None:
    assert denies(rule, call("Read", path=path)) is matched


def test_a_rule_base_other_than_the_working_directory(tmp_path: Path) -> None:
    """``/docs/**`` is relative to the settings file's project, which may not be the
    session's working directory."""
    project = tmp_path / "project"
    (project / "docs").mkdir(parents=True)
    rule = f"Edit(/docs/{tmp_path.name}-*.md)"  # a pattern no other test compiled
    inside = call("Edit", path=str(project / "docs" / f"{tmp_path.name}-a.md"))
    assert denies(rule, inside, base=project)
    assert not denies(
        rule, call("Edit", path=str(WD / "docs" / f"{tmp_path.name}-a.md")), base=project
    )
    assert denies(rule, call("Edit", path=str(WD / "docs" / f"{tmp_path.name}-a.md")))


def test_a_prefix_rule_with_a_space_before_the_colon() -> None:
    assert denies("Bash(git push :*)", bash("git push origin"))
    assert denies("Bash(git push :*)", bash("git push"))


def test_parse_rule_keeps_source_and_base_and_reads_bare_forms() -> None:
    rule = parse_rule(" Bash(ls) ", "ask", source="project", base=WD)
    assert (rule.text, rule.tool, rule.specifier, rule.behavior) == (
        "Bash(ls)",
        "Bash",
        "ls",
        "ask",
    )
    assert (rule.source, rule.base) == ("project", WD)
    plain = parse_rule("Bash", "allow")
    assert (plain.source, plain.base) == ("", None)
    for text in ("Bash()", "Bash(*)", "Bash( * )"):
        assert parse_rule(text, "allow").specifier is None, text
    assert rule.to_json() == {"rule": "Bash(ls)", "behavior": "ask", "source": "project"}


def test_rule_syntax_errors_say_what_is_wrong() -> None:
    with pytest.raises(RuleSyntaxError) as caught:
        parse_rule("  ", "deny")
    assert str(caught.value) == "a deny rule is empty; write a tool name like Bash"
    with pytest.raises(RuleSyntaxError) as caught:
        parse_rule("Bash(", "allow")
    assert str(caught.value) == (
        "cannot read the allow rule 'Bash(': write Tool or Tool(specifier), "
        "e.g. Bash(git push:*) or Edit(src/**)"
    )


def test_a_rule_set_iterates_and_grows() -> None:
    one = parse_rule("Bash", "allow")
    two = parse_rule("Read", "deny")
    rules = RuleSet([one])
    more = rules.plus([two])
    assert list(rules) == [one] and list(more) == [one, two] and len(more) == 2


def test_a_substitution_is_allowed_by_its_exact_rule_beside_other_commands() -> None:
    rules = ["Bash(echo $(date))", "Bash(date)", "Bash(ls:*)"]
    assert allows(rules, bash("echo $(date) && ls -l"))
    assert not allows(["Bash(echo:*)", "Bash(date)", "Bash(ls:*)"], bash("echo $(date) && ls"))


def test_url_host_of_a_url_that_cannot_be_read() -> None:
    assert url_host("http://[::1") == ""
    assert url_host(None) == ""
    assert url_host("https://Docs.RS./x") == "docs.rs"


@pytest.mark.parametrize(
    ("command", "suggested"),
    [
        ("ls", "Bash(ls:*)"),
        ("git push", "Bash(git push:*)"),
        ("make Build", "Bash(make Build:*)"),
        ("make 1", "Bash(make:*)"),
    ],
)
def test_more_suggestions(command: str, suggested: str) -> None:
    assert suggest_rule("Bash", {"command": command}) == suggested


def test_the_suggestion_for_no_command() -> None:
    assert suggest_rule("Bash", {}) == "Bash()"
