"""Screenshots (``Page.captureScreenshot``) and history moves."""

from __future__ import annotations

import base64
import math
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

import trio

from engine._actionability import Placement, frame_placement
from engine._dialogs import STAYED, dialog_state
from engine._errors import ActionError, NavigationError, ProtocolError
from engine._hooks import add_hook, is_main_frame

if TYPE_CHECKING:
    from engine._page import Page
    from engine._session import Subscription


async def screenshot(page: Page, *, ref: str | None, full_page: bool) -> bytes:
    """A PNG of the viewport, of the element ``ref`` (its border box), or of the whole page."""
    session = page.session
    params: dict[str, Any] = {"format": "png"}
    if ref is not None and full_page:
        raise ValueError("screenshot takes ref= or full_page=True, not both")
    # Chromium answers a capture of a crashed tab, with "Internal error": say what happened instead.
    session.raise_if_unusable("screenshot")
    if ref is not None:
        node = await page.resolve(ref)
        try:
            await node.session.execute_raw(
                "DOM.scrollIntoViewIfNeeded", {"backendNodeId": node.backend_node_id}
            )
            quads = (
                await node.session.execute_raw("DOM.getContentQuads", {"backendNodeId": node.backend_node_id})
            )["quads"]
        except ProtocolError as exc:
            raise ActionError(
                f"screenshot {ref}: the element has no box ({exc.message})", ref=ref, check="visible"
            ) from None
        if not quads:
            raise ActionError(f"screenshot {ref}: the element has no box", ref=ref, check="visible")
        placed = Placement() if node.session is session else await frame_placement(page, node.session)
        corners = [placed.point(x, y) for x, y in zip(quads[0][0::2], quads[0][1::2], strict=True)]
        xs, ys = [x for x, _ in corners], [y for _, y in corners]
        metrics = await session.execute_raw("Page.getLayoutMetrics")
        viewport = metrics["cssVisualViewport"]
        # Clipped to the page's top-left corner: for a clip that begins left of it (an element at
        # left: -40px), Chromium captured the top of the viewport instead of the element.
        x, y = max(min(xs) + viewport["pageX"], 0), max(min(ys) + viewport["pageY"], 0)
        params["clip"] = {
            "x": x,
            "y": y,
            "width": max(xs) + viewport["pageX"] - x,
            "height": max(ys) + viewport["pageY"] - y,
            "scale": 1,
        }
        if (
            min(xs) < 0
            or min(ys) < 0
            or max(xs) > viewport["clientWidth"]
            or max(ys) > viewport["clientHeight"]
        ):
            # Larger than the viewport (it was scrolled into view as far as it goes): the part outside
            # came back white, with no error (80% of a 1200x1500 element on a 780x493 view). As with
            # full_page, Chromium then leaves the page without scrollbars until its next document.
            params["captureBeyondViewport"] = True
    elif full_page:
        metrics = await session.execute_raw("Page.getLayoutMetrics")
        size = metrics["cssContentSize"]
        params["clip"] = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        params["captureBeyondViewport"] = True
    got = await _capture(page, params)
    return base64.b64decode(got["data"])


NOT_ACTIVE = "Not attached to an active page"
"""Chromium's answer to a capture asked for as the main frame's old document leaves."""

BETWEEN_DOCUMENTS_BUDGET = 2.0
"""Seconds a screenshot, a reload or a history move keeps asking a tab that is between two documents."""

_REASK = 0.05
"""Seconds between two asks of a tab between documents (a capture's: unless a commit comes first)."""

_COMMIT = object()


async def _capture(page: Page, params: dict[str, Any]) -> dict[str, Any]:
    """``Page.captureScreenshot``, across the commit of a new document in the main frame.

    Chromium never answers a capture that is pending as a new document commits (crbug.com/1121612;
    with a ``goto`` started 0-15 ms before, 7 of 100 screenshots hung), and refuses one asked for as the
    old document leaves (``NOT_ACTIVE``: 39 of 100). So each commit seen while a capture is pending asks
    for a new one, and the first answer is taken: the old document or the new one, as the caller raced
    the two. A refused capture is asked again at the next commit, or after ``_REASK``; the older of two
    pending captures is given up.
    """
    session = page.session
    outcomes_in, outcomes = trio.open_memory_channel[object](math.inf)
    pending: list[trio.CancelScope] = []

    def committed(_method: str, event: dict[str, Any]) -> None:
        if is_main_frame(event):
            outcomes_in.send_nowait(_COMMIT)

    async def capture(scope: trio.CancelScope) -> None:
        with scope:
            try:
                outcomes_in.send_nowait(await session.execute_raw("Page.captureScreenshot", params))
            except Exception as exc:  # raised by the loop below: two captures never make a group
                outcomes_in.send_nowait(exc)
            finally:
                if scope in pending:
                    pending.remove(scope)

    def ask(nursery: trio.Nursery) -> None:
        if len(pending) == 2:
            pending.pop(0).cancel()
        pending.append(trio.CancelScope())
        nursery.start_soon(capture, pending[-1])

    hook = add_hook(session, ("Page.frameNavigated",), committed)
    try:
        async with trio.open_nursery() as nursery:
            ask(nursery)
            refused_since, reask_at = math.inf, math.inf
            while True:
                outcome: object = _COMMIT  # a commit, or the time to ask again after a refusal
                with trio.move_on_at(reask_at):
                    outcome = await outcomes.receive()
                now = trio.current_time()
                if not isinstance(outcome, (dict, Exception)):
                    reask_at = math.inf
                    ask(nursery)
                elif isinstance(outcome, ProtocolError) and NOT_ACTIVE in outcome.message:
                    refused_since = min(refused_since, now)
                    if now - refused_since <= BETWEEN_DOCUMENTS_BUDGET:
                        reask_at = min(reask_at, now + _REASK)
                        continue
                    outcome = _between_documents(outcome)
                    break
                else:
                    break
            nursery.cancel_scope.cancel()  # the captures still pending
    finally:
        session.unsubscribe(hook)
    if isinstance(outcome, Exception):  # raised here, out of the nursery: never in a group
        raise outcome
    return outcome


def _between_documents(refusal: ProtocolError) -> ActionError:
    error = ActionError(
        f"screenshot: for {BETWEEN_DOCUMENTS_BUDGET} s the tab was between two documents at every try "
        f"(Chromium: {NOT_ACTIVE}): it navigates without a pause, or a navigation stopped halfway; wait "
        "for a load (page.wait_for(load_state='load')) and take it again",
        check="attached",
    )
    error.__cause__ = refusal
    return error


async def reload(page: Page) -> None:
    """Reload and wait for the new document's ``load``; raises at once when none will come (see
    ``_follow``)."""
    async with _listen_for_the_move(page) as events:
        watch = _Watch(page, events)
        await _between_documents_too(page, "the reload", "Page.reload", before_each=watch.begin)
        await _follow(watch, "the reload", lambda method, _: method == "Page.loadEventFired")


async def history_step(page: Page, delta: int) -> bool:
    """Go ``delta`` entries back or forward and wait until the entry's document is parsed (as a click's
    navigation: a snapshot straight after the commit saw an empty page, 3 runs in 8 with no load); False
    when there is no such entry."""
    session = page.session
    what = "going back" if delta < 0 else "going forward"
    history = await _between_documents_too(page, what, "Page.getNavigationHistory")
    index = history["currentIndex"] + delta
    entries = history["entries"]
    if not 0 <= index < len(entries):
        return False
    committed = False

    def parsed(method: str, params: dict[str, Any]) -> bool:
        nonlocal committed
        if method == "Page.frameNavigated" and is_main_frame(params):
            committed = True
            return params.get("type") == "BackForwardCacheRestore"  # a kept document: parsed long ago
        if params.get("frameId") != session.frame_id:
            return False
        if method == "Page.lifecycleEvent":
            return committed and params.get("name") == "DOMContentLoaded"
        # A document stopped while it loads (window.stop(), a response cut short) is as parsed as it gets.
        return method == "Page.navigatedWithinDocument" or (
            committed and method == "Page.frameStoppedLoading"
        )

    # Lifecycle events come about ten a frame per load: only a history move, which waits for its document's
    # DOMContentLoaded, listens to them.
    async with _listen_for_the_move(page, "Page.lifecycleEvent") as events:
        watch = _Watch(page, events)
        entry = {"entryId": entries[index]["id"]}
        await _between_documents_too(
            page, what, "Page.navigateToHistoryEntry", entry, before_each=watch.begin
        )
        await _follow(watch, what, parsed)
    return True


def _listen_for_the_move(page: Page, *also: str) -> AbstractAsyncContextManager[Subscription[Any]]:
    """The events a reload or a history move is followed by, and ``also`` (``_page`` has goto's own, typed
    list)."""
    events = (*_MOVE_EVENTS, *also)
    return page.session.listen(*events, typed=False, buffer_size=256, overflow="drop_oldest")


_MOVE_EVENTS = (
    "Page.frameNavigated",
    "Page.navigatedWithinDocument",
    "Page.loadEventFired",
    "Page.javascriptDialogOpening",
    "Page.frameStartedLoading",
    "Page.frameStoppedLoading",
)
_LOADING = ("Page.frameStartedLoading", "Page.frameStoppedLoading")

NO_DOCUMENT_GRACE = 0.5
"""Seconds a navigation may still commit after its frame stopped loading: a page restored from the
back-forward cache commits 1-2 ms after the stop; a response with no content never does."""

NO_DOCUMENT = (
    "the page stopped loading with no new document (a response with no content, such as 204 No "
    "Content, a download, or a navigation the browser cancelled): it stays where it was"
)


class _Watch:
    """What a navigation's events have said since its command was sent."""

    def __init__(self, page: Page, events: Subscription[Any]) -> None:
        self.page = page
        self.events = events
        self.begin()

    def begin(self) -> None:
        """The command is about to be sent (again): what came before is another navigation's."""
        self.events._forget_buffered()
        self.stays = dialog_state(self.page).stays
        self.started = False  # the main frame started loading since the command
        self.stopped_at = math.inf  # and then stopped, with no commit yet


async def _follow(watch: _Watch, what: str, done: Callable[[str, dict[str, Any]], bool]) -> None:
    """Receive until ``done(method, params)``; raise NavigationError as soon as it is clear that the
    navigation will not commit.

    Two ways, both of which left reload() and back() waiting for ``Settings.navigation_timeout``: the
    page's ``beforeunload`` was dismissed (``DialogState.stays`` went up), or the main frame started
    loading and stopped with no new document within ``NO_DOCUMENT_GRACE``. A frame's loading state is one
    flag, so a start seen here is not the previous navigation's, and the stop after it ends this one's.
    """
    page = watch.page
    while True:
        with trio.move_on_at(watch.stopped_at + NO_DOCUMENT_GRACE) as grace:
            event = await watch.events.receive()  # the dialog hook answered before this sees its event
        if grace.cancelled_caught:
            raise NavigationError(f"{what} did not happen: {NO_DOCUMENT}")
        method, params = event.method, event.params
        if done(method, params):
            return
        if dialog_state(page).stays != watch.stays:
            raise NavigationError(f"{what} did not happen: {STAYED}")
        if method == "Page.frameNavigated" and is_main_frame(params):
            watch.started, watch.stopped_at = False, math.inf  # committed: the next stop ends its load
        elif method in _LOADING and params.get("frameId") == page.session.frame_id:
            if method == "Page.frameStoppedLoading" and watch.started:
                watch.stopped_at = min(watch.stopped_at, trio.current_time())
            watch.started = method == "Page.frameStartedLoading"


async def _between_documents_too(
    page: Page,
    what: str,
    method: str,
    params: dict[str, Any] | None = None,
    *,
    before_each: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """``method``, asked again while Chromium refuses it because the tab is between two documents.

    For 20-30 ms after a navigation stopped halfway (a reload its caller gave up on), Chromium answers
    ``Page.reload`` and the history commands with ``NOT_ACTIVE`` (measured: 4 of 40 such commands). A
    refused command did nothing, so it is sent again, every ``_REASK`` for ``BETWEEN_DOCUMENTS_BUDGET``;
    ``before_each`` runs before each send (a watch of the events forgets those of the navigation that
    was leaving, which may commit in the meantime).
    """
    refused_since = math.inf
    while True:
        if before_each is not None:
            before_each()
        try:
            return await page.session.execute_raw(method, params)
        except ProtocolError as exc:
            if NOT_ACTIVE not in exc.message:
                raise
            now = trio.current_time()
            refused_since = min(refused_since, now)
            if now - refused_since > BETWEEN_DOCUMENTS_BUDGET:
                raise NavigationError(
                    f"{what} did not start: for {BETWEEN_DOCUMENTS_BUDGET} s the tab was between two "
                    f"documents at every try (Chromium: {NOT_ACTIVE}); wait for a load "
                    "(page.wait_for(load_state='load')) and try again"
                ) from exc
        await trio.sleep(_REASK)
