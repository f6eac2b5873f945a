"""The web chat's static files: complete, self-contained (nothing from the internet), no
HTML built from strings. These run without a browser."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tron_server.web import STATIC_DIR

JS = sorted(STATIC_DIR.glob("*.js"))
IMPORT = re.compile(r"""^\s*import\s[^;]*?from\s+["']([^"']+)["']""", re.M | re.S)


def test_static_dir_has_the_page() -> None:
    names = {p.name for p in STATIC_DIR.iterdir()}
    assert {"index.html", "app.js", "style.css"} <= names
    html = (STATIC_DIR / "index.html").read_text()
    assert '<script type="module" src="app.js"></script>' in html


@pytest.mark.parametrize("path", JS, ids=lambda p: p.name)
def test_modules_import_only_local_files_that_exist(path: Path) -> None:
    source = path.read_text()
    for target in IMPORT.findall(source):
        assert target.startswith("./"), f"{path}: imports {target!r} (only local modules)"
        assert (STATIC_DIR / target[2:]).is_file(), f"{path}: {target} does not exist"


def test_nothing_is_fetched_from_the_internet() -> None:
    remote = re.compile(
        r"""(src|href)\s*=\s*["']\s*(https?:)?//|@import|url\(\s*["']?(https?:)?//|"""
        r"""fetch\(\s*["'`]https?:|from\s+["']https?:"""
    )
    for path in STATIC_DIR.iterdir():
        if path.suffix in {".html", ".js", ".css"}:
            match = remote.search(path.read_text())
            assert match is None, f"{path.name} loads something remote: {match.group(0)!r}"


def test_no_html_is_built_from_strings() -> None:
    # Model and user text must never become markup: no innerHTML / outerHTML /
    # insertAdjacentHTML / document.write anywhere in the page's code.
    sinks = re.compile(r"\.(innerHTML|outerHTML)\s*=|insertAdjacentHTML|document\.write")
    for path in JS:
        match = sinks.search(path.read_text())
        assert match is None, f"{path.name} uses {match.group(0)!r}"
