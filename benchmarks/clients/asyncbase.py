"""Async clients: a few primitives per framework, the scenarios written once on top of them.

A driver implements the primitives (a browser-level call, open/close a page session, evaluate, the full
decode call, a console flood, and ``gather`` in its loop's idiom). ``run_scenario`` only awaits driver
methods, so the same code runs under asyncio and under trio; ``AsyncClient`` puts a driver on its own
loop thread behind the blocking ``Client`` interface.
"""

from __future__ import annotations

import abc
import time
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any, ClassVar

from benchmarks.clients.base import Client, Env, LoopThread, Sample
from benchmarks.scenarios import BATCH_SIZE, EVALUATE, Kind, Scenario, console_flood_expression

Thunk = Callable[[], Awaitable[object]]
START_TIMEOUT_S = 90.0


class AsyncDriver(abc.ABC):
    """One framework's primitives. Every method runs on that framework's own loop."""

    @abc.abstractmethod
    async def open(self, env: Env) -> None:
        """Connect (or launch) and get ready for ``browser_call``."""

    @abc.abstractmethod
    async def close(self) -> None: ...

    def unsupported(self, scenario: Scenario) -> str | None:
        """Why the framework has no equivalent for ``scenario``, or None."""
        del scenario
        return None

    @abc.abstractmethod
    async def browser_call(self) -> object:
        """Browser.getVersion on the browser-level connection."""

    @abc.abstractmethod
    async def new_page(self, url: str) -> Any:
        """A page with an attached session, navigated to ``url`` and loaded."""

    @abc.abstractmethod
    async def close_page(self, page: Any) -> None: ...

    @abc.abstractmethod
    async def evaluate(self, page: Any, expression: str) -> object:
        """Runtime.evaluate on the page's session, the framework's usual way."""

    async def full_call(self, page: Any, method: str, params: dict[str, object]) -> tuple[object, int | None]:
        """The framework's own full call for a decode scenario: (result, response bytes if known)."""
        raise NotImplementedError(method, params, page)

    async def enable_console(self, page: Any) -> None:
        """Subscribe to the page's console events (Runtime.enable and whatever the framework needs)."""
        del page

    @abc.abstractmethod
    async def console_flood(self, page: Any, count: int, expression: str) -> int:
        """Evaluate ``expression`` (which logs ``count`` times); ns until the last event was delivered."""

    @abc.abstractmethod
    async def gather(self, thunks: Sequence[Thunk]) -> None:
        """Run every thunk concurrently in this loop and wait for all."""


async def open_pages(driver: AsyncDriver, scenario: Scenario, env: Env) -> list[Any]:
    """The pages ``scenario`` needs, opened concurrently."""
    url = env.big_page_url if scenario.big_page else "about:blank"
    pages: list[Any] = [None] * scenario.pages

    def opener(i: int) -> Thunk:
        async def go() -> None:
            pages[i] = await driver.new_page(url)

        return go

    await driver.gather([opener(i) for i in range(scenario.pages)])
    if scenario.kind is Kind.EVENTS:
        for page in pages:
            await driver.enable_console(page)
    return pages


async def close_pages(driver: AsyncDriver, pages: list[Any]) -> None:
    for page in pages:
        await driver.close_page(page)


async def run_scenario(driver: AsyncDriver, scenario: Scenario, pages: list[Any], size: int) -> Sample:
    """One measured run of ``scenario`` with ``size`` operations, written only against the driver."""
    clock = time.perf_counter_ns
    kind = scenario.kind
    if kind is Kind.BROWSER_ROUNDTRIP or kind is Kind.PAGE_ROUNDTRIP:
        lat: list[float] = []
        page = pages[0] if pages else None
        begin = clock()
        for _ in range(size):
            t0 = clock()
            if page is None:
                await driver.browser_call()
            else:
                await driver.evaluate(page, EVALUATE)
            lat.append((clock() - t0) / 1000)
        return Sample(lat, size, clock() - begin)
    if kind is Kind.BATCH:
        per_page = BATCH_SIZE // len(pages)
        thunks: list[Thunk] = [partial(driver.evaluate, p, EVALUATE) for p in pages for _ in range(per_page)]
        lat = []
        begin = clock()
        for _ in range(size):
            t0 = clock()
            await driver.gather(thunks)
            lat.append((clock() - t0) / 1000)
        return Sample(lat, size * len(thunks), clock() - begin)
    if kind is Kind.DECODE:
        lat = []
        nbytes: int | None = None
        for _ in range(size):
            t0 = clock()
            result, nbytes = await driver.full_call(pages[0], scenario.method, scenario.params_dict)
            t1 = clock()
            lat.append((t1 - t0) / 1000)
            del result  # freeing a large result is not part of the call
        return Sample(lat, size, int(sum(lat) * 1000), nbytes)
    if kind is Kind.EVENTS:
        elapsed = await driver.console_flood(pages[0], size, console_flood_expression(size))
        return Sample([elapsed / 1000], size, elapsed)
    if kind is Kind.FANOUT:
        lat = []

        def tab(page: Any) -> Thunk:
            async def go() -> None:
                for _ in range(size):
                    t0 = clock()
                    await driver.evaluate(page, EVALUATE)
                    lat.append((clock() - t0) / 1000)

            return go

        begin = clock()
        await driver.gather([tab(p) for p in pages])
        return Sample(lat, size * len(pages), clock() - begin)
    raise ValueError(f"not runnable: {scenario.name}")


class AsyncClient(Client):
    """A driver on its own loop thread, behind the blocking interface."""

    transport: ClassVar[str] = "websocket"

    def __init__(self) -> None:
        self._driver = self.make_driver()
        self._loop = self.make_loop()
        self._pages: list[Any] = []
        self._env: Env | None = None
        self._started = False

    @abc.abstractmethod
    def make_driver(self) -> AsyncDriver: ...

    @abc.abstractmethod
    def make_loop(self) -> LoopThread: ...

    def start(self, env: Env) -> None:
        self._env = env
        self._loop.start()
        self._started = True
        self._loop.call(self._driver.open, env, timeout=START_TIMEOUT_S)

    def unsupported(self, scenario: Scenario) -> str | None:
        return self._driver.unsupported(scenario)

    def setup(self, scenario: Scenario) -> None:
        assert self._env is not None
        self._pages = self._loop.call(open_pages, self._driver, scenario, self._env)

    def run(self, scenario: Scenario, size: int) -> Sample:
        return self._loop.call(run_scenario, self._driver, scenario, self._pages, size)

    def teardown(self, scenario: Scenario) -> None:
        pages, self._pages = self._pages, []
        if pages:
            self._loop.call(close_pages, self._driver, pages, timeout=60)

    def stop(self) -> None:
        if self._started:
            try:
                self._loop.call(self._driver.close, timeout=30)
            finally:
                self._loop.stop()
