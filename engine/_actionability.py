"""Actionability: is the element a ref names ready for a pointer action, and where to put the pointer.

Checks, in order: the ref resolves (identity check, else StaleRefError at once), the node is attached,
visible (a non-empty box, not ``visibility:hidden``), enabled (``disabled``, a disabled fieldset,
``aria-disabled``), scrolled into view (``DOM.scrollIntoViewIfNeeded``; a retry after something was in the
way scrolls it elsewhere in the view, see ``_ALIGNMENTS``), its box stable over two animation
frames, and a hit test at the point (``DOM.getNodeForLocation``) lands on the element or inside it (a
``<label>`` counts for its control). Failures are retried until ``RETRY_MARGIN`` before the caller's
deadline, then raised as ActionError naming the check, and for a hit test what is in the way. A click
checks the press itself too (``engine._hit_target``): the checks are a few round trips older than it.

Coordinates. ``DOM.getContentQuads`` answers in the top-level viewport for same-process iframes (measured:
a button at 20,30 in an iframe at 100,100 with a 5px border comes back at 125,135) but in the frame's own
viewport for an out-of-process iframe. Input for an OOPIF goes to the top-level session at translated
coordinates: measured on Chromium 156, ``Input.dispatchMouseEvent`` sent to the iframe's child session
reaches the button even while an overlay in the parent covers the iframe, so it would click through
things a user cannot; the top-level session's event is hit-tested by the whole page, as a user's is. Once
a click's press was lost on its way (``engine._hit_target``), or where its guard cannot tell whether it
is (the frame is active already) within ``_input.LOSS_MEMORY`` of a loss on the page, presses go to the
iframe's own session all the same, after the hit test looked for an overlay in each document above: under
load, Chromium sent every press for a turned OOPIF elsewhere for seconds, and one sent to its session went
in each time.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import logging
import math
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
import trio

from engine._errors import ActionError, ProtocolError
from engine._frames import frame_tree
from engine._hit_target import GUARD_LIFETIME, HOLDS_JS, SET_GUARD_JS
from engine._navigating import navigating_note
from engine._refs import ResolvedNode
from engine._util import first_error
from engine._worlds import world_handle

if TYPE_CHECKING:
    from engine._page import Page
    from engine._session import Session

log = logging.getLogger("engine.actions")

T = TypeVar("T")

RETRY_MARGIN = 0.1
"""Seconds before the caller's deadline at which the retries stop, so the caller gets the ActionError with
its reason rather than a bare TooSlowError. One attempt costs about six round trips and one animation
frame (about 35 ms on a loaded 2-core machine); 100 ms leaves room for the last one to finish."""

DEFAULT_BUDGET = 30.0
"""Seconds an action keeps retrying when the caller set no deadline (as Playwright's default)."""


def unless_deadline(budget: float) -> float:
    """Seconds to bound a wait by: ``budget`` (DEFAULT_BUDGET, as each caller module sees it) when the caller
    set no deadline, else none of ours (the caller's deadline stands, even if it moves)."""
    return budget if trio.current_effective_deadline() == math.inf else math.inf


_BACKOFF = (0.0, 0.02, 0.05, 0.1, 0.1, 0.2)
"""Pauses between attempts: quick at first (an animation ending), then every 200 ms."""


@attrs.frozen
class NotYet:
    """An attempt found the element not actionable yet: ``check`` failed, ``detail`` says how."""

    check: str
    detail: str
    in_the_way: str = ""


async def retry_until_deadline(
    what: str,
    ref: str,
    attempt: Callable[[], Awaitable[T | NotYet]],
    act: Callable[[T], Awaitable[NotYet | None]] | None = None,
    *,
    page: Page | None = None,
) -> T:
    """Run ``attempt`` until it gives a result, up to ``RETRY_MARGIN`` before the caller's deadline.

    ``act``, if given, is done with each result under the caller's deadline alone (an input is not cut
    short by the retries' earlier stop); a NotYet from it (the input missed) counts as a failed attempt.
    The error says so when ``page`` is mid-navigation (Chromium held the attempts).

    Raises:
        ActionError: the last attempt's failed check, when the time ran out.
        StaleRefError: at once, from the attempt (a ref is never waited on to come back).
    """
    start = trio.current_time()
    deadline = trio.current_effective_deadline()
    until = f"until {RETRY_MARGIN} s before the deadline"
    if deadline == math.inf:
        deadline = start + DEFAULT_BUDGET
        until = f"the default budget of {DEFAULT_BUDGET:g} s: no deadline was given"
    stop = deadline - RETRY_MARGIN
    last: NotYet | None = None
    tries = 0
    while True:
        if trio.current_time() >= stop and last is not None:
            break
        with trio.move_on_at(stop if stop > trio.current_time() else deadline) as scope:
            result = await attempt()
        tries += 1
        if scope.cancelled_caught:
            last = last or NotYet("time", "the checks did not finish in time")
            break
        if not isinstance(result, NotYet):
            missed = await act(result) if act is not None else None
            if missed is None:
                return result
            result = missed
        last = result
        pause = _BACKOFF[min(tries - 1, len(_BACKOFF) - 1)]
        if trio.current_time() + pause >= stop:
            break
        await trio.sleep(pause)
    waited = trio.current_time() - start
    raise ActionError(
        f"{what} {ref}: {last.detail} (check '{last.check}' failed; retried {tries} times over "
        f"{waited:.2f} s, {until}).{navigating_note(page) if page is not None else ''}",
        ref=ref,
        check=last.check,
        in_the_way=last.in_the_way,
    )


# The page half of the checks, run on the element. Stability: the box of the frame on screen now and the
# box at the next animation frame must agree (two frames in a row). Measured on the click benchmark
# (2 cores, load 10): reading the box at the next two frame callbacks instead made a click 34.8 ms, vs
# Playwright's 45.6 ms; the frame wait is most of a click (the checks' round trips are about 2 ms).
# A frame that never comes (a throttled tab) counts after 100 ms, so the check still ends.
_CHECK_JS = """async function(enabled) {
  const el = this.nodeType === 1 ? this : this.parentElement;
  if (!el || !el.isConnected) return {check: 'attached', detail: 'the element is no longer in the document'};
  const visible = () => {
    const r = el.getBoundingClientRect();
    if (!r.width || !r.height) return false;
    return el.checkVisibility ? el.checkVisibility({visibilityProperty: true}) : true;
  };
  if (!visible())
    return {check: 'visible', detail: 'the element is not visible (no box, display:none, visibility:hidden)'};
  if (enabled && (el.matches(':disabled') || el.closest('[aria-disabled="true"]')))
    return {check: 'enabled', detail: 'the element is disabled'};
  const frame = () => new Promise(r => { requestAnimationFrame(() => r()); setTimeout(r, 100); });
  const box = () => { const r = el.getBoundingClientRect(); return [r.x, r.y, r.width, r.height].join() };
  const a = box(); await frame(); const b = box();
  if (a !== b) return {check: 'stable', detail: 'the element is still moving'};
  return null;
}"""

MAX_FRAME_DEPTH = 8
"""Same-process frames a hit test climbs through to reach the element's document."""

_CONTAINS_JS = """function(hit, maxDepth) {
  const holds = (h) => (@HOLDS@)(this, h);
  // A hit in a frame below the element's document counts through that frame's element. Across origins
  // frameElement is null: "climb" asks the caller to go up by CDP.
  for (let n = hit, depth = 0; n && depth < maxDepth; depth++) {
    if (holds(n)) return true;
    const doc = n.ownerDocument, view = doc && doc.defaultView;
    if (!view || doc === this.ownerDocument) return false;
    n = view.frameElement;
    if (!n) return view.parent === view ? false : "climb";
  }
  return false;
}""".replace("@HOLDS@", HOLDS_JS)

_SELECTOR_JS = """function() {
  const el = this.nodeType === 1 ? this : this.parentElement;
  if (!el) return '';
  let sel = el.localName + (el.id ? '#' + el.id : '');
  for (const c of Array.from(el.classList).slice(0, 2)) sel += '.' + c;
  return sel;
}"""


_groups = itertools.count(1)


def new_group() -> str:
    """A JS object group of one action's own: released when it ends, without touching another's handles."""
    return f"engine-action-{next(_groups)}"


def send_nowait(session: Session, method: str, params: dict[str, Any]) -> None:
    """Send without waiting for the reply (an error reply is only logged)."""
    session.raise_if_unusable(method)
    session.connection.call_nowait(session, method, params)


def release(session: Session, group: str) -> None:
    """Free the JS handles an action or an evaluate made (fire and forget: nothing waits on it).

    Nothing is sent to a crashed target (its handles died with its renderer): raised from a ``finally``,
    TargetCrashed would hide the error that ended the work.
    """
    if not session.detached and not session.crashed and session.connection.closed is None:
        send_nowait(session, "Runtime.releaseObjectGroup", {"objectGroup": group})


async def object_id(
    session: Session, backend_node_id: int, group: str, frame_id: str | None = None
) -> str | None:
    """A JS handle on the node, in ``group``, in the engine's world of ``frame_id`` (the frame whose
    document holds it; see ``engine._worlds``); None: the node is gone."""
    return await world_handle(session, backend_node_id, group, frame_id)


async def call_on(session: Session, handle: str, js: str, *args: Any, await_promise: bool = False) -> Any:
    """Run ``js`` with ``this`` = the object; plain values in, the result by value out."""
    got = await session.execute_raw(
        "Runtime.callFunctionOn",
        {
            "objectId": handle,
            "functionDeclaration": js,
            "arguments": [a if isinstance(a, dict) else {"value": a} for a in args],
            "returnByValue": True,
            "awaitPromise": await_promise,
        },
    )
    if "exceptionDetails" in got:
        raise ActionError(f"the page threw during an action check: {got['exceptionDetails'].get('text')}")
    return got.get("result", {}).get("value")


def _session_chain(page: Page, session: Session) -> list[Session]:
    """``session``, its parent, ... up to the page's own session (OOPIF nesting, innermost first)."""
    chain = [session]
    while chain[-1] is not page.session and chain[-1].parent is not None:
        chain.append(chain[-1].parent)
    return chain


@attrs.frozen
class Placement:
    """Where a frame's viewport lies in an outer one: its origin, and where one CSS px step along its x and
    along its y goes (a transform or a CSS zoom on the iframe, or around it, scales and turns them)."""

    x: float = 0.0
    y: float = 0.0
    ex: tuple[float, float] = (1.0, 0.0)
    ey: tuple[float, float] = (0.0, 1.0)

    def point(self, x: float, y: float) -> tuple[float, float]:
        """The point (x, y) of the inner viewport, in the outer one."""
        return (
            self.x + x * self.ex[0] + y * self.ey[0],
            self.y + x * self.ex[1] + y * self.ey[1],
        )

    def within(self, outer: Placement) -> Placement:
        """This placement seen from ``outer``'s outer viewport (the frame's parent placed in its own)."""
        x, y = outer.point(self.x, self.y)

        def step(v: tuple[float, float]) -> tuple[float, float]:
            return outer.ex[0] * v[0] + outer.ey[0] * v[1], outer.ex[1] * v[0] + outer.ey[1] * v[1]

        return Placement(x, y, step(self.ex), step(self.ey))


async def frame_placement(page: Page, session: Session) -> Placement:
    """Where the viewport of an out-of-process iframe's session lies in the top-level viewport."""
    placed = Placement()
    for child, parent in itertools.pairwise(_session_chain(page, session)):
        _, outer = await _owner_placement(parent, child)
        placed = placed.within(outer)
    return placed


async def centre(session: Session, backend_node_id: int) -> tuple[float, float] | None:
    """Where to put the pointer on the element in its session's viewport (None: no box); see box_point."""
    point, _ = await box_point(session, backend_node_id)
    return point


async def box_point(
    session: Session, backend_node_id: int
) -> tuple[tuple[float, float] | None, tuple[float, float]]:
    """The point to act at in the session's viewport (None: no box), and the viewport's scroll offset.

    The centre of the element's first content quad when it is in the viewport; else the centre of the
    part of the first quad that is (an element wider or taller than the viewport: its centre lies off
    screen, and a 3000 px wide button could never be clicked). A quad with nothing in the viewport gives
    its whole centre, and the hit test says it is outside.
    """

    async def quads() -> list[list[float]]:
        try:
            got = await session.execute_raw("DOM.getContentQuads", {"backendNodeId": backend_node_id})
        except ProtocolError:
            return []
        return list(got.get("quads") or [])

    boxes, metrics = await gather(quads, functools.partial(session.execute_raw, "Page.getLayoutMetrics"))
    viewport = metrics["cssVisualViewport"]
    scroll = (viewport["pageX"], viewport["pageY"])
    if not boxes:
        return None, scroll
    # An out-of-process iframe's visual viewport is the top-level one's; its own is its layout viewport.
    layout = metrics["cssLayoutViewport"]
    width = min(viewport["clientWidth"], layout["clientWidth"])
    height = min(viewport["clientHeight"], layout["clientHeight"])
    whole = _centroid(list(zip(boxes[0][0::2], boxes[0][1::2], strict=True)))
    if whole is not None and 0 <= whole[0] < width and 0 <= whole[1] < height:
        return whole, scroll
    for quad in boxes:
        visible = _centroid(_clip(list(zip(quad[0::2], quad[1::2], strict=True)), width, height))
        if visible is not None:
            return visible, scroll
    return (sum(boxes[0][0::2]) / 4, sum(boxes[0][1::2]) / 4), scroll


Points = list[tuple[float, float]]


def _clip(polygon: Points, width: float, height: float) -> Points:
    """The part of a convex ``polygon`` inside the rectangle (0, 0)-(width, height) (Sutherland-Hodgman)."""
    edges: list[tuple[int, float, bool]] = [
        (0, 0.0, True),
        (0, width, False),
        (1, 0.0, True),
        (1, height, False),
    ]
    for axis, bound, low in edges:
        kept: Points = []
        for i, current in enumerate(polygon):
            previous = polygon[i - 1]
            now_in, was_in = _within(current[axis], bound, low), _within(previous[axis], bound, low)
            if now_in != was_in:  # the edge crosses the bound: where
                t = (bound - previous[axis]) / (current[axis] - previous[axis])
                kept.append(
                    (
                        previous[0] + t * (current[0] - previous[0]),
                        previous[1] + t * (current[1] - previous[1]),
                    )
                )
            if now_in:
                kept.append(current)
        polygon = kept
        if not polygon:
            break
    return polygon


def _within(value: float, bound: float, low: bool) -> bool:
    return value >= bound if low else value <= bound


def _centroid(polygon: Points) -> tuple[float, float] | None:
    """The centre of mass of a convex polygon (inside it, unlike the mean of its corners), or None when it
    has less than 1 square px."""
    area = cx = cy = 0.0
    for i, (x1, y1) in enumerate(polygon):
        x0, y0 = polygon[i - 1]
        cross = x0 * y1 - x1 * y0
        area += cross
        cx += (x0 + x1) * cross
        cy += (y0 + y1) * cross
    if abs(area) / 2 < 1:
        return None
    return cx / (3 * area), cy / (3 * area)


_PLAIN_ROLES = ("generic", "none", "StaticText", "InlineTextBox", "RootWebArea", "")
_DOCUMENT_ROLES = ("RootWebArea", "WebArea")


async def _describe(session: Session, backend_node_id: int, frame: str, *, group: str) -> str:
    """``role "name" (selector)`` of what a hit test found in ``frame``, for the ActionError."""
    role = name = selector = ""
    handle = await object_id(session, backend_node_id, group, frame)
    if handle is not None:
        selector = str(await call_on(session, handle, _SELECTOR_JS) or "")
    try:
        got = await session.execute_raw(
            "Accessibility.getPartialAXTree", {"backendNodeId": backend_node_id, "fetchRelatives": True}
        )
        nodes = {n.get("nodeId"): n for n in got.get("nodes", ())}
        node = next((n for n in nodes.values() if n.get("backendDOMNodeId") == backend_node_id), None)
        while node is not None:  # the node, or its nearest ancestor with a role worth naming
            role = (node.get("role") or {}).get("value") or ""
            name = (node.get("name") or {}).get("value") or ""
            if role in _DOCUMENT_ROLES:  # not the document, named by its title: an overlay read "RootWebArea"
                role = name = ""
                break
            if not node.get("ignored") and (role not in _PLAIN_ROLES or name):
                break
            role = name = ""
            node = nodes.get(node.get("parentId"))
    except ProtocolError:
        pass
    named = f' "{name[:60]}"' if name else ""
    where = f" ({selector})" if selector else ""
    return f"{role or 'element'}{named}{where}"


async def gather(*calls: Callable[[], Awaitable[Any]]) -> list[Any]:
    """Run the calls concurrently (their commands go out together: one round trip); results in order."""
    results: list[Any] = [None] * len(calls)

    async def one(i: int) -> None:
        results[i] = await calls[i]()

    with first_error():
        async with trio.open_nursery() as nursery:
            for i in range(len(calls)):
                nursery.start_soon(one, i)
    return results


async def scroll_offset(session: Session) -> tuple[float, float]:
    """The scroll position of the session's main frame.

    ``DOM.getNodeForLocation`` takes page coordinates, not viewport ones (measured on Chromium 156: with
    the page scrolled by 1500 px, a button at viewport y 482 is found at y 1982, and nothing at 482).
    """
    viewport = (await session.execute_raw("Page.getLayoutMetrics"))["cssVisualViewport"]
    return viewport["pageX"], viewport["pageY"]


async def _hit(session: Session, x: float, y: float) -> tuple[int, str] | None:
    """The node a click at (x, y) would reach, and the id of the frame whose document holds it."""
    try:
        got = await session.execute_raw(
            "DOM.getNodeForLocation", {"x": round(x), "y": round(y), "includeUserAgentShadowDOM": False}
        )
    except ProtocolError:  # "No node found at given location": outside the page's visible area
        return None
    return int(got["backendNodeId"]), str(got.get("frameId") or "")


async def hit_test(  # noqa: PLR0917 - one call site, all positions named there
    page: Page,
    node: ResolvedNode,
    handle: str,
    point: tuple[float, float],
    scroll: tuple[float, float],
    group: str,
) -> NotYet | None:
    """Does a click at ``point`` (in the node's session's viewport) land on ``node``, inside it or on its
    label; and, for an out-of-process iframe, on the iframe in each ancestor session?

    The hit test of one session crosses shadow roots and same-process iframes by itself.
    """
    x, y = point
    hit = await _hit(node.session, x + scroll[0], y + scroll[1])
    if hit is None:
        return NotYet(
            "hit test", f"nothing to hit at ({x:.0f}, {y:.0f}): the point is outside the visible page"
        )
    hit_id, hit_frame = hit
    if hit_id != node.backend_node_id:
        # In the element's world where it reaches (the same frame, or one of its origin): one call compares.
        hit_object = await object_id(node.session, hit_id, group, node.frame_id)
        if hit_object is None:
            return NotYet("hit test", "the hit test found a node that went away")
        inside = await _holds(node, handle, hit_object, hit_frame, group)
        if inside is not True:
            what = await _describe(node.session, hit_id, hit_frame, group=group)
            return NotYet("hit test", f"another element would get the click: {what}", in_the_way=what)
    chain = _session_chain(page, node.session)
    for child, parent in itertools.pairwise(chain):
        (owner, placed), (sx, sy) = await gather(
            functools.partial(_owner_placement, parent, child),
            functools.partial(scroll_offset, parent),
        )
        x, y = placed.point(x, y)
        on_top = await _hit(parent, x + sx, y + sy)
        if on_top is None or on_top[0] != owner:
            what = (
                await _describe(parent, *on_top, group=group)
                if on_top is not None
                else "nothing (outside the visible page)"
            )
            return NotYet("hit test", f"another element covers the iframe: {what}", in_the_way=what)
    return None


async def _holds(node: ResolvedNode, handle: str, hit: str, frame: str, group: str) -> bool:
    """Whether the element ``handle`` (of ``node``) holds the hit node ``hit`` (inside it, or its label);
    ``frame`` is the frame whose document holds the hit.

    The two can live in different documents of the session (same-process frames): a hit in a child frame
    of the element's document is looked at through that frame's element, up to the element's document; a
    hit in a parent document (an overlay over the element's iframe) is not held. The script climbs where
    it can. Across origins a frame's element is out of the script's reach, and a hit the element's world
    cannot reach resolves in another world (handles of two worlds cannot meet in one call): then the climb
    is done here, a frame at a time (``DOM.getFrameOwner``), up to the session's own document."""
    session = node.session
    parents: dict[str, str] | None = None
    for _ in range(MAX_FRAME_DEPTH):
        try:
            held = await call_on(session, handle, _CONTAINS_JS, {"objectId": hit}, MAX_FRAME_DEPTH)
        except ProtocolError as exc:
            if "same JavaScript world" not in exc.message:
                raise
            held = "climb"
        if held != "climb":
            return held is True
        if parents is None:
            parents = {f["id"]: f.get("parentId", "") for f in await frame_tree(session)}
        parent = parents.get(frame)
        if frame == session.frame_id or not parent:  # the top: the hit is above the element, not in it
            return False
        try:
            owner = await session.execute_raw("DOM.getFrameOwner", {"frameId": frame})
        except ProtocolError:  # the frame went away meanwhile
            return False
        up = await object_id(session, int(owner["backendNodeId"]), group, node.frame_id)
        if up is None:
            return False
        hit, frame = up, parent
    return False


async def _owner_placement(parent: Session, child: Session) -> tuple[int, Placement]:
    """The backendNodeId of the child session's frame element in the parent, and where the child's viewport
    lies in the parent session's viewport.

    The iframe's content quad, as drawn, gives the origin and the directions of the child's axes; its
    border quad against its untransformed size gives the scale (measured on Chromium 156: a 270 px wide
    iframe under ``scale(1.5)`` or in a ``zoom: 1.5`` box has a 405 px border quad and a width of 270;
    adding the origin alone put a click on whatever sat at the unscaled point: another frame's button).
    """
    owner = await parent.execute_raw("DOM.getFrameOwner", {"frameId": child.frame_id})
    model = (await parent.execute_raw("DOM.getBoxModel", {"backendNodeId": owner["backendNodeId"]}))["model"]
    c, b = model["content"], model["border"]

    def axis(
        dx: float, dy: float, drawn: float, size: float, unit: tuple[float, float]
    ) -> tuple[float, float]:
        length = math.hypot(dx, dy)
        scale = drawn / size if size else 1.0
        return (dx / length * scale, dy / length * scale) if length else (unit[0] * scale, unit[1] * scale)

    ex = axis(c[2] - c[0], c[3] - c[1], math.hypot(b[2] - b[0], b[3] - b[1]), model["width"], (1.0, 0.0))
    ey = axis(c[6] - c[0], c[7] - c[1], math.hypot(b[6] - b[0], b[7] - b[1]), model["height"], (0.0, 1.0))
    return owner["backendNodeId"], Placement(c[0], c[1], ex, ey)


@attrs.frozen
class Target:
    """An actionable element: the resolved node, its JS object, and the top-level point to act at
    (``local``: the same point in the viewport of the node's own session, an out-of-process iframe's;
    ``blind``: its hit-target guard cannot tell a press that reached nothing in its frame)."""

    node: ResolvedNode
    handle: str
    x: float
    y: float
    local: tuple[float, float]
    blind: bool


async def check_actionable(
    page: Page,
    ref: str,
    group: str,
    *,
    enabled: bool = True,
    hit: bool = True,
    stable: bool = True,
    guards: list[tuple[Session, str]] | None = None,
    align: str | None = None,
) -> Target | NotYet:
    """One attempt at every check for ``ref`` (StaleRefError propagates: it is never retried).

    ``align`` ("start", "center", "end"): scroll the element there in its scroll boxes, whether or not it
    is in view (a retry after something was in the way: see ``wait_actionable``).

    With ``guards``, the hit-target guard of ``engine._hit_target`` is set on the element (token: ``group``)
    in the round trip that reads its box, and its session and handle added to ``guards``, whatever the
    checks after it say: the caller reads its verdict after the input, or drops it.
    """
    guard = guards is not None
    node = await page.resolve(ref)
    session = node.session

    async def scroll_into_view() -> None:
        with contextlib.suppress(ProtocolError):  # no box (display:none): the visibility check says so
            await session.execute_raw("DOM.scrollIntoViewIfNeeded", {"backendNodeId": node.backend_node_id})

    handles: list[str | None] = []

    async def resolve_object() -> None:
        handles.append(await object_id(session, node.backend_node_id, group, node.frame_id))

    with first_error():
        async with trio.open_nursery() as nursery:  # both go out at once
            nursery.start_soon(scroll_into_view)
            nursery.start_soon(resolve_object)
    handle = handles[0]
    if handle is None:
        return NotYet("attached", "the element is no longer in the document")
    if align is not None:
        await call_on(session, handle, _ALIGN_JS, align)
    if stable:
        failed = await call_on(session, handle, _CHECK_JS, enabled, await_promise=True)
        if failed:
            return NotYet(failed["check"], failed["detail"])
    if guards is not None:
        # Listed before it is set: a cancellation while the set is on its way still drops it (the drop
        # follows the set on the same session), where a guard nobody listed cancelled other presses for 30 s.
        guards.append((session, handle))
    (point, scroll), placed, guarded = await gather(
        lambda: box_point(session, node.backend_node_id),
        lambda: frame_placement(page, session) if session is not page.session else _unplaced(),
        lambda: call_on(session, handle, SET_GUARD_JS, group, GUARD_LIFETIME * 1000) if guard else _zero(),
    )
    if point is None:
        return NotYet("visible", "the element has no box")
    if hit:
        blocked = await hit_test(page, node, handle, point, scroll, group)
        if blocked is not None:
            return blocked
    x, y = placed.point(*point)
    return Target(node=node, handle=handle, x=x, y=y, local=point, blind=guarded == "blind")


async def _zero() -> tuple[float, float]:
    return 0.0, 0.0


async def _unplaced() -> Placement:
    return Placement()


async def wait_actionable(
    page: Page,
    what: str,
    ref: str,
    group: str,
    *,
    enabled: bool = True,
    hit: bool = True,
    guards: list[tuple[Session, str]] | None = None,
    act: Callable[[Target], Awaitable[NotYet | None]] | None = None,
) -> Target:
    """The element, once every check passes (see the module docstring); ActionError when time runs out.

    The JS handles it makes live in ``group``: the caller releases it in the element's session. With
    ``guards`` and ``act``, each passing attempt sets a hit-target guard and is acted on (see
    ``check_actionable`` and ``retry_until_deadline``).
    """

    covered = 0  # attempts that found something in the way

    async def attempt() -> Target | NotYet:
        nonlocal covered
        align = _ALIGNMENTS[(covered - 1) % len(_ALIGNMENTS)] if covered else None
        got = await check_actionable(page, ref, group, enabled=enabled, hit=hit, guards=guards, align=align)
        if isinstance(got, NotYet) and got.in_the_way:
            covered += 1
        return got

    return await retry_until_deadline(what, ref, attempt, act, page=page)


_ALIGNMENTS = ("end", "center", "start")
"""Where a retry scrolls an element that something was in the way of. ``DOM.scrollIntoViewIfNeeded``
leaves an element that is in view where it is, so one under a fixed or sticky header stayed under it
until the deadline (a user scrolls it free); each retry puts it at another place in the viewport."""

_ALIGN_JS = """function(align) {
  this.scrollIntoView({block: align, inline: align, behavior: 'instant'});
}"""
