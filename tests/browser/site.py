"""Local web pages the browser and WebFetch tests read: a real HTTP server on 127.0.0.1,
a free port, in a thread.

Pages: ``/form`` (a search form → ``/result?q=…``), ``/links`` (→ ``/page2``), ``/js-list``
(a list JavaScript fills in after a moment), ``/console`` (logs an error and throws),
``/redirect`` (→ ``/final``), ``/redirect-away`` (→ the same server named ``localhost``,
another host for the permission rules), ``/large`` (about 300 KB of paragraphs),
``/tall`` (little text, 2,400 px high), ``/latin1`` (windows-1252, declared in the
header), ``/sjis`` (Shift_JIS, declared only in a ``<meta>``), ``/set-cookie?v=…`` and
``/cookies``, ``/slow`` (answers only when ``release()`` is called: a navigation that
hangs), ``/download`` (an attachment), ``/doc.md`` (plain text), ``/image.png``
(binary). ``hits`` lists the paths requested.
"""

from __future__ import annotations

import contextlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

PARAGRAPH = (
    "<p>Paragraph {n}: the quick brown fox jumps over the lazy dog, and keeps jumping "
    "until the page is large enough for the caps to matter.</p>\n"
)


def _page(title: str, body: str) -> bytes:
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title></head>"
        f"<body>{body}</body></html>"
    ).encode()


class Site:
    """The server (see the module docstring). ``base``: ``http://127.0.0.1:PORT``;
    ``other``: the same server as ``http://localhost:PORT``."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        self._release = threading.Event()
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                site.hits.append(self.path)
                site.handle(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.other = f"http://localhost:{self.port}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Site:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._release.set()
        self.server.shutdown()
        self.server.server_close()

    def release(self) -> None:
        """Let ``/slow`` answer."""
        self._release.set()

    # -- pages ---------------------------------------------------------------------------

    def handle(self, h: BaseHTTPRequestHandler) -> None:
        url = urlsplit(h.path)
        query = parse_qs(url.query)
        path = url.path
        headers: dict[str, str] = {}
        status = 200
        ctype = "text/html; charset=utf-8"
        if path == "/form":
            body = _page("Search form", (
                "<h1>Search</h1><form action='/result' method='get'>"
                "<label>Query <input name='q'></label>"
                "<label>Colour <select name='c'><option value='r'>red</option>"
                "<option value='b'>blue</option></select></label>"
                "<button type='submit'>Search</button></form>"
            ))  # fmt: skip
        elif path == "/result":
            q = query.get("q", [""])[0]
            c = query.get("c", [""])[0]
            body = _page("Results", f"<h1>You searched: {q}</h1><p>colour {c}</p>")
        elif path == "/links":
            body = _page("Links", (
                "<h1>Links</h1><a href='/page2'>Next page</a> "
                f"<a href='{self.other}/page2'>Elsewhere</a> "
                "<a href='/download'>Get the report</a>"
            ))  # fmt: skip
        elif path == "/page2":
            body = _page("Page two", "<h1>Welcome to page two</h1>")
        elif path == "/js-list":
            body = _page("JS list", (
                "<h1>Items</h1><ul id='items'></ul><script>setTimeout(() => {"
                "for (const t of ['item one', 'item two', 'item three']) {"
                "const li = document.createElement('li'); li.textContent = t;"
                "document.getElementById('items').append(li); }}, 300);</script>"
            ))  # fmt: skip
        elif path == "/console":
            body = _page("Console", (
                "<h1>Logs</h1><script>console.log('hello from the page');"
                "console.error('boom: something failed');</script>"
                "<script>throw new Error('uncaught kaboom');</script>"
            ))  # fmt: skip
        elif path == "/redirect":
            status, body, headers = 302, b"", {"Location": "/final"}
        elif path == "/redirect-away":
            status, body, headers = 302, b"", {"Location": f"{self.other}/page2"}
        elif path == "/final":
            body = _page("Final", "<h1>Landed after a redirect</h1>")
        elif path == "/tall":
            body = _page("Tall", (
                "<h1>Top of the tall page</h1><div style='height:2400px'></div>"
                "<p>Bottom of the tall page</p>"
            ))  # fmt: skip
        elif path == "/large":
            body = _page("Large", "<h1>Large</h1>" + "".join(
                PARAGRAPH.format(n=n) for n in range(2500)
            ))  # fmt: skip
        elif path == "/latin1":
            ctype = "text/html; charset=windows-1252"
            body = (
                "<html><head><title>Café</title></head><body><h1>Crème brûlée</h1>"
                "<p>Prix: 5 € — déjà vu</p></body></html>"
            ).encode("cp1252")
        elif path == "/sjis":
            ctype = "text/html"
            body = (
                '<html><head><meta charset="Shift_JIS"><title>日本語</title></head>'
                "<body><h1>こんにちは世界</h1></body></html>"
            ).encode("shift_jis")
        elif path == "/set-cookie":
            v = query.get("v", ["x"])[0]
            headers = {"Set-Cookie": f"who={v}; Path=/"}
            body = _page("Cookie set", f"<h1>Cookie set to {v}</h1>")
        elif path == "/cookies":
            cookie = h.headers.get("Cookie") or "none"
            body = _page("Cookies", f"<h1>Cookies: {cookie}</h1>")
        elif path == "/slow":
            self._release.wait(60)
            body = _page("Slow", "<h1>Finally</h1>")
        elif path == "/download":
            ctype = "text/plain"
            headers = {"Content-Disposition": 'attachment; filename="report.txt"'}
            body = b"the report\n"
        elif path == "/doc.md":
            ctype = "text/markdown; charset=utf-8"
            body = b"# Plain\n\nJust *markdown* text.\n"
        elif path == "/image.png":
            ctype = "image/png"
            body = b"\x89PNG\r\n\x1a\n" + bytes(64)
        else:
            status, body = 404, _page("Not found", "<h1>Nothing here</h1>")
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(body)))
        for key, value in headers.items():
            h.send_header(key, value)
        h.end_headers()
        with contextlib.suppress(OSError):
            h.wfile.write(body)
