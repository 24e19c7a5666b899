"""A tab: its flattened session, navigation, and the upper rooms (refs, evaluate, actions) on it."""

from __future__ import annotations

import contextlib
import inspect
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import trio

import cdp
from engine import _capture, _forms, _input, _popups, _waiting
from engine._actionability import DEFAULT_BUDGET, unless_deadline
from engine._dialogs import STAYED, Dialog, DialogHandler, dialog_state
from engine._errors import (
    ActionError,
    CDPError,
    ConnectionClosed,
    ContextDestroyed,
    NavigationError,
    ProtocolError,
    SessionDetached,
    StaleRefError,
    TargetCrashed,
)
from engine._evaluate import evaluate, free_main_thread, page_metrics
from engine._frames import Frame, list_frames
from engine._hooks import add_hook
from engine._metrics import EvaluateMetrics
from engine._navigating import navigating_note
from engine._popups import Popup
from engine._refs import ResolvedNode, Snapshot
from engine._session import Session
from engine._snapshot import resolve_ref, take_snapshot
from engine._steps import run_steps
from engine.steps import ReturnMode, StepsResult

if TYPE_CHECKING:
    from engine._browser import Browser

log = logging.getLogger("engine.page")

_T = TypeVar("_T")

_NAVIGATION_EVENTS = (
    cdp.page.FrameStartedNavigating,
    cdp.page.FrameNavigated,
    cdp.page.LifecycleEvent,
    cdp.page.FrameStoppedLoading,
    cdp.inspector.TargetCrashed,
)

BLOCKED_URL = "about:blank#blocked"
"""Where Chromium 156 sends a navigation to an about: page it refuses (``about:crash``, ``about:version``):
the tab shows this document, though ``Page.navigate`` and ``Page.frameNavigated`` report the URL asked
for."""


_ABOUT_PAGES = ("about:blank", "about:srcdoc")


def _may_be_blocked(url: str | None) -> bool:
    """Whether a committed URL is an about: page other than about:blank and about:srcdoc."""
    if url is None or not url.startswith("about:"):
        return False
    return url.partition("#")[0].partition("?")[0] not in _ABOUT_PAGES


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
        self.url: str | None = None  # the URL (fragment included) of the document it committed

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
                self.url = event.frame.url + (event.frame.url_fragment or "")
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
        # The tab's mouse and keyboard are one: two actions at once (two tasks' clicks, two fills)
        # interleaved their events, a click was lost and text went into the other field. Fair: FIFO.
        self._input = trio.Lock()

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
                ``url`` is not a valid URL, Chromium refused an about: page on the way (the tab shows
                about:blank#blocked), or the navigation did not end within ``Settings.navigation_timeout``.
            TargetCrashed: the renderer crashed before the page loaded.
            TypeError: ``url`` is not a str (Chromium's answer was a bare "Invalid parameters").
        """
        if not isinstance(url, str):
            raise TypeError(
                f"goto takes the URL as a str, not {type(url).__name__} {url!r}; nothing was sent"
            )
        return await self._bounded(
            f"the navigation to {url}", self._goto(url, referrer), spare=lambda: self._same_document(url)
        )

    async def _same_document(self, url: str) -> bool:
        """Whether ``url`` is the tab's document with another fragment: asked of the browser, since the
        page's main thread may be busy. Such a navigation does not leave the page, so its scripts are its
        own to finish."""
        if "#" not in url:
            return False
        shown = await self._shown_url()
        return shown is not None and shown.partition("#")[0] == url.partition("#")[0]

    async def _shown_url(self) -> str | None:
        """The URL of the tab's document, asked of the browser (the page may be busy); None if it cannot
        say."""
        with contextlib.suppress(CDPError):
            got = await self.browser.session.execute_raw("Target.getTargetInfo", {"targetId": self.target_id})
            return str(got["targetInfo"]["url"])
        return None

    async def _blocked(self, url: str, committed: str | None) -> bool:
        """Whether a navigation to ``url`` that committed ``committed`` was refused: a page's own
        navigation to a refused URL commits BLOCKED_URL; ours commits the URL we asked for, and only the
        browser says what the tab shows."""
        if committed == BLOCKED_URL:
            return url.strip() != BLOCKED_URL  # Chromium trims what it is given
        return _may_be_blocked(committed) and await self._shown_url() == BLOCKED_URL

    async def _bounded(
        self,
        what: str,
        navigation: Coroutine[Any, Any, _T],
        *,
        spare: Callable[[], Awaitable[bool]] | None = None,
    ) -> _T:
        """Run a navigation under the caller's deadline, or else ``Settings.navigation_timeout``; one given
        up on is stopped. A main thread that does not answer first is freed, unless ``spare`` says not to."""
        limit = self.browser.settings.navigation_timeout
        try:
            with trio.move_on_after(unless_deadline(limit)):
                # A main thread held by a script (a handler in an endless loop) never commits a navigation
                # that stays in its process, and Chromium then holds the tab's every command, a termination
                # too, until the commit: the tab was lost for good. So it is freed first, as evaluate would.
                now = trio.current_time()
                try:
                    await free_main_thread(
                        self, self.session, by=now + FREE_BY, probe_for=FREE_PROBE, spare=spare
                    )
                except BaseException:
                    navigation.close()  # never started: it would warn that it was never awaited
                    raise
                return await navigation
        except trio.Cancelled:
            _waiting.stop_loading(self.session)
            raise
        _waiting.stop_loading(self.session)
        raise NavigationError(
            f"{what} did not end within {limit} s (Settings.navigation_timeout); it was stopped. Set your "
            "own deadline with trio.fail_after, or raise the setting"
        )

    async def _goto(self, url: str, referrer: str | None) -> cdp.page.NavigateResult:
        session = self.session
        stays = dialog_state(self).stays
        async with session.listen(*_NAVIGATION_EVENTS, buffer_size=512, overflow="drop_oldest") as events:
            try:
                result = await session.execute(cdp.page.navigate(url=url, referrer=referrer))
            except ProtocolError as exc:
                if "invalid URL" not in exc.message:
                    raise
                raise NavigationError(
                    f"cannot navigate to {url!r}: Chromium says it is not a valid URL; give a whole one, "
                    "with its scheme (http://127.0.0.1:8000/, file:///tmp/a.html, about:blank)"
                ) from exc
            if result.error_text:
                if dialog_state(self).stays != stays:
                    raise NavigationError(f"navigation to {url} did not happen: {STAYED}")
                raise NavigationError(f"navigation to {url} failed: {result.error_text}")
            if result.loader_id is None:
                return result  # same-document navigation (a fragment): nothing more will load
            follower = _NavigationFollower(result.frame_id, result.loader_id)
            async for event in events:
                if isinstance(event, cdp.inspector.TargetCrashed):
                    raise TargetCrashed(f"the page crashed while loading {url}")
                if follower.ended_by(event):
                    if await self._blocked(url, follower.url):
                        raise NavigationError(
                            f"the navigation to {url} ended on {BLOCKED_URL}: Chromium refused an about: "
                            "page on the way (it opens none but about:blank and about:srcdoc); give an "
                            "http(s), file, data or about:blank URL"
                        )
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
            max_depth: leave out lines deeper than this (the top level is 0); a line whose children
                were left out ends in ``: …``.
            root: a ref: only that element's subtree.
            max_chars: cut the text at a line boundary before this many characters, and say so.
            frames: descend into iframes (same-process and out-of-process).
            format: "yaml" (the default) or "webarena": ``[id] role 'name' props``, tab-indented, whose ids
                ``page.resolve`` and ``engine.webarena`` accept.
            delta: only what changed (refs added, changed, removed; text without a ref that appeared or
                went) since this page's last snapshot with the same ``interactive_only``, ``max_depth``,
                ``root`` and ``frames`` that was not cut by ``max_chars``: like is compared with like,
                and the first line names that snapshot. The full text when there is none (a tab keeps
                ``MAX_BASELINES_PER_TARGET``, 4, kinds), or when the changes pass
                ``DELTA_FALLBACK_RATIO`` of it; ``is_delta`` says which.

        Raises:
            TypeError: an option of the wrong type (``max_depth=1.5``, ``interactive_only="no"``).
            ValueError: ``max_depth`` below 0, ``max_chars`` below 1, or an unknown ``format``.
            StaleRefError: ``root`` names no element of this page (or one since removed).
        """
        return await _answered(
            self,
            "snapshot",
            take_snapshot(
                self,
                interactive_only=interactive_only,
                max_depth=max_depth,
                root=root,
                max_chars=max_chars,
                frames=frames,
                format=format,
                delta=delta,
            ),
        )

    async def resolve(self, ref: str) -> ResolvedNode:
        """The node ``ref`` names, after checking it is still the same element, in one round trip.

        ``ref`` is a snapshot ref (``e3``, ``f1e3``), a WebArena id from ``snapshot(format="webarena")``, or
        ``node:<backendNodeId>`` for a node of the page's own process (checked to exist, not checked against a
        document: after a navigation to another site the number may name another element; refs are checked).

        Raises:
            StaleRefError: the element is gone, renamed, has another role, or its frame navigated (``reason``
                says which); or the ref is unknown. Take a new snapshot: a ref is never retargeted.
        """
        return await _answered(self, f"resolve {ref}", resolve_ref(self, ref))

    # --- evaluate (engine/_evaluate.py) ------------------------------------------------------------------

    async def evaluate(
        self, source: str, *args: Any, ref: str | None = None, backend_node_id: int | None = None
    ) -> Any:
        """Run JavaScript in the page and return its result by value (JSON); promises are awaited.

        ``source`` is an expression (``"document.title"``), statements (``"let a = 1; a + 1"``, run in a
        scope of their own: their declarations, ``var`` too, stay local; no top-level ``await``) or a
        function (``"(a, b) => a + b"``), which is called with ``args`` (JSON values). With ``ref`` (a
        snapshot ref, after its identity check) or ``backend_node_id``, ``source`` must be a function that
        gets the element first: ``await page.evaluate("(el, n) => el.textContent.slice(0, n)", 9, ref="e3")``.

        The budget is your deadline: ``with trio.fail_after(0.5): await page.evaluate("while (true) {}")``
        raises TooSlowError within 0.5 s + 100 ms, the script is terminated and the tab stays usable. With no
        deadline, ``Settings.evaluate_timeout`` applies. It runs on a session of its own to the tab.

        Raises:
            JavaScriptError: the script threw (``stack``, ``line``), or its result cannot be returned by
                value (a DOM node, a function, a cycle; the message says what to return instead).
            ContextDestroyed: a JavaScriptError: the page navigated before the script returned.
            EvaluateTimeout: no deadline of yours, and ``Settings.evaluate_timeout`` ran out.
            EvaluateDisabled: ``Settings(evaluate_enabled=False)``; nothing was sent.
            StaleRefError: ``ref`` no longer names its element, or ``backend_node_id`` names no node (or
                one of a document the page has left).
            InvalidParams: an integer argument beyond ±(2**53 - 1), which the page would get rounded.
            SessionDetached: the tab is closed (before or while the script ran).
        """
        async with _stale_if_gone(self, ref):
            return await evaluate(self, source, args, ref=ref, backend_node_id=backend_node_id)

    def metrics(self) -> EvaluateMetrics:
        """Evaluate counters of this page: calls, p50/p95 duration, timeouts, terminations, fallbacks."""
        return page_metrics(self)

    # --- actions (engine/_actions.py) --------------------------------------------------------------------
    # Pointer actions wait for the element to be actionable (engine/_actionability.py) under the caller's
    # deadline, and stop RETRY_MARGIN before it with an ActionError that says which check failed.

    async def click(
        self,
        ref: str,
        *,
        button: Literal["left", "right", "middle"] = "left",
        click_count: int = 1,
        modifiers: Sequence[str] = (),
        force: bool = False,
    ) -> None:
        """Click the element ``ref`` names with CDP mouse input, once it is actionable.

        Actionable: attached, visible, enabled, scrolled into view, its box the same in two animation
        frames in a row, and a hit test at its centre lands on it (or inside it, or on its label). The
        press is checked again as it arrives: one that lands on another element is cancelled before the
        page sees it, and the click tried again ("hit target at input"). If the click starts a
        navigation, this returns when the new document has committed and been parsed.

        Args:
            button: "left", "right" or "middle".
            click_count: 2 for a double click.
            modifiers: keys held during the click, e.g. ["Shift"] ("Meta" is Control off macOS).
            force: skip every check (logged); without a box the element's JS ``click()`` is used.

        Raises:
            StaleRefError: the ref no longer names its element (never retried, never retargeted).
            ActionError: a check still failed near the deadline; ``check`` names it and, for a hit test,
                ``in_the_way`` names what would get the click. Nothing was clicked, except with
                ``check == "release at input"``: the press went in and its release was not seen there.
        """
        async with self._input, _stale_if_gone(self, ref):
            await _input.click(
                self, ref, button=button, click_count=click_count, modifiers=modifiers, force=force
            )

    async def hover(self, ref: str) -> None:
        """Move the mouse over ``ref`` once it is visible, stable and on top."""
        async with self._input, _stale_if_gone(self, ref):
            await _input.hover(self, ref)

    async def fill(self, ref: str, text: str) -> None:
        """Replace the value of a text field, textarea or contenteditable with ``text``; fires input and
        change."""
        async with self._input, _stale_if_gone(self, ref):
            await _forms.fill(self, ref, text)

    async def type(self, ref: str, text: str, *, delay_ms: float = 0) -> None:
        """Focus ``ref`` and type ``text`` key by key, ``delay_ms`` apart."""
        async with self._input, _stale_if_gone(self, ref):
            await _forms.type_text(self, ref, text, delay_ms=delay_ms)

    async def press(self, key: str, *, ref: str | None = None) -> None:
        """Press a key or combo (``Enter``, ``Control+Shift+ArrowLeft``) in the focused element or ``ref``."""
        async with self._input, _stale_if_gone(self, ref):
            await _input.press(self, key, ref=ref)

    async def select_option(self, ref: str, values: Sequence[str] | str) -> list[str]:
        """Select the options of a ``<select>`` by value or label (several for a multiple select)."""
        async with self._input, _stale_if_gone(self, ref):
            return await _forms.select_option(self, ref, [values] if isinstance(values, str) else values)

    async def check(self, ref: str) -> None:
        """Make a checkbox or radio checked (a click if it is not), and verify it is."""
        async with self._input, _stale_if_gone(self, ref):
            await _forms.set_checked(self, ref, True)

    async def uncheck(self, ref: str) -> None:
        """Make a checkbox unchecked (a click if it is checked), and verify it is."""
        async with self._input, _stale_if_gone(self, ref):
            await _forms.set_checked(self, ref, False)

    async def scroll(
        self,
        *,
        direction: Literal["up", "down", "left", "right"] | None = None,
        ref: str | None = None,
        amount: float | None = None,
    ) -> None:
        """Scroll ``ref`` into view, or the page by a wheel turn ``direction`` (down when neither is given;
        ``amount`` CSS px, else 80% of the viewport).

        A wheel turn returns once what it scrolls has moved (a snapping box: once it rests on its snap
        point), or a frame after the wheel when nothing under the pointer can move that way."""
        if direction is None and ref is None:
            direction = "down"
        async with self._input, _stale_if_gone(self, ref):
            await _answered(self, "scroll", _input.scroll(self, direction=direction, ref=ref, amount=amount))

    async def drag(self, source: str, target: str) -> None:
        """Drag ``source`` onto ``target`` (HTML5 drag and drop, or mouse moves for pages that use those).

        The press on ``source`` is checked as a click's is (``engine._hit_target``): one that lands on
        something else is released unseen and the drag tried again; ActionError if it never lands."""
        async with self._input, _stale_if_gone(self, source, target):
            await _input.drag(self, source, target)

    async def set_input_files(self, ref: str, files: Sequence[str | os.PathLike[str]]) -> None:
        """Set the files of an ``<input type=file>`` (paths the browser can read)."""
        async with _stale_if_gone(self, ref):
            await _forms.set_input_files(self, ref, files)

    async def screenshot(self, *, ref: str | None = None, full_page: bool = False) -> bytes:
        """A PNG of the viewport, of the element ``ref``, or of the whole page (``full_page=True``)."""
        async with _stale_if_gone(self, ref):
            return await _answered(
                self, "screenshot", _capture.screenshot(self, ref=ref, full_page=full_page)
            )

    async def back(self) -> bool:
        """Go back one history entry and wait until its document is parsed (``DOMContentLoaded``; a
        page the back-forward cache restores, at once); False when there is none. Without a
        deadline of the caller's own, ``Settings.navigation_timeout`` applies (``NavigationError``)."""
        return await self._bounded("going back", _capture.history_step(self, -1))

    async def forward(self) -> bool:
        """Go forward one history entry and wait until its document is parsed (``DOMContentLoaded``; a
        page the back-forward cache restores, at once); False when there is none. Without a
        deadline of the caller's own, ``Settings.navigation_timeout`` applies (``NavigationError``)."""
        return await self._bounded("going forward", _capture.history_step(self, 1))

    async def reload(self) -> None:
        """Reload the page and wait for its ``load``. Without a deadline of the caller's own,
        ``Settings.navigation_timeout`` applies (``NavigationError``)."""
        await self._bounded("the reload", _capture.reload(self))

    async def wait_for(
        self,
        *,
        text: str | None = None,
        gone_text: str | None = None,
        load_state: Literal["load", "domcontentloaded", "networkidle"] | None = None,
        ref: str | None = None,
        state: Literal["visible", "hidden"] = "visible",
        time_ms: float | None = None,
    ) -> None:
        """Wait, under the caller's deadline (30 s without one), for one thing: ``text`` to show in any frame,
        ``gone_text`` to go, a load state (``networkidle``: no request for 500 ms), ``ref`` to be ``state``,
        or ``time_ms``.

        Text is looked for in open shadow roots too, and a run of white space (a no-break space too)
        matches one space, as the snapshot prints it. An element that left the page counts as hidden.

        Raises:
            ActionError: it did not happen by ``RETRY_MARGIN`` before the deadline (by a tenth of the time
                left, for a deadline under a second away); it says what was awaited.
            StaleRefError: ``ref`` was never handed out, or its element has another name or role now.
        """
        await _waiting.wait_for(
            self, text=text, gone_text=gone_text, load_state=load_state, ref=ref, state=state, time_ms=time_ms
        )

    @property
    def on_dialog(self) -> DialogHandler | None:
        """Called with each Dialog as it opens, in the reader (keep it quick): ``dialog.accept("text")`` or
        ``dialog.dismiss()``. Without a decision (or a handler) the dialog is dismissed, but a
        ``beforeunload`` is accepted (the page is left, as the navigation or close asked)."""
        return dialog_state(self).handler

    @on_dialog.setter
    def on_dialog(self, handler: DialogHandler | None) -> None:
        if inspect.iscoroutinefunction(handler):
            # It would never be awaited: the dialog would be dismissed before it ran.
            raise TypeError(
                "page.on_dialog is called in the reader and cannot be awaited: give a plain function that "
                "calls dialog.accept() or dialog.dismiss()"
            )
        dialog_state(self).handler = handler

    @property
    def dialogs(self) -> list[Dialog]:
        """The page's last ``MAX_DIALOGS`` dialogs, oldest first, with what was done with each (a list of
        them as they are now: ``page.dialogs[-1]``, ``page.dialogs[-3:]``)."""
        return list(dialog_state(self).seen)

    def expect_popup(self) -> AbstractAsyncContextManager[Popup]:
        """``async with page.expect_popup() as popup: await page.click("e3")``, then ``popup.page``: the tab
        the block opened (waited for, under the caller's deadline, when the block ends)."""
        return _popups.expect_popup(self)

    async def bring_to_front(self) -> None:
        """Make this the active tab."""
        await self.session.execute_raw("Page.bringToFront")

    # --- frames and scripting helpers (engine/_frames.py) ------------------------------------------------

    async def frames(self) -> list[Frame]:
        """Every frame of the page now, same-process and out-of-process, the main frame first.

        Each has its id, URL, name, parent id and the session that drives it (``frame.session``: the
        page's own, or an out-of-process iframe's child session). Asked of the browser on each call
        (``Page.getFrameTree`` on the page's session and on each iframe's), so it is never stale.
        """
        return await _answered(self, "frames", list_frames(self))

    # --- steps (engine/_steps.py) ------------------------------------------------------------------------

    async def run_steps(
        self,
        steps: Sequence[dict[str, Any]],
        *,
        fail_fast: bool = True,
        return_mode: ReturnMode = "final",
        max_steps: int = 10,
        per_step_timeout_ms: int | None = 5000,
    ) -> StepsResult:
        """Run a short list of steps on this tab in one call; only the page output asked for comes back.

        Steps are JSON objects from a whitelist (``engine.steps.STEP_SCHEMA``): navigate, click, fill, press,
        hover, select, wait_for, read_page. The whole list is validated first; the caller's deadline is the
        budget, and each step gets ``min(per_step_timeout_ms, its timeout_ms, what is left)``.

        Args:
            steps: the steps, at most ``max_steps`` (default 10, hard cap 50).
            fail_fast: stop at the first failure (the rest are reported ``Skipped``). With False, later
                steps still run, except those whose target is stale and those after a failed navigate.
            return_mode: "final" (the last read_page, or a snapshot at the end), "all" (every read_page),
                "delta" (ref-keyed changes since the page's last full snapshot before the call).
            max_steps: the most steps this call accepts.
            per_step_timeout_ms: each step's limit (None: only the step's own and the caller's deadline).

        Raises:
            StepsValidationError: the call is invalid (every problem listed); nothing ran. Step failures
                do not raise: they are in the result (``ok``, ``failed_step``, ``steps[i].error``).
        """
        return await run_steps(
            self,
            steps,
            fail_fast=fail_fast,
            return_mode=return_mode,
            max_steps=max_steps,
            per_step_timeout_ms=per_step_timeout_ms,
        )

    # --- lifetime -----------------------------------------------------------------------------------------

    async def close(self) -> None:
        """Close the tab (its session ends with SessionDetached for anything still pending)."""
        if self.closed:
            return
        self._closing = True
        self.browser._forget(self)
        for session in {self.session, *self.browser.connection.sessions.by_target(self.target_id)}:
            session._will_close("the page was closed by this client (Page.close)")  # evaluate's too
        await close_target(self.browser.session, self.target_id, self.session)


async def close_target(browser_session: Session, target_id: str, session: Session | None) -> None:
    """Close the tab ``target_id`` (its page ``session``, if it has one) and wait until it is gone.

    Chromium 156 answers success and keeps the tab when the close meets a navigation swapping the tab's
    renderer (6 of 6 right after Page.navigate): asked again, it closes. Cancelled before the first answer,
    the close is sent again without waiting, so the tab goes all the same (a second close fails quietly).
    """
    gone = trio.Event()

    def ended(_method: str, event: dict[str, Any]) -> None:
        if event.get("targetId") == target_id or (
            session is not None and event.get("sessionId") == session.session_id
        ):
            gone.set()

    hook = add_hook(browser_session, ("Target.detachedFromTarget", "Target.targetDestroyed"), ended)
    try:
        try:
            await browser_session.execute(cdp.target.close_target(target_id=target_id))
        except trio.Cancelled:
            browser_session.execute_nowait(cdp.target.close_target(target_id=target_id))
            raise
        except ProtocolError as exc:
            # Gone on its own (a download popup, window.close()) before its end reached us: closed.
            if exc.message.startswith(_NO_TARGET):
                return
            raise
        for wait in CLOSE_CONFIRM:
            with trio.move_on_after(wait):
                await gone.wait()
            if gone.is_set() or (session is not None and session.detached):
                return
            log.debug("tab %s still open %s s after Target.closeTarget; asking again", target_id, wait)
            try:
                await browser_session.execute(cdp.target.close_target(target_id=target_id))
            except ProtocolError:
                return  # "No target with given id found": it went meanwhile
    finally:
        browser_session.unsubscribe(hook)


_NO_TARGET = "No target with given id"
"""How Chromium 156 refuses Target.closeTarget for a tab that is gone."""

CLOSE_CONFIRM = (0.1, 0.2, 0.4, 0.8)
"""Seconds ``close_target`` waits for the tab's session to end before asking for the close again."""


async def _answered(page: Page, what: str, read: Coroutine[Any, Any, _T]) -> _T:
    """``read`` under the caller's deadline, or else DEFAULT_BUDGET: what it asks of the page needs the
    page's main thread (the accessibility tree, a frame to capture), which a script in an endless loop
    holds for good."""
    with trio.move_on_after(unless_deadline(DEFAULT_BUDGET)):
        return await read
    raise ActionError(
        f"{what}: the page did not answer in {DEFAULT_BUDGET:g} s (no deadline of yours was set): its main "
        "thread is busy or held (a script in an endless loop, a synchronous request), or the page is too "
        "large to read in that time (tens of thousands of elements); page.evaluate() under a short "
        "deadline stops a running script (and runs out of it, as its own script waits behind). Set your "
        f"own deadline with trio.fail_after.{navigating_note(page)}",
        check="responsive",
    )


FREE_PROBE = 2.0
"""Seconds the main thread gets to answer before a navigation, before what runs there is terminated. A
free thread answers in a millisecond, and the page is being left; but the thread can be another tab's too
(a popup shares its opener's), whose script of under 2 s is left to finish (the navigation would have
waited for it all the same: its commit needs that thread)."""
FREE_BY = FREE_PROBE + 0.25
"""Seconds for that look and the termination (which gets STOP_LIMIT at least, after a look delayed past
them on a loaded machine); then the navigation is sent."""


@asynccontextmanager
async def _stale_if_gone(page: Page, *refs: str | None) -> AsyncIterator[None]:
    """Turn a failure in the middle of work on ``refs`` into the StaleRefError it stands for.

    Each ref is checked before its element is touched, but the page can move on in between: a navigation
    or the node going away makes Chromium answer "Cannot find context with specified id", "Node with given
    id does not belong to the document" or "Element is not focusable", and a check find the element gone.
    If a ref no longer resolves, that is the error to act on (take a new snapshot); otherwise, or if the
    page does not answer within STALE_CHECK_S (its main thread may be what failed the action), the first
    error stands. Measured against a page reloading every 15 ms: of 300 actions, 28 had raised a bare
    ProtocolError and 30 an ActionError ("no longer in the document", "not focusable"); of 2,700 since,
    none. An out-of-process iframe removed or navigated away mid-action ends its session: SessionDetached
    from that session is its ref going stale too (from the page's own, the page is gone).
    """
    try:
        yield
    except (ProtocolError, ActionError, ContextDestroyed, SessionDetached) as exc:
        if isinstance(exc, ActionError) and exc.check not in _GONE_CHECKS:
            raise
        if isinstance(exc, SessionDetached) and page.session.detached:
            raise
        with trio.move_on_after(STALE_CHECK_S):
            for ref in refs:
                if ref is not None:
                    try:
                        await page.resolve(ref)
                    except StaleRefError as stale:
                        raise stale from exc
        raise


_GONE_CHECKS = frozenset({"attached", "focusable", "file input"})
"""ActionError checks that also fail when the element went away: the ref is checked again (the others say
nothing about it)."""

STALE_CHECK_S = 0.5
"""How long the identity check after a failed action may take before the failure is raised as it was."""
