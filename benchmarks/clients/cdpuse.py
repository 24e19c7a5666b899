"""cdp-use (browser-use's generated asyncio client) on the shared browser, in its own asyncio thread.

Calls go through its typed library (``client.send.Runtime.evaluate(params=..., session_id=...)``), which is
``send_raw`` plus a ``cast``: results are the decoded JSON dicts. Events go to one registered callback
per method (``client.register.Runtime.consoleAPICalled``).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, ClassVar

from benchmarks.clients.asyncbase import AsyncDriver, Body
from benchmarks.clients.asyncio_driver import AsyncioClient, AsyncioDriver, websocket_cold_start
from benchmarks.clients.base import Env, SkipClient
from benchmarks.scenarios import flood_start_expression, flood_stop_expression, ready_expression

READY_TIMEOUT_S = 30.0


class CdpUseDriver(AsyncioDriver):
    def __init__(self, *, compression: bool = True) -> None:
        self._client: Any = None
        self._compression = compression

    async def open(self, env: Env) -> None:
        try:
            import cdp_use.client  # noqa: F401 -- only whether it is installed
        except ImportError as exc:
            raise SkipClient(f"cdp-use is not installed ({exc})") from exc
        self._client = await self._start(env.ws_url)

    async def _start(self, ws_url: str) -> Any:
        from cdp_use.client import CDPClient

        client: Any = CDPClient(ws_url)
        if self._compression:
            # Its default: websockets negotiates permessage-deflate, and Chromium accepts it.
            await client.start()
        else:
            # cdp-use has no option for it: connect as its start() does, with compression=None.
            import websockets

            client.ws = await websockets.connect(ws_url, max_size=client.max_ws_frame_size, compression=None)
            client._message_handler_task = asyncio.create_task(client._handle_messages())
        return client

    async def close(self) -> None:
        if self._client is not None:
            await self._client.stop()
            self._client = None

    async def browser_call(self) -> object:
        return await self._client.send.Browser.getVersion()

    async def new_page(self, url: str) -> tuple[str, str]:
        send = self._client.send
        target = (await send.Target.createTarget(params={"url": url}))["targetId"]
        attached = await send.Target.attachToTarget(params={"targetId": target, "flatten": True})
        session: str = attached["sessionId"]
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            res = await send.Runtime.evaluate(
                params={"expression": ready_expression(url), "returnByValue": True}, session_id=session
            )
            if res["result"].get("value") is True:
                return target, session
            if time.monotonic() > deadline:
                raise TimeoutError(f"page did not load: {url}")
            await asyncio.sleep(0.02)

    async def close_page(self, page: tuple[str, str]) -> None:
        await self._client.send.Target.closeTarget(params={"targetId": page[0]})

    async def evaluate(self, page: tuple[str, str], expression: str) -> object:
        return await self._client.send.Runtime.evaluate(params={"expression": expression}, session_id=page[1])

    async def full_call(
        self, page: tuple[str, str], method: str, params: dict[str, object]
    ) -> tuple[object, int | None]:
        domain, command = method.split(".")
        call = getattr(getattr(self._client.send, domain), command)
        return await call(params=params or None, session_id=page[1]), None

    async def enable_console(self, page: tuple[str, str]) -> None:
        await self._client.send.Runtime.enable(session_id=page[1])

    async def console_flood(self, page: tuple[str, str], count: int, expression: str) -> int:
        clock = time.perf_counter_ns
        done: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        seen = 0
        session = page[1]

        def on_console(event: object, session_id: str | None) -> None:
            nonlocal seen
            if session_id == session:
                seen += 1
                if seen == count:
                    done.set_result(clock())

        self._client.register.Runtime.consoleAPICalled(on_console)
        try:
            begin = clock()
            reply = asyncio.ensure_future(self.evaluate(page, expression))
            end = await done
            await reply
        finally:
            self._client.register.Runtime.consoleAPICalled(lambda event, session_id: None)
        return end - begin

    async def cold_start(self, env: Env) -> tuple[int, int]:
        return await websocket_cold_start(
            env, self._start, lambda client: client.send.Browser.getVersion(), lambda client: client.stop()
        )

    async def enable_page_events(self, page: tuple[str, str]) -> None:
        await self._client.send.Page.enable(session_id=page[1])

    async def navigate(self, page: tuple[str, str], url: str) -> None:
        loaded: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        session = page[1]

        def on_load(event: object, session_id: str | None) -> None:
            if session_id == session and not loaded.done():
                loaded.set_result(None)

        # One handler per event method in cdp-use: registering replaces the previous one.
        self._client.register.Page.loadEventFired(on_load)
        result = await self._client.send.Page.navigate(params={"url": url}, session_id=session)
        if result.get("errorText"):
            raise RuntimeError(f"Page.navigate: {result['errorText']}")
        await loaded

    async def open_target(self) -> str:
        send = self._client.send
        target: str = (await send.Target.createTarget(params={"url": "about:blank"}))["targetId"]
        await send.Target.attachToTarget(params={"targetId": target, "flatten": True})
        return target

    async def close_target(self, handle: str) -> None:
        await self._client.send.Target.closeTarget(params={"targetId": handle})

    async def under_flood(self, page: tuple[str, str], body: Body) -> int:
        first: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        seen = 0
        session = page[1]

        def on_console(event: object, session_id: str | None) -> None:
            nonlocal seen
            if session_id == session:
                seen += 1
                if not first.done():
                    first.set_result(None)

        self._client.register.Runtime.consoleAPICalled(on_console)
        try:
            await self.evaluate(page, flood_start_expression())
            await first
            before = seen
            await body()
            during = seen - before
            await self.evaluate(page, flood_stop_expression())
        finally:
            self._client.register.Runtime.consoleAPICalled(lambda event, session_id: None)
        return during


class CdpUse(AsyncioClient):
    name: ClassVar[str] = "cdp-use"

    def make_driver(self) -> AsyncDriver:
        return CdpUseDriver()


class CdpUseNoCompression(AsyncioClient):
    """cdp-use with permessage-deflate off (``compression=None`` on its websockets connection)."""

    name: ClassVar[str] = "cdp-use.nocompress"

    def make_driver(self) -> AsyncDriver:
        return CdpUseDriver(compression=False)
