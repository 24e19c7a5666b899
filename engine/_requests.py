"""The requests a page waits on, followed from the moment the page is made (``networkidle``).

The Network domain reports only the requests that start after ``Network.enable``: a wait that enabled it
itself could not see the fetch a click had just started, and returned while it was in flight. So every
page gets ``Network.enable`` with its set-up (``_browser._page_setup``; no response bodies kept, so the
browser's memory does not grow with what the page downloads), this watcher counts its requests from then
on, and its out-of-process iframes' and workers' as they attach (enabled before they are resumed), and
``wait_for(load_state="networkidle")`` reads the count.

A request counts until its response arrives (or it fails); after that only its data does, as activity
that restarts the quiet time. Its end (``loadingFinished``) is no mark to wait for: Chromium sends none
for a ``fetch()`` whose body the page never reads. A new document in a frame ends the requests of the
old one there: Chromium reports some of them failed, and of others (an out-of-process iframe's) nothing.

Not counted: a service worker's own requests. Counted until the tab's next document: the script request
of a worker terminated before its script came (Chromium reports no end for it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio

import cdp
from engine._errors import CDPError
from engine._hooks import add_hook, enable_once
from engine._util import attached_state

if TYPE_CHECKING:
    from engine._page import Page
    from engine._session import Session

NETWORK_SETUP = cdp.network.enable(max_total_buffer_size=0, max_resource_buffer_size=0)
"""``Network.enable`` for the engine's own count: Chromium keeps no response bodies (a page that
read 80 MB grew the browser by 133 MB with the defaults, by 24 MB without Network). A user's own
``cdp.network.enable()`` sets Chromium's defaults again, and ``Network.getResponseBody`` works from then."""

LIFECYCLE_EVENTS = cdp.page.set_lifecycle_events_enabled(enabled=True)
"""An out-of-process iframe's ``Page.lifecycleEvent`` (its DOMContentLoaded ends an action's wait for a
navigation that moved the frame into that process, as the page's own session's does for its frames)."""

_REQUEST_EVENTS = (
    "Network.requestWillBeSent",
    "Network.responseReceived",
    "Network.dataReceived",
    "Network.loadingFinished",
    "Network.loadingFailed",
)
_FRAME_EVENTS = ("Page.frameNavigated", "Page.frameDetached")


class _Request:
    """A request waiting for its response: its frame, the document that made it, and its session."""

    __slots__ = ("frame", "loader", "session")

    def __init__(self, frame: object, loader: object, session: Session) -> None:
        self.frame = frame
        self.loader = loader
        self.session = session


class Requests:
    """A page's requests waiting for their response (by request id), and when its network was last
    active (a request began, got its response or data, or ended)."""

    def __init__(self) -> None:
        self.inflight: dict[str, _Request] = {}
        self.last_change = trio.current_time()

    def idle_for(self) -> float:
        """Seconds since the page's network was last active."""
        return trio.current_time() - self.last_change

    def drop(self, stale: list[str]) -> None:
        for request in stale:
            del self.inflight[request]
        if stale:
            self.last_change = trio.current_time()


def requests_of(page: Page) -> Requests:
    return attached_state(page, "_requests", Requests)


def watch_requests(page: Page) -> None:
    """Follow the requests of ``page`` (called once per Page, after its set-up sent ``Network.enable``)."""
    _watch_session(page, page.session)


def _watch_session(page: Page, session: Session) -> None:
    state = requests_of(page)
    inflight = state.inflight

    def seen(method: str, params: dict[str, Any]) -> None:
        state.last_change = trio.current_time()
        request = params.get("requestId")
        if not isinstance(request, str) or method == "Network.dataReceived":
            return
        if method == "Network.requestWillBeSent":  # (again for each redirect, with the same id)
            inflight[request] = _Request(params.get("frameId"), params.get("loaderId"), session)
        else:
            inflight.pop(request, None)

    def ended(_: CDPError) -> None:
        # A session that goes (its frame removed, its worker ended) reports nothing more of its requests.
        state.drop([r for r, entry in inflight.items() if entry.session is session])

    def frame_changed(method: str, params: dict[str, Any]) -> None:
        if method == "Page.frameDetached":
            # This session's: a frame that swaps process goes on in a child session, whose requests may
            # come before this (an out-of-process frame's removal ends its session, and so its requests).
            frame = params.get("frameId")
            state.drop([r for r, e in inflight.items() if e.frame == frame and e.session is session])
            return
        frame = params.get("frame")
        if not isinstance(frame, dict):
            return
        frame_id, loader = frame.get("id"), frame.get("loaderId")
        if session is page.session and frame_id == page.target_id:
            # A new document in the tab: none of the old documents' requests is waited on (the new one's
            # iframes have not begun yet: this comes at its commit).
            stale = [r for r, entry in inflight.items() if entry.loader != loader]
        else:
            stale = [r for r, entry in inflight.items() if entry.frame == frame_id and entry.loader != loader]
        state.drop(stale)

    def attached(method: str, params: dict[str, Any]) -> None:
        # Run before the child is resumed (SessionTable.resume_attached): its first requests are seen.
        child = session.connection.sessions.get(params.get("sessionId"))
        if child is None or child.detached or child.target_type not in ("iframe", "worker"):
            return
        child.execute_nowait(NETWORK_SETUP)
        if child.target_type == "iframe":
            enable_once(child, "Page.enable")  # its frames' navigations (the dialogs watcher's too)
            # Its DOMContentLoaded, where an action's navigation wait ends (engine._waiting): without it
            # the wait for a frame that moved into this process ended at the commit, the frame still empty.
            child.execute_nowait(LIFECYCLE_EVENTS)
        _watch_session(page, child)

    add_hook(session, _REQUEST_EVENTS, seen, on_end=ended)
    add_hook(session, _FRAME_EVENTS, frame_changed)
    add_hook(session, ("Target.attachedToTarget",), attached)
