"""Whether the tab is between a navigation's start and its commit, for the errors of work it held up.

Measured on Chromium 156: while a tab's cross-document navigation waits for its response, Chromium holds
every command for the tab's renderer (a ``Runtime.evaluate`` sent 0.9 s into a 4 s wait for the response
was answered 3.1 s later, at the commit, in the new document). A check, a wait or an evaluate that ran
out of time then looked like a busy page or a missing element. The tab's main frame is followed from the
page's creation; its errors say where the tab is going, and what to do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio

from engine._hooks import add_hook
from engine._util import attached_state

if TYPE_CHECKING:
    from engine._page import Page

_EVENTS = (
    "Page.frameStartedNavigating",
    "Page.frameNavigated",
    "Page.frameStoppedLoading",
    "Network.loadingFailed",
)
"""A navigation's start, and its ends: the commit, a stop, or (measured on Chromium 156) the failure of its
document request (whose id is its loader's), which is all a 204, a download or a ``mailto:`` sends while
the old document is still loading. A same-document navigation meanwhile ends nothing: the pending one
goes on, and so does the hold."""


class _Pending:
    """The main frame's navigation that has started and not committed: its URL, loader and start (trio
    time)."""

    url = ""
    loader = ""
    since = 0.0
    documents = 0  # the main frame's commits of a new document (Page.frameNavigated) since the Page began
    moved: trio.Event | None = None  # set at the next change (or the tab's end), for first_document

    def wake(self) -> None:
        if self.moved is not None:
            self.moved.set()
            self.moved = None


def _pending(page: Page) -> _Pending:
    return attached_state(page, "_navigating", _Pending)


def watch_navigating(page: Page) -> None:
    """Follow the start and end of the tab's navigations (called once per Page, after ``Page.enable`` and
    ``Network.enable``)."""
    state = _pending(page)
    main = page.target_id

    def changed(method: str, params: dict[str, Any]) -> None:
        if method == "Network.loadingFailed":
            if state.url and params.get("requestId") == state.loader:
                state.url = ""
                state.wake()
            return
        if method == "Page.frameNavigated":
            frame = params.get("frame")
            if not isinstance(frame, dict) or frame.get("id") != main:
                return
            state.documents += 1
        elif params.get("frameId") != main:
            return
        if method == "Page.frameStartedNavigating":
            # A same-document one (a fragment, pushState) commits at once and holds nothing.
            if "ameDocument" in str(params.get("navigationType", "")):
                return
            state.url = str(params.get("url", ""))
            state.loader = str(params.get("loaderId", ""))
            state.since = trio.current_time()
        else:  # committed (frameNavigated), or stopped
            state.url = ""
        state.wake()

    add_hook(page.session, _EVENTS, changed, on_end=lambda _: state.wake())


def expect_first_navigation(page: Page, url: str) -> None:
    """A new tab (a popup) is about to load ``url``: it counts as navigating from now on, not from the
    start Chromium announces once the tab runs (until then it shows its initial empty document)."""
    state = _pending(page)
    if not state.url and not state.documents:
        state.url = url
        state.since = trio.current_time()


async def first_document(page: Page) -> None:
    """Until a tab that has committed no document yet and is navigating (a popup on its initial empty
    document, ``expect_first_navigation``) committed one, stopped, or closed; at once otherwise."""
    state = _pending(page)
    while state.url and not state.documents and not page.closed:
        if state.moved is None:  # (one a cancelled wait left is reused: an Event has no truth value)
            state.moved = trio.Event()
        await state.moved.wait()


def documents_committed(page: Page) -> int:
    """How many new documents the tab's main frame has committed since the Page began (a count to compare)."""
    return _pending(page).documents


def navigating(page: Page) -> bool:
    """The tab's main frame has a navigation started and not committed (Chromium holds its commands)."""
    return bool(_pending(page).url)


def navigating_note(page: Page) -> str:
    """A sentence for an error whose time ran out, when the tab is mid-navigation; "" otherwise."""
    state = _pending(page)
    if not state.url:
        return ""
    url = state.url if len(state.url) <= 120 else state.url[:117] + "..."
    return (
        f" Meanwhile the tab is navigating to {url} (started {trio.current_time() - state.since:.1f} s ago, "
        "not committed): Chromium holds the tab's commands until the new document commits. Wait for it "
        "(page.wait_for(load_state='load')), then try again."
    )
