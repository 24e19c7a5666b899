"""The alternative websocket transports of the suite, against a local trio-websocket echo server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest
import trio
import trio_websocket

from benchmarks.clients import DEFAULT, NOT_DEFAULT, REGISTRY
from benchmarks.clients.ws_transports import TrioWebSocketTransport, WsprotoTransport
from engine import ConnectionClosed, MessageTooLarge, Settings

BIG = 5 * 1024 * 1024
SETTINGS = Settings(connect_timeout=5.0)

Opener = Callable[[trio.Nursery, str], Awaitable[TrioWebSocketTransport | WsprotoTransport]]


async def _open_trio_websocket(nursery: trio.Nursery, url: str) -> TrioWebSocketTransport | WsprotoTransport:
    return await TrioWebSocketTransport.open(nursery, url, SETTINGS)


async def _open_wsproto(nursery: trio.Nursery, url: str) -> TrioWebSocketTransport | WsprotoTransport:
    del nursery
    return await WsprotoTransport.open(url, SETTINGS)


OPENERS = [pytest.param(_open_trio_websocket, id="trio-websocket"), pytest.param(_open_wsproto, id="wsproto")]


async def _echo(request: trio_websocket.WebSocketRequest) -> None:
    ws = await request.accept()
    while True:
        try:
            message = await ws.get_message()
        except trio_websocket.ConnectionClosed:
            return
        if message == "bye":
            await ws.aclose(1000, "done")
            return
        await ws.send_message(message)


@asynccontextmanager
async def echo_server() -> AsyncIterator[str]:
    async with trio.open_nursery() as nursery:
        server = await nursery.start(
            lambda task_status: trio_websocket.serve_websocket(
                _echo, "127.0.0.1", 0, ssl_context=None, max_message_size=2 * BIG, task_status=task_status
            )
        )
        yield f"ws://127.0.0.1:{server.port}/devtools/browser/x"
        nursery.cancel_scope.cancel()


async def _receive(transport: TrioWebSocketTransport | WsprotoTransport, count: int) -> list[bytes]:
    got: list[bytes] = []
    while len(got) < count:
        got.extend(await transport.receive_batch())
    return got


@pytest.mark.parametrize("opener", OPENERS)
async def test_messages_round_trip_in_order_including_a_large_one(opener: Opener) -> None:
    sent = [b'{"id":1}', "é".encode() * 10, b"x" * BIG, b'{"id":2}']
    async with echo_server() as url, trio.open_nursery() as nursery:
        transport = await opener(nursery, url)
        with trio.fail_after(20):
            await transport.send(sent[:2])
            if not transport.send_nowait(sent[2:]):
                await transport.send(sent[2:])
            if transport.backlog:
                await transport.send([])  # what the engine's writer task does with a backlog
            assert await _receive(transport, len(sent)) == sent
        await transport.aclose()
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("opener", OPENERS)
async def test_a_close_from_the_peer_ends_the_transport(opener: Opener) -> None:
    async with echo_server() as url, trio.open_nursery() as nursery:
        transport = await opener(nursery, url)
        with trio.fail_after(10):
            await transport.send([b"bye"])
            with pytest.raises(ConnectionClosed):
                await _receive(transport, 1)
        await transport.aclose()
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("opener", OPENERS)
async def test_an_oversized_message_is_refused_before_anything_is_sent(opener: Opener) -> None:
    async with echo_server() as url, trio.open_nursery() as nursery:
        transport = await opener(nursery, url)
        too_long = b"x" * (transport.max_outbound_bytes + 1)
        with pytest.raises(MessageTooLarge):
            transport.send_nowait([too_long])
        with pytest.raises(MessageTooLarge):
            await transport.send([too_long])
        await transport.aclose()
        nursery.cancel_scope.cancel()


def test_the_alternatives_are_registered_but_not_run_by_default() -> None:
    for name in ("engine.ws.trio-websocket", "engine.ws.wsproto"):
        assert name in REGISTRY
        assert name in NOT_DEFAULT
        assert name not in DEFAULT
    assert "engine.ws" in DEFAULT
