"""Playwright on an asyncio loop of its own thread, driven from trio without ever blocking it.

Playwright is asyncio. A :class:`PlaywrightRunner` owns a daemon thread running an asyncio loop with
Playwright started in it; ``await runner.run(fn, *args)`` schedules ``fn(playwright, *args)`` there and
waits for it in trio, parked (no thread of trio's is blocked). When the caller's deadline comes first, the
asyncio task is cancelled and the trio caller returns at once, whatever that loop is doing, even if a
synchronous call has it blocked.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import trio

log = logging.getLogger("engine.playwright")

T = TypeVar("T")

START_LIMIT = 30.0
"""Seconds for Playwright's driver to start (about 0.9 s on this machine)."""

STOP_LIMIT = 5.0
"""Seconds for Playwright to stop when the runner closes; a loop still stuck then is abandoned."""


class PlaywrightRunner:
    """An asyncio loop on a thread of its own, with Playwright started in it (``open_runner()``).

    Everything that touches Playwright objects goes through :meth:`run`; the objects belong to this loop.
    """

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._main, name="engine-playwright", daemon=True)
        self._manager: Any = None
        self.playwright: Any = None
        """The started ``playwright.async_api.Playwright`` (use it only inside :meth:`run`)."""
        self.abandoned = False

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    def submit(self, fn: Callable[..., Awaitable[T]], *args: Any) -> concurrent.futures.Future[T]:
        """Schedule ``fn(*args)`` on the loop; never blocks (the loop may be busy or stuck)."""

        async def call() -> T:
            return await fn(*args)

        return asyncio.run_coroutine_threadsafe(call(), self._loop)

    async def run(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        """``await fn(*args)`` on the Playwright loop, bounded by the caller's trio deadline.

        On cancellation the asyncio task is cancelled and this returns at once; the loop thread may take
        longer to notice (a synchronous call blocks it), but the trio thread never waits for it.
        """
        future = self.submit(fn, *args)
        token = trio.lowlevel.current_trio_token()
        done = trio.Event()

        def wake(_: concurrent.futures.Future[T]) -> None:
            with contextlib.suppress(trio.RunFinishedError):
                token.run_sync_soon(done.set)

        future.add_done_callback(wake)
        try:
            await done.wait()
        except trio.Cancelled:
            future.cancel()
            raise
        return future.result()

    async def responsive(self, within: float) -> bool:
        """The loop runs a trivial task within ``within`` seconds (it is not blocked)."""
        with trio.move_on_after(within):
            await self.run(asyncio.sleep, 0)
            return True
        return False

    async def _start(self) -> None:
        self._thread.start()

        async def start() -> None:
            from playwright.async_api import async_playwright  # noqa: PLC0415 (lazily: only when used)

            self._manager = async_playwright()
            self.playwright = await self._manager.start()

        with trio.fail_after(START_LIMIT):
            await self.run(start)

    async def aclose(self) -> None:
        """Stop Playwright and the loop; a loop stuck past ``STOP_LIMIT`` is left to its daemon thread."""
        with trio.CancelScope(shield=True), trio.move_on_after(STOP_LIMIT) as scope:
            if self._manager is not None:
                try:
                    await self.run(self._manager.__aexit__, None, None, None)
                except Exception as exc:
                    log.debug("Playwright did not stop cleanly: %r", exc)
        if scope.cancelled_caught:
            log.warning("the Playwright loop did not stop within %s s; its thread is abandoned", STOP_LIMIT)
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        with trio.CancelScope(shield=True), trio.move_on_after(STOP_LIMIT):
            await trio.to_thread.run_sync(self._thread.join, STOP_LIMIT, abandon_on_cancel=True)
        if not self._thread.is_alive():
            self._loop.close()

    def abandon(self) -> None:
        """Stop routing calls here: the loop is stuck. Nothing of it is stopped, since a browser this
        Playwright launched would die with it; ``aclose()`` (the end of ``open_runner``) still stops it."""
        self.abandoned = True


@asynccontextmanager
async def open_runner() -> AsyncIterator[PlaywrightRunner]:
    """Start Playwright on a thread and loop of its own for the duration of the block."""
    runner = PlaywrightRunner()
    try:
        await runner._start()
        yield runner
    finally:
        await runner.aclose()
