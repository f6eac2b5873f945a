"""What WebFetch makes of a response body: the text in its charset, HTML as Markdown.

The charset is the one the response declares (``Content-Type: …; charset=``), else a
byte-order mark, else for HTML the document's own ``<meta charset>`` (or its
``http-equiv`` form) in the first 4 KB, else UTF-8 — and when the body is not UTF-8,
windows-1252, as browsers do for undeclared legacy pages. Undecodable bytes become U+FFFD.

HTML becomes Markdown through html-to-markdown (MIT, kept up, typed; a Rust core, 15–20
times faster than the pure-Python markdownify here, ``benchmarks/RESULTS_web.md``: a 2 MB
page takes 2 s, not 45, under load): scripts, styles and templates go, navigation and
forms are left out (its default preprocessing), headings are ATX ``#`` lines, relative
links absolute, and inline ``data:`` images, which would only fill the context with
base64, keep their alt text and lose the data.
"""

from __future__ import annotations

import codecs
import re
from html import unescape

__all__ = ["decode_body", "html_to_markdown", "is_html", "is_text", "sniff_charset"]

_META = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:\-]+)""", re.IGNORECASE)
_BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_TITLE = re.compile(r"<title[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)
_DATA_URI = re.compile(r"\]\(data:[^)\s]*\)")
_TEXT_TYPES = ("application/json", "application/xml", "application/javascript",
               "application/x-javascript", "application/ld+json", "application/x-ndjson",
               "application/yaml", "application/x-yaml", "application/toml")  # fmt: skip


def is_html(media_type: str) -> bool:
    return media_type in ("text/html", "application/xhtml+xml")


def is_text(media_type: str) -> bool:
    """Whether a body of this media type is text WebFetch shows (HTML included)."""
    return (
        media_type.startswith("text/")
        or media_type in _TEXT_TYPES
        or media_type.endswith(("+json", "+xml"))
        or is_html(media_type)
    )


def _known(charset: str | None) -> str | None:
    if not charset:
        return None
    try:
        return codecs.lookup(charset.strip().strip("\"'")).name
    except LookupError:
        return None


def sniff_charset(body: bytes, declared: str | None, html: bool, cut: bool = False) -> str:
    """The charset to decode ``body`` with (see the module docstring); ``cut``: the body
    is the start of a longer one (a character may be cut at its end)."""
    for bom, name in _BOMS:
        if body.startswith(bom):
            return name
    found = _known(declared)
    if found is not None:
        return found
    if html:
        meta = _META.search(body[:4096])
        if meta is not None:
            found = _known(meta.group(1).decode("ascii", "replace"))
            if found is not None:
                # A page saying utf-16 in ASCII bytes cannot be UTF-16: a known misstatement.
                return "utf-8" if found.startswith("utf-16") else found
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multibyte character cut at the end of a capped body is still UTF-8.
        if not cut or exc.start < len(body) - 3:
            return "cp1252"
    return "utf-8"


def decode_body(
    body: bytes, declared: str | None, html: bool, cut: bool = False
) -> tuple[str, str]:
    """(text, charset used)."""
    charset = sniff_charset(body, declared, html, cut)
    return body.decode(charset, errors="replace"), charset


def html_to_markdown(html: str, base_url: str | None = None) -> tuple[str, str | None]:
    """(Markdown of the page, its ``<title>`` or None); links relative to ``base_url`` are
    made absolute (the model can fetch them as they are)."""
    import html_to_markdown as h2m

    title_match = _TITLE.search(html[:65536])
    title = " ".join(unescape(title_match.group(1)).split()) if title_match else None
    options = h2m.ConversionOptions(extract_metadata=False, capture_svg=False, base_url=base_url)
    text = h2m.convert(html, options).content or ""
    text = _DATA_URI.sub("](data:…)", text)
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return text, title or None
