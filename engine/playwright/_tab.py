"""This engine beside a user's Playwright page: the same tab over a connection of our own.

``attach`` connects to the browser's DevTools endpoint (the one ``connect_over_cdp`` used, or a
Playwright-launched Chromium's ``--remote-debugging-port``) and attaches a session of its own to the tab
behind the Playwright page, so our snapshot, refs and evaluate never wait behind Playwright's calls, and a
hung script of ours (or theirs) is terminated from here while Playwright waits.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, Literal, TypeVar

import trio

from engine import (
    Browser,
    CDPError,
    EvaluateMetrics,
    Page,
    Settings,
    StaleRefError,
    connect,
)
from engine._browser import _page_setup
from engine._evaluate import evaluate_on, recorder, stop_script
from engine._metrics import MetricsRecorder
from engine._popups import watch_page
from engine._settings import DEFAULT_SETTINGS
from engine.playwright._refmap import PlaywrightRef, map_refs, parse_ai_snapshot
from engine.playwright._runner import PlaywrightRunner

log = logging.getLogger("engine.playwright")

T = TypeVar("T")
Fallback = Literal["cdp", "playwright", "auto"]
FALLBACKS = ("cdp", "playwright", "auto")

PROBE_LIMIT = 2.0
"""Seconds a recovering tab gives Playwright to evaluate ``1`` before it reconnects Playwright."""

RECOVERY_LIMIT = 30.0
"""Seconds for the whole last-resort recovery (terminate, probe, reconnect)."""


class CDPUnavailable(CDPError):
    """Evaluate by ref was asked to use CDP only (``fallback="cdp"``) and CDP cannot do it here."""


class PlaywrightUnavailable(CDPError):
    """Evaluate by ref fell back to Playwright, and Playwright's locators cannot reach that element."""


async def _target_id(page: Any) -> str:
    session = await page.context.new_cdp_session(page)
    try:
        info = await session.send("Target.getTargetInfo")
        return str(info["targetInfo"]["targetId"])
    finally:
        await session.detach()


async def _find_page(playwright: Any, endpoint: str, target_id: str) -> tuple[Any, Any]:
    """Connect Playwright to ``endpoint`` anew and find the page of ``target_id`` there."""
    browser = await playwright.chromium.connect_over_cdp(endpoint)
    for context in browser.contexts:
        for page in context.pages:
            if await _target_id(page) == target_id:
                return browser, page
    await browser.close()
    raise LookupError(f"the tab {target_id} is not among the pages at {endpoint}")


async def attach_page(browser: Browser, target_id: str) -> Page:
    """A Page of ours on an existing tab (opened by someone else): a session of our own to it.

    It is not in ``browser.pages``: leaving ``connect()`` detaches it (the connection closes) and never
    closes the tab.
    """
    with trio.fail_after(browser.settings.attach_timeout):
        attached = await browser.session.execute_raw(
            "Target.attachToTarget", {"targetId": target_id, "flatten": True}
        )
        session = browser.connection.sessions.create(
            attached["sessionId"], target_id=target_id, target_type="page", parent=browser.session
        )
        await session.execute_all(*_page_setup())
    page = Page(browser, session, target_id)
    watch_page(page, dialogs=False)
    return page


class PlaywrightTab:
    """A Playwright page and this engine on the same tab. Made by :func:`attach`.

    ``page`` is our :class:`engine.Page` (None when CDP attach was refused: ``cdp_refused`` says why);
    ``pw_page`` the Playwright page, which :meth:`run` hands to Playwright calls (after a reconnect it is
    a new object: use ``tab.pw_page``, not one you kept).
    """

    def __init__(
        self,
        runner: PlaywrightRunner,
        pw_page: Any,
        *,
        endpoint: str,
        target_id: str,
        page: Page | None,
        cdp_refused: str | None,
        nursery: trio.Nursery,
    ) -> None:
        self.runner = runner
        self.pw_page = pw_page
        self.endpoint = endpoint
        self.target_id = target_id
        self.page = page
        self.cdp_refused = cdp_refused
        self.refs: dict[str, PlaywrightRef] = {}
        self.recoveries: Counter[str] = Counter()
        self._nursery = nursery
        self._recovered: trio.Event | None = None
        self._own_runners: list[PlaywrightRunner] = []
        self._own_browsers: list[Any] = []
        self._metrics = recorder(page) if page is not None else MetricsRecorder()

    def metrics(self) -> EvaluateMetrics:
        """Evaluate counters of this tab, fallbacks to Playwright included."""
        return self._metrics.snapshot()

    # -- Playwright calls ------------------------------------------------------------------------------

    async def run(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        """``await fn(pw_page, *args)`` on the Playwright thread, bounded by the caller's trio deadline.

        If the deadline comes first, the call is abandoned at once and the tab is recovered in the
        background (last resort: ``Runtime.terminateExecution`` through our own connection; if Playwright
        still cannot evaluate ``1`` within ``PROBE_LIMIT``, Playwright is reconnected, on a new loop
        thread if its loop is stuck). The next ``run`` waits for that recovery, within its own deadline.
        """
        if self._recovered is not None:
            await self._recovered.wait()
        try:
            return await self.runner.run(fn, self.pw_page, *args)
        except trio.Cancelled:
            # Past its budget (not a plain cancellation, which asks for no recovery): heal the tab.
            past = trio.current_time() >= trio.current_effective_deadline()
            if past and self._recovered is None:
                self._recovered = trio.Event()
                self._nursery.start_soon(self._recover, self._recovered)
            raise

    async def _probe(self) -> bool:
        async def one(page: Any) -> Any:
            return await page.evaluate("1")

        with trio.move_on_after(PROBE_LIMIT):
            try:
                return bool(await self.runner.run(one, self.pw_page) == 1)
            except Exception as exc:
                log.info("Playwright's probe failed: %r", exc)
                return False
        return False

    async def _recover(self, done: trio.Event) -> None:
        try:
            with trio.move_on_after(RECOVERY_LIMIT):
                if self.page is not None and not self.page.closed:
                    await stop_script(self.page.session, self._metrics)
                if await self._probe():
                    self.recoveries["terminated"] += 1
                    log.info("a stuck Playwright call was recovered by Runtime.terminateExecution")
                    return
                if not await self.runner.responsive(0.5):
                    log.warning("the Playwright loop is stuck; starting Playwright on a new thread")
                    self.runner.abandon()
                    self.runner = PlaywrightRunner()
                    self._own_runners.append(self.runner)
                    await self.runner._start()
                browser, self.pw_page = await self.runner.run(
                    _find_page, self.runner.playwright, self.endpoint, self.target_id
                )
                self._own_browsers.append(browser)
                self.recoveries["reconnected"] += 1
                log.warning("Playwright was reconnected to %s to recover a stuck tab", self.endpoint)
        except Exception:
            log.exception("recovering the tab %s failed", self.target_id)
        finally:
            self._recovered = None
            done.set()

    # -- refs and evaluate ---------------------------------------------------------------------------

    async def map_refs(self) -> dict[str, PlaywrightRef]:
        """Playwright's ai-snapshot refs with the backendNodeIds our snapshot gives them (best effort).

        Also kept in ``tab.refs`` for :meth:`evaluate` by Playwright ref string.
        """

        async def snapshot(page: Any) -> str:
            return str(await page.aria_snapshot(mode="ai"))

        refs = parse_ai_snapshot(await self.run(snapshot))
        if self.page is not None:
            refs = map_refs(refs, await self.page.snapshot())
        self.refs = {ref.ref: ref for ref in refs}
        return self.refs

    async def evaluate(
        self, source: str, *args: Any, ref: PlaywrightRef | str, fallback: Fallback = "auto"
    ) -> Any:
        """Run function ``source`` with the element of a Playwright ref first, then ``args``.

        ``fallback``: "cdp" (our evaluate only), "playwright" (the element of Playwright's ``aria-ref``, if
        it still has the ref's role and name), or "auto": CDP, and Playwright when the ref has no
        backendNodeId or CDP attach was refused. Either way the caller's deadline bounds it.
        """
        if fallback not in FALLBACKS:
            raise ValueError(f"fallback must be one of {FALLBACKS}, not {fallback!r}")
        if isinstance(ref, str):
            if ref not in self.refs:
                raise StaleRefError(
                    f"unknown Playwright ref {ref!r}: call tab.map_refs() first", ref=ref, reason="unknown"
                )
            ref = self.refs[ref]
        reason = (
            f"CDP attach refused ({self.cdp_refused})"
            if self.page is None
            else "no backendNodeId"
            if ref.backend_node_id is None
            else None
        )
        if fallback == "cdp" or (fallback == "auto" and reason is None):
            if reason is not None or self.page is None or ref.backend_node_id is None:
                raise CDPUnavailable(f"cannot evaluate on {ref.ref} over CDP: {reason}")
            node = await self.page.resolve(f"node:{ref.backend_node_id}")
            if (node.role, node.name) != (ref.role, ref.name):
                raise StaleRefError(
                    f"Playwright ref {ref.ref} ({ref.role} {ref.name!r}) now names {node.role} "
                    f"{node.name!r}; call tab.map_refs() again",
                    ref=ref.ref,
                    reason="renamed",
                )
            return await evaluate_on(self.page, node, source, *args)
        self._metrics.fallback("playwright" if fallback == "playwright" else (reason or ""))
        return await self._evaluate_playwright(source, args, ref)

    async def _evaluate_playwright(self, source: str, args: tuple[Any, ...], ref: PlaywrightRef) -> Any:
        if ref.frame:
            raise StaleRefError(
                f"{ref.ref} is in a child frame: the Playwright fallback reaches main-frame refs only",
                ref=ref.ref,
                reason="unknown",
            )
        left = trio.current_effective_deadline() - trio.current_time()
        wait_ms = 0 if left == math.inf else max(1, int(left * 1000))
        expression = f"(el, args) => ({source}\n)(el, ...args)"

        async def call(page: Any) -> tuple[str, Any]:
            # Playwright's own ref pins the element its snapshot labelled; get_by_role(...).nth() would count
            # in another order (aria-owns moves elements in the snapshot, shadow roots come after the
            # light DOM). The role and exact name (also "": unnamed) check it still is what the ref named.
            # Counting first fails at once where evaluate would wait out the deadline for a match.
            pinned = page.locator(f"aria-ref={ref.ref}")
            locator = pinned.and_(page.get_by_role(ref.role, name=ref.name, exact=True))
            if await locator.count() == 1:
                return "", await locator.evaluate(expression, list(args), timeout=wait_ms)
            return ("renamed" if await pinned.count() else "removed"), None

        started = trio.current_time()
        stale, value = await self.run(call)
        if stale == "renamed" and ref.role == "generic":
            # The ai snapshot calls an element without a role of its own "generic"; get_by_role matches
            # only an explicit role="generic", so waiting for it would wait out the whole deadline.
            raise PlaywrightUnavailable(
                f"Playwright ref {ref.ref} is a generic element that Playwright's get_by_role does not match"
            )
        if stale:
            what = (
                f"no longer names a {ref.role} {ref.name!r}"
                if stale == "renamed"
                else f"({ref.role} {ref.name!r}) is gone, or Playwright took another snapshot since"
            )
            raise StaleRefError(
                f"Playwright ref {ref.ref} {what}; call tab.map_refs() again", ref=ref.ref, reason=stale
            )
        self._metrics.call(trio.current_time() - started)
        return value

    async def _close(self) -> None:
        for browser in self._own_browsers:
            with trio.move_on_after(2):
                try:
                    await self.runner.run(browser.close)
                except Exception as exc:
                    log.debug("closing a reconnected Playwright browser: %r", exc)
        for runner in self._own_runners:
            await runner.aclose()


@asynccontextmanager
async def attach(
    runner: PlaywrightRunner, pw_page: Any, endpoint: str, *, settings: Settings | None = None
) -> AsyncIterator[PlaywrightTab]:
    """This engine on the tab of Playwright page ``pw_page``, over a connection of its own to ``endpoint``.

    ``endpoint`` is the browser's DevTools address (``http://127.0.0.1:9222``): the one given to
    ``connect_over_cdp``, or the ``--remote-debugging-port`` a Playwright-launched Chromium was started
    with. If it cannot be reached or the tab refuses a second session, ``tab.page`` is None and evaluate by
    ref falls back to Playwright (``fallback="auto"``). Leaving the block detaches; the tab stays open.
    """
    with trio.fail_after((settings or DEFAULT_SETTINGS).attach_timeout):
        target_id = await runner.run(_target_id, pw_page)
    async with AsyncExitStack() as stack:
        page: Page | None = None
        refused: str | None = None
        try:
            kwargs = {"settings": settings} if settings is not None else {}
            browser = await stack.enter_async_context(connect(endpoint, **kwargs))
            page = await attach_page(browser, target_id)
        except (CDPError, OSError, trio.TooSlowError) as exc:
            refused = f"{type(exc).__name__}: {exc}"
            log.warning(
                "CDP attach to %s refused (%s); evaluate by ref will use Playwright", endpoint, refused
            )
        nursery = await stack.enter_async_context(trio.open_nursery())
        tab = PlaywrightTab(
            runner,
            pw_page,
            endpoint=endpoint,
            target_id=target_id,
            page=page,
            cdp_refused=refused,
            nursery=nursery,
        )
        try:
            yield tab
        finally:
            nursery.cancel_scope.cancel()
            with trio.CancelScope(shield=True):
                await tab._close()
