"""The hit-target check at input time: a click reaches the element it was aimed at, or no one.

The actionability checks look at the page a few round trips before the input arrives; a target that moves
in between (a transition a throttled renderer showed still for a frame, a ``mousemove`` listener that
slides it away) leaves something else under the pointer. So before a click's mouse events (or a drag's
press on its source) go out, a guard is set in the element's frame: capture listeners on its window for the
press (``pointerdown``, ``mousedown``, ``pointerup``, ``mouseup``, ``click`` and their kin). The first of
them decides: if its
target (``composedPath()[0]``, through open shadow roots) is not the element, inside it, or a ``<label>``
of it (as the check-time hit test allows), every event of the action's presses is cancelled
(``preventDefault`` and ``stopImmediatePropagation``), so the page never sees a click on the wrong
element, and the miss is recorded. After the input the verdict is read (and the guard removed in the same
call): a miss retries the whole action, as a failed check does. A click's press that reached the element
and whose release it never saw (Chromium sent the release to another frame) is an ActionError, not a
retry: the page saw a mousedown and no click, and a second press could undo the first.

The guard lives in the engine's world (``engine._worlds``), set in the same round trip as the check's
box look, so the common path costs one round trip more: the verdict read. Listeners of every world
receive the page's DOM events. Limits, by design or for want of a cheap answer:

- Nothing seen is told apart by the frame's user activation, which Chromium sets on any press that
  reaches the frame (or a frame inside it), whatever the page's listeners do. A frame never activated
  that still has not been (or, activated before, not active now and still not) got no press: it was lost
  (Chromium sent a press meant for an out-of-process iframe that had not drawn yet to the page around it,
  1 to 2 clicks in 100 on a fresh one), and the action is tried again. Otherwise nothing seen counts as a hit
  (nothing can be told): the frame was active already (a press or an evaluate in the last seconds), a
  page listener on the window in the capture phase that was added before the guard stopped the events,
  or the element holds a frame (a press in it activates this frame only later, from another process).
- Only events in the element's own document are seen: a press that lands in a child frame of it is not.
  The check-time hit test covers that, and an overlay in a parent document over the element's iframe.
- A target inside a closed shadow root is seen from the window as its host: the closed roots that hold the
  element (reached from it: ``getRootNode()``) listen too, and the one nearest the target tells.
- A click that navigates may take the document, and the guard with it, before the verdict is read: a
  verdict that cannot be read counts as a hit (the press reached a document that is gone).
- The guard removes itself after ``GUARD_LIFETIME`` whatever happens, should the removal never arrive.

The typing guard does the same for keys and text (``fill``, ``type``, ``press`` on a ref): a focus handler
that moves the focus on a moment after the element took it (from a task, an animation frame) passes the
check that the element has the focus, and the text would go elsewhere. Its listeners (``keydown``,
``keypress``, ``beforeinput``, ``input``) look at the browser's own events (not the page's: a card mask
that fires ``input`` on a hidden field) and from the first that reaches another element on stop them all
(``beforeinput`` and ``keydown`` are cancelable: nothing is typed there). A key is decided at its
``keydown``: where its text goes after that is the page's answer to the key (Enter moving on to the next
field). Fewer keydowns seen than were sent while the focus is in another frame now means keys went there
(all of them, or those after a move in the middle of a ``type``): an error too; otherwise a page listener
stopped them before the guard (they reached the frame), which counts as done.
"""

from __future__ import annotations

import contextlib
import math
from typing import TYPE_CHECKING

import attrs
import trio

import cdp
from engine._errors import CDPError

if TYPE_CHECKING:
    from engine._session import Session

GUARD_LIFETIME = 30.0
"""Seconds after which a guard removes itself, if no verdict read removed it (a cancelled action)."""

HOLDS_JS = """(el, hit) => {
  // Up the flat tree: a slotted node's parent there is its slot (<my-btn><span>Go</span></my-btn> whose
  // shadow <button> holds the <slot>).
  const up = (n) => n.assignedSlot || n.parentNode || n.host;
  for (let n = hit; n; n = up(n)) if (n === el) return true;
  // A closed root hides its slots (assignedSlot is null): the host's own children may be in the element.
  for (let root = el.getRootNode(); root && root.host; root = root.host.getRootNode())
    if (root.mode === 'closed') for (let n = hit; n; n = n.parentNode) if (n === root.host) return true;
  // Its label passes a click on to it, but not one on interactive content inside the label (a link in
  // it is followed and the control left as it was: HTML's label activation).
  const INTERACTIVE = 'a[href], area[href], button, input:not([type=hidden]), select, textarea, details, '
    + 'embed, iframe, object, label, audio[controls], video[controls], img[usemap]';
  for (let n = hit, inside = false; n; n = up(n)) {
    if (n.localName === 'label' && n.control === el) return !inside;
    if (n.nodeType === 1 && n.matches(INTERACTIVE)) inside = true;
  }
  if (el.localName === 'label' && el.control)
    for (let n = hit; n; n = up(n)) if (n === el.control) return true;
  return false;
}"""
"""JS: whether a press on ``hit`` reaches ``el``: on it, inside it, on its label (not on a link or other
interactive content in that label), or, for a label, on its control. Put in a script with
``.replace("@HOLDS@", HOLDS_JS)``: the check-time hit test and the guard at the press share it."""

# Called on the element's handle with (token, lifetime in ms, typing). One guard of each kind per world (a
# new one replaces the last, so a retry leaves one): ``token`` tells an action's own guard from another's.
# ``typing``: the typing guard (see the module docstring), else the press guard.
SET_GUARD_JS = """function(token, lifetime, typing) {
  const el = this.nodeType === 1 ? this : this.parentElement;
  const view = el && el.ownerDocument.defaultView;
  if (!view) return false;
  const name = typing ? '__cdpEngineTypingGuard' : '__cdpEngineHitGuard';
  const old = globalThis[name];
  if (old) old.remove();
  const field = el.localName === 'input' || el.localName === 'textarea';
  const holds = (hit) => {
    if (typing) {
      for (let n = hit; n; n = n.parentNode || n.host) if (n === el) return true;
      // Text typed into a contenteditable element goes to its editing host, which holds the element (not
      // so for a field inside a contenteditable region: the field takes its own text).
      return !field && !!(hit && hit.nodeType === 1 && hit.isContentEditable && hit.contains(el));
    }
    return (@HOLDS@)(el, hit);
  };
  // Seen from outside a closed shadow root, an event in it has the root's host for its target: the root
  // itself (reached from the element, which is inside) listens too, and tells.
  const closed = [];
  for (let root = el.getRootNode(); root && root.host; root = root.host.getRootNode())
    if (root.mode === 'closed') closed.push(root);
  const hosts = closed.map((root) => root.host);
  const describe = (n) => {
    const e = n && n.nodeType === 1 ? n : n && n.parentElement;
    if (!e) return String(n && n.nodeName);
    let s = e.localName + (e.id ? '#' + e.id : '');
    for (const c of Array.from(e.classList).slice(0, 2)) s += '.' + c;
    const text = (e.getAttribute('aria-label') || e.textContent || '').trim().slice(0, 40);
    return text ? `${s} "${text}"` : s;
  };
  // Keys and text: every event that can put text somewhere is looked at (keyup only ends a key), and from
  // the first that reaches another element on, all are stopped. A press: its first event decides for all.
  const events = typing ? ['keydown', 'keypress', 'beforeinput', 'textInput', 'input', 'keyup']
    : ['pointerdown', 'mousedown', 'pointerup', 'mouseup', 'click', 'auxclick', 'dblclick', 'contextmenu'];
  // Whether a press that the guard did not see reached this frame at all: Chromium activates the frame
  // (and its ancestors) on a press, whatever its listeners do. Told by the sticky activation when the
  // frame never had one (a listener that opens a popup uses the transient one up), else by the transient
  // one when it is not active; never when a frame inside the element could take the press (its
  // activation reaches this frame later).
  const ua = navigator.userActivation;
  const FRAMES = 'iframe, frame, object, embed';
  const holdsFrame = (e) => e.matches(FRAMES) || !!e.querySelector(FRAMES) ||
    !!(e.shadowRoot && e.shadowRoot.querySelector(FRAMES));
  const telling = typing || !ua || holdsFrame(el) ? '' :
    !ua.hasBeenActive ? 'hasBeenActive' : !ua.isActive ? 'isActive' : '';
  const guard = {token, hit: null, what: '', seen: 0, downs: 0, telling, key: null, presses: 0, landed: 0,
    ups: 0};
  // What a page that re-renders the element between the clicks of a double click puts in its place: an
  // element like it (same tag, id, classes and text), while the element itself has left the document.
  const lookalike = (n) => {
    if (el.isConnected) return false;
    const mine = describe(el);
    let e = n && n.nodeType === 1 ? n : n && n.parentElement;
    for (let i = 0; e && i < 5; e = e.parentElement, i++) if (describe(e) === mine) return true;
    return false;
  };
  const block = (event) => {
    event.preventDefault();
    event.stopImmediatePropagation();
  };
  const listener = (event) => {
    if (!event.isTrusted) return;  // the page's own (a card mask that fires input on a hidden field)
    if (event.type === 'keyup') {
      guard.key = null;
      return;
    }
    guard.seen++;
    if (event.type === 'keydown') guard.downs++;
    // A key is decided at its keydown: where its keypress and text go after that is the page's answer to
    // the key (a keydown handler that moves on to the next field on Enter), as it is for a user.
    if (typing && event.type !== 'keydown' && guard.key !== null) {
      if (!guard.key) block(event);
      return;
    }
    // A press is decided at its first event, and each press of a double or triple click at its own
    // pointerdown (the first click may have put another element there: the second would press it).
    const again = !typing && guard.hit === true && event.type === 'pointerdown';
    if (guard.hit === null || (typing && guard.hit) || again) {
      const target = event.composedPath()[0] || event.target;
      if (hosts.includes(target)) return;  // in a closed root: its own listener tells
      guard.hit = holds(target) || (again && lookalike(target));  // a boolean: null means undecided
      if (!guard.hit) {
        guard.what = describe(target);
        guard.landed = again ? guard.presses : 0;
      }
    }
    if (!typing && guard.hit && event.type === 'pointerdown') guard.presses++;
    if (!typing && guard.hit && (event.type === 'pointerup' || event.type === 'mouseup')) guard.ups++;
    if (event.type === 'keydown') guard.key = guard.hit;
    if (!guard.hit) block(event);
  };
  const places = [view, ...closed];
  for (const place of places)
    for (const type of events) place.addEventListener(type, listener, {capture: true});
  const timer = setTimeout(() => guard.remove(), lifetime);
  guard.remove = () => {
    clearTimeout(timer);
    for (const place of places)
      for (const type of events) place.removeEventListener(type, listener, {capture: true});
    if (globalThis[name] === guard) delete globalThis[name];
  };
  globalThis[name] = guard;
  return telling ? 'telling' : 'blind';  // blind: a press that reaches nothing here cannot be told
}""".replace("@HOLDS@", HOLDS_JS)

_VERDICT_JS = """function(token, keepOnMiss, typing, keys) {
  const guard = globalThis[typing ? '__cdpEngineTypingGuard' : '__cdpEngineHitGuard'];
  if (!guard || guard.token !== token) return null;
  const el = this.nodeType === 1 ? this : this.parentElement;
  let lost = false;
  if (typing && (guard.seen === 0 || guard.downs < keys)) {
    // Keys and text that nothing here saw went to another frame when the focus is in one now (a handler
    // moved it there, at once or in the middle of a text). Otherwise a page listener stopped them before
    // the guard could see them: they reached this frame all the same (and perhaps moved the focus on in
    // it: a window listener that sends on Enter).
    const doc = el.ownerDocument;
    let active = doc.activeElement;
    while (active && active.shadowRoot && active.shadowRoot.activeElement)
      active = active.shadowRoot.activeElement;
    lost = !doc.hasFocus() || !!(active && active.matches('iframe, frame, object, embed'));
  } else if (guard.seen === 0) lost = !!guard.telling && !navigator.userActivation[guard.telling];
  if (!(keepOnMiss && (guard.hit === false || lost))) guard.remove();
  const {hit, what, seen, landed} = guard;
  return {hit, what, seen, lost, some: guard.downs > 0, landed, unreleased: guard.presses > 0 && !guard.ups};
}"""


@attrs.frozen
class Miss:
    """The press landed on something else (``what``: a short description of it); the page did not see it.
    ``lost``: it reached nothing in the element's frame (``what`` is empty), as when Chromium routes a press
    for an out-of-process iframe that has not drawn yet to the page around it; for keys, ``some`` says that
    those before went in; for a double or triple click, ``landed`` counts its clicks that did.
    ``unreleased``: the press reached the element, and its release went elsewhere (no click happened).
    ``unanswered``: the frame gave no verdict by the read's ``until`` (a task held its main thread): whether
    the input reached the element is not known."""

    what: str
    lost: bool = False
    some: bool = False
    landed: int = 0
    unreleased: bool = False
    unanswered: bool = False


async def read_verdict(
    session: Session,
    handle: str,
    token: str,
    *,
    keep_on_miss: bool = False,
    typing: bool = False,
    keys: int = 0,
    released: bool = False,
    until: float = math.inf,
) -> Miss | None:
    """Remove the guard ``token`` set on ``handle`` in ``session``, and say whether the press missed.

    None: a hit, or nothing to tell (nothing seen where the frame's user activation cannot tell whether the
    press reached it, the document gone). A late answer is waited for until ``until`` (the action's own
    end, a little before the caller's deadline), then ``Miss(unanswered=True)``; the read, already sent,
    still removes the guard once the page is free. (It once gave up after 2 s and counted the press as a
    hit: a press lost in a fresh out-of-process iframe, whose frame answered after 2.67 s, was a click
    reported done that clicked nothing; so was a press that landed on another element while a task the
    release posted held the main thread.) With ``keep_on_miss`` a guard that saw a miss stays, to stop the
    release of a button still held; :func:`remove_guard` removes it.
    ``keys``: the keydowns sent under the typing guard (fewer seen, and the element lost the focus: lost).
    ``released``: the input released the button where it pressed (a click, not a drag's press): a press
    the element got whose release it never saw is a Miss too (``unreleased``).
    """
    got = None
    params = _verdict(handle, token, by_value=True, keep_on_miss=keep_on_miss, typing=typing, keys=keys)
    # Past GUARD_LIFETIME the guard has removed itself: its answer would tell nothing.
    with trio.move_on_at(min(until, trio.current_time() + GUARD_LIFETIME)) as scope:
        with contextlib.suppress(CDPError):
            reply = await session.execute_raw("Runtime.callFunctionOn", params)
            got = reply.get("result", {}).get("value")
    if scope.cancelled_caught:
        return Miss("", unanswered=True)
    if isinstance(got, dict) and got.get("hit") is False:
        landed = got.get("landed")
        return Miss(str(got.get("what") or "another element"), landed=landed if type(landed) is int else 0)
    if isinstance(got, dict) and got.get("lost") is True:
        return Miss("", lost=True, some=got.get("some") is True)
    if released and isinstance(got, dict) and got.get("unreleased") is True:
        return Miss("", unreleased=True)
    return None


async def remove_guard(
    session: Session, handle: str, token: str, *, wait: bool = True, typing: bool = False
) -> None:
    """Remove the guard of an action that ended before its verdict was read, and wait (shielded, up to
    ``REMOVE_WAIT``) until it is gone: a press sent right after (a fallback's click elsewhere) overtook a
    removal sent without waiting, 1 time in 60, and was cancelled as a miss.

    ``wait=False`` while the tab navigates: Chromium holds the removal until the commit, so a wait would
    only add REMOVE_WAIT to the caller's deadline (and the guard goes with its document). Past the caller's
    deadline (or cancelled) it waits REMOVE_WAIT_LATE at most: a responsive page answers within it, and a
    page whose handler loops forever held the action 0.25 s past the deadline."""
    params = _verdict(handle, token, by_value=False, typing=typing)
    if not wait:
        with contextlib.suppress(CDPError):
            session.execute_nowait(cdp.Command("Runtime.callFunctionOn", params, None))
        return
    now = trio.current_time()
    deadline = trio.current_effective_deadline()  # -inf in a cancelled scope
    until = min(now + REMOVE_WAIT, max(deadline - REMOVE_RESERVE, now + REMOVE_WAIT_LATE))
    with trio.CancelScope(shield=True), trio.move_on_at(until), contextlib.suppress(CDPError):
        await session.execute_raw("Runtime.callFunctionOn", params)


REMOVE_WAIT = 0.25
"""Seconds an ended action waits for its guard's removal. A busy page answers later; the removal, already
sent, still runs before any script or press that follows it on the page's main thread."""
REMOVE_WAIT_LATE = 0.03
"""Seconds the removal is waited for past the caller's deadline (see remove_guard)."""
REMOVE_RESERVE = 0.05
"""Seconds before the caller's deadline that the wait leaves to the action: an action whose handler loops
forever stops 0.1 s before it to say so, and a removal that waited until it for the busy page lost that
error to the deadline (a step's click said "TimeoutError" in 1 run of 6 at load 8)."""


def _verdict(
    handle: str,
    token: str,
    *,
    by_value: bool,
    keep_on_miss: bool = False,
    typing: bool = False,
    keys: int = 0,
) -> dict[str, object]:
    """The params of the call that removes guard ``token`` (unless ``keep_on_miss`` and it saw a miss) and
    returns its verdict (by value, or none); ``typing``: of the typing guard."""
    return {
        "objectId": handle,
        "functionDeclaration": _VERDICT_JS,
        "arguments": [{"value": token}, {"value": keep_on_miss}, {"value": typing}, {"value": keys}],
        "returnByValue": by_value,
    }
