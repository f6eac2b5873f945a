"""The README is a first page (at most 12 KB) and the documentation holds together: every
relative link of README.md, the distributions' READMEs and docs/*.md leads to a file, and
a link to a heading (``page.md#heading``) to a heading that exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DISTRIBUTIONS = ("tron_events", "tron_llm", "tron_server")
PAGES = [
    README,
    *(ROOT / d / "README.md" for d in DISTRIBUTIONS),
    *sorted((ROOT / "docs").glob("*.md")),
]
MAX_README_BYTES = 12 * 1024

#: Pages other branches are writing while this check lands: a link to one of them may
#: lead nowhere until it exists (once it does, it is checked like any other).
LANDING: set[Path] = set()

_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.S | re.M)
_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.M)


def _prose(text: str) -> str:
    """The text without code blocks and code spans (a link in code is not a link)."""
    return _CODE.sub("", _FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, code marks and punctuation dropped,
    spaces made hyphens (``Sub-agents (the `Task` tool)`` → ``sub-agents-the-task-tool``)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    text = text.strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading's anchor on ``page``, numbered as GitHub numbers repeats."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    for match in _HEADING.finditer(_FENCE.sub("", page.read_text())):
        base = slug(match.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def relative_links(page: Path) -> list[str]:
    """The links of ``page`` that name a file of this repository (not a URL)."""
    links = _LINK.findall(_prose(page.read_text()))
    return [link for link in links if not re.match(r"^[a-z][a-z0-9+.-]*:", link, re.I)]


def broken_links(page: Path) -> list[str]:
    """What is wrong with each relative link of ``page``, one line each."""
    problems = []
    for link in relative_links(page):
        path_part, _, anchor = link.partition("#")
        target = (page.parent / path_part).resolve() if path_part else page
        if not target.exists():
            if target not in LANDING:
                problems.append(f"{link}: no such file")
            continue
        if anchor and target.suffix == ".md" and anchor not in anchors(target):
            problems.append(f"{link}: no heading #{anchor} in {target.name}")
    return problems


def test_the_readme_is_a_first_page() -> None:
    size = len(README.read_bytes())
    assert size <= MAX_README_BYTES, (
        f"README.md is {size} bytes, over {MAX_README_BYTES}: move the detail into docs/"
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_somewhere(page: Path) -> None:
    assert broken_links(page) == []


def test_the_link_check_finds_what_is_broken(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other page\n\n## Sub-agents (the `Task` tool)\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Here\n\n## Twice\n\n## Twice\n\n"
        "[ok](other.md) [ok](other.md#sub-agents-the-task-tool) [ok](#twice-1) "
        "[ok](https://example.com/missing.md) `[code](missing.md)`\n\n"
        "```\n[in a block](missing.md)\n```\n\n"
        "[gone](missing.md) [bad anchor](other.md#nowhere) ![img](nope.png) [self](#twice-2)\n"
    )
    assert broken_links(page) == [
        "missing.md: no such file",
        "other.md#nowhere: no heading #nowhere in other.md",
        "nope.png: no such file",
        "#twice-2: no heading #twice-2 in page.md",
    ]


def test_the_documented_pages_are_linked_from_the_readme() -> None:
    """A page of docs/ nobody links to is a page nobody finds: each is linked from the
    README or from another page."""
    linked: set[Path] = set()
    for page in PAGES:
        for link in relative_links(page):
            path_part = link.partition("#")[0]
            if path_part:
                linked.add((page.parent / path_part).resolve())
    orphans = [p.name for p in (ROOT / "docs").glob("*.md") if p.resolve() not in linked]
    assert orphans == []
