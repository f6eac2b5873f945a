"""HTML → Markdown for WebFetch: html-to-markdown (what WebFetch uses) against markdownify
(the pure-Python converter of the reference MCP fetch server), on the same pages, rounds
interleaved, medians reported.

    uv run --with markdownify python benchmarks/bench_html_markdown.py --rounds 5

markdownify is not a dependency of the project: without it only ours is measured.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from tron_server.tools._html import html_to_markdown

ROW = "<tr><td>cell <b>bold</b></td><td><a href='/x'>link</a></td></tr>"
PARA = "<p>Some paragraph text with <em>emphasis</em> and a <a href='https://e.com'>link</a>.</p>"


def page(paragraphs: int, rows: int) -> str:
    return (
        "<html><head><title>Bench</title><script>var x = 1;</script></head><body><h1>Bench</h1>"
        + PARA * paragraphs
        + "<table>"
        + ROW * rows
        + "</table></body></html>"
    )


def ours(html: str) -> str:
    return html_to_markdown(html)[0]


def peer() -> Callable[[str], str] | None:
    try:
        from markdownify import markdownify
    except ImportError:
        return None
    return lambda html: markdownify(html, heading_style="ATX")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    pages = {"100 KB": page(1000, 250), "2 MB": page(20000, 5000)}
    converters: dict[str, Callable[[str], str]] = {"html-to-markdown": ours}
    other = peer()
    if other is not None:
        converters["markdownify"] = other
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.rounds):
        for size, html in pages.items():
            for name, convert in converters.items():  # interleaved: same load for both
                started = time.perf_counter()
                convert(html)
                times.setdefault((size, name), []).append(time.perf_counter() - started)
    print("| page | converter | median | min | max |")
    print("|---|---|---|---|---|")
    for (size, name), values in times.items():
        print(f"| {size} | {name} | {statistics.median(values):.3f} s | "
              f"{min(values):.3f} s | {max(values):.3f} s |")  # fmt: skip


if __name__ == "__main__":
    main()
