"""A tab: its flattened session, navigation, and the upper rooms (refs, evaluate, actions) on it."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Literal

import trio

import cdp
from engine._errors import ConnectionClosed, NavigationError, TargetCrashed
from engine._evaluate import evaluate, page_metrics
from engine._metrics import EvaluateMetrics
from engine._refs import ResolvedNode, Snapshot
from engine._session import Session
from engine._snapshot import resolve_ref, take_snapshot

if TYPE_CHECKING:
    from engine._browser import Browser


_NAVIGATION_EVENTS = (
    cdp.page.FrameStartedNavigating,
    cdp.page.FrameNavigated,
    cdp.page.LifecycleEvent,
    cdp.page.FrameStoppedLoading,
    cdp.inspector.TargetCrashed,
)


class _NavigationFollower:
    """Follows one main-frame navigation, and the ones the page replaces it with, to their end.

    Seen on Chromium 156: each cross-document navigation announces its loader in
    ``Page.frameStartedNavigating``; a script's ``location.replace`` before ``load`` starts a new one
    with no ``frameStoppedLoading`` in between; ``frameStoppedLoading`` without ``load`` ends
    ``window.stop()`` and a response cut short.
    """

    def __init__(self, frame_id: str, loader_id: str) -> None:
        self.frame_id = frame_id
        self.loader_id = loader_id
        self.started = False  # our navigation has been seen starting: later ones replace it

    def ended_by(self, event: Any) -> bool:
        if isinstance(event, cdp.page.LifecycleEvent):
            return (
                event.name == "load" and event.frame_id == self.frame_id and event.loader_id == self.loader_id
            )
        if isinstance(event, cdp.page.FrameStartedNavigating):
            if event.frame_id != self.frame_id or "samedocument" in str(event.navigation_type).lower():
                return False
            if event.loader_id == self.loader_id:
                self.started = True
            elif self.started:
                self.loader_id = event.loader_id  # the page replaced our navigation with this one
        elif isinstance(event, cdp.page.FrameNavigated):
            if event.frame.id_ == self.frame_id and (self.started or event.frame.loader_id == self.loader_id):
                self.started = True
                self.loader_id = event.frame.loader_id
        elif isinstance(event, cdp.page.FrameStoppedLoading):
            return event.frame_id == self.frame_id and self.started
        return False


class Page:
    """A tab opened by :meth:`Browser.new_page`, with its own flattened session."""

    def __init__(self, browser: Browser, session: Session, target_id: str) -> None:
        self.browser = browser
        self.session = session
        self.target_id = target_id
        self._closing = False

    @property
    def closed(self) -> bool:
        """This client closed the tab, or its target is gone."""
        return self._closing or self.session.detached

    def __repr__(self) -> str:
        return f"<Page {self.target_id} session={self.session.session_id}>"

    async def goto(self, url: str, *, referrer: str | None = None) -> cdp.page.NavigateResult:
        """Navigate and follow the main frame's navigation to its end.

        It ends when the document that the navigation led to fires ``load``, or when the main frame
        stops loading without it (``window.stop()``, a response cut short). A navigation that the
        page replaces by script before ``load`` (``location.replace``) is followed to the new document.
        Without a deadline of the caller's own, ``Settings.navigation_timeout`` applies.

        Raises:
            NavigationError: the browser reported an error (``errorText``, e.g. net::ERR_NAME_NOT_RESOLVED),
                or the navigation did not end within ``Settings.navigation_timeout``.
            TargetCrashed: the renderer crashed before the page loaded.
        """
        try:
            if trio.current_effective_deadline() != math.inf:
                return await self._goto(url, referrer)
            limit = self.browser.settings.navigation_timeout
            with trio.move_on_after(limit):
                return await self._goto(url, referrer)
        except trio.Cancelled:
            self._stop_loading()
            raise
        self._stop_loading()
        raise NavigationError(
            f"the navigation to {url} did not end within {limit} s (Settings.navigation_timeout); it was "
            "stopped. Set your own deadline with trio.fail_after, or raise the setting"
        )

    def _stop_loading(self) -> None:
        """Stop a navigation its caller gave up on: while one waits for a response, Chromium holds
        every other command of the page (Runtime.evaluate, Page.getFrameTree) until it ends."""
        session = self.session
        if not session.detached and self.browser.connection.closed is None:
            session.execute_nowait(cdp.page.stop_loading())

    async def _goto(self, url: str, referrer: str | None) -> cdp.page.NavigateResult:
        session = self.session
        async with session.listen(*_NAVIGATION_EVENTS, buffer_size=512, overflow="drop_oldest") as events:
            result = await session.execute(cdp.page.navigate(url=url, referrer=referrer))
            if result.error_text:
                raise NavigationError(f"navigation to {url} failed: {result.error_text}")
            if result.loader_id is None:
                return result  # same-document navigation (a fragment): nothing more will load
            follower = _NavigationFollower(result.frame_id, result.loader_id)
            async for event in events:
                if isinstance(event, cdp.inspector.TargetCrashed):
                    raise TargetCrashed(f"the page crashed while loading {url}")
                if follower.ended_by(event):
                    return result
        raise ConnectionClosed(f"the page's session ended while loading {url}")

    # --- refs (engine/_snapshot.py) -------------------------------------------------------------------

    async def snapshot(
        self,
        *,
        interactive_only: bool = False,
        max_depth: int | None = None,
        root: str | None = None,
        max_chars: int | None = None,
        frames: bool = True,
        format: Literal["yaml", "webarena"] = "yaml",
        delta: bool = False,
    ) -> Snapshot:
        """An agent-readable view of the page read from Chromium's accessibility tree, with refs to act on.

        Lines read ``- role "name" [states] [ref=e3]``, indented by depth; refs in child frames carry the
        frame's prefix (``f1e3``). A ref keeps naming the same node across snapshots while its role and
        name stay the same; it is never handed out again for another element.

        Args:
            interactive_only: only the controls (and the frames that hold them).
            max_depth: leave out lines deeper than this (the top level is 0).
            root: a ref: only that element's subtree.
            max_chars: cut the text at a line boundary before this many characters, and say so.
            frames: descend into iframes (same-process and out-of-process).
            format: "yaml" (the default) or "webarena": ``[id] role 'name' props``, tab-indented, whose ids
                ``page.resolve`` and ``engine.webarena`` accept.
            delta: only the refs added, changed and removed since this page's previous snapshot, unless
                they pass ``DELTA_FALLBACK_RATIO`` of it (then the full text; ``is_delta`` says which).
        """
        return await take_snapshot(
            self,
            interactive_only=interactive_only,
            max_depth=max_depth,
            root=root,
            max_chars=max_chars,
            frames=frames,
            format=format,
            delta=delta,
        )

    async def resolve(self, ref: str) -> ResolvedNode:
        """The node ``ref`` names, after checking it is still the same element, in one round trip.

        ``ref`` is a snapshot ref (``e3``, ``f1e3``), a WebArena id from ``snapshot(format="webarena")``, or
        ``node:<backendNodeId>`` for a node of the page's own process.

        Raises:
            StaleRefError: the element is gone, renamed, has another role, or its frame navigated (``reason``
                says which); or the ref is unknown. Take a new snapshot: a ref is never retargeted.
        """
        return await resolve_ref(self, ref)

    # --- evaluate (engine/_evaluate.py) ------------------------------------------------------------------

    async def evaluate(
        self, source: str, *args: Any, ref: str | None = None, backend_node_id: int | None = None
    ) -> Any:
        """Run JavaScript in the page and return its result by value (JSON); promises are awaited.

        ``source`` is an expression (``"document.title"``), statements (``"let a = 1; a + 1"``) or a
        function (``"(a, b) => a + b"``), which is called with ``args`` (JSON values). With ``ref`` (a
        snapshot ref, after its identity check) or ``backend_node_id``, ``source`` must be a function that
        gets the element first: ``await page.evaluate("(el, n) => el.textContent.slice(0, n)", 9, ref="e3")``.

        The budget is your deadline: ``with trio.fail_after(0.5): await page.evaluate("while (true) {}")``
        raises TooSlowError within 0.5 s + 100 ms, the script is terminated and the tab stays usable. With no
        deadline, ``Settings.evaluate_timeout`` applies. It runs on a session of its own to the tab.

        Raises:
            JavaScriptError: the script threw (``stack``, ``line``), or its result cannot be returned by
                value (a DOM node, a function, a cycle; the message says what to return instead).
            EvaluateTimeout: no deadline of yours, and ``Settings.evaluate_timeout`` ran out.
            EvaluateDisabled: ``Settings(evaluate_enabled=False)``; nothing was sent.
            StaleRefError: ``ref`` no longer names its element.
        """
        return await evaluate(self, source, args, ref=ref, backend_node_id=backend_node_id)

    def metrics(self) -> EvaluateMetrics:
        """Evaluate counters of this page: calls, p50/p95 duration, timeouts, terminations, fallbacks."""
        return page_metrics(self)

    # --- actions (engine/_actions.py) --------------------------------------------------------------------

    # --- frames and scripting helpers (engine/_frames.py) ------------------------------------------------

    # --- steps (engine/_steps.py) ------------------------------------------------------------------------

    # --- lifetime -----------------------------------------------------------------------------------------

    async def close(self) -> None:
        """Close the tab (its session ends with SessionDetached for anything still pending)."""
        if self.closed:
            return
        self._closing = True
        self.browser._forget(self)
        self.session._will_close("the page was closed by this client (Page.close)")
        await self.browser.session.execute(cdp.target.close_target(target_id=self.target_id))
