"""A tiny static HTTP server on 127.0.0.1 in a daemon thread, for the demo and the tests."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        # The browser hanging up mid-response (a cancelled favicon or media request) is not an error here.
        pass


@contextmanager
def serve_directory(directory: Path) -> Iterator[str]:
    """Serve ``directory`` on an ephemeral loopback port; yield the base URL (``http://127.0.0.1:N``)."""
    with serve_handler(functools.partial(_QuietHandler, directory=str(directory))) as url:
        yield url


@contextmanager
def serve_handler(handler: Callable[..., http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve requests with ``handler`` on an ephemeral loopback port; yield the base URL."""
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="cdp-engine-http", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
