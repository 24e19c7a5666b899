"""The requests a page has in flight, followed from the moment the page is made (``networkidle``).

The Network domain reports only the requests that start after ``Network.enable``: a wait that enabled it
itself could not see the fetch a click had just started, and returned while it was in flight. So every
page gets ``Network.enable`` with its set-up (``_browser._page_setup``), this watcher counts its requests
from then on, and its out-of-process iframes' as they attach, and ``wait_for(load_state="networkidle")``
reads the count.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio

from engine._actionability import send_nowait
from engine._errors import CDPError
from engine._hooks import add_hook

if TYPE_CHECKING:
    from engine._page import Page
    from engine._session import Session

_REQUEST_EVENTS = ("Network.requestWillBeSent", "Network.loadingFinished", "Network.loadingFailed")


class Requests:
    """A page's requests in flight (request id -> the loader id of the document that made it), and when
    that set last changed."""

    def __init__(self) -> None:
        self.inflight: dict[str, str] = {}
        self.document: object = None  # the loader id of the main frame's document, once its commit is seen
        self.last_change = trio.current_time()

    def idle_for(self) -> float:
        """Seconds since a request last began or ended."""
        return trio.current_time() - self.last_change


def requests_of(page: Page) -> Requests:
    state = page.__dict__.get("_requests")
    if state is None:
        state = page.__dict__["_requests"] = Requests()
    return state


def watch_requests(page: Page) -> None:
    """Follow the requests of ``page`` (called once per Page, after its set-up sent ``Network.enable``)."""
    _watch_session(page, page.session, main=True)


def _watch_session(page: Page, session: Session, *, main: bool) -> None:
    state = requests_of(page)
    mine: set[str] = set()  # this session's requests in flight

    def seen(method: str, params: dict[str, Any]) -> None:
        request = params.get("requestId")
        if not isinstance(request, str):
            return
        if method == "Network.requestWillBeSent":
            loader = params.get("loaderId")
            state.inflight[request] = loader if isinstance(loader, str) else ""
            mine.add(request)
        elif state.inflight.pop(request, None) is None:
            return
        else:
            mine.discard(request)
        state.last_change = trio.current_time()

    def ended(_: CDPError) -> None:
        # An iframe's session that goes (the frame was removed) reports nothing more of its requests.
        for request in mine:
            state.inflight.pop(request, None)
        mine.clear()
        state.last_change = trio.current_time()

    def committed(method: str, params: dict[str, Any]) -> None:
        # A new document in the tab: the old one's requests (and its iframes') end with it. Chromium
        # reports them failed; this drops any it does not, so none holds the count up for ever.
        loader = params.get("loaderId")
        if (
            params.get("name") == "commit"
            and params.get("frameId") == page.target_id
            and loader != state.document
        ):
            state.document = loader  # (the same document's commit comes again with setLifecycleEventsEnabled)
            stale = [r for r, owner in state.inflight.items() if owner != loader]
            for request in stale:
                del state.inflight[request]
                mine.discard(request)
            if stale:
                state.last_change = trio.current_time()

    def attached(method: str, params: dict[str, Any]) -> None:
        child = session.connection.sessions.get(params.get("sessionId"))
        if child is not None and child.target_type == "iframe" and not child.detached:
            send_nowait(child, "Network.enable", {})
            _watch_session(page, child, main=False)

    add_hook(session, _REQUEST_EVENTS, seen, on_end=ended)
    if main:
        add_hook(session, ("Page.lifecycleEvent",), committed)
    add_hook(session, ("Target.attachedToTarget",), attached)
