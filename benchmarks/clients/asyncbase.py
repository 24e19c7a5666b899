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
from benchmarks.scenarios import (
    BATCH_SIZE,
    EVALUATE,
    Kind,
    Scenario,
    console_flood_expression,
    small_page_url,
)

Thunk = Callable[[], Awaitable[object]]
Body = Callable[[], Awaitable[None]]
START_TIMEOUT_S = 90.0


class AsyncDriver(abc.ABC):
    """One framework's primitives. Every method runs on that framework's own loop.

    The primitives of the newer scenarios (``cold_start`` .. ``under_flood``) raise NotImplementedError
    by default: a driver without them must say why in ``unsupported``.
    """

    env: Env | None = None  # set by AsyncClient.start

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

    def batch(self, pages: Sequence[Any], per_page: int, expression: str) -> Thunk:
        """One batch of the throughput scenarios: ``per_page`` Runtime.evaluate on each page, all in
        flight at once, the framework's usual way (here: one ``evaluate`` each, run concurrently)."""
        thunks: list[Thunk] = [partial(self.evaluate, p, expression) for p in pages for _ in range(per_page)]
        return partial(self.gather, thunks)

    async def cold_start(self, env: Env) -> tuple[int, int]:
        """One cold start on a fresh browser: (wall ns, this thread's CPU ns) from the launch (pipe) or the
        connect (websocket; the browser launched untimed) to the first Browser.getVersion reply. Stopping
        it again is not timed."""
        raise NotImplementedError(env)

    async def enable_page_events(self, page: Any) -> None:
        """Page.enable on the page's session (``navigate.load`` waits for Page.loadEventFired)."""
        raise NotImplementedError(page)

    async def navigate(self, page: Any, url: str) -> None:
        """Page.navigate to ``url``; return once the page's Page.loadEventFired has been delivered."""
        raise NotImplementedError(page, url)

    async def open_target(self) -> Any:
        """Target.createTarget(about:blank) and Target.attachToTarget(flatten=true): the session's handle."""
        raise NotImplementedError

    async def close_target(self, handle: Any) -> None:
        raise NotImplementedError(handle)

    async def under_flood(self, page: Any, body: Body) -> int:
        """Run ``body`` while the page floods console events to a subscriber of this client.

        Subscribe, start the page's emitter (``flood_start_expression``), wait for its first event, run
        ``body``, stop the emitter; the number of events delivered while ``body`` ran.
        """
        raise NotImplementedError(page, body)


async def open_pages(driver: AsyncDriver, scenario: Scenario, env: Env) -> list[Any]:
    """The pages ``scenario`` needs, opened concurrently."""
    url = env.big_page_url if scenario.big_page else "about:blank"
    pages: list[Any] = [None] * scenario.pages

    def opener(i: int) -> Thunk:
        async def go() -> None:
            pages[i] = await driver.new_page(url)

        return go

    await driver.gather([opener(i) for i in range(scenario.pages)])
    if scenario.kind in (Kind.EVENTS, Kind.FLOOD):
        for page in pages:
            await driver.enable_console(page)
    elif scenario.kind is Kind.NAVIGATE:
        for page in pages:
            await driver.enable_page_events(page)
    return pages


async def close_pages(driver: AsyncDriver, pages: list[Any]) -> None:
    for page in pages:
        await driver.close_page(page)


async def sequential(driver: AsyncDriver, page: Any, size: int) -> Sample:
    """``size`` sequential Browser.getVersion (no page) or Runtime.evaluate("1+1") on the page."""
    clock = time.perf_counter_ns
    lat: list[float] = []
    begin = clock()
    for _ in range(size):
        t0 = clock()
        if page is None:
            await driver.browser_call()
        else:
            await driver.evaluate(page, EVALUATE)
        lat.append((clock() - t0) / 1000)
    return Sample(lat, size, clock() - begin)


async def attach_many(driver: AsyncDriver, size: int) -> Sample:
    """``size`` targets created and attached at once, timed until all are; closed again untimed."""
    clock = time.perf_counter_ns
    handles: list[Any] = [None] * size

    def opener(i: int) -> Thunk:
        async def go() -> None:
            handles[i] = await driver.open_target()

        return go

    cpu0 = time.thread_time_ns()
    begin = clock()
    try:
        await driver.gather([opener(i) for i in range(size)])
        elapsed = clock() - begin
        cpu = time.thread_time_ns() - cpu0
    finally:
        await driver.gather([partial(driver.close_target, h) for h in handles if h is not None])
    return Sample([elapsed / 1000], size, elapsed, cpu_ns=cpu)


async def under_flood(driver: AsyncDriver, page: Any, size: int) -> Sample:
    """Sequential evaluates on a page flooding console events; CPU and events over the timed part only."""
    got: list[Sample] = []
    cpu: list[int] = []

    async def body() -> None:
        cpu0 = time.thread_time_ns()
        got.append(await sequential(driver, page, size))
        cpu.append(time.thread_time_ns() - cpu0)

    events = await driver.under_flood(page, body)
    sample = got[0]
    sample.events = events
    sample.cpu_ns = cpu[0]
    return sample


async def run_scenario(driver: AsyncDriver, scenario: Scenario, pages: list[Any], size: int) -> Sample:
    """One measured run of ``scenario`` with ``size`` operations, written only against the driver."""
    clock = time.perf_counter_ns
    kind = scenario.kind
    if kind is Kind.BROWSER_ROUNDTRIP or kind is Kind.PAGE_ROUNDTRIP:
        return await sequential(driver, pages[0] if pages else None, size)
    if kind is Kind.COLDSTART:
        assert driver.env is not None
        lat: list[float] = []
        used = 0
        for _ in range(size):
            elapsed, cpu = await driver.cold_start(driver.env)
            lat.append(elapsed / 1000)
            used += cpu
        return Sample(lat, size, int(sum(lat) * 1000), cpu_ns=used)
    if kind is Kind.NAVIGATE:
        assert driver.env is not None
        url = small_page_url(driver.env.page_server)
        lat = []
        begin = clock()
        for _ in range(size):
            t0 = clock()
            await driver.navigate(pages[0], url)
            lat.append((clock() - t0) / 1000)
        return Sample(lat, size, clock() - begin)
    if kind is Kind.ATTACH:
        return await attach_many(driver, size)
    if kind is Kind.FLOOD:
        return await under_flood(driver, pages[0], size)
    if kind is Kind.BATCH:
        per_page = BATCH_SIZE // len(pages)
        batch = driver.batch(pages, per_page, EVALUATE)
        lat = []
        begin = clock()
        for _ in range(size):
            t0 = clock()
            await batch()
            lat.append((clock() - t0) / 1000)
        return Sample(lat, size * per_page * len(pages), clock() - begin)
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
        self._driver.env = env
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
