"""Servers on 127.0.0.1 that misbehave on purpose: an HTTP server for navigation faults a static server
can't show, and a trio TCP server for endpoints that answer connect() wrongly."""

from __future__ import annotations

import http.server
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from functools import partial

import trio

from engine.testing import serve_handler

PAGES: dict[str, bytes] = {
    "/final.html": b"<title>final</title><p>the final page</p>",
    "/replace.html": b"<title>replace</title><script>location.replace('/final.html')</script><p>first</p>",
    "/assign.html": b"<title>assign</title><script>location.href = '/final.html'</script>",
    "/to-about.html": b"<title>to about</title><script>location.replace('about:version')</script>",
    "/stop.html": b"<title>stop</title><p>stopped</p><script>window.stop()</script><img src='/slow.png'>",
    "/stop-late.html": b"<title>stop late</title><img src='/slow.png'>"
    b"<script>setTimeout(() => window.stop(), 200)</script>",
    "/hang.html": b"<title>hang</title><img src='/forever.png'>",
    "/fetching.html": b"<title>fetching</title><script>window.done = false;"
    b"fetch('/slow.png').finally(() => { window.done = true })</script>",
    "/jump.html": b"<title>jump</title><label>Jump to <select onchange='location.href = this.value'>"
    b"<option value=''>Pick</option><option value='/trickle.html'>Trickle</option></select></label>"
    b"<form action='/trickle.html'><label>Search <input name='q' onchange='this.form.submit()'>"
    b"</label></form>",
    "/leaving.html": b"<title>leaving</title><label>Name <input disabled></label>"
    b"<script>setTimeout(() => { location.href = '/late.html' }, 1000)</script>",
    "/fetching-forever.html": b"<title>fetching for ever</title><script>fetch('/forever.png')</script>",
    "/fetch-on-click.html": b"<title>fetch on click</title><script>window.done = false</script>"
    b"<button onclick=\"fetch('/slow.png').finally(() => "
    b"{ window.done = true; document.body.append('Fetched') })\">Fetch</button>",
    # ?host=...&src=/page.html: that page in a frame; with host=localhost the frame is cross-site, so out
    # of process (a session of its own).
    "/framed.html": b"<title>framed</title><script>const q = new URLSearchParams(location.search);"
    b"document.write(`<iframe src='http://${q.get('host')}:${location.port}${q.get('src')}'></iframe>`)</script>"
    b"<p>around the frame</p>",
    # History moves started by the page's own handlers (Chromium sends no frameRequestedNavigation for them).
    "/back.html": b"<title>back</title><button onclick='history.back()'>Back</button>"
    b"<label>Colour <select onchange='history.back()'><option>Red</option><option>Blue</option></select>"
    b"</label>",
    # Says whether the back-forward cache restored it.
    "/kept.html": b"<title>kept</title><script>addEventListener('pageshow', (e) => {"
    b"if (e.persisted) document.title = 'restored' })</script>",
    "/fetch-on-load.html": b"<title>fetch on load</title>"
    b"<script>fetch('/slow.png').finally(() => document.body.append('Fetched'))</script>",
    # The frame's document moves on while its fetch is in flight: Chromium reports the fetch neither
    # finished nor failed when the frame is out of process and keeps its session.
    "/fetch-then-move.html": b"<title>fetch then move</title><button onclick=\"fetch('/forever.png');"
    b"setTimeout(() => { location.href = '/final.html' }, 300)\">Move</button>",
    # A fetch whose body the page never reads: Chromium sends no loadingFinished for it.
    "/unread-body.html": b"<title>unread body</title><button onclick="
    b"\"fetch('/body').then(r => document.body.append('Status ' + r.status))\">Fetch</button>",
    # A worker's own worker: its script request begins on the outer worker's session.
    "/nested-worker.html": b'<title>nested worker</title><button onclick="window.worker = new Worker('
    b"'/outer.js'); worker.onmessage = e => document.body.append(e.data)\">Start</button>",
    "/worker.html": b"<title>worker</title><button onclick=\"window.worker = new Worker('/worker.js');"
    b'worker.onmessage = e => document.body.append(e.data)">Start</button>',
}


_ANSWERED: set[str] = set()
"""The ``/once.html?...`` and ``/then-204.html?...`` URLs served so far: each is answered once, then
never (a revisit that hangs) or with 204 No Content (a revisit that leaves the page where it was)."""


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        if path in PAGES:
            self._send(200, PAGES[path])
        elif path == "/short.html":
            # Promises 100 bytes, sends 7, hangs up.
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.write(b"<p>shor")
            self.wfile.flush()
            self.close_connection = True
        elif path == "/trickle.html":
            # The document's start, then its end 0.5 s later: committed long before it is parsed.
            # (The start is padded past the 1 KiB the parser may hold back to look for a charset.)
            head = b"<title>trickle</title><h1>The trickle</h1>".ljust(2048)
            tail = b"<p>the end of the trickle</p>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Cache-Control", "no-store")
            self.send_header("Content-Length", str(len(head) + len(tail)))
            self.end_headers()
            self.wfile.write(head)
            self.wfile.flush()
            time.sleep(0.5)
            self.wfile.write(tail)
        elif path == "/late.html":
            time.sleep(3)
            self._send(200, b"<title>late</title><p>the late page</p>")
        elif path == "/slow.html":  # never from a cache: a history move back to it waits for it again
            time.sleep(1.5)
            self._send(200, b"<title>slow</title><p>the slow page</p>", "Cache-Control: no-store")
        elif path == "/body":
            self._send(200, b"0123456789", "Content-Type: text/plain", "Cache-Control: no-store")
        elif path == "/worker.js":
            # Its script request begins on the page's session and ends on the worker's.
            script = b"fetch('/slow.png').finally(() => postMessage('Worker done'))"
            self._send(200, script, "Content-Type: text/javascript", "Cache-Control: no-store")
        elif path == "/outer.js":
            script = b"const inner = new Worker('/worker.js'); inner.onmessage = e => postMessage(e.data)"
            self._send(200, script, "Content-Type: text/javascript", "Cache-Control: no-store")
        elif path == "/slow.png":
            time.sleep(2)
            self._send(404, b"")
        elif path in ("/forever.png", "/no-headers.html"):
            time.sleep(3600)
        elif path == "/once.html" and self.path not in _ANSWERED:
            _ANSWERED.add(self.path)
            self._send(200, b"<title>once</title>", "Cache-Control: no-store")
        elif path == "/once.html":
            time.sleep(3600)
        elif path == "/then-204.html" and self.path not in _ANSWERED:
            _ANSWERED.add(self.path)
            self._send(200, b"<title>then 204</title>", "Cache-Control: no-store")
        elif path in ("/then-204.html", "/204"):
            self._send(204, b"")
        else:
            self._send(404, b"not here")

    def _send(self, status: int, body: bytes, *headers: str) -> None:
        self.send_response(status)
        for header in headers:
            self.send_header(*header.split(": ", 1))
        if not any(header.startswith("Content-Type:") for header in headers):
            self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextmanager
def serve_faults() -> Iterator[str]:
    """Yield the base URL of the misbehaving server."""
    with serve_handler(_Handler) as url:
        yield url


Handler = Callable[[trio.SocketStream], Awaitable[None]]


@asynccontextmanager
async def serving(handler: Handler) -> AsyncIterator[int]:
    """Serve ``handler`` on 127.0.0.1; yield the port."""
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, handler, 0, host="127.0.0.1"))
        yield listeners[0].socket.getsockname()[1]
        nursery.cancel_scope.cancel()


async def read_request(stream: trio.SocketStream) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = await stream.receive_some(65536)
        if not chunk:
            break
        data += chunk
    return data
