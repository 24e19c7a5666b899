"""Tabs a page opens itself (``window.open``, ``target=_blank``): attached as they appear, listed in
``browser.pages``, and waited for with ``async with page.expect_popup() as popup``.

The browser session auto-attaches to every new tab, paused before its first script (``Target.setAutoAttach``
with ``waitForDebuggerOnStart``); the browser-level hook sets up the ones opened by our pages (their
``openerId``) as ``Browser.new_page`` does, then resumes them, all without awaiting (the reader runs the
hook). Attached only once it ran, a popup whose first script opened an ``alert`` was frozen for good: the
dialog was never announced (``Page`` was not enabled yet) and could not be answered. ``new_page`` takes
the session of its own tab (``Browser._unclaimed``); every other tab is resumed and let go of. An endpoint
that refuses auto-attach gets the older way: attach on ``Target.targetCreated``, which such a popup can
outrun.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import trio

from engine._actionability import DEFAULT_BUDGET, send_nowait, unless_deadline
from engine._dialogs import watch_dialogs
from engine._errors import ActionError, ConnectionClosed
from engine._hooks import add_hook, each_frame_session
from engine._navigating import expect_first_navigation, watch_navigating
from engine._requests import watch_requests
from engine._util import attached_state

if TYPE_CHECKING:
    from engine._browser import Browser
    from engine._page import Page
    from engine._session import Subscription


class Popup:
    """What ``expect_popup`` yields: ``page`` is the new tab once the block has ended."""

    def __init__(self) -> None:
        self._page: Page | None = None
        self._gone: str | None = None  # the URL of a tab that closed itself before it could be attached
        self._arrived = trio.Event()

    @property
    def page(self) -> Page:
        if self._page is None:
            raise RuntimeError(
                "the popup is known only when the `async with page.expect_popup()` block has ended"
            )
        return self._page


class _Opening:
    """The URLs of the tabs a page asked to open (``Page.windowOpen``, which comes before the tab's attach),
    oldest first, each taken by the next tab it opens. One the popup blocker stopped opens no tab: it is
    dropped once OPENING_FRESH old."""

    def __init__(self) -> None:
        self.urls: deque[tuple[float, str]] = deque()

    def take(self) -> str:
        now = trio.current_time()
        while self.urls:
            asked, url = self.urls.popleft()
            if now - asked < OPENING_FRESH:
                return url
        return ""


OPENING_FRESH = 2.0


def watch_page(page: Page, *, dialogs: bool = True) -> None:
    """The hooks every Page of ours gets as it is made: its dialogs answered (unless ``dialogs`` is False:
    a tab another client owns, the Playwright adapter's ``attach_page``, as before), its requests counted
    for ``networkidle``, its pending navigation followed for the errors it causes, and the URL of each tab
    it opens noted."""
    if dialogs:
        watch_dialogs(page)
    watch_requests(page)
    watch_navigating(page)
    opening = attached_state(page, "_opening", _Opening)

    def window_open(method: str, params: dict[str, Any]) -> None:
        opening.urls.append((trio.current_time(), str(params.get("url") or "")))

    # Its out-of-process iframes' too: the tabs they open are the page's (their openerId is its target).
    each_frame_session(page.session, lambda session: add_hook(session, ("Page.windowOpen",), window_open))


def watch_popups(
    browser: Browser, setup: list[tuple[str, dict[str, Any]]], *, auto: bool
) -> Subscription[Any]:
    """Attach every tab our pages open and make a Page of it (``setup``: the commands a new page gets;
    ``auto``: the browser session auto-attaches to new tabs, paused, else they are attached here); the
    hook that does it."""
    from engine._page import Page  # noqa: PLC0415 - _page imports this module

    attaching: dict[str, tuple[str, str]] = {}  # target id -> (opener target id, url)
    open_before: set[str] = set()  # the tabs discovery announced before set-up ended
    waiters: list[tuple[str, Popup]] = browser.__dict__.setdefault("_popup_waiters", [])

    def waiting_for(opener: str) -> list[Popup]:
        # Every block waiting on that opener gets its next tab: blocks nested around one click must all
        # end (taken in turn, the inner block's tab went to the outer one, and the inner waited on).
        found = [w for w in waiters if w[0] == opener]
        for waiter in found:
            waiters.remove(waiter)
        return [popup for _, popup in found]

    def event(method: str, params: dict[str, Any]) -> None:
        info = params.get("targetInfo") or {}
        target = info.get("targetId", "")
        if method == "Target.targetCreated" and auto:
            if not browser._set_up and info.get("type") == "page":
                open_before.add(target)
        elif method == "Target.targetCreated":
            opener = info.get("openerId")
            if info.get("type") == "page" and opener in browser._pages and target not in browser._pages:
                attaching[target] = (opener, str(info.get("url") or ""))
                send_nowait(browser.session, "Target.attachToTarget", {"targetId": target, "flatten": True})
        elif method == "Target.targetDestroyed" and params.get("targetId") in attaching:
            # Closed before our attach reached it (window.close() in its first script): the attach fails
            # and no attachedToTarget comes; its waiter would have waited for its whole deadline.
            opener, url = attaching.pop(params["targetId"])
            for gone in waiting_for(opener):
                gone._gone = "" if url == "about:blank" else url  # (its first URL: often not known yet)
                gone._arrived.set()
        elif method == "Target.attachedToTarget":
            session = browser.connection.sessions.get(params.get("sessionId"))
            if session is None or session.detached:
                return
            opener = info.get("openerId")
            paused = params.get("waitingForDebugger") is True
            if target in attaching:
                opener, _ = attaching.pop(target)
            elif not (auto and info.get("type") == "page" and opener in browser._pages):
                # Auto-attached and not a popup of ours (new_page's tab, kept for it while it waits for its
                # Target.createTarget; another client's tab; a tab open before us, attached unpaused, once):
                # let it run, let go. An attach someone asked for is never paused.
                if paused and target not in browser._pages:
                    if browser._creating:  # perhaps new_page's: it takes its own (Browser._release_unclaimed)
                        browser._unclaimed[target] = session
                        return
                elif target in open_before:
                    open_before.discard(target)
                else:
                    return
                browser._let_go(session, resume=paused)
                return
            elif target in browser._pages:
                return  # our own second session to a popup we have (evaluate's, attach_page's)
            for command, command_params in setup:
                send_nowait(session, command, command_params)
            page = Page(browser, session, target)
            browser._keep(page)
            watch_page(page)
            if (opener_page := browser._pages.get(opener or "")) is not None:
                # It shows its initial empty document until the load of the URL it was opened with commits:
                # a wait for its load state must not end on that one (wait_for_load_state).
                url = attached_state(opener_page, "_opening", _Opening).take()
                if url.startswith(("http:", "https:")):
                    expect_first_navigation(page, url)
            if paused:  # set up: its first script may run
                send_nowait(session, "Runtime.runIfWaitingForDebugger", {})
            for popup in waiting_for(opener):
                popup._page = page
                popup._arrived.set()

    return add_hook(
        browser.session, ("Target.targetCreated", "Target.targetDestroyed", "Target.attachedToTarget"), event
    )


@asynccontextmanager
async def expect_popup(page: Page) -> AsyncIterator[Popup]:
    """Yield a Popup; after the block, wait (under the caller's deadline, else DEFAULT_BUDGET) for the tab the
    block opened."""
    popup = Popup()
    waiters: list[tuple[str, Popup]] = page.browser.__dict__.setdefault("_popup_waiters", [])
    entry = (page.target_id, popup)
    waiters.append(entry)
    try:
        yield popup
        connection = page.browser.connection
        with trio.move_on_after(unless_deadline(DEFAULT_BUDGET)):
            async with trio.open_nursery() as nursery:

                async def until_closed() -> None:  # a dead browser opens no tab: no need to wait on
                    await connection.wait_closed()
                    nursery.cancel_scope.cancel()

                nursery.start_soon(until_closed)
                await popup._arrived.wait()
                nursery.cancel_scope.cancel()
        if not popup._arrived.is_set() and connection.closed is not None:
            raise ConnectionClosed(f"expect_popup: {connection.closed}")
        if popup._gone is not None:
            raise ActionError(
                f"expect_popup: the tab this page opened{f' ({popup._gone})' if popup._gone else ''} closed "
                "itself before it could be attached; there is nothing left to act on (a tab that closes a "
                "moment later comes back as a closed page: popup.page.closed)",
                check="popup",
            )
        if not popup._arrived.is_set():
            raise ActionError(
                f"expect_popup: this page opened no tab in the {DEFAULT_BUDGET:g} s after the block (no "
                "deadline of yours was set): did the click open one (a popup blocker, a link without "
                "target=_blank)? Set your own deadline with trio.fail_after",
                check="popup",
            )
    finally:
        if entry in waiters:
            waiters.remove(entry)
