"""Screenshots (``Page.captureScreenshot``) and history moves."""

from __future__ import annotations

import base64
import math
from typing import TYPE_CHECKING, Any

import trio

from engine._actionability import frame_offset
from engine._dialogs import STAYED, dialog_state
from engine._errors import ActionError, NavigationError, ProtocolError
from engine._hooks import add_hook, is_main_frame

if TYPE_CHECKING:
    from engine._page import Page


async def screenshot(page: Page, *, ref: str | None, full_page: bool) -> bytes:
    """A PNG of the viewport, of the element ``ref`` (its border box), or of the whole page."""
    session = page.session
    params: dict[str, Any] = {"format": "png"}
    if ref is not None and full_page:
        raise ValueError("screenshot takes ref= or full_page=True, not both")
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
        xs, ys = quads[0][0::2], quads[0][1::2]
        ox, oy = (0.0, 0.0) if node.session is session else await frame_offset(page, node.session)
        metrics = await session.execute_raw("Page.getLayoutMetrics")
        viewport = metrics["cssVisualViewport"]
        params["clip"] = {
            "x": min(xs) + ox + viewport["pageX"],
            "y": min(ys) + oy + viewport["pageY"],
            "width": max(xs) - min(xs),
            "height": max(ys) - min(ys),
            "scale": 1,
        }
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
    """Reload and wait for the new document's ``load``; a page told to stay (its ``beforeunload``
    dismissed) raises at once, as no load will come."""
    session = page.session
    stays = dialog_state(page).stays
    async with session.listen(
        "Page.loadEventFired",
        "Page.javascriptDialogOpening",
        typed=False,
        buffer_size=16,
        overflow="drop_oldest",
    ) as events:
        await _between_documents_too(page, "the reload", "Page.reload")
        async for event in events:  # the dialog hook has answered before this sees the event
            if event.method == "Page.loadEventFired":
                return
            if dialog_state(page).stays != stays:
                raise NavigationError(f"the reload did not happen: {STAYED}")


async def history_step(page: Page, delta: int) -> bool:
    """Go ``delta`` entries back or forward and wait for the commit; False when there is no such entry."""
    session = page.session
    what = "going back" if delta < 0 else "going forward"
    history = await _between_documents_too(page, what, "Page.getNavigationHistory")
    index = history["currentIndex"] + delta
    entries = history["entries"]
    if not 0 <= index < len(entries):
        return False
    async with session.listen(
        "Page.frameNavigated",
        "Page.navigatedWithinDocument",
        typed=False,
        buffer_size=64,
        overflow="drop_oldest",
    ) as events:
        await _between_documents_too(
            page, what, "Page.navigateToHistoryEntry", {"entryId": entries[index]["id"]}
        )
        async for item in events:
            if item.method == "Page.navigatedWithinDocument" or is_main_frame(item.params):
                return True
    return True


async def _between_documents_too(
    page: Page, what: str, method: str, params: dict[str, Any] | None = None
) -> dict[str, Any]:
    """``method``, asked again while Chromium refuses it because the tab is between two documents.

    For 20-30 ms after a navigation stopped halfway (a reload its caller gave up on), Chromium answers
    ``Page.reload`` and the history commands with ``NOT_ACTIVE`` (measured: 4 of 40 such commands). A
    refused command did nothing, so it is sent again, every ``_REASK`` for ``BETWEEN_DOCUMENTS_BUDGET``.
    """
    refused_since = math.inf
    while True:
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
