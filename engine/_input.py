"""Pointer and keyboard actions over raw CDP input: click, hover, drag, scroll, press.

Each pointer action waits for its element to be actionable (``engine/_actionability.py``) and then sends
``Input.dispatchMouseEvent`` to the page's own session at top-level coordinates. Actions that may start a
navigation (a click, a key press, a drop) wait for the new document to commit before returning.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import weakref
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Literal

import attrs
import trio

from engine._actionability import (
    NotYet,
    Target,
    call_on,
    centre,
    frame_placement,
    new_group,
    object_id,
    release,
    send_nowait,
    wait_actionable,
)
from engine._errors import ActionError, CDPError, ProtocolError, SessionDetached
from engine._hit_target import GUARD_LIFETIME, SET_GUARD_JS, Miss, read_verdict, remove_guard
from engine._hooks import add_hook, is_main_frame
from engine._keys import MODIFIER_BITS, key_event, parse_combo, platform_modifier
from engine._navigating import navigating
from engine._waiting import VERDICT_MARGIN, input_stop, navigation_watch, unanswered
from engine._worlds import evaluate_in_world

if TYPE_CHECKING:
    from engine._page import Page
    from engine._refs import ResolvedNode
    from engine._session import Session

log = logging.getLogger("engine.actions")

MouseButton = Literal["left", "right", "middle"]
_BUTTON_BITS = {"left": 1, "right": 2, "middle": 4}


def modifier_mask(modifiers: Sequence[str]) -> int:
    """``["Shift", "Meta"]`` as the protocol's bit mask (Meta is Control off macOS)."""
    if isinstance(modifiers, str):
        raise TypeError(f"modifiers is a list such as ['Shift'], not the string {modifiers!r}")
    mask = 0
    for name in modifiers:
        canonical = platform_modifier(
            name[:1].upper() + name[1:].lower() if name.lower() != "control" else "Control"
        )
        if canonical not in MODIFIER_BITS:
            raise ValueError(f"unknown modifier {name!r}: use Alt, Control, Meta or Shift")
        mask |= MODIFIER_BITS[canonical]
    return mask


def sessions_to_watch(page: Page, node: ResolvedNode | None) -> list[Session]:
    sessions = [page.session]
    if node is not None and node.session is not page.session:
        sessions.append(node.session)
    return sessions


async def mouse_click(
    session: Session, x: float, y: float, *, button: MouseButton = "left", click_count: int = 1, mask: int = 0
) -> None:
    """Move, then press and release ``click_count`` times at ``x, y``; one awaited reply for the lot.

    The events of one session are handled in order, so only the last needs its reply: the click costs one
    round trip whatever its count.
    """
    base = {"x": x, "y": y, "modifiers": mask}
    # A cancellation already due (a reply read in a stall past the deadline returns, its scope cancelled)
    # is raised here: nothing yields from here to the release's send, so no press goes without its release
    # (the release's own first checkpoint raised, and the page kept a button down).
    await trio.lowlevel.checkpoint_if_cancelled()
    send_nowait(session, "Input.dispatchMouseEvent", {"type": "mouseMoved", **base})
    for n in range(1, click_count + 1):
        down = {"type": "mousePressed", "button": button, "buttons": _BUTTON_BITS[button], "clickCount": n}
        send_nowait(session, "Input.dispatchMouseEvent", {**down, **base})
        up = {**down, "type": "mouseReleased", "buttons": 0, **base}
        if n < click_count:
            send_nowait(session, "Input.dispatchMouseEvent", up)
        else:
            await session.execute_raw("Input.dispatchMouseEvent", up)


async def drop_guards(
    page: Page, armed: list[tuple[Session, str]], token: str, *, typing: bool = False
) -> None:
    """Remove the guards (``engine._hit_target``) an action set and never read the verdict of (its checks or
    its input ended early), so none stops a later press or key; waited for unless the tab navigates."""
    for session, handle in dict.fromkeys(armed):
        await remove_guard(session, handle, token, wait=not navigating(page), typing=typing)
    armed.clear()


async def click(
    page: Page,
    ref: str,
    *,
    button: MouseButton = "left",
    click_count: int = 1,
    modifiers: Sequence[str] = (),
    force: bool = False,
) -> None:
    """Click the element ``ref`` names once it is actionable (see ``Page.click``)."""
    if button not in _BUTTON_BITS:
        raise ValueError(f"button is 'left', 'right' or 'middle', not {button!r}")
    if type(click_count) is not int or not 1 <= click_count <= 3:
        raise ValueError(f"click_count is 1, 2 or 3, not {click_count!r}")
    mask = modifier_mask(modifiers)
    group = new_group()
    node: ResolvedNode | None = None
    armed: list[tuple[Session, str]] = []  # hit-target guards set and not read yet (a retry's replaces one)
    lost: list[Target] = []  # presses that reached nothing in the element's frame
    try:
        if force:
            node = await page.resolve(ref)
            await _forced_click(page, node, group, button=button, click_count=click_count, mask=mask)
            return

        async def act(target: Target) -> NotYet | None:
            # After a lost press (this click's, or one on the page in the last LOSS_MEMORY where a loss
            # could not be told now), an out-of-process iframe's own session takes the press, at its own
            # coordinates (the module docstring of engine._actionability says why).
            own = target.node.session is not page.session and (
                bool(lost) or (target.blind and _lost_lately(page.session))
            )
            session, (x, y) = (
                (target.node.session, target.local) if own else (page.session, (target.x, target.y))
            )
            async with navigation_watch(sessions_to_watch(page, target.node), target.node.ref) as watch:
                await mouse_click(session, x, y, button=button, click_count=click_count, mask=mask)
                until = watch.stop - VERDICT_MARGIN
                frame = target.node.session
                missed = await read_verdict(frame, target.handle, group, released=True, until=until)
                armed.clear()
                if missed is not None and missed.unanswered:  # in the watch: it stops a navigation started
                    raise unanswered(f"click {ref}", ref, watch)
            if missed is not None and missed.lost:
                _losses[page.session] = trio.current_time()
            return None if missed is None else _missed("click", ref, target, missed, lost)

        target = await wait_actionable(page, "click", ref, group, guards=armed, act=act)
        node = target.node
    finally:
        unread = [session for session, _ in armed]
        await drop_guards(page, armed, group)
        if node is None:
            for session in dict.fromkeys(unread):
                release(session, group)
        if node is not None:
            release(node.session, group)
            if node.session is not page.session:  # what covered an iframe was described up there
                release(page.session, group)


LOSS_MEMORY = 10.0
"""Seconds after a press lost on a page during which a click into an out-of-process iframe of the page whose
loss could not be told (its frame is active) goes to the iframe's session: under load Chromium kept
sending the presses for a turned iframe elsewhere for seconds, and the lost presses had activated the
frame of the next click (a click reported done that clicked nothing)."""

_losses: weakref.WeakKeyDictionary[Session, float] = weakref.WeakKeyDictionary()
"""When a click last lost a press, by the page's session."""


def _lost_lately(session: Session) -> bool:
    return trio.current_time() - _losses.get(session, -math.inf) < LOSS_MEMORY


def _missed(what: str, ref: str, target: Target, missed: Miss, lost: list[Target]) -> NotYet:
    """The retry after a press the hit-target guard saw miss ``ref`` (``lost``: those that reached nothing
    in its frame so far); ActionError once MAX_LOST_PRESSES were lost."""
    if missed.lost:
        lost.append(target)
        detail = (
            f"{len(lost)} press(es) reached nothing in the element's frame (Chromium sent them "
            "elsewhere, as it can for an out-of-process iframe that has not drawn yet)"
        )
        if len(lost) >= MAX_LOST_PRESSES:  # each went somewhere, perhaps onto something: no more
            raise ActionError(
                f"{what} {ref}: {detail}; what is at ({target.x:.0f}, {target.y:.0f}) on the page may "
                "have been pressed instead. Take a screenshot to see what is there",
                ref=ref,
                check="hit target at input",
            )
        log.info("%s %s: the press reached nothing in its frame; trying again", what, ref)
        return NotYet("hit target at input", detail)
    if missed.unreleased:  # its mousedown went in: a second press could undo what the first did
        raise ActionError(
            f"{what} {ref}: the press reached it, but its frame saw no release (Chromium sent it to another "
            "frame, as it can for an out-of-process iframe under load or when the press put a frame under "
            "the pointer, or a page listener stopped it before the engine's): the page saw a mousedown "
            "and perhaps no click. Not tried again, as a second press could undo the first (a menu that "
            "opens on mousedown); take a snapshot to see the page, then try again",
            ref=ref,
            check="release at input",
        )
    if missed.landed:  # clicks of a double click went in: trying again would click the element again
        clicks = "its first click" if missed.landed == 1 else f"its first {missed.landed} clicks"
        raise ActionError(
            f"{what} {ref}: {clicks} landed, then the page put {missed.what} under the pointer, and the next "
            "press was stopped (fewer clicks than asked for went in; not tried again)",
            ref=ref,
            check="hit target at input",
            in_the_way=missed.what,
        )
    log.info("%s %s: the press landed on %s, not on it; the page did not see it", what, ref, missed.what)
    return NotYet(
        "hit target at input",
        f"at the press another element was under the pointer: {missed.what}",
        in_the_way=missed.what,
    )


async def _forced_click(
    page: Page, node: ResolvedNode, group: str, *, button: MouseButton, click_count: int, mask: int
) -> None:
    """No checks: input at the box centre if it has one, else the element's own JS ``click()``."""
    session = node.session
    with contextlib.suppress(ProtocolError):  # no box: the checks below say so
        await session.execute_raw("DOM.scrollIntoViewIfNeeded", {"backendNodeId": node.backend_node_id})
    point = await centre(session, node.backend_node_id)
    async with navigation_watch(sessions_to_watch(page, node), node.ref):
        if point is not None:
            x, y = point
            if session is not page.session:
                x, y = (await frame_placement(page, session)).point(x, y)
            log.warning(
                "click %s with force=True: no actionability checks; CDP input at (%.0f, %.0f)", node.ref, x, y
            )
            await mouse_click(page.session, x, y, button=button, click_count=click_count, mask=mask)
            return
        log.warning(
            "click %s with force=True: no checks and no box; falling back to the element's JS click()",
            node.ref,
        )
        handle = await object_id(session, node.backend_node_id, group, node.frame_id)
        if handle is None:
            raise ActionError(
                f"click {node.ref}: the element is no longer in the document", ref=node.ref, check="attached"
            )
        await call_on(session, handle, "function() { this.click() }")


async def hover(page: Page, ref: str) -> None:
    """Move the mouse over the element once it is visible, stable and on top (enabled or not)."""
    group = new_group()
    target = await wait_actionable(page, "hover", ref, group, enabled=False)
    try:
        await page.session.execute_raw(
            "Input.dispatchMouseEvent", {"type": "mouseMoved", "x": target.x, "y": target.y}
        )
    finally:
        release(target.node.session, group)


async def drag(page: Page, source: str, target: str) -> None:
    """Drag ``source`` onto ``target``: HTML5 drag and drop where the page starts one, else mouse moves.

    Chromium's headless drags start only when input is intercepted: ``Input.setInterceptDrags`` hands the
    drag data back (``Input.dragIntercepted``), and ``Input.dispatchDragEvent`` plays the drop at the target.
    A page that drags with mouse events alone never starts an HTML5 drag; it gets the moves and the release.
    """
    group = new_group()
    session = page.session
    data: list[dict[str, Any]] = []
    intercepted = trio.Event()

    def on_drag(_method: str, params: dict[str, Any]) -> None:
        data.append(params.get("data", {}))
        intercepted.set()

    hook = add_hook(session, ("Input.dragIntercepted",), on_drag)
    src: Target | None = None
    dst: Target | None = None
    held: tuple[float, float] | None = None  # where the button is down, until it is released
    armed: list[tuple[Session, str]] = []  # hit-target guards set and not read yet (as in click)
    used: list[Session] = [session]  # where the checks made handles (the source may be in a frame's session)
    lost: list[Target] = []
    moved_at = trio.current_time()

    async def press(at: Target) -> NotYet | None:
        # The source's press, checked by the hit-target guard as a click's is. A press that missed is
        # released while the guard still stops its events: a release after the removal gave the element
        # under the pointer a click.
        nonlocal held
        send_nowait(session, "Input.dispatchMouseEvent", {"type": "mouseMoved", "x": at.x, "y": at.y})
        held = (at.x, at.y)
        # Awaited: the input reaches the page on a channel of its own, so a verdict read sent before the
        # press's reply could run before the press did (and see nothing).
        await session.execute_raw(
            "Input.dispatchMouseEvent",
            {"type": "mousePressed", "x": at.x, "y": at.y, "button": "left", "buttons": 1, "clickCount": 1},
        )
        used.append(at.node.session)
        missed = await read_verdict(
            at.node.session, at.handle, group, keep_on_miss=True, until=input_stop(trio.current_time())
        )
        if missed is not None and missed.unanswered:
            armed.clear()  # the read, queued in the frame, removes the guard once the frame is free
            raise unanswered(f"drag {source}", source)
        if missed is None:
            armed.clear()
            return None
        up = {"type": "mouseReleased", "x": at.x, "y": at.y, "button": "left", "buttons": 0, "clickCount": 1}
        await session.execute_raw("Input.dispatchMouseEvent", up)
        held = None
        await remove_guard(at.node.session, at.handle, group)
        armed.clear()
        return _missed("drag", source, at, missed, lost)

    try:
        await session.execute_raw("Input.setInterceptDrags", {"enabled": True})
        src = await wait_actionable(page, "drag", source, group, guards=armed, act=press)
        held = (src.x + 5, src.y + 5)
        moved_at = trio.current_time()  # the move that can start an HTML5 drag
        await session.execute_raw(
            "Input.dispatchMouseEvent",
            {"type": "mouseMoved", "x": src.x + 5, "y": src.y + 5, "button": "left", "buttons": 1},
        )
        # The target is checked with the button held: its hit test must not count the dragged element.
        dst = await wait_actionable(page, "drag onto", target, group, hit=not data)
        held = (dst.x, dst.y)
        # A drop may navigate (its drop handler, or the mouseup of a page that drags with mouse events):
        # waited for as a click's, so a snapshot right after sees the new document (it saw the old one, or
        # an empty frame, in 15 drags of 50).
        async with navigation_watch(sessions_to_watch(page, dst.node), dst.node.ref):
            await session.execute_raw(
                "Input.dispatchMouseEvent",
                {"type": "mouseMoved", "x": dst.x, "y": dst.y, "button": "left", "buttons": 1},
            )
            if data:
                for kind in ("dragEnter", "dragOver", "drop"):
                    await session.execute_raw(
                        "Input.dispatchDragEvent", {"type": kind, "x": dst.x, "y": dst.y, "data": data[0]}
                    )
            up = {
                "type": "mouseReleased",
                "x": dst.x,
                "y": dst.y,
                "button": "left",
                "buttons": 0,
                "clickCount": 1,
            }
            try:
                await input_across_commit(page, "Input.dispatchMouseEvent", up, "drag", dst.node)
                held = None
            except ActionError:
                if not data:
                    raise
                # The drop was made, and the navigation its handler started took the document the release
                # was for: Chromium dropped the release (5 drags of 80 onto an out-of-process iframe whose
                # drop navigates it), which held the drag to the caller's deadline. It goes again on the way
                # out (_let_go, after the new document is parsed).
    finally:
        if held is not None and not session.detached:
            await _let_go(session, held, data, intercepted, moved_at)  # (the hook still listens)
        await drop_guards(page, armed, group)  # after the release, which a missed press's guard stops
        session.unsubscribe(hook)
        if not session.detached:
            send_nowait(session, "Input.setInterceptDrags", {"enabled": False})
        for where in dict.fromkeys([*used, *([dst.node.session] if dst is not None else [])]):
            release(where, group)


async def _let_go(
    session: Session,
    at: tuple[float, float],
    dragged: list[dict[str, Any]],
    intercepted: trio.Event,
    moved_at: float,
) -> None:
    """End a drag given up halfway (an error, a deadline): a drag left open, or a button left down, made
    the page drop every later click and key. Waited for (briefly, even when cancelled), so the release's
    own events have run before the error reaches the caller.

    ``dragged`` fills when Chromium intercepts the drag; that can be read after the give-up (the drag began
    with the last move), so it is looked at again after the release."""
    x, y = at

    async def send(method: str, params: dict[str, Any]) -> None:
        with contextlib.suppress(CDPError):
            await session.execute_raw(method, params)

    async def cancel_drag() -> None:
        cancel = {"type": "dragCancel", "x": x, "y": y, "data": dragged[0]}
        await send("Input.dispatchDragEvent", cancel)

    with trio.CancelScope(shield=True), trio.move_on_after(LET_GO_LIMIT):
        cancelled = bool(dragged)
        if cancelled:
            await cancel_drag()
        up = {"type": "mouseReleased", "x": x, "y": y, "button": "left", "buttons": 0, "clickCount": 1}
        await send("Input.dispatchMouseEvent", up)
        if not cancelled:
            with trio.move_on_at(moved_at + LATE_DRAG):
                await intercepted.wait()
                await cancel_drag()


LET_GO_LIMIT = 1.0
"""Seconds a drag given up halfway waits at most for the page to take the release."""

LATE_DRAG = 0.1
"""Seconds after the move that can start an HTML5 drag during which a drag given up halfway watches for
that drag, after the release (none once the move is that old, so the caller's deadline is kept): its
``Input.dragIntercepted`` came after the release's reply in one of about 35 drags cancelled at random."""

ScrollDirection = Literal["up", "down", "left", "right"]


MAX_LOST_PRESSES = 5
"""Presses of one click that may reach nothing in the element's frame (``engine._hit_target``) before it
fails: each went somewhere on the page. Chromium lost 3 presses in 300 clicks on a fresh out-of-process
iframe, and the retry after each landed; the retries' pauses give 5 of them about 0.3 s."""

LOST_INPUT_GRACE = 0.5
"""Seconds an input command may still answer after the main frame committed a new document. On a page
reloading itself every 15 ms, the replies that came did so within 18 ms of the commit (21 of 400
``Input.insertText``); 33 never came."""


async def input_across_commit(
    page: Page, method: str, params: dict[str, Any], what: str, node: ResolvedNode | None = None
) -> None:
    """``method`` on the page's session, given up ``LOST_INPUT_GRACE`` after a new document commits in the
    main frame or in ``node``'s frame (an iframe's, out-of-process or not), or ``node``'s session ends.

    Chromium drops an ``Input.insertText`` (33 of 400 on that page) or a ``mouseWheel`` (1 of 150) that
    reaches the renderer as the document it is for goes: no reply ever comes. The input's element went
    with the document, so this raises ActionError "attached", which the Page method turns into the
    StaleRefError it stands for.
    """
    frame = node.frame_id if node is not None else None
    child = node.session if node is not None and node.session is not page.session else None
    with trio.CancelScope() as scope:

        def gone(method: str, event: dict[str, Any]) -> None:
            if method == "Page.frameNavigated":
                lost = is_main_frame(event) or (event.get("frame") or {}).get("id") == frame
            else:  # Target.detachedFromTarget, on the page's session for its child sessions
                lost = child is not None and event.get("sessionId") == child.session_id
            if lost:
                scope.deadline = min(scope.deadline, trio.current_time() + LOST_INPUT_GRACE)

        watched: list[tuple[Session, tuple[str, ...]]] = [
            (page.session, ("Page.frameNavigated", "Target.detachedFromTarget"))
        ]
        if child is not None:
            watched.append((child, ("Page.frameNavigated",)))
        hooks = [(session, add_hook(session, methods, gone)) for session, methods in watched]
        try:
            await page.session.execute_raw(method, params)
            return
        finally:
            for session, hook in hooks:
                session.unsubscribe(hook)
    raise ActionError(
        f"{what}: the page navigated while the input was on its way, and Chromium dropped it",
        ref=node.ref if node is not None else "",
        check="attached",
    )


async def scroll(
    page: Page, *, direction: ScrollDirection | None, ref: str | None, amount: float | None
) -> None:
    """Scroll the element into view (``ref``), or the page by a wheel turn (``direction``)."""
    if ref is not None:
        if direction is not None:
            raise ValueError(
                "scroll takes ref= (bring it into view) or direction= (scroll the page), not both"
            )
        node = await page.resolve(ref)
        try:
            await node.session.execute_raw(
                "DOM.scrollIntoViewIfNeeded", {"backendNodeId": node.backend_node_id}
            )
        except ProtocolError as exc:
            raise ActionError(
                f"scroll to {ref}: the element has no box to scroll to ({exc.message})",
                ref=ref,
                check="visible",
            ) from None
        return
    if direction not in ("up", "down", "left", "right"):
        raise ValueError(f"direction is 'up', 'down', 'left' or 'right', not {direction!r}")
    if amount is not None and (
        isinstance(amount, bool) or not isinstance(amount, (int, float)) or not 0 < amount < math.inf
    ):
        raise ValueError(f"amount is a number of CSS pixels above 0, not {amount!r}")
    session = page.session
    metrics = await session.execute_raw("Page.getLayoutMetrics")
    viewport = metrics["cssLayoutViewport"]
    width, height = viewport["clientWidth"], viewport["clientHeight"]
    step = amount if amount is not None else (height if direction in ("up", "down") else width) * 0.8
    dx = {"left": -step, "right": step}.get(direction, 0)
    dy = {"up": -step, "down": step}.get(direction, 0)
    x, y = width / 2, height / 2
    group = new_group()
    try:
        landing = await _scroll_landing(session, group, (x, y, dx, dy))
        await input_across_commit(
            page,
            "Input.dispatchMouseEvent",
            {"type": "mouseWheel", "x": x, "y": y, "deltaX": dx, "deltaY": dy},
            f"scroll {direction}",
        )
        # The wheel's scroll lands a frame or two after the reply: wait for it, in the page for an inner
        # scrolling box (or for the frame that runs the page's own wheel listeners, when nothing under the
        # pointer can move that way).
        where = "viewport" if landing is None else "waited"  # (a navigation or our timer ends the wait)
        if landing is not None:
            # The page's own timers end the wait; trio's ends it if the page has replaced them.
            with contextlib.suppress(ProtocolError), trio.move_on_after(2 * SNAP_SETTLE):
                where = await call_on(
                    session,
                    landing,
                    _AWAIT_LANDING,
                    SCROLL_SETTLE * 1000,
                    SNAP_SETTLE * 1000,
                    await_promise=True,
                )
    finally:
        release(session, group)
    if where == "viewport":
        # The page's own offset: Chromium's layout metrics show it a frame before the page's scrollY does.
        before = (metrics["cssVisualViewport"]["pageX"], metrics["cssVisualViewport"]["pageY"])
        with trio.move_on_after(SCROLL_SETTLE):
            while True:
                now = (await session.execute_raw("Page.getLayoutMetrics"))["cssVisualViewport"]
                if (now["pageX"], now["pageY"]) != before:
                    return
                await trio.sleep(0.016)


SCROLL_SETTLE = 0.35
"""Seconds ``scroll(direction=)`` waits at most for the wheel's scroll to land. It returns as the offset
of what scrolls moves, or a frame after the wheel when nothing under the pointer can move that way (a
page at its end, or one whose wheel listeners scroll it their own way). Watching only the page's own
offset, a page whose scrolling box is an inner element, and one at its end, took the whole 0.35 s."""

SNAP_SETTLE = 1.0
"""Seconds ``scroll(direction=)`` waits at most when what scrolls snaps (``scroll-snap-type``): after the
wheel's scroll lands, Chromium 156 glides to the snap point, and its scrollend comes about 0.23 s after
the wheel. Also how long the look at what will scroll may take."""

_LANDING = """(() => {
  const [x, y, dx, dy] = %s;
  const vertical = dy !== 0, delta = vertical ? dy : dx;
  const axis = vertical ? "overflowY" : "overflowX";
  const chaining = vertical ? "overscrollBehaviorY" : "overscrollBehaviorX";
  const html = document.documentElement, root = document.scrollingElement || html;
  const style = (el) => getComputedStyle(el);
  // A scroll container on this axis. The root's overflow is the viewport's; in standards mode the body's
  // goes to the viewport too while the root's is visible.
  const box = (el) => {
    if (el === root) {
      const own = style(html)[axis];
      const viewport = own !== "visible" || !document.body ? own : style(document.body)[axis];
      return !/hidden|clip/.test(viewport);
    }
    if (el === document.body && style(html)[axis] === "visible") return false;
    return /auto|scroll|overlay/.test(style(el)[axis]);
  };
  const room = (el) => {
    let at = vertical ? el.scrollTop : el.scrollLeft;
    const end = vertical ? el.scrollHeight - el.clientHeight : el.scrollWidth - el.clientWidth;
    let forward = delta > 0;
    if (!vertical && style(el).direction === "rtl") [at, forward] = [-at, !forward];  // offsets run leftward
    return forward ? at < end - 1 : at > 1;
  };
  const parent = (el) => {
    const top = el.getRootNode();
    return el.assignedSlot || el.parentElement || (top instanceof ShadowRoot ? top.host : null);
  };
  // The wheel climbs containing blocks, not parents: an absolute box skips the unpositioned scrollers
  // around it, a fixed one all of them (up to the viewport) unless a transform, filter or containment
  // holds it.
  const holds = (s, position) => (position === "absolute" && s.position !== "static")
    || s.transform !== "none" || s.perspective !== "none" || s.filter !== "none"
    || s.backdropFilter !== "none" || /paint|layout|strict|content/.test(s.contain)
    || /transform|perspective|filter/.test(s.willChange) || s.containerType !== "normal";
  const up = (el) => {
    const position = style(el).position;
    if (position !== "absolute" && position !== "fixed") return parent(el);
    let block = parent(el);
    while (block && block !== root && !holds(style(block), position)) block = parent(block);
    return block || root;
  };
  let el = document.elementFromPoint(x, y);
  while (el && el.shadowRoot) {
    const inner = el.shadowRoot.elementFromPoint(x, y);
    if (!inner || inner === el) break;
    el = inner;
  }
  let scroller = el ? null : root;  // nothing there to ask: watch the viewport
  let chained = true;
  for (; el && !scroller && chained && el !== root; el = up(el)) {
    if (/^(IFRAME|FRAME)$/.test(el.tagName)) scroller = el;  // what scrolls is inside: wait for it
    else if (box(el) && room(el)) scroller = el;
    else if (box(el)) chained = style(el)[chaining] === "auto";  // else its end stops the wheel there
  }
  if (!scroller && chained && box(root) && room(root)) scroller = root;
  const offset = () => {
    if (!/^(IFRAME|FRAME)$/.test(scroller.tagName)) return [scroller.scrollLeft, scroller.scrollTop];
    try {
      return [scroller.contentWindow.scrollX, scroller.contentWindow.scrollY];
    } catch {
      return [0, 0];  // another site's frame: its offset is not ours to read, so wait the whole time
    }
  };
  // A snapping box lands where the wheel took it, then glides to its snap point, a pixel or so a frame;
  // its scrollend comes once the glide is over. Looks at the offset took a glide that a busy renderer
  // held for two frames for its end.
  const snapType = scroller && !/^(IFRAME|FRAME)$/.test(scroller.tagName)
    ? style(scroller === root ? html : scroller).scrollSnapType : "none";
  const snaps = snapType !== "none" && !(vertical ? /^(x|inline)( |$)/ : /^(y|block)( |$)/).test(snapType);
  let ended = false, onEnd = () => {};
  if (snaps) {
    const end = () => { ended = true; onEnd(); };
    (scroller === root ? document : scroller).addEventListener("scrollend", end, {once: true});
  }
  // No scroll listener: with one on the window, the wheel's scroll showed a frame later (16 ms).
  const at = scroller && scroller !== root && offset();
  return {
    viewport: scroller === root && !snaps,  // the caller watches it
    inner: !!at,
    snaps,
    offset,
    moved: () => !!at && offset().some((value, axis) => value !== at[axis]),
    ended: (then) => ended || ((onEnd = then), false),
  };
})()"""

_AWAIT_LANDING = """async function (cap, snapCap) {  // async: a native promise, whatever the page's Promise
  if (this.viewport) return "viewport";  // the caller watches it
  return new Promise((resolve) => {
    let done = false;
    const end = () => { done = true; resolve("waited"); };
    setTimeout(end, this.snaps ? snapCap : cap);
    if (this.snaps) {  // until the glide's scrollend (what scrolls has room: the wheel moves it)
      if (this.ended(end)) end();
      return;
    }
    if (!this.inner) {  // a frame, so that the page's own wheel listeners have run
      requestAnimationFrame(() => setTimeout(end, 0));
      return;
    }
    const look = () => done || (this.moved() ? end() : setTimeout(look, 4));
    look();
  });
}"""


async def _scroll_landing(
    session: Session, group: str, wheel: tuple[float, float, float, float]
) -> str | None:
    """A handle on what will move under the ``wheel``'s (x, y) by its (dx, dy): the viewport, an inner
    scrolling box (or a frame), or nothing; None when the page cannot be asked (it is navigating)."""
    got: dict[str, Any] = {}
    # A page held by a navigation waiting for its response answers nothing: then watch the viewport. A
    # busy renderer (a 30x CPU throttle) took over 0.35 s to answer, and a snapping page was then missed.
    with contextlib.suppress(ProtocolError), trio.move_on_after(SNAP_SETTLE):
        look = {"expression": _LANDING % json.dumps(wheel), "objectGroup": group}
        got = await evaluate_in_world(session, look)  # the page may have replaced its own built-ins
    if "exceptionDetails" in got:
        return None
    handle = got.get("result", {}).get("objectId")
    return handle if isinstance(handle, str) else None


async def press(page: Page, combo: str, *, ref: str | None) -> None:
    """Press ``combo`` (``Enter``, ``Control+a``) in the focused element, or in ``ref`` after focusing it."""
    parsed = parse_combo(combo)
    node = await page.resolve(ref) if ref is not None else None
    session = page.session
    events: list[dict[str, object]] = []
    mask = 0
    for modifier in parsed.modifiers:
        mask |= MODIFIER_BITS[modifier]
        events.append(key_event("down", parse_combo(modifier).key, mask))
    events.append(key_event("down", parsed.key, mask))
    events.append(key_event("up", parsed.key, mask))
    for modifier in reversed(parsed.modifiers):
        mask &= ~MODIFIER_BITS[modifier]
        events.append(key_event("up", parse_combo(modifier).key, mask))
    guarded = typing_into(page, node, f"press {ref}", typing=False) if node else contextlib.nullcontext()
    # task_turn: a form that Enter submits asks for its navigation from a task the key posted.
    watched = navigation_watch(sessions_to_watch(page, node), node.ref if node else "", task_turn=True)
    sent_live = False  # the key's keydown left while the tab lived
    try:
        async with guarded as sent, watched:
            if sent is not None:
                sent.count = 1 + len(parsed.modifiers)
            await trio.lowlevel.checkpoint_if_cancelled()  # no key down without its up (see mouse_click)
            for index, params in enumerate(events[:-1]):
                sent_live |= index == len(parsed.modifiers) and not session.detached
                send_nowait(session, "Input.dispatchKeyEvent", params)
            await session.execute_raw("Input.dispatchKeyEvent", events[-1])
    except SessionDetached:
        # A tab that closes itself on the key (a popup's Enter calls window.close()) can be gone before
        # the key's events are answered (SessionDetached in 2 presses of 5): the press is done.
        if not (sent_live and session.detached):
            raise


FOCUS_HOLDER = """(el) => {
  const active = el.getRootNode().activeElement;
  if (active === el || (el.isContentEditable && active && active.contains(el))) return '';
  return active ? '<' + active.localName + (active.id ? '#' + active.id : '') + '>' : 'nothing';
}"""
"""JS: what has the focus instead of ``el`` ('' if it has it, or its editing host does), to put in a
script with ``.replace("@FOCUS_HOLDER@", FOCUS_HOLDER)``: ``focus()`` fails silently (an inert element,
one behind a modal dialog) and a focus handler may move the focus on."""

_FOCUS = """function(typing, token, lifetime) {
  // Typed into, a read-only field takes no text (fill refuses it too); a key press there is fine.
  if (typing && ['input', 'textarea'].includes(this.localName) && this.readOnly)
    return 'the field is read-only';
  this.focus();
  const holder = (@FOCUS_HOLDER@)(this);
  if (holder)
    return 'it did not take the focus (' + holder + ' has it: the page moved it, or the element is not '
      + 'focusable, inert or behind a modal dialog)';
  (@SET_GUARD@).call(this, token, lifetime, true);
  return '';
}""".replace("@FOCUS_HOLDER@", FOCUS_HOLDER).replace("@SET_GUARD@", SET_GUARD_JS)


def focus_moved(what: str, ref: str, missed: Miss, kept: str) -> ActionError:
    """The error of keys or text that the typing guard stopped: the page moved the focus on (``kept``: what
    went into the element before, if anything), or (``missed.lost``) into another frame."""
    if missed.lost and missed.some:
        return ActionError(
            f"{what}: the page moved the focus into another frame while the keys went in (a handler of "
            f"one of them), and the keys after that went there; {kept}",
            ref=ref,
            check="focus",
        )
    if missed.lost:
        return ActionError(
            f"{what}: the keys and text reached nothing in the element's frame: the page moved the focus "
            "into another frame after the element took it (a focus handler), and they went there",
            ref=ref,
            check="focus",
        )
    return ActionError(
        f"{what}: the page moved the focus to {missed.what} after the element took it (a focus handler, from "
        f"a task or an animation frame); what would have gone there was stopped, and {kept}",
        ref=ref,
        check="focus",
        in_the_way=missed.what,
    )


@attrs.define
class KeysSent:
    """The keydowns sent in a :func:`typing_into` block: the guard compares them with those it saw."""

    count: int = 0


@asynccontextmanager
async def typing_into(page: Page, node: ResolvedNode, what: str, *, typing: bool) -> AsyncIterator[KeysSent]:
    """Focus the element, check that it has the focus, and make sure that the keys and text sent in the
    block reach it: a focus that failed silently, or that a focus handler moved on at once, raises here;
    one moved on a little later (from a task, or the next animation frame) is caught by the typing guard
    (``engine._hit_target``), which stops what would reach another element, and raises after the block.
    The block counts its keydowns in what it is given: keys that stop reaching the element's frame (the
    focus moved into another one) raise too. ``typing``: text goes in, so a read-only field is refused."""
    group = new_group()
    session = node.session
    armed: list[tuple[Session, str]] = []  # the guard, until its verdict is read
    try:
        handle = await object_id(session, node.backend_node_id, group, node.frame_id)
        if handle is None:
            raise ActionError(
                f"cannot focus {node.ref}: the element is no longer in the document",
                ref=node.ref,
                check="attached",
            )
        armed.append((session, handle))  # listed before it is set (see check_actionable)
        missed = await call_on(session, handle, _FOCUS, typing, group, GUARD_LIFETIME * 1000)
        if missed == "the field is read-only":
            raise ActionError(f"cannot type into {node.ref}: {missed}", ref=node.ref, check="editable")
        if missed:
            raise ActionError(f"cannot focus {node.ref}: {missed}", ref=node.ref, check="focusable")
        sent = KeysSent()
        yield sent
        verdict = await read_verdict(
            session, handle, group, typing=True, keys=sent.count, until=input_stop(trio.current_time())
        )
        armed.clear()
        if verdict is not None and verdict.unanswered:
            raise unanswered(what, node.ref)
        if verdict is not None:
            raise focus_moved(what, node.ref, verdict, "what went into the element before stays")
    finally:
        await drop_guards(page, armed, group, typing=True)
        release(session, group)
