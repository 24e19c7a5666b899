"""``launch`` and ``connect``: a Browser with its browser-level session, and the Pages it opens."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Literal, TypeVar, overload
from urllib.parse import urlsplit

import trio

import cdp
from engine._connection import Connection, ConnectionStatistics, open_connection
from engine._errors import (
    BrowserLaunchError,
    CDPError,
    ConnectError,
    ConnectionClosed,
    ProtocolError,
    SessionDetached,
)
from engine._evaluate import browser_metrics
from engine._http import discover_ws_url
from engine._metrics import EvaluateMetrics
from engine._page import Page, close_target
from engine._popups import watch_page, watch_popups
from engine._process import ChromiumProcess, open_chromium
from engine._refs import RefCache
from engine._requests import NETWORK_SETUP
from engine._session import Session
from engine._sessions import AUTO_ATTACH
from engine._settings import DEFAULT_SETTINGS, Settings
from engine._transport import Transport
from engine._util import NoPublicConstructor, collapse_groups, in_a_hurry
from engine._websocket import open_websocket_transport

log = logging.getLogger("engine.browser")

T = TypeVar("T")
T2 = TypeVar("T2")
T3 = TypeVar("T3")
T4 = TypeVar("T4")


class Browser(metaclass=NoPublicConstructor):
    """A browser reached over one connection; its ``session`` is the browser-level session.

    Obtained from :func:`launch` or :func:`connect`; it has no public constructor.
    """

    def __init__(self, connection: Connection, settings: Settings, process: ChromiumProcess | None) -> None:
        self.connection = connection
        self.settings = settings
        self.process = process
        self.session = connection.sessions.browser
        self._pages: dict[str, Page] = {}
        #: Tabs that were open before this client attached to them (attach_page): left open on the way out.
        self._adopted: set[str] = set()
        self._ref_cache = RefCache()  # refs outlive Page objects: kept per target, the last 50 targets
        self._set_up = False
        self._aclose: Callable[[], Awaitable[None]] | None = None  # set by engine.launch_in_background
        # Set by a headless launch: each new page gets a window of its own, so every page is "visible".
        # In tabs of one window only the front one is: the others get no animation frames at all.
        self._page_windows = False
        # new_page's tabs attach paused as they are made (see _popups): while a Target.createTarget of it is
        # in flight the hook keeps such tabs here, and new_page takes its own instead of attaching again.
        self._creating = 0
        self._unclaimed: dict[str, Session] = {}
        self._chores: trio.Nursery | None = None  # see _chore(): open while the browser's block is

    def _chore(self, what: str, work: Callable[[], Awaitable[object]]) -> bool:
        """Run ``work`` in the background: engine work that must outlive the call that started it (freeing
        a page's main thread after a result was returned before the caller's deadline). It is owned by the
        browser's block and cancelled when that is left; an error is logged, never raised. False (nothing
        runs) when no block holds the browser any more."""
        nursery = self._chores
        if nursery is None:
            return False

        async def guarded() -> None:
            try:
                await work()
            except (ConnectionClosed, SessionDetached) as exc:  # the link or the tab went: nothing to do
                log.debug("background %s ended: %r", what, exc)
            except Exception:
                log.exception("background %s failed; the browser goes on", what)

        nursery.start_soon(guarded)
        return True

    async def aclose(self) -> None:
        """Close a browser from :func:`engine.launch_in_background` (the REPL way); idempotent.

        A browser from ``async with launch()`` or ``connect()`` closes when its block is left instead.
        """
        if self._aclose is None:
            raise RuntimeError(
                "this Browser closes when its `async with launch()` (or connect()) block is left; aclose() "
                "is for a browser from engine.launch_in_background() or connect_in_background()"
            )
        await self._aclose()

    @property
    def on_attach(self) -> Callable[[Session], None] | None:
        """Called with every auto-attached child session (iframe, worker) before it is resumed, so that
        ``child.subscribe(...)`` there sees its first events. It runs in the reader: keep it quick.

        A plain function (it cannot await): subscribe, or send set-up with ``child.execute_nowait(...)``
        (sent before the child is resumed, in order). An exception in it is logged; the child runs anyway.
        Example: ``browser.on_attach = lambda child: child.execute_nowait(cdp.runtime.enable())``.
        """
        return self.connection.sessions.on_attach

    @on_attach.setter
    def on_attach(self, hook: Callable[[Session], None] | None) -> None:
        self.connection.sessions.on_attach = hook

    @property
    def pages(self) -> list[Page]:
        """The pages this Browser opened, and the tabs they opened themselves, that are still open."""
        self._prune()
        return list(self._pages.values())

    def _keep(self, page: Page) -> None:
        """Hold ``page`` among :attr:`pages`, and let go of those that closed meanwhile: a popup that closed
        itself was held until someone read ``pages`` (150 of 300 in a loop that never did)."""
        self._prune()
        self._pages[page.target_id] = page

    def _prune(self) -> None:
        for gone in [target for target, page in self._pages.items() if page.closed]:
            del self._pages[gone]

    async def version(self) -> cdp.browser.GetVersionResult:
        return await self.session.execute(cdp.browser.get_version())

    @overload
    async def execute_all(self, p1: tuple[Session, cdp.Command[T]], /) -> tuple[T]: ...
    @overload
    async def execute_all(
        self, p1: tuple[Session, cdp.Command[T]], p2: tuple[Session, cdp.Command[T2]], /
    ) -> tuple[T, T2]: ...
    @overload
    async def execute_all(
        self,
        p1: tuple[Session, cdp.Command[T]],
        p2: tuple[Session, cdp.Command[T2]],
        p3: tuple[Session, cdp.Command[T3]],
        /,
    ) -> tuple[T, T2, T3]: ...
    @overload
    async def execute_all(
        self,
        p1: tuple[Session, cdp.Command[T]],
        p2: tuple[Session, cdp.Command[T2]],
        p3: tuple[Session, cdp.Command[T3]],
        p4: tuple[Session, cdp.Command[T4]],
        /,
    ) -> tuple[T, T2, T3, T4]: ...
    @overload
    async def execute_all(self, *pairs: tuple[Session, cdp.Command[T]]) -> tuple[T, ...]: ...
    async def execute_all(self, *pairs: tuple[Session, cdp.Command[Any]]) -> tuple[Any, ...]:
        """Send ``(session, command)`` pairs together, to any sessions of this browser; their typed results,
        in order, once all have answered.

        :meth:`Session.execute_all` across pages: one write and one task for all of them, where a nursery
        with a task per page costs more than the commands' own client path. If any fails, the error of the
        first one (in order) that failed is raised after every one has answered. For example::

            titles = await browser.execute_all(
                *((page.session, cdp.runtime.evaluate(expression="document.title")) for page in browser.pages)
            )
        """
        for pair in pairs:
            if not (
                isinstance(pair, tuple)
                and len(pair) == 2
                and isinstance(pair[0], Session)
                and isinstance(pair[1], cdp.Command)
            ):
                raise TypeError(
                    f"Browser.execute_all takes (session, command) pairs, not {pair!r}; for commands on one "
                    "session, use session.execute_all(command, ...)"
                )
        return tuple(await self.connection.execute_all(pairs))

    def statistics(self) -> ConnectionStatistics:
        return self.connection.statistics()

    def metrics(self) -> EvaluateMetrics:
        """Evaluate counters of every page of this browser together (see ``Page.metrics``)."""
        return browser_metrics(self)

    async def new_page(self, url: str | None = None) -> Page:
        """Open a tab, set up its flattened session (iframes and workers auto-attach), load ``url``.

        In a browser from a headless :func:`launch`, each page is a window of its own, so that every page
        is visible: it gets animation frames and unthrottled timers, not only the last one opened.

        The page's session has ``Page`` enabled (with lifecycle events: ``page.goto`` follows them),
        ``Inspector`` (crash and detach notices), ``Network`` (its requests are counted for ``networkidle``
        from the start; ``Network.*`` events can be listened to at once; no response bodies are kept until
        you send ``cdp.network.enable()`` yourself) and ``Target.setAutoAttach``
        (out-of-process iframes and workers become ``page.session.children``, paused until
        ``Browser.on_attach`` has seen them). Nothing else is enabled: enable what you listen to, e.g.
        ``cdp.runtime.enable()`` for console messages and exceptions (an event of a domain not enabled
        never comes).

        If anything fails on the way (or the caller's deadline runs out), the new tab is closed again.
        """
        # Shielded (for a few milliseconds): cancelled in flight, the tab would open with nobody to close it.
        created: cdp.target.CreateTargetResult | None = None
        self._creating += 1
        try:
            with trio.CancelScope(shield=True), trio.fail_after(self.settings.attach_timeout):
                created = await self.session.execute(
                    cdp.target.create_target(url="about:blank", new_window=self._page_windows or None)
                )
        finally:
            self._creating -= 1
            attached = None if created is None else self._unclaimed.pop(created.target_id, None)
            if not self._creating:
                self._release_unclaimed()
        assert created is not None  # (or the call raised)
        target_id = created.target_id
        try:
            await trio.lowlevel.checkpoint_if_cancelled()
            page = await self._attach(target_id, "", ours=True, attached=attached)
        except BaseException:
            await self._close_target_quietly(target_id)
            raise
        if url is not None:
            try:
                await page.goto(url)
            except BaseException:  # the caller never gets the page: it must not stay open
                self._forget(page)
                await self._close_target_quietly(target_id)
                raise
        return page

    async def attach_page(self, target_id: str) -> Page:
        """A Page for a tab that is already open (``connect()`` to a browser with tabs of its own): a
        flattened session to it with the set-up ``new_page`` gives its own tabs. Find the ids with
        ``await browser.session.execute(cdp.target.get_targets())`` (the ``type == "page"`` ones).

        The tab stays open when the ``connect()`` block is left (``page.close()`` closes it). Attaching
        to a tab this Browser already has gives that Page.

        Raises:
            ValueError: no tab has that id (a worker or another kind of target has, or none).
        """
        known = self._pages.get(target_id)
        if known is not None and not known.closed:
            return known
        targets = (await self.session.execute(cdp.target.get_targets())).target_infos
        info = next((t for t in targets if t.target_id == target_id), None)
        if info is None or info.type_ != "page":
            kinds = "no target" if info is None else f"a {info.type_}, not a page,"
            raise ValueError(
                f"{kinds} has the id {target_id!r}; the open tabs: "
                f"{[t.target_id for t in targets if t.type_ == 'page']}"
            )
        page = await self._attach(target_id, info.url, ours=False)
        self._adopted.add(target_id)
        return page

    def _release_unclaimed(self) -> None:
        """Let the tabs the hook kept for new_page that no new_page took run, and let go of them."""
        unclaimed, self._unclaimed = self._unclaimed, {}
        for session in unclaimed.values():
            self._let_go(session, resume=True)

    def _let_go(self, session: Session, *, resume: bool) -> None:
        """Detach from a tab auto-attach gave us that is not ours; ``resume`` it first if it waits for us."""
        if not session.detached:
            if resume:
                session.execute_nowait(cdp.runtime.run_if_waiting_for_debugger())
            self.session.execute_nowait(cdp.target.detach_from_target(session_id=session.session_id))

    async def _attach(self, target_id: str, url: str, *, ours: bool, attached: Session | None = None) -> Page:
        """Attach a flattened session to the tab, give it the page set-up and keep its Page (new_page's
        tabs and attach_page's). ``attached``: the tab's session from auto-attach, paused, used instead of
        attaching again (one round trip less) and resumed after its set-up. If the set-up fails, a tab that
        is not ``ours`` is let go of (detached, quietly: the set-up's error is the one that goes on);
        new_page closes its own instead."""
        setup = _page_setup()
        with trio.move_on_after(self.settings.attach_timeout) as limit:
            if attached is None or attached.detached:
                reply = await self.session.execute(
                    cdp.target.attach_to_target(target_id=target_id, flatten=True)
                )
                session = self.connection.sessions.create(
                    reply.session_id, target_id=target_id, target_type="page", url=url, parent=self.session
                )
            else:
                session = attached
                setup.append(cdp.runtime.run_if_waiting_for_debugger())  # in the same write, after the rest
            try:
                await session.execute_all(*setup)
            except BaseException:
                if ours:
                    raise
                with contextlib.suppress(CDPError):
                    self.session.execute_nowait(cdp.target.detach_from_target(session_id=session.session_id))
                raise
        if limit.cancelled_caught:
            # (It was a bare TooSlowError.) Measured: a tab whose alert() is open holds Page.enable for good.
            raise trio.TooSlowError(
                f"attaching to tab {target_id} took over Settings.attach_timeout "
                f"({self.settings.attach_timeout:g} s): Chromium holds a tab's set-up while a JavaScript "
                "dialog is open in it (which a client that attaches later cannot answer), or while a script "
                "holds its page (an endless loop); close the tab"
            )
        page = Page(self, session, target_id)
        self._keep(page)
        watch_page(page)
        return page

    async def _close_target_quietly(self, target_id: str) -> None:
        """Best effort, shielded and brief: a tab whose set-up failed must not stay open. Confirmed as
        ``Page.close`` confirms it: closed once while its first navigation swapped renderers, a tab stayed
        (new_page cancelled at random during its goto: 2-3 tabs left of about 35)."""
        if self.connection.closed is not None:
            return
        session = next(iter(self.connection.sessions.by_target(target_id)), None)
        with trio.CancelScope(shield=True), trio.move_on_after(_QUICK_CLOSE):
            try:
                await close_target(self.session, target_id, session)
            except CDPError as exc:
                log.debug("could not close the half-set-up target %s: %s", target_id, exc)

    def _forget(self, page: Page) -> None:
        self._pages.pop(page.target_id, None)

    @property
    def download_dir(self) -> str | None:
        """Where a browser from :func:`launch` saves what its pages download, inside its temporary
        directory (removed with the browser on exit: copy out what you keep). None for a browser from
        :func:`connect`, whose own settings apply."""
        return None if self.process is None else os.path.join(self.process.temp_dir, "downloads")

    async def _setup(self) -> None:
        # Hooked before discovery, which announces the tabs already open: auto-attach attaches to those as
        # well, and the hook lets go of them. It resumes the new tabs, which attach paused.
        setup = [(c.method, c.params) for c in _page_setup()]
        hook = watch_popups(self, setup, auto=True)
        # Discovery brings Target.targetCrashed/targetDestroyed. Some endpoints (browser pools, proxies)
        # refuse it; the connection still works, crashes then show up through Inspector.targetCrashed.
        try:
            await self.session.execute(cdp.target.set_discover_targets(discover=True))
        except ProtocolError as exc:
            log.warning("this endpoint refused Target.setDiscoverTargets (%s); going on without it", exc)
            self.session.unsubscribe(hook)
        else:
            if not await self._auto_attach():
                self.session.unsubscribe(hook)
                watch_popups(self, setup, auto=False)
        self._set_up = True

    async def _auto_attach(self) -> bool:
        """Ask the browser to attach this session to every new tab, paused until set up (see _popups)."""
        pages_only = [cdp.target.FilterEntry(type_="page"), cdp.target.FilterEntry(exclude=True)]
        try:
            await self.session.execute(
                cdp.target.set_auto_attach(
                    auto_attach=True, wait_for_debugger_on_start=True, flatten=True, filter_=pages_only
                )
            )
        except ProtocolError as exc:
            log.warning(
                "this endpoint refused Target.setAutoAttach (%s); popups are attached as they appear", exc
            )
            return False
        return True


_QUICK_CLOSE = 1.0
"""Seconds for closing a tab on the way out of a failed set-up."""

_HURRIED_CLOSE = 0.5
"""Seconds for the polite part of a teardown (Browser.close, Target.closeTarget) when the block is left
by a cancellation or Ctrl-C: the whole exit must stay within a second."""


def _close_budget(settings: Settings, *, hurry: bool) -> float:
    """Seconds for the polite part of a teardown: Settings.close_timeout, or less when in a hurry."""
    return min(settings.close_timeout, _HURRIED_CLOSE) if hurry else settings.close_timeout


def _page_setup() -> list[cdp.Command[None]]:
    return [
        cdp.page.enable(),
        cdp.page.set_lifecycle_events_enabled(enabled=True),
        cdp.inspector.enable(),
        NETWORK_SETUP,  # for networkidle: its requests are counted from the start (_requests)
        AUTO_ATTACH,
    ]


async def _close_browser(browser: Browser, process: ChromiumProcess, *, hurry: bool) -> None:
    """Browser.close, then the process must exit; terminate/kill are the process layer's fallback."""
    budget = _close_budget(browser.settings, hurry=hurry)

    async def polite() -> None:
        if browser.connection.closed is None:
            # The browser closing the link under us is the expected ending; a command sent later is told so.
            browser.connection.closing = (
                "the browser was closed: its `async with launch()` block was left (or aclose() was called)"
            )
            with contextlib.suppress(CDPError):
                await browser.session.execute(cdp.browser.close())
        elif browser.connection.transport.name != "pipe":
            return  # it lost its websocket, not its pipe: nothing asks it to exit; the process layer stops it
        await process.wait_exit(budget)

    async def unless_stopped(scope: trio.CancelScope) -> None:
        # A stopped browser (SIGSTOP, a debugger) answers nothing: the polite close would wait out its whole
        # budget (5 s); the process layer continues and stops it at once.
        while not process.stopped:  # noqa: ASYNC110 - polls /proc: no event says it
            await trio.sleep(_STOPPED_POLL)
        log.warning("Chromium (pid %s) is stopped (SIGSTOP?): not waiting for it to close", process.pid)
        scope.cancel()

    with trio.CancelScope(shield=True), trio.move_on_after(budget):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(unless_stopped, nursery.cancel_scope)
            await polite()
            nursery.cancel_scope.cancel()


_STOPPED_POLL = 0.05
"""Seconds between two looks at whether the browser is stopped, while it is asked to close."""


@asynccontextmanager
async def browser_chores(browser: Browser) -> AsyncIterator[None]:
    """The nursery of :meth:`Browser._chore` for the block's body; what still runs is cancelled on the way
    out, before the pages and the browser close."""
    with collapse_groups():  # the body's own error comes out as it is, not in the nursery's group
        async with trio.open_nursery() as nursery:
            browser._chores = nursery
            try:
                yield
            finally:
                browser._chores = None
                nursery.cancel_scope.cancel()


async def _close_pages(browser: Browser, *, hurry: bool) -> None:
    """Close the tabs this client opened, all at once, within the close budget."""
    budget = _close_budget(browser.settings, hurry=hurry)

    async def close(page: Page) -> None:
        try:
            await page.close()
        except CDPError:
            log.debug("could not close %r on the way out", page)

    with trio.CancelScope(shield=True), trio.move_on_after(budget):
        async with trio.open_nursery() as nursery:
            for page in browser.pages:
                if page.target_id not in browser._adopted:  # open before us: not ours to close
                    nursery.start_soon(close, page)


@asynccontextmanager
async def launch(
    *,
    executable: str | None = None,
    transport: Literal["pipe", "websocket"] = "pipe",
    headless: bool = True,
    args: Sequence[str] = (),
    settings: Settings = DEFAULT_SETTINGS,
) -> AsyncIterator[Browser]:
    """Start a headless Chromium with a fresh profile; close it and remove the profile on exit.

    Args:
        executable: the browser binary (default: $CDP_ENGINE_CHROMIUM, then /usr/bin/chromium, then PATH).
        transport: "pipe" (default: fastest, nothing listens on a port) or "websocket" (port 0, loopback).
        headless: False shows a window (needs a display).
        args: extra command-line flags.
        settings: the engine's own handshake limits.

    Raises:
        BrowserLaunchError: the browser did not start or answer; the message carries its last stderr lines.
    """
    with collapse_groups():
        async with (
            open_chromium(
                executable=executable, transport=transport, headless=headless, args=args, settings=settings
            ) as process,
            open_connection(process.transport, settings) as connection,
        ):
            browser = Browser._create(connection, settings, process)
            browser._page_windows = headless
            try:
                with trio.fail_after(settings.launch_timeout):
                    await browser._setup()
            except (CDPError, trio.TooSlowError) as exc:
                raise BrowserLaunchError(
                    f"Chromium started but did not answer over the {transport}: {exc}",
                    stderr_tail=process.stderr_tail(),
                ) from exc
            try:
                async with browser_chores(browser):
                    yield browser
            except BaseException as exc:
                await _close_browser(browser, process, hurry=in_a_hurry(exc))
                raise
            else:
                await _close_browser(browser, process, hurry=in_a_hurry(None))


@asynccontextmanager
async def connect(url: str, *, settings: Settings = DEFAULT_SETTINGS) -> AsyncIterator[Browser]:
    """Attach to a running browser: ``http://host:port`` (via /json/version) or a ``ws://`` URL.

    Leaving the block closes the pages this client opened and the connection, never the browser.
    """
    ws_url = url
    parts = urlsplit(url)
    if parts.scheme in ("https", "wss"):
        raise ValueError(
            f"TLS endpoints are not supported yet ({url}); reach the browser over http:// or ws://"
        )
    if parts.scheme == "http":
        ws_url = await discover_ws_url(parts.hostname or "127.0.0.1", parts.port or 80, settings)
    elif parts.scheme != "ws":
        raise ValueError(f"connect() takes http://host:port or ws://..., not {url!r}")
    transport = await open_websocket_transport(ws_url, settings)
    async with browser_over(transport, settings) as browser:
        yield browser


@asynccontextmanager
async def browser_over(transport: Transport, settings: Settings = DEFAULT_SETTINGS) -> AsyncIterator[Browser]:
    """A Browser on an open ``transport`` to a browser this client does not own (what ``connect`` does).

    Leaving the block closes the pages this client opened and the transport, never the browser.
    """
    with collapse_groups():
        async with open_connection(transport, settings) as connection:
            browser = Browser._create(connection, settings, None)
            with trio.move_on_after(settings.connect_timeout):
                await browser._setup()
            if connection.closed is None and not browser._set_up:
                raise ConnectError(
                    f"the {transport.name} is open, but Target.setDiscoverTargets got no answer within "
                    f"{settings.connect_timeout} s (Settings.connect_timeout): is it a DevTools endpoint?"
                )
            try:
                async with browser_chores(browser):
                    yield browser
            except BaseException as exc:
                await _close_pages(browser, hurry=in_a_hurry(exc))
                raise
            else:
                await _close_pages(browser, hurry=in_a_hurry(None))
