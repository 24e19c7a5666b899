"""This project's engine, over the websocket (the shared browser) and over a pipe (its own browser).

Written against the engine's planned public API::

    async with connect("http://127.0.0.1:PORT") as browser:   # or: async with launch(transport="pipe")
        await browser.session.execute(cdp.browser.get_version())
        page = await browser.new_page(url)                      # None: about:blank
        await page.session.execute(cdp.runtime.evaluate(expression="1+1"))
        await page.session.execute_raw("Runtime.evaluate", {"expression": "1+1"})  # -> dict
        async with page.session.listen(cdp.runtime.ConsoleAPICalled, buffer_size=100_000) as events:
            async for ev in events: ...

``engine`` and ``cdp`` are imported by name at start: until they exist (or when a name above is missing)
the client is reported as skipped with the import error. Measured calls use the typed path
(``execute(cdp....)``), as a user would; page setup uses ``execute_raw`` so it depends on as little of the
typed surface as possible. The pipe client launches through ``launch(transport="pipe")`` with the suite's
executable and flags when ``launch`` accepts ``executable=`` / ``args=``. Everything runs in ``trio.run``
on the client's own thread; the browser's ``async with`` is entered by the start call and exited by the
stop call, in the same task.
"""

from __future__ import annotations

import importlib
import inspect
import time
from collections.abc import Sequence
from typing import Any, ClassVar

import trio

from benchmarks import chromium
from benchmarks.clients.asyncbase import AsyncClient, AsyncDriver, Body, Thunk
from benchmarks.clients.base import Env, LoopThread, SkipClient, TrioThread
from benchmarks.scenarios import (
    Kind,
    Scenario,
    flood_start_expression,
    flood_stop_expression,
    ready_expression,
)

READY_TIMEOUT_S = 30.0
ALTERNATIVE_WEBSOCKETS = ("trio-websocket", "wsproto")
"""Websocket implementations other than the engine's own, run under the engine's connection layer."""
EVENT_BUFFER = 100_000


def _launch_options(launch: Any, env: Env) -> dict[str, Any]:
    """The same executable and flags as every other launched Chromium, for the options ``launch`` has."""
    try:
        accepted = inspect.signature(launch).parameters
    except (TypeError, ValueError):
        return {}
    options: dict[str, Any] = {}
    if "executable" in accepted:
        options["executable"] = env.chromium
    if "args" in accepted:
        # The engine adds its own headless flag; the rest are the suite's common flags.
        options["args"] = [flag for flag in env.chromium_args if flag != "--headless"]
    return options


def typed_command(cdp: Any, method: str, params: dict[str, Any]) -> Any:
    """The typed command for the large-reply scenarios, from their wire params."""
    if method == "Page.captureScreenshot":
        clip = params.get("clip")
        return cdp.page.capture_screenshot(
            format_=params.get("format"), clip=None if clip is None else cdp.page.Viewport(**clip)
        )
    if method == "Runtime.evaluate":
        return cdp.runtime.evaluate(
            expression=params["expression"], return_by_value=params.get("returnByValue")
        )
    raise ValueError(method)


class EngineDriver(AsyncDriver):
    def __init__(
        self,
        transport: str,
        loop: TrioThread,
        *,
        default_subscription: bool = False,
        reader_only: bool = False,
        task_per_command: bool = False,
        gather: bool = True,
    ) -> None:
        self._transport = transport
        self._gather = gather
        self._task_per_command = task_per_command
        self._reader_only = reader_only
        self._default_subscription = default_subscription
        self._loop = loop
        self._browser: Any = None
        self.cdp: Any = None
        self._decoders: dict[str, Any] = {}
        self._launch: Any = None
        self._connect: Any = None

    async def open(self, env: Env) -> None:
        try:
            engine = importlib.import_module("engine")
            cdp = importlib.import_module("cdp")
            launch, connect = engine.launch, engine.connect
            # Touch everything the scenarios use so a missing piece skips now, not mid-run.
            cdp.browser.get_version, cdp.runtime.evaluate, cdp.runtime.enable, cdp.runtime.ConsoleAPICalled  # noqa: B018
        except (ImportError, AttributeError) as exc:
            raise SkipClient(f"engine not importable yet ({type(exc).__name__}: {exc})") from exc
        self.cdp = cdp
        self._launch, self._connect = launch, connect
        # Settings.gather off: the reader reads every flood as it comes (the choice re-measured).
        settings = {} if self._gather else {"settings": engine.Settings(gather=0)}
        if self._transport == "pipe":
            manager = launch(transport="pipe", **_launch_options(launch, env), **settings)
        elif self._transport in ALTERNATIVE_WEBSOCKETS:
            try:
                ws_transports = importlib.import_module("benchmarks.clients.ws_transports")
            except ImportError as exc:
                raise SkipClient(f"{self._transport} not importable ({exc})") from exc
            manager = ws_transports.connect_over(self._transport, env.ws_url)
        else:
            manager = connect(env.http_url or env.ws_url, **settings)
        self._browser = await self._loop.exit_stack.enter_async_context(manager)
        if self._reader_only:
            self._browser.connection.lead_when_alone = False

    async def close(self) -> None:
        self._browser = None
        await self._loop.exit_stack.aclose()

    async def browser_call(self) -> object:
        return await self._browser.session.execute(self.cdp.browser.get_version())

    async def new_page(self, url: str) -> Any:
        # new_page(url) navigates and waits for the load event; the poll below is a cheap safety net.
        page = await self._browser.new_page(None if url == "about:blank" else url)
        session = page.session
        with trio.fail_after(READY_TIMEOUT_S):
            while True:
                res = await session.execute_raw(
                    "Runtime.evaluate", {"expression": ready_expression(url), "returnByValue": True}
                )
                if res["result"].get("value") is True:
                    return page
                await trio.sleep(0.02)

    async def close_page(self, page: Any) -> None:
        close = getattr(page, "close", None)
        if close is not None:
            await close()
        else:
            await self._browser.session.execute_raw("Target.closeTarget", {"targetId": page.target_id})

    async def evaluate(self, page: Any, expression: str) -> object:
        return await page.session.execute(self.cdp.runtime.evaluate(expression=expression))

    def _command(self, method: str, params: dict[str, object]) -> Any:
        if method == "Accessibility.getFullAXTree":
            return self.cdp.accessibility.get_full_ax_tree(**params)
        if method == "DOM.getDocument":
            return self.cdp.dom.get_document(**params)
        return typed_command(self.cdp, method, params)

    async def full_call(self, page: Any, method: str, params: dict[str, object]) -> tuple[object, int | None]:
        return await page.session.execute(self._command(method, params)), None

    async def enable_console(self, page: Any) -> None:
        await page.session.execute(self.cdp.runtime.enable())

    async def console_flood(self, page: Any, count: int, expression: str) -> int:
        clock = time.perf_counter_ns
        session = page.session
        seen = 0
        end = 0
        if self._default_subscription:
            # As a user writes it: the default buffer (1,024 events) and overflow policy ("error").
            subscription = session.listen(self.cdp.runtime.ConsoleAPICalled)
        else:
            subscription = session.listen(
                self.cdp.runtime.ConsoleAPICalled, buffer_size=max(EVENT_BUFFER, count)
            )
        async with subscription as events, trio.open_nursery() as nursery:
            begin = clock()
            nursery.start_soon(self.evaluate, page, expression)
            async for _event in events:
                seen += 1
                if seen == count:
                    end = clock()
                    break
        return end - begin

    async def gather(self, thunks: Sequence[Thunk]) -> None:
        async with trio.open_nursery() as nursery:
            for thunk in thunks:
                nursery.start_soon(thunk)

    def batch(self, pages: Sequence[Any], per_page: int, expression: str) -> Thunk:
        if self._task_per_command:
            return super().batch(pages, per_page, expression)
        evaluate = self.cdp.runtime.evaluate
        browser = self._browser

        async def one_batch() -> None:
            if len(pages) == 1:
                session = pages[0].session
                await session.execute_all(*[evaluate(expression=expression) for _ in range(per_page)])
                return
            # Across sessions in one write and one task, as the floors do (a nursery with a task per page
            # costs trio's spawn and wake-up per page: 14.1 against 11.1 us of client CPU per command).
            await browser.execute_all(
                *[(page.session, evaluate(expression=expression)) for page in pages for _ in range(per_page)]
            )

        return one_batch

    def unsupported(self, scenario: Scenario) -> str | None:
        if scenario.kind is Kind.COLDSTART and self._transport in ALTERNATIVE_WEBSOCKETS:
            return "its connect is the suite's own wrapper (ws_transports), not a way users connect"
        return None

    async def cold_start(self, env: Env) -> tuple[int, int]:
        clock = time.perf_counter_ns
        cdp = self.cdp
        fresh: chromium.WebSocketBrowser | None = None
        if self._transport == "pipe":
            manager = self._launch(transport="pipe", **_launch_options(self._launch, env))
        else:
            fresh = await trio.to_thread.run_sync(chromium.launch_websocket, env.chromium, env.chromium_args)
            manager = self._connect(fresh.ws_url)
        try:
            cpu0 = time.thread_time_ns()
            t0 = clock()
            async with manager as browser:
                await browser.session.execute(cdp.browser.get_version())
                elapsed = clock() - t0
                cpu = time.thread_time_ns() - cpu0
        finally:
            if fresh is not None:
                await trio.to_thread.run_sync(fresh.stop)
        return elapsed, cpu

    async def enable_page_events(self, page: Any) -> None:
        await page.session.execute(self.cdp.page.enable())

    async def navigate(self, page: Any, url: str) -> None:
        session = page.session
        async with session.listen(self.cdp.page.LoadEventFired) as loads:
            result = await session.execute(self.cdp.page.navigate(url=url))
            if result.error_text:
                raise RuntimeError(f"Page.navigate: {result.error_text}")
            await loads.receive()

    async def open_target(self) -> Any:
        target = self.cdp.target
        session = self._browser.session
        created = await session.execute(target.create_target(url="about:blank"))
        await session.execute(target.attach_to_target(target_id=created.target_id, flatten=True))
        return created.target_id

    async def close_target(self, handle: Any) -> None:
        await self._browser.session.execute(self.cdp.target.close_target(target_id=handle))

    async def under_flood(self, page: Any, body: Body) -> int:
        session = page.session
        seen = 0
        first = trio.Event()
        if self._default_subscription:
            subscription = session.listen(self.cdp.runtime.ConsoleAPICalled)
        else:
            subscription = session.listen(self.cdp.runtime.ConsoleAPICalled, buffer_size=EVENT_BUFFER)

        async def consume(events: Any) -> None:
            nonlocal seen
            async for _event in events:
                seen += 1
                first.set()

        async with subscription as events, trio.open_nursery() as nursery:
            nursery.start_soon(consume, events)
            await self.evaluate(page, flood_start_expression())
            await first.wait()
            before = seen
            await body()
            during = seen - before
            await self.evaluate(page, flood_stop_expression())
            nursery.cancel_scope.cancel()
        return during


class _EngineClient(AsyncClient):
    engine_transport: ClassVar[str]
    default_subscription: ClassVar[bool] = False
    reader_only: ClassVar[bool] = False
    task_per_command: ClassVar[bool] = False
    gather: ClassVar[bool] = True

    def __init__(self) -> None:
        self._trio = TrioThread(self.name)
        super().__init__()

    def make_driver(self) -> AsyncDriver:
        return EngineDriver(
            self.engine_transport,
            self._trio,
            default_subscription=self.default_subscription,
            reader_only=self.reader_only,
            task_per_command=self.task_per_command,
            gather=self.gather,
        )

    def make_loop(self) -> LoopThread:
        return self._trio

    def start(self, env: Env) -> None:
        try:
            super().start(env)
        except SkipClient:
            raise
        except Exception as exc:
            raise SkipClient(f"engine failed to start ({type(exc).__name__}: {exc})") from exc


class EngineWebSocket(_EngineClient):
    name: ClassVar[str] = "engine.ws"
    transport: ClassVar[str] = "websocket"
    engine_transport: ClassVar[str] = "websocket"


class EnginePipe(_EngineClient):
    name: ClassVar[str] = "engine.pipe"
    transport: ClassVar[str] = "pipe"
    own_browser = True
    engine_transport: ClassVar[str] = "pipe"


class EngineTrioWebSocket(_EngineClient):
    """The engine's connection layer over the trio-websocket package (see ``ws_transports``)."""

    name: ClassVar[str] = "engine.ws.trio-websocket"
    transport: ClassVar[str] = "websocket"
    engine_transport: ClassVar[str] = "trio-websocket"


class EngineWsproto(_EngineClient):
    """The engine's connection layer over wsproto's sans-I/O codec (see ``ws_transports``)."""

    name: ClassVar[str] = "engine.ws.wsproto"
    transport: ClassVar[str] = "websocket"
    engine_transport: ClassVar[str] = "wsproto"


class _EventsOnly(_EngineClient):
    """A variant that differs from ``same_as`` only where events flow: run in the events scenarios only."""

    same_as: ClassVar[str]

    def unsupported(self, scenario: Scenario) -> str | None:
        if scenario.kind in (Kind.EVENTS, Kind.FLOOD):
            return None
        return f"the same as {self.same_as} outside the events scenarios"


class EngineWebSocketDefaults(_EventsOnly):
    """``engine.ws`` with the default subscription settings (events scenarios only)."""

    name: ClassVar[str] = "engine.ws.defaults"
    transport: ClassVar[str] = "websocket"
    engine_transport: ClassVar[str] = "websocket"
    same_as: ClassVar[str] = "engine.ws"
    default_subscription: ClassVar[bool] = True


class EngineWebSocketTasks(_EngineClient):
    """``engine.ws`` with a task per command (a nursery of ``execute`` calls) in the throughput scenarios,
    where ``engine.ws`` sends the whole batch with one ``execute_all`` (``Browser.execute_all`` across
    sessions)."""

    name: ClassVar[str] = "engine.ws.tasks"
    transport: ClassVar[str] = "websocket"
    engine_transport: ClassVar[str] = "websocket"
    task_per_command: ClassVar[bool] = True

    def unsupported(self, scenario: Scenario) -> str | None:
        if scenario.kind is Kind.BATCH:
            return None
        return "the same as engine.ws outside the throughput scenarios"


class EngineWebSocketReaderOnly(_EngineClient):
    """``engine.ws`` with leader/follower reading off: every reply goes through the reader task."""

    name: ClassVar[str] = "engine.ws.reader-only"
    transport: ClassVar[str] = "websocket"
    engine_transport: ClassVar[str] = "websocket"
    reader_only: ClassVar[bool] = True


class EnginePipeReaderOnly(_EngineClient):
    """``engine.pipe`` with leader/follower reading off."""

    name: ClassVar[str] = "engine.pipe.reader-only"
    transport: ClassVar[str] = "pipe"
    own_browser = True
    engine_transport: ClassVar[str] = "pipe"
    reader_only: ClassVar[bool] = True


class EngineWebSocketNoGather(_EventsOnly):
    """``engine.ws`` with Settings.gather off: an event flood is read as it comes, a wake-up per read."""

    name: ClassVar[str] = "engine.ws.nogather"
    transport: ClassVar[str] = "websocket"
    engine_transport: ClassVar[str] = "websocket"
    same_as: ClassVar[str] = "engine.ws"
    gather: ClassVar[bool] = False


class EnginePipeNoGather(_EventsOnly):
    """``engine.pipe`` with Settings.gather off."""

    name: ClassVar[str] = "engine.pipe.nogather"
    transport: ClassVar[str] = "pipe"
    own_browser = True
    engine_transport: ClassVar[str] = "pipe"
    same_as: ClassVar[str] = "engine.pipe"
    gather: ClassVar[bool] = False
