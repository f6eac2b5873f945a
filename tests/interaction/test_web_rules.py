"""Permission rules for WebFetch and the Browser: ``domain:`` rules, loopback and private
addresses (which only a rule naming the domain allows), the Browser's page actions, the
rule an "allow always" adds, and which addresses are not public."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tron_server.browser.urls import UrlRefused, non_public, parse_web_url
from tron_server.interaction import CallFacts, RuleSet, decide, parse_rule
from tron_server.interaction.modes import MODES
from tron_server.interaction.rules import suggest_rule

WD = Path("/work/project")


def web(tool: str, url: str, *, private: tuple[str, ...] = (), **more: Any) -> CallFacts:
    return CallFacts(tool, {"url": url, **more}, WD, private=private)


def rules(
    allow: tuple[str, ...] = (), deny: tuple[str, ...] = (), ask: tuple[str, ...] = ()
) -> RuleSet:
    made = [parse_rule(r, "allow") for r in allow]
    made += [parse_rule(r, "deny") for r in deny]
    made += [parse_rule(r, "ask") for r in ask]
    return RuleSet(made)


@pytest.mark.parametrize(
    ("rule", "url", "matches"),
    [
        ("WebFetch(domain:example.com)", "https://example.com/a", True),
        ("WebFetch(domain:example.com)", "https://EXAMPLE.com./a", True),
        ("WebFetch(domain:example.com)", "https://docs.example.com/a", False),
        ("WebFetch(domain:*.example.com)", "https://docs.example.com/a", True),
        ("WebFetch(domain:example.com)", "https://example.com.evil.org/", False),
        ("WebFetch(domain:127.0.0.1)", "http://127.0.0.1:8000/x", True),
        ("WebFetch", "https://anything.org/", True),
        ("Browser(domain:example.com)", "https://example.com/", False),  # another tool
    ],
)
def test_domain_rules(rule: str, url: str, matches: bool) -> None:
    assert parse_rule(rule, "deny").matches(web("WebFetch", url)) is matches


def test_a_domain_not_yet_allowed_asks_and_a_rule_allows_it() -> None:
    call = web("WebFetch", "https://example.com/")
    assert decide(call, mode="default", rules=rules()).behavior == "ask"
    allowed = decide(call, mode="default", rules=rules(allow=("WebFetch(domain:example.com)",)))
    assert allowed.behavior == "allow"
    denied = decide(
        call, mode="bypassPermissions", rules=rules(deny=("WebFetch(domain:example.com)",))
    )
    assert denied.behavior == "deny" and "WebFetch(domain:example.com)" in denied.reason
    assert decide(call, mode="dontAsk", rules=rules()).behavior == "deny"
    assert decide(call, mode="bypassPermissions", rules=rules()).behavior == "allow"


@pytest.mark.parametrize("mode", [m for m in MODES if m != "plan"])
def test_a_private_address_asks_unless_a_rule_names_the_domain(mode: str) -> None:
    call = web("WebFetch", "http://intranet.local/", private=("10.0.0.5",))
    for loose in ((), ("WebFetch",), ("WebFetch(domain:*)",), ("WebFetch(*)",)):
        verdict = decide(call, mode=mode, rules=rules(allow=loose))  # type: ignore[arg-type]
        expected = "deny" if mode == "dontAsk" else "ask"
        assert verdict.behavior == expected, (loose, verdict)
        assert "private network (10.0.0.5)" in verdict.reason
        assert "WebFetch(domain:intranet.local)" in verdict.reason
    for named in ("WebFetch(domain:intranet.local)", "WebFetch(domain:*.local)"):
        verdict = decide(call, mode=mode, rules=rules(allow=(named,)))  # type: ignore[arg-type]
        assert verdict.behavior == "allow", named
    hooked = decide(call, mode=mode, rules=rules(), hook="allow")  # type: ignore[arg-type]
    assert hooked.behavior == "allow"
    both = rules(
        allow=("WebFetch(domain:intranet.local)",), deny=("WebFetch(domain:intranet.local)",)
    )
    denied = decide(call, mode=mode, rules=both)  # type: ignore[arg-type]
    assert denied.behavior == "deny"


def test_browser_actions_on_the_open_page_need_no_approval() -> None:
    for action in ("snapshot", "click", "type", "screenshot", "console", "close", "back"):
        call = CallFacts("Browser", {"action": action, "ref": "e1"}, WD)
        assert decide(call, mode="default", rules=rules()).behavior == "allow", action
        # An ask rule still asks; plan mode still refuses.
        assert decide(call, mode="default", rules=rules(ask=("Browser",))).behavior == "ask"
        assert decide(call, mode="plan", rules=rules()).behavior == "deny"
    navigate = web("Browser", "https://example.com/", action="navigate")
    assert decide(navigate, mode="default", rules=rules()).behavior == "ask"
    allowed = rules(allow=("Browser(domain:example.com)",))
    assert decide(navigate, mode="default", rules=allowed).behavior == "allow"
    # WebFetch's rules are WebFetch's: they do not open the browser.
    fetch_rule = rules(allow=("WebFetch(domain:example.com)",))
    assert decide(navigate, mode="default", rules=fetch_rule).behavior == "ask"
    local = web("Browser", "file:///work/project/index.html", action="navigate")
    assert decide(local, mode="default", rules=rules()).behavior == "allow"


def test_allow_always_suggests_the_domain() -> None:
    assert suggest_rule("WebFetch", {"url": "https://Docs.Python.org/3/"}) == (
        "WebFetch(domain:docs.python.org)"
    )
    assert suggest_rule("Browser", {"action": "navigate", "url": "http://localhost:3000/"}) == (
        "Browser(domain:localhost)"
    )
    assert suggest_rule("Browser", {"action": "click", "ref": "e3"}) == "Browser"


@pytest.mark.parametrize(
    "address",
    ["127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "100.64.0.1", "169.254.169.254",
     "0.0.0.0", "::1", "fe80::1", "fd00::1", "::ffff:127.0.0.1", "224.0.0.1", "192.0.2.1"],
)  # fmt: skip
def test_addresses_that_are_not_public(address: str) -> None:
    assert non_public([address]) == (address,)


@pytest.mark.parametrize("address", ["8.8.8.8", "1.1.1.1", "2001:4860:4860::8888"])
def test_public_addresses(address: str) -> None:
    assert non_public([address]) == ()


@given(st.ip_addresses())
def test_one_non_public_address_is_enough(ip: Any) -> None:
    """Every address of a host is checked: a public one beside a private one does not hide it."""
    found = non_public(["8.8.8.8", str(ip), "1.1.1.1"])
    assert (str(ip) in found) is (not ip.is_global or ip.is_multicast or (
        ip.version == 6 and ip.ipv4_mapped is not None and (
            not ip.ipv4_mapped.is_global or ip.ipv4_mapped.is_multicast)))  # fmt: skip


@pytest.mark.parametrize(
    "url",
    ["file:///etc/passwd", "ftp://example.com/", "javascript:alert(1)", "example.com/x",
     "http://user:pw@example.com/", "http:///nohost", "https://" + "a" * 2001 + ".com/",
     "http://exa mple.com\n/"],
)  # fmt: skip
def test_urls_that_are_refused(url: str) -> None:
    with pytest.raises(UrlRefused):
        parse_web_url(url)


def test_file_urls_only_when_asked() -> None:
    assert parse_web_url("file:///tmp/a.html", allow_file=True).scheme == "file"
    parsed = parse_web_url("HTTPS://Example.COM./path")
    assert (parsed.scheme, parsed.host, parsed.port) == ("https", "example.com", 443)
