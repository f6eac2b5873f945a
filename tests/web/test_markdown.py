"""The page's Markdown renderer, run in Chromium: whatever a model writes, the result is
made of a few harmless elements and keeps every letter of the text, in order; tables
are tables, code blocks are highlighted and copy exactly their code."""

from __future__ import annotations

import mimetypes
import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tron_server.web import STATIC_DIR

ORIGIN = "http://tron.test"
ALLOWED_TAGS = {
    "P", "PRE", "CODE", "STRONG", "EM", "A", "UL", "OL", "LI", "H3", "H4", "H5", "H6",
    "BLOCKQUOTE", "DIV", "SPAN", "BUTTON", "TABLE", "THEAD", "TBODY", "TR", "TH", "TD",
}  # fmt: skip
ALLOWED_ATTRS = {
    "href", "target", "rel", "data-lang", "class", "type", "data-testid", "aria-label", "title",
}  # fmt: skip
# A fence with a language, at the top level or inside block quotes (``> ```py``): the
# language is an attribute (CommonMark's info string), not text.
FENCE_WITH_LANG = re.compile(r"^[ \t>]*(```+|~~~+)\s*[\w+.#-]+\s*$", re.M)

RENDER = """async (texts) => {
  const { renderMarkdown } = await import("/markdown.js");
  return texts.map((text) => {
    const box = document.createElement("div");
    box.append(renderMarkdown(text));
    const tags = [...box.querySelectorAll("*")].map((el) => el.tagName);
    const attrs = [...box.querySelectorAll("*")].flatMap((el) =>
      [...el.attributes].map((a) => [a.name, a.value]));
    return { tags, attrs, text: box.textContent };
  });
}"""


def _serve(route: Any) -> None:
    """Serve the static files straight from the package (no server)."""
    name = route.request.url.removeprefix(ORIGIN + "/") or "blank"
    path = STATIC_DIR / name
    if path.is_file():
        kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        route.fulfill(status=200, body=path.read_bytes(), content_type=kind)
    else:
        route.fulfill(status=200, body="<!doctype html><title>t</title>", content_type="text/html")


@pytest.fixture(scope="module")
def md_page(browser: Any) -> Iterator[Any]:
    """A page whose origin serves the static files straight from the package (no server)."""
    context = browser.new_context()
    page = context.new_page()
    page.route(f"{ORIGIN}/**", _serve)
    page.goto(f"{ORIGIN}/blank")
    yield page
    context.close()


def render(page: Any, texts: list[str]) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = page.evaluate(RENDER, texts)
    return result


def test_known_constructs(md_page: Any) -> None:
    [out] = render(
        md_page,
        ["# Title\n\nSome **bold**, *em* and `code`.\n\n- a\n- b\n\n```py\nx = '<b>'\n```\n"],
    )
    assert out["tags"][:8] == ["H3", "P", "STRONG", "EM", "CODE", "UL", "LI", "LI"]
    # The code block: a head (language, copy button), then the highlighted code.
    assert out["tags"][8:14] == ["DIV", "DIV", "SPAN", "BUTTON", "PRE", "CODE"]
    assert set(out["tags"][14:]) == {"SPAN"}  # the tokens
    assert "x = '<b>'" in out["text"]
    assert ["data-lang", "py"] in out["attrs"]


def test_tables_and_highlighting(md_page: Any) -> None:
    table = (
        "| Name | Size |  Kind |\n|:-----|-----:|:-----:|\n| `a.py` | 12 | **file** |\n| b | 3 |\n"
    )
    out = md_page.evaluate(
        """async (text) => {
          const { renderMarkdown } = await import("/markdown.js");
          const box = document.createElement("div");
          box.append(renderMarkdown(text));
          const all = (sel) => [...box.querySelectorAll(sel)];
          return {
            heads: all("th").map((c) => [c.textContent, c.className]),
            rows: all("tbody tr").map((r) => [...r.children].map((c) => c.textContent)),
            code: all("td code").length,
            strong: all("td strong").length,
          };
        }""",
        table,
    )
    assert out["heads"] == [
        ["Name", "align-left"],
        ["Size", "align-right"],
        ["Kind", "align-center"],
    ]
    assert out["rows"] == [["a.py", "12", "file"], ["b", "3", ""]]  # a short row is padded
    assert out["code"] == 1 and out["strong"] == 1
    # Not a table: no delimiter row, or a header whose cells do not match it.
    [plain] = render(md_page, ["a | b\nc | d\n"])
    assert "TABLE" not in plain["tags"]
    [mismatch] = render(md_page, ["| a | b |\n|---|\n| c | d |\n"])
    assert "TABLE" not in mismatch["tags"]

    tokens = md_page.evaluate(
        """async () => {
          const { tokenize } = await import("/highlight.js");
          return {
            py: tokenize('def f(x):\\n    return "hi"  # done', "python"),
            sh: tokenize('ls -la | grep "x" && echo $HOME', "bash"),
            none: tokenize("whatever <b>", "klingon"),
          };
        }"""
    )
    assert ["kw", "def"] in tokens["py"] and ["str", '"hi"'] in tokens["py"]
    assert ["com", "# done"] in tokens["py"]
    assert ["fn", "grep"] in tokens["sh"] and ["var", "$HOME"] in tokens["sh"]
    assert tokens["none"] == [[None, "whatever <b>"]]
    for toks in tokens.values():  # tokens cover the text exactly
        assert all(isinstance(t, str) for _, t in toks)


def test_the_copy_button_copies_the_code_only(browser: Any) -> None:
    context = browser.new_context()
    try:
        page = context.new_page()
        page.route(f"{ORIGIN}/**", _serve)
        page.goto(f"{ORIGIN}/blank")
        code = "for i in range(3):\n    print(i)  # «x»"
        page.evaluate(
            """async (code) => {
              const { renderMarkdown } = await import("/markdown.js");
              const box = document.createElement("div");
              box.append(renderMarkdown("Here:\\n```python\\n" + code + "\\n```\\nDone."));
              document.body.append(box);
            }""",
            code,
        )
        # This origin is not a secure context: no clipboard API, the page copies through
        # a selected text area (the chat itself, on 127.0.0.1, uses the clipboard API).
        page.evaluate(
            "document.addEventListener('copy', (e) => { window.copied = e.target.value; })"
        )
        button = page.get_by_test_id("copy-code")
        button.click()
        page.wait_for_function("document.querySelector('[data-testid=copy-code]').dataset.copied")
        assert button.get_attribute("data-copied") == "true"
        assert page.evaluate("window.copied") == code
        # The label and the language are drawn by CSS: the message's text is the code.
        assert page.evaluate("document.querySelector('.codeblock').textContent") == code
    finally:
        context.close()


def test_a_fence_inside_a_block_quote_is_a_code_block(md_page: Any) -> None:
    # Found by the property below: ">```a" opens a code block in a quote (CommonMark); its
    # language goes to data-lang, and the quote's following lines are its code.
    [out, nested, unclosed] = render(
        md_page, [">```a\n> x = 1\n> ```", "> > ~~~b\n> > y", ">```a\nb"]
    )
    assert out["tags"][:2] == ["BLOCKQUOTE", "DIV"] and "PRE" in out["tags"]
    assert ["data-lang", "a"] in out["attrs"] and out["text"] == "x = 1"
    assert nested["tags"][:3] == ["BLOCKQUOTE", "BLOCKQUOTE", "DIV"]
    assert ["data-lang", "b"] in nested["attrs"] and nested["text"] == "y"
    # The quote ends at the first line without ">", and the code block with it.
    assert unclosed["tags"][-1] == "P" and unclosed["text"] == "b"


def test_hostile_input_stays_text(md_page: Any) -> None:
    hostile = (
        '<img src=x onerror="alert(1)"> <script>alert(2)</script> '
        "[x](javascript:alert(3)) [y](data:text/html,hi) [ok](https://example.com)"
    )
    [out] = render(md_page, [hostile])
    assert set(out["tags"]) == {"P", "A"}
    assert out["attrs"] == [
        ["href", "https://example.com"],
        ["target", "_blank"],
        ["rel", "noopener noreferrer"],
    ]
    assert "<img src=x" in out["text"] and "<script>" in out["text"]


markdownish = st.lists(
    st.sampled_from([*"ab \n*_`#->[]()!<>/\"'=1.~:h|", "http://", "```", "\n\n", "  ", "|---|"]),
    max_size=40,
).map("".join)


@settings(max_examples=150, deadline=None)
@given(texts=st.lists(markdownish, min_size=1, max_size=8))
@example(texts=[">```a"])
def test_any_text_renders_to_safe_elements_and_keeps_its_letters(
    md_page: Any, texts: list[str]
) -> None:
    for text, out in zip(texts, render(md_page, texts), strict=True):
        assert set(out["tags"]) <= ALLOWED_TAGS, text
        for name, value in out["attrs"]:
            assert name in ALLOWED_ATTRS, (text, name)
            if name == "href":
                assert value.startswith(("http://", "https://")), (text, value)
        if FENCE_WITH_LANG.search(text) or "](" in text:
            continue  # a fence's language and a link's URL are attributes, not text
        letters = [c for c in text if c in "abh"]
        assert [c for c in out["text"] if c in "abh"] == letters, text
