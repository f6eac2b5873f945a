"""The page's Markdown renderer, run in Chromium: whatever a model writes, the result is
made of a few harmless elements and keeps every letter of the text, in order."""

from __future__ import annotations

import mimetypes
import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tron_server.web import STATIC_DIR

ORIGIN = "http://tron.test"
ALLOWED_TAGS = {
    "P", "PRE", "CODE", "STRONG", "EM", "A", "UL", "OL", "LI", "H3", "H4", "H5", "H6",
    "BLOCKQUOTE",
}  # fmt: skip
ALLOWED_ATTRS = {"href", "target", "rel", "data-lang", "class"}
FENCE_WITH_LANG = re.compile(r"^\s*(```+|~~~+)\s*[\w+.#-]+\s*$", re.M)

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


@pytest.fixture(scope="module")
def md_page(browser: Any) -> Iterator[Any]:
    """A page whose origin serves the static files straight from the package (no server)."""
    context = browser.new_context()
    page = context.new_page()

    def serve(route: Any) -> None:
        name = route.request.url.removeprefix(ORIGIN + "/") or "blank"
        path = STATIC_DIR / name
        if path.is_file():
            kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
            route.fulfill(status=200, body=path.read_bytes(), content_type=kind)
        else:
            route.fulfill(
                status=200, body="<!doctype html><title>t</title>", content_type="text/html"
            )

    page.route(f"{ORIGIN}/**", serve)
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
    assert out["tags"] == ["H3", "P", "STRONG", "EM", "CODE", "UL", "LI", "LI", "PRE", "CODE"]
    assert "x = '<b>'" in out["text"]
    assert ["data-lang", "py"] in out["attrs"]


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
    st.sampled_from([*"ab \n*_`#->[]()!<>/\"'=1.~:h", "http://", "```", "\n\n", "  "]),
    max_size=40,
).map("".join)


@settings(max_examples=150, deadline=None)
@given(texts=st.lists(markdownish, min_size=1, max_size=8))
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
