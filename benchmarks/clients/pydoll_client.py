"""pydoll (``pydoll-python``) as its docs use it, in its own asyncio thread, connected to its own browser.

pydoll talks to each tab over that tab's own websocket (``/devtools/page/<id>``), opened on the tab's first
command, not over flattened sessions: its design, measured as it is. ``Chrome().connect(ws)`` attaches it
to the browser the harness launched for it (the same binary and flags as every other client). Browser calls
go through ``browser.get_version``, page calls through ``tab.execute_script`` (``Runtime.evaluate``), events
through ``tab.on``, navigation through ``tab.go_to``. Its websocket library negotiates permessage-deflate
with Chromium by default, as cdp-use's does; pydoll has no option to turn it off.

It has no public raw command on a tab, so the decode scenarios other than ``evaluate.10MB`` are reported as
unsupported, never as zero; so is ``attach.50``, as a tab has no session to attach (see ``unsupported``).
"""

from __future__ import annotations

import asyncio
import importlib
import time
from functools import partial
from typing import Any, ClassVar

from benchmarks.clients.asyncbase import AsyncDriver, Body
from benchmarks.clients.asyncio_driver import (
    AsyncioClient,
    AsyncioDriver,
    Subscribe,
    count_during,
    time_flood,
    websocket_cold_start,
)
from benchmarks.clients.base import Env, SkipClient
from benchmarks.scenarios import Kind, Scenario, ready_expression

READY_TIMEOUT_S = 30.0
CONSOLE = "Runtime.consoleAPICalled"


def _chrome() -> Any:
    try:  # by name: pydoll is a peer under test, imported only when it runs
        return importlib.import_module("pydoll.browser.chromium").Chrome
    except ImportError as exc:
        raise SkipClient(f"pydoll is not installed ({exc}); pip install -e '.[bench]'") from exc


class PydollDriver(AsyncioDriver):
    def __init__(self) -> None:
        self._browser: Any = None

    async def open(self, env: Env) -> None:
        self._browser = await self._connect(env.ws_url)

    @staticmethod
    async def _connect(ws_url: str) -> Any:
        browser = _chrome()()
        await browser.connect(ws_url)
        return browser

    async def close(self) -> None:
        if self._browser is not None:
            await self._browser.close()  # the websocket only: the harness owns the browser
            self._browser = None

    def unsupported(self, scenario: Scenario) -> str | None:
        if scenario.kind is Kind.DECODE and scenario.method != "Runtime.evaluate":
            return f"no public raw command on a tab ({scenario.method} is not wrapped by pydoll)"
        if scenario.kind is Kind.ATTACH:
            return "no session to attach: a pydoll tab opens a websocket of its own on its first command"
        return None

    async def browser_call(self) -> object:
        return await self._browser.get_version()

    async def new_page(self, url: str) -> Any:
        tab = await self._browser.new_tab("" if url == "about:blank" else url)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            res = await tab.execute_script(ready_expression(url), return_by_value=True)
            if res["result"]["result"].get("value") is True:
                return tab
            if time.monotonic() > deadline:
                raise TimeoutError(f"page did not load: {url}")
            await asyncio.sleep(0.02)

    async def close_page(self, page: Any) -> None:
        await page.close()

    async def evaluate(self, page: Any, expression: str) -> object:
        return await page.execute_script(expression)

    async def full_call(self, page: Any, method: str, params: dict[str, object]) -> tuple[object, int | None]:
        assert method == "Runtime.evaluate", method  # the others are unsupported
        expression = params["expression"]
        assert isinstance(expression, str)
        return await page.execute_script(expression, return_by_value=bool(params.get("returnByValue"))), None

    async def enable_console(self, page: Any) -> None:
        await page.enable_runtime_events()

    async def console_flood(self, page: Any, count: int, expression: str) -> int:
        return await time_flood(
            count, self._on_console(page), page.remove_callback, partial(self.evaluate, page, expression)
        )

    async def cold_start(self, env: Env) -> tuple[int, int]:
        return await websocket_cold_start(
            env, self._connect, lambda browser: browser.get_version(), lambda browser: browser.close()
        )

    async def enable_page_events(self, page: Any) -> None:
        await page.enable_page_events()

    async def navigate(self, page: Any, url: str) -> None:
        await page.go_to(url)  # returns once the page has loaded, its own way

    async def under_flood(self, page: Any, body: Body) -> int:
        return await count_during(
            self._on_console(page), page.remove_callback, partial(self.evaluate, page), body
        )

    @staticmethod
    def _on_console(page: Any) -> Subscribe:
        return partial(page.on, CONSOLE)  # a coroutine that returns the callback's id


class Pydoll(AsyncioClient):
    name: ClassVar[str] = "pydoll"

    def make_driver(self) -> AsyncDriver:
        return PydollDriver()
