"""Playwright (async API) attached to the shared browser with ``chromium.connect_over_cdp``.

Two clients, each with its own Playwright driver process and asyncio thread:

* "playwright.cdp": raw CDP through Playwright's CDPSession (``context.new_cdp_session(page)`` for page
  commands, ``browser.new_browser_cdp_session()`` for browser-level ones). Every message crosses
  Python -> Playwright's node driver -> Chromium and back.
* "playwright.page": Playwright's own page API where it has an equivalent (``page.evaluate``, the
  ``console`` event); no equivalent means skipped, never zero.

A browser attached with connect_over_cdp auto-attaches to every page in it, the other clients' pages
included, and instruments each (Runtime.enable, Network.enable, ...): its node driver then processes
their events too. Measured here, that halved the other clients' console event rate. So by default each
Playwright client launches a Chromium of its own (same binary, same flags, over a websocket);
``--playwright-shared`` (or ``--connect``) attaches it to the shared browser instead, as a check.
"""

from __future__ import annotations

import asyncio
import time
from functools import partial
from typing import Any, ClassVar

from benchmarks import chromium
from benchmarks.clients.asyncbase import AsyncDriver, Body
from benchmarks.clients.asyncio_driver import (
    AsyncioClient,
    AsyncioDriver,
    Handler,
    Subscribe,
    Unsubscribe,
    count_during,
    time_flood,
)
from benchmarks.clients.base import Env, SkipClient
from benchmarks.scenarios import Kind, Scenario


def _listener(emitter: Any, event: str) -> tuple[Subscribe, Unsubscribe]:
    """Subscribe and unsubscribe a handler of ``event`` on a Playwright page or CDPSession (``on`` and
    ``remove_listener``, synchronous there)."""

    async def on(handler: Handler) -> Handler:
        emitter.on(event, handler)
        return handler

    async def off(handler: Handler) -> None:
        emitter.remove_listener(event, handler)

    return on, off


class _PlaywrightDriver(AsyncioDriver):
    def __init__(self, *, pipe: bool = False) -> None:
        self._pipe = pipe
        self._pw: Any = None
        self._browser: Any = None
        self._context: Any = None
        self._own: chromium.WebSocketBrowser | None = None

    async def open(self, env: Env) -> None:
        try:
            from playwright.async_api import async_playwright
        except ImportError as exc:
            raise SkipClient(f"playwright is not installed ({exc})") from exc
        if self._pipe:
            # How most Playwright users run it: launch() drives the browser over its own pipe.
            self._pw = await async_playwright().start()
            args = [flag for flag in env.chromium_args if flag != "--headless"]
            self._browser = await self._pw.chromium.launch(executable_path=env.chromium, args=args)
            self._context = await self._browser.new_context()
            return
        endpoint = env.http_url or env.ws_url
        if env.isolate_playwright and env.shared:
            self._own = await asyncio.to_thread(chromium.launch_websocket, env.chromium, env.chromium_args)
            endpoint = self._own.http_url
        self._pw = await async_playwright().start()
        self._browser = await self._pw.chromium.connect_over_cdp(endpoint)
        contexts = self._browser.contexts
        self._context = contexts[0] if contexts else await self._browser.new_context()

    async def close(self) -> None:
        if self._browser is not None:
            await self._browser.close()
            self._browser = None
        if self._pw is not None:
            await self._pw.stop()
            self._pw = None
        if self._own is not None:
            await asyncio.to_thread(self._own.stop)
            self._own = None

    async def _new_pw_page(self, url: str) -> Any:
        page = await self._context.new_page()
        if url != "about:blank":
            await page.goto(url, wait_until="load")
        return page


class PlaywrightCdpDriver(_PlaywrightDriver):
    def __init__(self, *, pipe: bool = False) -> None:
        super().__init__(pipe=pipe)
        self._browser_session: Any = None

    async def open(self, env: Env) -> None:
        await super().open(env)
        self._browser_session = await self._browser.new_browser_cdp_session()

    async def browser_call(self) -> object:
        return await self._browser_session.send("Browser.getVersion")

    async def new_page(self, url: str) -> tuple[Any, Any]:
        page = await self._new_pw_page(url)
        return page, await self._context.new_cdp_session(page)

    async def close_page(self, page: tuple[Any, Any]) -> None:
        await page[1].detach()
        await page[0].close()

    async def evaluate(self, page: tuple[Any, Any], expression: str) -> object:
        return await page[1].send("Runtime.evaluate", {"expression": expression})

    async def full_call(
        self, page: tuple[Any, Any], method: str, params: dict[str, object]
    ) -> tuple[object, int | None]:
        return await page[1].send(method, params or None), None

    async def enable_console(self, page: tuple[Any, Any]) -> None:
        await page[1].send("Runtime.enable")

    async def console_flood(self, page: tuple[Any, Any], count: int, expression: str) -> int:
        on, off = _listener(page[1], "Runtime.consoleAPICalled")
        return await time_flood(count, on, off, partial(self.evaluate, page, expression))

    async def cold_start(self, env: Env) -> tuple[int, int]:
        """``chromium.launch`` (pipe) or ``connect_over_cdp`` (a fresh browser launched untimed), then
        Browser.getVersion on a browser CDP session. The Playwright driver process is already running,
        as the Node peers' process is."""
        fresh: chromium.WebSocketBrowser | None = None
        if not self._pipe:
            fresh = await asyncio.to_thread(chromium.launch_websocket, env.chromium, env.chromium_args)
        browser: Any = None
        try:
            cpu0 = time.thread_time_ns()
            t0 = time.perf_counter_ns()
            if fresh is None:
                args = [flag for flag in env.chromium_args if flag != "--headless"]
                browser = await self._pw.chromium.launch(executable_path=env.chromium, args=args)
            else:
                browser = await self._pw.chromium.connect_over_cdp(fresh.ws_url)
            session = await browser.new_browser_cdp_session()
            await session.send("Browser.getVersion")
            elapsed = time.perf_counter_ns() - t0
            cpu = time.thread_time_ns() - cpu0
        finally:
            if browser is not None:
                await browser.close()
            if fresh is not None:
                await asyncio.to_thread(fresh.stop)
        return elapsed, cpu

    async def enable_page_events(self, page: tuple[Any, Any]) -> None:
        await page[1].send("Page.enable")

    async def navigate(self, page: tuple[Any, Any], url: str) -> None:
        loaded: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def on_load(params: object) -> None:
            if not loaded.done():
                loaded.set_result(None)

        session = page[1]
        session.on("Page.loadEventFired", on_load)
        try:
            result = await session.send("Page.navigate", {"url": url})
            if result.get("errorText"):
                raise RuntimeError(f"Page.navigate: {result['errorText']}")
            await loaded
        finally:
            session.remove_listener("Page.loadEventFired", on_load)

    async def open_target(self) -> str:
        send = self._browser_session.send
        target: str = (await send("Target.createTarget", {"url": "about:blank"}))["targetId"]
        await send("Target.attachToTarget", {"targetId": target, "flatten": True})
        return target

    async def close_target(self, handle: str) -> None:
        await self._browser_session.send("Target.closeTarget", {"targetId": handle})

    async def under_flood(self, page: tuple[Any, Any], body: Body) -> int:
        on, off = _listener(page[1], "Runtime.consoleAPICalled")
        return await count_during(on, off, partial(self.evaluate, page), body)


class PlaywrightPageDriver(_PlaywrightDriver):
    def unsupported(self, scenario: Scenario) -> str | None:
        if scenario.kind is Kind.BROWSER_ROUNDTRIP:
            return "no equivalent: browser.version is cached, it sends nothing"
        if scenario.kind is Kind.DECODE:
            return "no equivalent call in the page API"
        if scenario.kind is Kind.COLDSTART:
            return "the same launch or connect as playwright.cdp; the page API has no Browser.getVersion"
        return None

    async def browser_call(self) -> object:
        raise NotImplementedError

    async def new_page(self, url: str) -> Any:
        return await self._new_pw_page(url)

    async def close_page(self, page: Any) -> None:
        await page.close()

    async def evaluate(self, page: Any, expression: str) -> object:
        return await page.evaluate(expression)

    async def console_flood(self, page: Any, count: int, expression: str) -> int:
        on, off = _listener(page, "console")
        return await time_flood(count, on, off, partial(page.evaluate, expression))

    async def enable_page_events(self, page: Any) -> None:
        del page  # page.goto follows the load event by itself

    async def navigate(self, page: Any, url: str) -> None:
        await page.goto(url, wait_until="load")

    async def open_target(self) -> Any:
        """``context.new_page()``: creates the target, attaches and instruments it (its page API's way)."""
        return await self._context.new_page()

    async def close_target(self, handle: Any) -> None:
        await handle.close()

    async def under_flood(self, page: Any, body: Body) -> int:
        on, off = _listener(page, "console")
        return await count_during(on, off, partial(self.evaluate, page), body)


class _PlaywrightClient(AsyncioClient):
    def start(self, env: Env) -> None:
        self.own_browser = env.isolate_playwright
        super().start(env)


class PlaywrightCdp(_PlaywrightClient):
    name: ClassVar[str] = "playwright.cdp"

    def make_driver(self) -> AsyncDriver:
        return PlaywrightCdpDriver()


class PlaywrightPage(_PlaywrightClient):
    name: ClassVar[str] = "playwright.page"

    def make_driver(self) -> AsyncDriver:
        return PlaywrightPageDriver()


class PlaywrightPipe(AsyncioClient):
    """Playwright's CDPSession on a browser it launched itself (``chromium.launch``: its pipe)."""

    name: ClassVar[str] = "playwright.pipe"
    transport: ClassVar[str] = "pipe"
    own_browser = True

    def make_driver(self) -> AsyncDriver:
        return PlaywrightCdpDriver(pipe=True)
