"""The pipe and websocket transports against a real Chromium."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

import cdp
from engine import ConnectError, ConnectionClosed, MessageTooLarge, Settings, launch
from engine.lowlevel import (
    PIPE_MAX_MESSAGE_BYTES,
    WEBSOCKET_MAX_MESSAGE_BYTES,
    ChromiumProcess,
    Transport,
    fetch_json_version,
    open_chromium,
    open_websocket_transport,
)
from tests.unit.engine.test_transport import BIG, TRANSPORTS, Kind


async def call(
    transport: Transport, msg_id: int, method: str, params: dict[str, Any] | None = None, session: str = ""
) -> dict[str, Any]:
    """Send one raw command and read until its reply (events are skipped)."""
    message: dict[str, Any] = {"id": msg_id, "method": method}
    if params is not None:
        message["params"] = params
    if session:
        message["sessionId"] = session
    await transport.send([json.dumps(message).encode()])
    prefix = b'{"id":%d,' % msg_id
    while True:
        for raw in await transport.receive_batch():
            if raw.startswith(prefix):
                reply: dict[str, Any] = json.loads(raw)
                return reply


def padded(msg_id: int, size: int) -> bytes:
    """A Browser.getVersion command of exactly ``size`` bytes (Chromium ignores the extra param)."""
    head = b'{"id":%d,"method":"Browser.getVersion","params":{"pad":"' % msg_id
    tail = b'"}}'
    return head + b"p" * (size - len(head) - len(tail)) + tail


async def receive_forever(transport: Transport) -> None:
    while True:
        await transport.receive_batch()


@asynccontextmanager
async def chromium(transport: Kind) -> AsyncIterator[ChromiumProcess]:
    async with open_chromium(transport=transport, settings=Settings(launch_timeout=30)) as browser:
        yield browser


@pytest.mark.browser
@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_browser_round_trip(kind: Kind) -> None:
    with trio.fail_after(60):
        async with chromium(kind) as browser:
            assert browser.transport.name == kind
            reply = await call(browser.transport, 1, "Browser.getVersion")
            assert reply["result"]["product"].startswith(("Chrome/", "HeadlessChrome/"))
            assert "protocolVersion" in reply["result"]


@pytest.mark.browser
@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_browser_inbound_message_over_100_mb(kind: Kind) -> None:
    with trio.fail_after(120):
        async with chromium(kind) as browser:
            transport = browser.transport
            created = await call(transport, 1, "Target.createTarget", {"url": "about:blank"})
            attached = await call(
                transport,
                2,
                "Target.attachToTarget",
                {"targetId": created["result"]["targetId"], "flatten": True},
            )
            session = attached["result"]["sessionId"]
            expression = f'"x".repeat({BIG})'
            reply = await call(
                transport, 3, "Runtime.evaluate", {"expression": expression, "returnByValue": True}, session
            )
            value = reply["result"]["result"]["value"]
            assert len(value) == BIG
            assert value[:3] == value[-3:] == "xxx"
            del reply, value
            assert (await call(transport, 4, "Browser.getVersion"))["id"] == 4


@pytest.mark.browser
@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_browser_outbound_limit(kind: Kind) -> None:
    with trio.fail_after(120):
        async with chromium(kind) as browser:
            transport = browser.transport
            limit = transport.max_outbound_bytes
            assert limit == (PIPE_MAX_MESSAGE_BYTES if kind == "pipe" else WEBSOCKET_MAX_MESSAGE_BYTES)
            with pytest.raises(MessageTooLarge):
                await transport.send([padded(1, limit + 1)])
            # Nothing was sent, the link still works, and the largest allowed message goes through.
            assert "result" in await call(transport, 2, "Browser.getVersion")
            await transport.send([padded(3, limit)])
            while not any(raw.startswith(b'{"id":3,') for raw in await transport.receive_batch()):
                pass
            assert "result" in await call(transport, 4, "Browser.getVersion")


@pytest.mark.browser
@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_browser_killed_ends_receive_promptly(kind: Kind) -> None:
    with trio.fail_after(60):
        async with chromium(kind) as browser:
            await call(browser.transport, 1, "Browser.getVersion")
            killed_at = 0.0

            async def kill_soon() -> None:
                nonlocal killed_at
                await trio.sleep(0.2)
                killed_at = trio.current_time()
                os.kill(browser.pid, signal.SIGKILL)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(kill_soon)
                with pytest.raises(ConnectionClosed):
                    await receive_forever(browser.transport)
            assert trio.current_time() - killed_at < 2.0
            with pytest.raises(ConnectionClosed):
                await browser.transport.send([b'{"id":2,"method":"Browser.getVersion"}'])


@pytest.mark.browser
async def test_second_websocket_client_and_json_version() -> None:
    with trio.fail_after(60):
        async with chromium("websocket") as browser:
            assert browser.ws_url is not None
            port = int(browser.ws_url.split(":")[2].split("/")[0])
            version = await fetch_json_version("127.0.0.1", port)
            assert version["webSocketDebuggerUrl"] == browser.ws_url
            second = await open_websocket_transport(browser.ws_url, Settings())
            try:
                assert "result" in await call(second, 7, "Browser.getVersion")
            finally:
                await second.aclose()
            bad = browser.ws_url.rsplit("/", 1)[0] + "/no-such-browser"
            with pytest.raises(ConnectError, match="HTTP"):
                await open_websocket_transport(bad, Settings())
            assert "result" in await call(browser.transport, 8, "Browser.getVersion")


@pytest.mark.browser
@pytest.mark.parametrize("kind", TRANSPORTS)
@pytest.mark.parametrize("busy_poll", [0.0005, 0.0])
async def test_a_lone_callers_poll_is_bounded(kind: Kind, busy_poll: float) -> None:
    """A lone command polls the link for its reply (Settings.busy_poll), never for long: a reply 0.3 s
    away costs far less than 0.3 s of CPU, however many slow ones come in a row, and the quick commands
    around them are answered as ever."""
    with trio.fail_after(60):
        async with launch(transport=kind, settings=Settings(busy_poll=busy_poll)) as browser:
            page = await browser.new_page()
            slow = cdp.runtime.evaluate(
                expression="new Promise(r => setTimeout(() => r('late'), 300))", await_promise=True
            )
            for _ in range(3):
                versions = [await browser.session.execute(cdp.browser.get_version()) for _ in range(20)]
                assert all(v.product == versions[0].product for v in versions)
                cpu = time.thread_time()
                assert (await page.session.execute(slow)).result.value == "late"
                assert time.thread_time() - cpu < 0.1
                assert (await page.session.execute(cdp.runtime.evaluate(expression="6*7"))).result.value == 42
