"""The pages the scenarios load, served from 127.0.0.1 by a small HTTP server thread."""

from __future__ import annotations

import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

from benchmarks.scenarios import SMALL_PAGE

ROWS = 1_000
"""Each row is five elements (div, span, a, button, input): 5,000 elements in the rows."""


def big_page(rows: int = ROWS) -> bytes:
    """A deterministic page of ``rows`` * 5 elements with names, links and form controls."""
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>5k elements</title></head><body><main>"]
    for i in range(rows):
        parts.append(
            f"<div class='row' id='r{i}'><span>Item {i}</span><a href='#r{i}'>Details {i}</a>"
            f"<button type='button'>Add {i}</button><input aria-label='Quantity {i}' value='{i % 10}'></div>"
        )
    parts.append("</main></body></html>")
    return "".join(parts).encode()


SMALL = (
    b"<!doctype html><html><head><meta charset='utf-8'><title>small</title></head>"
    b"<body><h1>A small page</h1><p>For navigate.load: one request, no subresources.</p></body></html>"
)


class _Handler(BaseHTTPRequestHandler):
    pages: ClassVar[dict[str, bytes]] = {}

    def do_GET(self) -> None:
        body = self.pages.get(self.path.split("?", 1)[0])
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        del format, args


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        """A browser that drops a connection mid-response (a navigation superseded, a tab closed) is
        routine here, not worth a traceback on stderr."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)  # type: ignore[arg-type]


class PageServer:
    """``with PageServer() as server: server.url("/big.html")``"""

    def __init__(self) -> None:
        handler = type(
            "Handler",
            (_Handler,),
            {"pages": {"/big.html": big_page(), SMALL_PAGE: SMALL, "/": b"<!doctype html>"}},
        )
        self._server = _Server(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="bench-http", daemon=True)

    def url(self, path: str) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}{path}"

    def __enter__(self) -> PageServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
