"""Waiting: for a navigation an action started to commit, for text, load states, refs, and history moves.

Every wait runs under the caller's deadline (``trio.fail_after``); none takes a timeout of its own.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Literal

import trio

import cdp
from engine._actionability import (
    DEFAULT_BUDGET,
    RETRY_MARGIN,
    call_on,
    new_group,
    object_id,
    release,
)
from engine._errors import (
    ActionError,
    CDPError,
    ConnectionClosed,
    ProtocolError,
    SessionDetached,
    StaleRefError,
    fresh_copy,
)
from engine._frames import frame_sessions, frame_tree, sessions_below
from engine._hooks import add_hook
from engine._navigating import first_document, navigating_note
from engine._requests import requests_of
from engine._util import first_error
from engine._worlds import evaluate_in_frame, evaluate_in_world

if TYPE_CHECKING:
    from engine._page import Page
    from engine._session import Session, Subscription

LoadState = Literal["load", "domcontentloaded", "networkidle"]

NETWORK_IDLE = 0.5
"""Seconds without a request in flight for ``networkidle`` (as Playwright and Puppeteer)."""

POLL = 0.05
"""Seconds between two looks at the page while waiting for text or a ref."""


FOLLOWED_NAVIGATIONS = 3
"""Navigations requested after an action's input was handled that the action still waits for, while one
it started is loading (a redirect by script, a frame's document that moves the top): past that, frames
are navigating by themselves, and one that asks again is no longer waited for."""


class NavigationWatch:
    """Which frames of a page were asked to load a new document, until that document is parsed.

    ``Page.frameRequestedNavigation`` comes from the renderer while it handles the click or submit
    (measured on Chromium 156: it is already in when the ``mouseReleased`` reply arrives for a link and for
    a form's submit button). A history move (``history.back()`` in a handler) sends none, only the
    browser's ``Page.frameStartedNavigating``, also in before that reply. ``Page.frameNavigated`` is the
    commit; but a snapshot taken straight after the commit saw an empty document (1 run in 3 under load),
    so the wait ends at the new document's ``DOMContentLoaded`` (a page the back-forward cache restores:
    at its commit). A navigation that ends without a document (a 204, a download, a stop) ends with
    ``Page.frameStoppedLoading``; one that stays in the document, with ``Page.navigatedWithinDocument``;
    one of a frame removed from its document, with ``Page.frameDetached``; one of a frame whose document
    the main frame's new one replaced, with that commit (Chromium sends nothing for such a frame); one whose
    ``beforeunload`` dialog was dismissed (the page stays), with ``Page.javascriptDialogClosed`` (measured
    on Chromium 156: nothing else comes, and the action waited out its whole deadline). A link
    that closes or a session that detaches ends the wait with that error: neither sends what the wait looks
    for, and a browser killed during a click's navigation held the click to its deadline. Not so an
    out-of-process iframe's session (see :meth:`watch`): it also detaches when its frame goes to another
    process, and a click that sent such a frame back to its page's site raised "ref is stale" (3 runs of 4).
    """

    def __init__(self, main_frame: str = "") -> None:
        self.main_frame = main_frame
        self.pending: set[str] = set()
        self.committed: set[str] = set()
        self.changed = trio.Event()
        #: Set once the action's input has been handled (see ``__call__``).
        self.input_handled = False
        #: Where the last navigation the input asked for goes (for the error of one that holds the tab).
        self.url = ""
        #: When the watched block is cut short (see :func:`input_stop`); a verdict read inside it ends
        #: VERDICT_MARGIN before, so that its own error, not this one's, says what happened.
        self.stop = math.inf
        #: The caller's deadline as the block began (inside it, trio's effective deadline is ``stop``).
        self.deadline = math.inf
        self._followed = 0
        #: Whether the input asked for a navigation (kept after its end: a select's frame that the
        #: navigation took away is told from one removed for another reason, see _forms.select_option).
        self.requested = False
        self._broken: CDPError | None = None
        self._leaving: set[str] = set()  # frames whose beforeunload dialog is open
        self._hooks: list[tuple[Session, Subscription[Any]]] = []

    def end(self, error: CDPError) -> None:
        """The link or a watched session is gone: the wait ends with ``error``."""
        if self._broken is None:
            self._broken = error
        self._wake()

    def watch(self, session: Session, *, own: bool = False) -> None:
        """Hook ``session``'s events; ``own``: the page's own session, whose end ends the wait (:meth:`end`).

        An out-of-process iframe's session that detaches while the link lives (its frame went to another
        process, or was removed) ends the navigations of the frames below its root, which went with it.
        The root's goes on: its new document is reported by the page's session (back in its process), by
        the session that attaches for it (followed here), or its removal by its parent's frameDetached.
        """
        frames: set[str] = set()  # the frames whose navigation this session reported

        def call(method: str, params: dict[str, Any]) -> None:
            if method == "Target.attachedToTarget":
                child_id = params.get("sessionId")
                child = session.connection.sessions.get(child_id) if isinstance(child_id, str) else None
                if child is not None and child.target_id in self.pending:
                    self.watch(child)  # before the child runs: its new document's events are all seen
                return
            if method in _STARTS:
                frames.add(str(params.get("frameId", "")))
            self(method, params)

        def ended(error: CDPError) -> None:
            # Not its root (an out-of-process iframe's frame id is its target id: followed, see above), nor
            # the main frame, whose navigation an iframe may ask for (top.location): the page's own session
            # reports it, and the action returned before its document was parsed (8 presses of 30).
            gone = frames - {session.target_id, self.main_frame}
            if own or not isinstance(error, SessionDetached) or session.connection.closed is not None:
                self.end(error)
            elif self.pending & gone:
                self.pending -= gone
                self._wake()

        self._hooks.append((session, add_hook(session, _WATCHED, call, on_end=ended)))

    def unwatch(self) -> None:
        for session, hook in self._hooks:
            session.unsubscribe(hook)
        self._hooks.clear()

    def __call__(self, method: str, params: dict[str, Any]) -> None:
        if method == "Page.javascriptDialogOpening":
            if params.get("type") == "beforeunload":
                self._leaving.add(str(params.get("frameId") or self.main_frame))
            return
        if method == "Page.javascriptDialogClosed":
            frame = str(params.get("frameId") or self.main_frame)
            if frame in self._leaving:
                self._leaving.discard(frame)
                if params.get("result") is False:  # told to stay: the navigation that asked is cancelled
                    # Its own, or (a frame asked as the page around it is left) the main frame's.
                    self.pending.discard(frame if frame in self.pending else self.main_frame)
                    self._wake()
            return
        if method in _STARTS:
            if method == "Page.frameStartedNavigating":
                if params.get("navigationType") != "historyDifferentDocument":
                    return  # the renderer asks for the others with a frameRequestedNavigation
            elif params.get("disposition", "currentTab") != "currentTab":
                return
            frame = params.get("frameId", "")
            if not self.input_handled:
                self.pending.add(frame)
                self.committed.discard(frame)  # its next document is to come (see below)
                self.requested = True
                self.url = str(params.get("url", ""))
            elif method == "Page.frameStartedNavigating" and frame in self.pending:
                return  # the start of a navigation whose request was counted
            elif self.pending:
                # While a navigation the action started loads, a new one may be its sequel (a redirect by
                # script, a frame's document that moves the top): followed, but only so far. Frames that
                # keep navigating by themselves (an ad that reloads, a srcdoc set every few ms) replace
                # each document before it is parsed, and would hold the action to its deadline.
                self._followed += 1
                if self._followed <= FOLLOWED_NAVIGATIONS:
                    self.pending.add(frame)
                    # Its document to come is not committed yet: the DOMContentLoaded of the one that asked
                    # (a script in it that moved on) or of the empty document a new process starts with
                    # (sent as its session turns lifecycle events on) ended the wait before it (4 of 20).
                    self.committed.discard(frame)
                elif frame in self.pending:
                    self.pending.discard(frame)
                    self._wake()
            return
        if method == "Page.frameNavigated":
            frame = (params.get("frame") or {}).get("id", "")
            self.committed.add(frame)
            if params.get("type") == "BackForwardCacheRestore":  # a kept document: parsed long ago
                self.pending.discard(frame)
                self._wake()
            if frame == self.main_frame and self.pending - {frame}:
                # The old document's frames went with it, and Chromium sends no frameDetached for them.
                self.pending &= {frame}
                self._wake()
            return
        if method == "Page.lifecycleEvent":
            frame = params.get("frameId", "")
            if params.get("name") != "DOMContentLoaded" or frame not in self.committed:
                return
        elif method == "Page.frameDetached" and params.get("reason") == "swap":
            # The frame goes on in another process (a same-site iframe sent cross-site): this is its old
            # process letting go at the commit, before the new document is parsed. Its new document is
            # reported by the session that attaches for it (followed, see watch); ending here returned the
            # action with the iframe still empty (a snapshot right after: 3 runs of 30).
            return
        else:  # frameStoppedLoading, navigatedWithinDocument, frameDetached (removed from its document)
            frame = params.get("frameId", "")
        self.pending.discard(frame)
        self._wake()

    def _wake(self) -> None:
        self.changed.set()
        self.changed = trio.Event()

    async def wait_committed(self) -> None:
        """Until every navigation requested so far has its new document parsed (or ended without one).

        Raises:
            ConnectionClosed, SessionDetached: the link or a watched session went while a navigation was
                pending.
        """
        while self.pending:
            if self._broken is not None:
                raise fresh_copy(self._broken)
            await self.changed.wait()


_STARTS = ("Page.frameRequestedNavigation", "Page.frameStartedNavigating")

_WATCHED = (
    *_STARTS,
    "Page.frameNavigated",
    "Page.frameDetached",
    "Page.lifecycleEvent",
    "Page.frameStoppedLoading",
    "Page.navigatedWithinDocument",
    "Page.javascriptDialogOpening",
    "Page.javascriptDialogClosed",
    "Target.attachedToTarget",
)


INPUT_VERDICT_MIN = 0.5
"""Seconds of the caller's deadline an input must have left for its action to end with the "input handled"
ActionError (RETRY_MARGIN before the deadline): with less, a page that did not answer is not known to be
busy, and the caller's own deadline ends the action (a click under a 20 ms deadline said the page's main
thread was busy)."""

VERDICT_MARGIN = 0.05
"""Seconds before its navigation watch's stop at which a hit-target verdict read gives up (see
NavigationWatch.stop)."""


def input_stop(start: float) -> float:
    """When an action's input, begun at ``start``, is cut short: RETRY_MARGIN before the caller's deadline
    if the input has INPUT_VERDICT_MIN of it (else never: the caller's own deadline ends it), or
    DEFAULT_BUDGET after ``start`` without a deadline."""
    deadline = trio.current_effective_deadline()
    if deadline == math.inf:
        return start + DEFAULT_BUDGET
    if deadline - start >= INPUT_VERDICT_MIN:
        return deadline - RETRY_MARGIN
    return math.inf


BARRIER_TIMEOUT = 1.0
"""Seconds an action waits for its page's main thread to answer after the input (a handler that is still
running holds it): past that, the action returns with the navigations it has seen."""

_TASK_TURN = {"expression": "new Promise((r) => setTimeout(r, 0))", "awaitPromise": True}


async def _barrier(sessions: list[Session], *, task_turn: bool) -> None:
    """A round trip through each renderer's main thread, so every event it sent while it handled the
    input (``Page.frameRequestedNavigation``) is read before this returns.

    The input's own reply comes from the browser process on another channel than the renderer's events:
    without this, whether a navigation was seen depended on how soon the link was read after that reply.
    With ``task_turn`` the round trip awaits a ``setTimeout(0)`` in the page, which runs after the tasks
    the input posted (a form that Enter submits asks for its navigation from one). That costs an animation
    frame after an input (a click measured 33.3 ms with it, 16.6 ms without), so only keys take it.
    """

    async def one(session: Session) -> None:
        with contextlib.suppress(ProtocolError, SessionDetached):
            if task_turn:  # in the engine's world: the page's own setTimeout may be replaced
                await evaluate_in_world(session, _TASK_TURN)
            else:
                await session.execute_raw("Page.getFrameTree")

    # first_error: a link that breaks under both looks raised an ExceptionGroup out of the click.
    with trio.move_on_after(BARRIER_TIMEOUT), first_error():
        async with trio.open_nursery() as nursery:
            for session in sessions:
                nursery.start_soon(one, session)


@asynccontextmanager
async def navigation_watch(
    sessions: list[Session], ref: str = "", *, task_turn: bool = False
) -> AsyncIterator[NavigationWatch]:
    """Watch ``sessions`` while the block runs an action; on the way out, wait for any navigation it
    started to commit, so that a snapshot after the action sees the new document.

    With no deadline from the caller, the block and the wait get DEFAULT_BUDGET seconds: an input's reply
    waits for the page's handlers, so a handler in an endless loop would otherwise hold the action forever.
    Under the caller's deadline the block (the input) ends RETRY_MARGIN before it, as the checks do, with an
    ActionError that says the page did not handle it (at the deadline it would be a bare TooSlowError), if
    the input had INPUT_VERDICT_MIN or more of it. So does the wait for a navigation the input started: a
    navigation that has not committed by then is stopped, with the ActionError that names it (as when
    Chromium held the input's answer for it), and a page that only has not answered the barrier yet ends
    the action as done.
    """
    main = sessions[0].target_id if sessions else None  # the page's own session comes first
    watch = NavigationWatch(main or "")
    # The out-of-process iframes below are watched too: a history move a handler starts may move only
    # one of them, and Chromium reports its start on that frame's own session.
    below = sessions_below(sessions[0]) if sessions else []
    watched = [*sessions, *(session for session in below if session not in sessions)]
    for index, session in enumerate(watched):
        watch.watch(session, own=index == 0)
    phase = "input"
    start = trio.current_time()
    deadline = trio.current_effective_deadline()
    stop = watch.stop = input_stop(start)
    watch.deadline = deadline
    try:
        with trio.move_on_at(stop) as scope:
            yield watch
            phase = "navigation"
            await _barrier(sessions, task_turn=task_turn)
            watch.input_handled = True
            await watch.wait_committed()
    except BaseException:  # the caller's deadline, a cancellation, an error
        _stop_navigations(watch, sessions)
        raise
    finally:
        watch.unwatch()
    if scope.cancelled_caught:
        if phase == "navigation" and not watch.pending - watch.committed:
            return  # the input was handled; the barrier's look for a navigation saw none in time
        _stop_navigations(watch, sessions)
        raise _stuck(phase, ref, None if deadline == math.inf else trio.current_time() - start, watch)


def _stop_navigations(watch: NavigationWatch, sessions: list[Session]) -> None:
    """Stop the navigations the action started and nobody waits for any more (see stop_loading)."""
    if not watch.pending - watch.committed:  # a committed one holds nothing: its document is parsing
        return
    for session in sessions:
        stop_loading(session)


def stop_loading(session: Session) -> None:
    """Stop what ``session``'s frames load, without waiting, for a navigation its caller gave up on (an
    action's, ``page.goto``'s): while one waits for a response, Chromium holds every other command of the
    page (snapshots, evaluate, the next click) until it ends."""
    if not session.detached and session.connection.closed is None:
        session.execute_nowait(cdp.page.stop_loading())


def _stuck(phase: str, ref: str, waited: float | None, watch: NavigationWatch) -> ActionError:
    """The error of an action whose ``phase`` outlived its budget: DEFAULT_BUDGET, or (``waited`` seconds)
    the caller's deadline less its margin."""
    what = f"the action on {ref}" if ref else "the action"
    if phase == "input" or waited is not None:  # under the caller's deadline, both phases end here
        when = (
            f"after {DEFAULT_BUDGET:g} s"
            if waited is None
            else f"after {waited:.2f} s, {RETRY_MARGIN} s before the deadline"
        )
        if watch.pending - watch.committed:
            # Chromium answers an input that started a navigation once that navigation commits.
            held = "the input's answer, and " if phase == "input" else ""
            return ActionError(
                f"{what}: the input started a navigation (to {watch.url or 'a new document'}) that had not "
                f"committed {when} (a slow or stalled response), so it was stopped; Chromium holds "
                f"{held}every other command of the tab{',' if held else ''} until a navigation commits. Give "
                "the action a longer deadline to wait for the page.",
                ref=ref,
                check="navigation",
            )
        advice = (
            "give the action a deadline (trio.fail_after) to wait less"
            if waited is None
            else "a longer deadline helps only if the handler ends"
        )
        # On a ref, the evaluate reaches the frame the handler runs in, out-of-process iframes included.
        stop = f"page.evaluate('(el) => 0', ref='{ref}')" if ref else "page.evaluate()"
        return ActionError(
            f"{what}: the input was sent, but the page had not handled it {when}: its main thread is busy "
            f"(a handler still running, maybe an endless loop). {stop} under a short deadline "
            "(trio.move_on_after(1)) stops the running script: that call runs out of its deadline (its own "
            f"script waited behind the loop), and the tab answers again after it; {advice}.",
            ref=ref,
            check="input handled",
        )
    return ActionError(
        f"{what} started a navigation whose new document was not parsed after {DEFAULT_BUDGET:g} s (a "
        "slow or stalled load), so it was stopped; give the action a deadline of your own "
        "(trio.fail_after) to wait longer.",
        ref=ref,
    )


def unanswered(what: str, ref: str, watch: NavigationWatch | None = None) -> ActionError:
    """The error of an action whose input was delivered and whose hit-target verdict did not come by the
    action's end: a navigation it started held the tab, or a task holds the frame's main thread."""
    deadline = watch.deadline if watch is not None else trio.current_effective_deadline()
    when = "before the deadline" if deadline != math.inf else f"in {DEFAULT_BUDGET:g} s"
    if watch is not None and watch.pending - watch.committed:
        return ActionError(
            f"{what}: the input started a navigation (to {watch.url or 'a new document'}) that had not "
            f"committed {when} (a slow or stalled response), so it was stopped; Chromium holds every other "
            "command of the tab until a navigation commits, so whether the input reached the element is not "
            "known. Give the action a longer deadline to wait for the page.",
            ref=ref,
            check="navigation",
        )
    return ActionError(
        f"{what}: the input was delivered, but the element's frame did not say whether it reached {ref} "
        f"{when}: its main thread is busy (a task still running after the input, maybe an endless loop), so "
        f"it may have. Look at the page before trying again; page.evaluate('(el) => 0', ref='{ref}') under "
        "a short deadline (trio.move_on_after(1)) stops the running script.",
        ref=ref,
        check="verdict",
    )


def _budget() -> float:
    deadline = trio.current_effective_deadline()
    return deadline if deadline != math.inf else trio.current_time() + DEFAULT_BUDGET


# The rendered text of the document, then of each open shadow root (innerText leaves those out), with
# runs of white space (a no-break space too) made one space on both sides: the snapshot prints names so.
# A closed shadow root is out of any script's reach.
_HAS_TEXT = """(t) => {
  const norm = (s) => s.replace(/\\s+/g, " ");
  const want = norm(t);
  const doc = document.body ? document.body.innerText : document.documentElement.textContent || "";
  if (norm(doc).includes(want)) return true;
  const roots = [];
  const collect = (root) => {
    for (const el of root.querySelectorAll("*")) {
      if (el.shadowRoot) { roots.push(el.shadowRoot); collect(el.shadowRoot); }
    }
  };
  collect(document);
  for (const root of roots) {
    if (root.host.checkVisibility && !root.host.checkVisibility()) continue;
    for (const node of root.childNodes) {
      let text = "";
      if (node.nodeType === 3) text = node.textContent;
      else if (node.nodeType === 1 && (!node.checkVisibility || node.checkVisibility()))
        text = node.innerText ?? node.textContent;
      if (text && norm(text).includes(want)) return true;
    }
  }
  return false;
}"""


async def _frames_have_text(page: Page, text: str) -> bool:
    """Whether ``text`` shows in any frame: each frame's own document (open shadow roots too), out-of-process
    ones included; white space is compared as the snapshot prints it (one space for any run).

    It reads each frame in the engine's world of that frame (``engine._worlds``: the page's scripts cannot
    fake the answer). A frame, or an out-of-process frame's session, that goes away meanwhile shows nothing.
    The first frame that shows it ends the look: a frame whose navigation holds its answers (Chromium holds a
    renderer's commands until a pending navigation commits) does not hold up text shown elsewhere.
    """
    found = False
    look = {"expression": f"({_HAS_TEXT})({json.dumps(text)})", "returnByValue": True}

    async def in_session(session: Session, done: trio.CancelScope) -> None:
        nonlocal found
        try:
            frames = await frame_tree(session)
            for frame in frames:
                try:
                    got = await evaluate_in_frame(session, look, frame["id"])
                except ProtocolError:
                    continue  # the frame navigated or went away meanwhile
                if got is not None and got.get("result", {}).get("value") is True:
                    found = True
                    done.cancel()
                    return
        except (SessionDetached, ProtocolError):
            if session is page.session:
                raise  # the page itself went: the wait ends with that

    with first_error():
        async with trio.open_nursery() as nursery:
            for session in frame_sessions(page):
                nursery.start_soon(in_session, session, nursery.cancel_scope)
    return found


class _Answers:
    """When the page last answered one of a wait's looks (a busy page answers none)."""

    def __init__(self) -> None:
        self.at = trio.current_time()
        self.ever = False

    def now(self) -> None:
        self.at = trio.current_time()
        self.ever = True


async def wait_for_text(page: Page, text: str, *, present: bool, answers: _Answers) -> None:
    """Until ``text`` shows in some frame (``present``), or in none (polled every ``POLL`` seconds)."""
    while True:
        shown = await _frames_have_text(page, text)
        answers.now()
        if shown == present:
            return
        await trio.sleep(POLL)


_IS_VISIBLE = """function() {
  const e = this.nodeType === 1 ? this : this.parentElement;
  if (!e || !e.isConnected) return false;
  const r = e.getBoundingClientRect();
  return !!(r.width && r.height) && (!e.checkVisibility || e.checkVisibility({visibilityProperty: true}));
}"""


async def wait_for_ref(page: Page, ref: str, *, visible: bool, answers: _Answers) -> None:
    """Until the element ``ref`` names is visible, or hidden (an element removed from the page, or whose
    frame navigated, counts as hidden; any other stale ref raises StaleRefError)."""
    js = _IS_VISIBLE
    while True:
        try:
            node = await page.resolve(ref)
        except StaleRefError as exc:
            # Only an element that left the page (or whose document did) is hidden; a ref never handed
            # out, or one whose element now has another name or role, is not a sign of it.
            if visible or exc.reason not in ("removed", "navigated"):
                raise
            return
        group = new_group()
        try:
            handle = await object_id(node.session, node.backend_node_id, group, node.frame_id)
            shown = bool(handle and await call_on(node.session, handle, js))
        finally:
            release(node.session, group)
        answers.now()
        if shown == visible:
            return
        await trio.sleep(POLL)


async def wait_for_load_state(page: Page, state: LoadState, answers: _Answers) -> None:
    """Until the main document reached ``state``; at once if it already has (read from the page). A popup
    still on its initial empty document is first waited on until the URL it was opened with commits."""
    await first_document(page)
    session = page.session
    if state == "networkidle":
        await _network_idle(page)
        return
    ready = "complete" if state == "load" else "interactive"
    event = "load" if state == "load" else "DOMContentLoaded"
    async with session.listen(
        "Page.lifecycleEvent", buffer_size=256, overflow="drop_oldest", typed=False
    ) as events:
        got = await session.execute_raw(
            "Runtime.evaluate", {"expression": "document.readyState", "returnByValue": True}
        )
        answers.now()
        value = got.get("result", {}).get("value")
        if value in ("complete", ready):
            return
        async for item in events:
            if item.params.get("name") == event and item.params.get("frameId") == page.target_id:
                return


async def _network_idle(page: Page) -> None:
    """No request waiting for its response, and no network activity, for ``NETWORK_IDLE`` seconds.

    The page's requests are counted from the page's start (``engine._requests``), a fetch a click has just
    begun included. A page opened as a popup was counted only once it was attached, so Chromium's own word
    for the main frame's document is needed too: its ``networkIdle`` lifecycle event (no request for
    0.5 s), which ``Page.setLifecycleEventsEnabled`` sends again, before its reply, if the document has
    had it (with the document's other lifecycle events: a listener of ``Page.lifecycleEvent`` sees them
    twice).
    """
    session = page.session
    frame_id = page.target_id
    requests = requests_of(page)
    settled = [False]  # Chromium's networkIdle for the main frame's current document

    def seen(method: str, params: dict[str, Any]) -> None:
        if params.get("frameId") == frame_id:
            name = params.get("name")
            if name == "networkIdle":
                settled[0] = True
            elif name in ("init", "commit"):
                settled[0] = False

    hook = add_hook(session, ("Page.lifecycleEvent",), seen)
    try:
        await session.execute_raw("Page.setLifecycleEventsEnabled", {"enabled": True})
        while True:
            # Nothing else in this loop would see the tab, or the browser, go.
            if (closed := session.connection.closed) is not None:
                raise ConnectionClosed(f"the networkidle wait ended: {closed}")
            session.raise_if_unusable("Page.setLifecycleEventsEnabled")
            idle_for = requests.idle_for()
            quiet = settled[0] and not requests.inflight
            if quiet and idle_for >= NETWORK_IDLE:
                return
            await trio.sleep(max(0.01, NETWORK_IDLE - idle_for) if quiet else POLL)
    finally:
        session.unsubscribe(hook)


async def wait_for(
    page: Page,
    *,
    text: str | None,
    gone_text: str | None,
    load_state: LoadState | None,
    ref: str | None,
    state: Literal["visible", "hidden"],
    time_ms: float | None,
) -> None:
    """One wait of ``Page.wait_for``; ActionError names what did not happen when the deadline nears."""
    chosen = [
        k
        for k, v in (
            ("text", text),
            ("gone_text", gone_text),
            ("load_state", load_state),
            ("ref", ref),
            ("time_ms", time_ms),
        )
        if v is not None
    ]
    if len(chosen) != 1:
        raise ValueError(
            "wait_for takes exactly one of text=, gone_text=, load_state=, ref= or time_ms=; "
            f"got {chosen or 'none'}"
        )
    for name, value in (("text", text), ("gone_text", gone_text), ("ref", ref)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"wait_for's {name}= takes a str, not {value!r}")
    if load_state is not None and load_state not in ("load", "domcontentloaded", "networkidle"):
        raise ValueError(f"load_state is 'load', 'domcontentloaded' or 'networkidle', not {load_state!r}")
    if state not in ("visible", "hidden"):
        raise ValueError(f"state is 'visible' or 'hidden', not {state!r}")
    for name, value in (("text", text), ("gone_text", gone_text)):
        if value is not None and not value.strip():
            # "" is in every page (text= returned at once) and never leaves it (gone_text= never returned).
            raise ValueError(f"wait_for's {name}= takes the text to look for, not {value!r}")
    if time_ms is not None and (
        isinstance(time_ms, bool) or not isinstance(time_ms, int | float) or not 0 <= time_ms < math.inf
    ):
        raise ValueError(f"wait_for's time_ms= takes a number of milliseconds, 0 or more, not {time_ms!r}")
    if time_ms is not None:
        await trio.sleep(time_ms / 1000)
        return
    what = {
        "text": f"text {text!r} to appear",
        "gone_text": f"text {gone_text!r} to disappear",
        "load_state": f"load state {load_state!r}",
        "ref": f"{ref} to be {state}",
    }[chosen[0]]
    start = trio.current_time()
    budget = _budget()
    own = trio.current_effective_deadline() != math.inf
    answers = _Answers()
    # A deadline under a second away keeps a tenth of the time, not the whole margin, for the error: a wait
    # of 0.1 s still looks (as an action under it still gets its try).
    with trio.move_on_at(max(budget - RETRY_MARGIN, budget - (budget - start) / 10)):
        if text is not None:
            await wait_for_text(page, text, present=True, answers=answers)
        elif gone_text is not None:
            await wait_for_text(page, gone_text, present=False, answers=answers)
        elif load_state is not None:
            await wait_for_load_state(page, load_state, answers)
        elif ref is not None:
            await wait_for_ref(page, ref, visible=state == "visible", answers=answers)
        return
    until = (
        "before the deadline"
        if own
        else f"in the {DEFAULT_BUDGET:g} s a wait gets when no deadline of yours is set (trio.fail_after)"
    )
    silent = trio.current_time() - answers.at
    unanswered = ""
    going = navigating_note(page)  # (a navigation holds every command of the tab: that note says so)
    # A load state wait looks once, then listens; networkidle mostly listens.
    looks = text is not None or gone_text is not None or ref is not None
    if not going and silent >= SILENT_PAGE and (looks or (load_state != "networkidle" and not answers.ever)):
        # As a busy page's reads say (check="responsive"): the wait could not look, rather than saw no.
        unanswered = (
            f" The page did not answer {'its last look' if answers.ever else 'any look'} for {silent:.1f} s:"
            " its main thread, or an out-of-process iframe's, is busy or held (a script in an endless loop, "
            "a synchronous request); page.evaluate() under a short deadline stops a running script (with "
            "ref= an element of the iframe, in that iframe)."
        )
    raise ActionError(
        f"waited {trio.current_time() - start:.2f} s for {what}; it did not happen {until}."
        f"{unanswered}{going}",
        ref=ref or "",
        check="wait_for",
    )


SILENT_PAGE = 1.0
"""Seconds without an answer to a wait's look after which its error says the page is not answering (a
look takes a few milliseconds; POLL apart, they answer many times a second)."""
