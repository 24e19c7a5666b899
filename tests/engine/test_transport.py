"""Transports: the NUL framer, the pipe and websocket transports against fake peers and a real Chromium."""

from __future__ import annotations

import json
import os
import signal
import struct
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from functools import partial
from typing import Any, Literal

import pytest
import trio

from engine import CDPError, ConnectError, ConnectionClosed, MessageTooLarge, Settings
from engine._ws_codec import encode_frame, mask_payload
from engine.lowlevel import (
    CUT_MESSAGE,
    PIPE_MAX_MESSAGE_BYTES,
    WEBSOCKET_MAX_MESSAGE_BYTES,
    ChromiumProcess,
    NulFramer,
    Opcode,
    PipeTransport,
    Transport,
    WebSocketTransport,
    fetch_json_version,
    open_chromium,
    open_websocket_transport,
)

Kind = Literal["pipe", "websocket"]
TRANSPORTS: list[Kind] = ["pipe", "websocket"]
BIG = 110 * 1024 * 1024


# -- the NUL framer ----------------------------------------------------------------------------------


def test_framer_splits_and_keeps_the_tail() -> None:
    framer = NulFramer()
    assert framer.feed(b'{"a":1}\0{"b"') == [b'{"a":1}']
    assert framer.pending_bytes == 4
    assert framer.feed(b":2}") == []
    assert framer.feed(b"\0\0{}\0[") == [b'{"b":2}', b"{}"]
    assert framer.feed(b"]\0") == [b"[]"]
    assert framer.pending_bytes == 0


def test_framer_large_message_in_small_chunks_is_linear() -> None:
    message = b"z" * (64 * 1024 * 1024)
    framer = NulFramer()
    started = time.perf_counter()
    out: list[bytes] = []
    for i in range(0, len(message), 65536):
        out += framer.feed(message[i : i + 65536])
    out += framer.feed(b"\0")
    assert time.perf_counter() - started < 5.0
    assert out == [message]


async def cancel_once_bytes_flow(transport: Transport, peer_fd: int) -> None:
    """Start sending a message the peer never reads, and cancel it once its first bytes have arrived."""
    scope = trio.CancelScope()

    async def send_big() -> None:
        with scope:
            await transport.send([b"x" * (8 * 1024 * 1024)])

    async with trio.open_nursery() as nursery:
        nursery.start_soon(send_big)
        await trio.lowlevel.wait_readable(peer_fd)
        await trio.sleep(0.05)
        scope.cancel()
    assert scope.cancelled_caught


# -- the pipe against a fake peer --------------------------------------------------------------------


@asynccontextmanager
async def pipe_pair(**kwargs: Any) -> AsyncIterator[tuple[PipeTransport, int, int]]:
    """A PipeTransport and the peer's raw (read fd, write fd)."""
    ours_read, peer_write = os.pipe()
    peer_read, ours_write = os.pipe()
    transport = PipeTransport(ours_read, ours_write, **kwargs)
    try:
        yield transport, peer_read, peer_write
    finally:
        await transport.aclose()
        for fd in (peer_read, peer_write):
            with suppress(OSError):
                os.close(fd)


async def test_pipe_round_trip_and_batching() -> None:
    with trio.fail_after(5):
        async with pipe_pair() as (transport, peer_read, peer_write):
            await transport.send([b'{"id":1}', b'{"id":2}'])
            assert os.read(peer_read, 1000) == b'{"id":1}\0{"id":2}\0'
            os.write(peer_write, b'{"x":1}\0{"y":2}\0{"z"')
            assert await transport.receive_batch() == [b'{"x":1}', b'{"y":2}']
            os.write(peer_write, b":3}\0")
            assert await transport.receive_batch() == [b'{"z":3}']
            assert transport.name == "pipe"


async def test_pipe_outbound_limit() -> None:
    with trio.fail_after(5):
        async with pipe_pair(max_outbound_bytes=10) as (transport, peer_read, _):
            assert transport.max_outbound_bytes == 10
            with pytest.raises(MessageTooLarge, match="11 bytes"):
                await transport.send([b"ok", b"x" * 11])
            await transport.send([b"0123456789"])
            assert os.read(peer_read, 100) == b"0123456789\0"


async def test_pipe_limit_is_capped_at_chromiums() -> None:
    async with pipe_pair(max_outbound_bytes=1 << 40) as (transport, _, _):
        assert transport.max_outbound_bytes == PIPE_MAX_MESSAGE_BYTES


async def test_pipe_eof_mid_message() -> None:
    with trio.fail_after(5):
        async with pipe_pair() as (transport, _, peer_write):
            os.write(peer_write, b'{"unfinished"')
            os.close(peer_write)
            with pytest.raises(ConnectionClosed, match="middle of a message"):
                await transport.receive_batch()
            with pytest.raises(ConnectionClosed):
                await transport.send([b"{}"])


async def test_pipe_aclose_wakes_a_blocked_reader() -> None:
    with trio.fail_after(5):
        async with pipe_pair() as (transport, _, _):

            async def close_soon() -> None:
                await trio.sleep(0.05)
                await transport.aclose()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(close_soon)
                with pytest.raises(ConnectionClosed, match="closed by this client"):
                    await transport.receive_batch()


async def test_pipe_cancel_before_writing_keeps_the_link() -> None:
    with trio.fail_after(5):
        async with pipe_pair() as (transport, peer_read, _):
            with trio.CancelScope() as scope:
                scope.cancel()
                await transport.send([b"never"])
            await transport.send([b"{}"])
            assert os.read(peer_read, 100) == b"{}\0"


async def test_pipe_cancel_mid_message_closes_the_link() -> None:
    with trio.fail_after(5):
        async with pipe_pair() as (transport, peer_read, _):
            await cancel_once_bytes_flow(transport, peer_read)
            with pytest.raises(ConnectionClosed, match=CUT_MESSAGE):
                await transport.send([b"{}"])
            with pytest.raises(ConnectionClosed, match=CUT_MESSAGE):
                await transport.receive_batch()


# -- the websocket against a fake server -------------------------------------------------------------


async def read_client_frame(stream: trio.SocketStream, buffer: bytearray) -> tuple[int, bytes]:
    """One masked client frame from ``stream``: (opcode, unmasked payload)."""

    async def need(n: int) -> None:
        while len(buffer) < n:
            data = await stream.receive_some(65536)
            assert data, "the client closed the connection"
            buffer.extend(data)

    await need(2)
    size = buffer[1] & 0x7F
    header = 2
    if size == 126:
        await need(4)
        (size,) = struct.unpack("!H", buffer[2:4])
        header = 4
    elif size == 127:
        await need(10)
        (size,) = struct.unpack("!Q", buffer[2:10])
        header = 10
    await need(header + 4 + size)
    opcode = buffer[0] & 0x0F
    key = bytes(buffer[header : header + 4])
    payload = mask_payload(bytes(buffer[header + 4 : header + 4 + size]), key)
    del buffer[: header + 4 + size]
    return opcode, payload


def socket_stream_pair() -> tuple[trio.SocketStream, trio.SocketStream]:
    a, b = trio.socket.socketpair()
    return trio.SocketStream(a), trio.SocketStream(b)


async def test_websocket_round_trip_ping_and_close() -> None:
    client, server = socket_stream_pair()
    first = encode_frame(Opcode.TEXT, b'{"early":1}', None)
    transport = WebSocketTransport(client, initial_data=first)
    buffer = bytearray()
    with trio.fail_after(5):
        assert await transport.receive_batch() == [b'{"early":1}']
        await transport.send([b'{"id":1}', b'{"id":2}'])
        assert await read_client_frame(server, buffer) == (Opcode.TEXT, b'{"id":1}')
        assert await read_client_frame(server, buffer) == (Opcode.TEXT, b'{"id":2}')
        await server.send_all(
            encode_frame(Opcode.PING, b"hb", None)
            + encode_frame(Opcode.TEXT, b"[1]", None)
            + encode_frame(Opcode.CLOSE, struct.pack("!H", 1001) + b"bye", None)
        )
        assert await transport.receive_batch() == [b"[1]"]
        assert await read_client_frame(server, buffer) == (Opcode.PONG, b"hb")
        opcode, payload = await read_client_frame(server, buffer)
        assert (opcode, payload[:2]) == (Opcode.CLOSE, struct.pack("!H", 1001))
        with pytest.raises(ConnectionClosed, match="1001 bye"):
            await transport.receive_batch()
        with pytest.raises(ConnectionClosed):
            await transport.send([b"{}"])
    await server.aclose()


async def test_websocket_tcp_eof() -> None:
    client, server = socket_stream_pair()
    transport = WebSocketTransport(client)
    with trio.fail_after(5):
        await server.aclose()
        with pytest.raises(ConnectionClosed, match="TCP connection"):
            await transport.receive_batch()
        await transport.aclose()


async def test_websocket_aclose_sends_close_frame() -> None:
    client, server = socket_stream_pair()
    transport = WebSocketTransport(client)
    with trio.fail_after(5):
        await transport.aclose()
        opcode, payload = await read_client_frame(server, bytearray())
        assert (opcode, payload) == (Opcode.CLOSE, struct.pack("!H", 1000))
        assert await server.receive_some(10) == b""
        await transport.aclose()  # idempotent
    await server.aclose()


async def test_websocket_cancel_mid_message_closes_the_link() -> None:
    client, server = socket_stream_pair()
    transport = WebSocketTransport(client)
    with trio.fail_after(5):
        await cancel_once_bytes_flow(transport, server.socket.fileno())
        with pytest.raises(ConnectionClosed, match=CUT_MESSAGE):
            await transport.send([b"{}"])
    await server.aclose()


async def test_websocket_limit_is_capped_at_chromiums() -> None:
    client, server = socket_stream_pair()
    transport = WebSocketTransport(client, max_outbound_bytes=1 << 40)
    assert transport.max_outbound_bytes == WEBSOCKET_MAX_MESSAGE_BYTES
    await transport.aclose()
    await server.aclose()


def test_a_failed_connect_is_not_a_closed_connection() -> None:
    """A link that never opened did not close: callers that retry a connect must not catch a dead link."""
    assert issubclass(ConnectError, CDPError)
    assert not issubclass(ConnectError, ConnectionClosed)
    assert not issubclass(ConnectionClosed, ConnectError)


async def test_websocket_connect_refused_is_connect_error() -> None:
    listener = trio.socket.socket()
    await listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()  # nothing listens there any more
    with trio.fail_after(5):
        with pytest.raises(ConnectError, match="could not open"):
            await open_websocket_transport(f"ws://127.0.0.1:{port}/devtools/browser/x", Settings())
        with pytest.raises(ConnectError, match="could not connect"):
            await fetch_json_version("127.0.0.1", port)
    with pytest.raises(ValueError, match="ws://"):
        await open_websocket_transport("http://127.0.0.1:1/", Settings())


async def test_websocket_connect_timeout() -> None:
    async def silent(stream: trio.SocketStream) -> None:
        await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, silent, 0, host="127.0.0.1"))
        port = listeners[0].socket.getsockname()[1]
        with trio.fail_after(5), pytest.raises(ConnectError, match="connect_timeout"):
            await open_websocket_transport(f"ws://127.0.0.1:{port}/x", Settings(connect_timeout=0.2))
        nursery.cancel_scope.cancel()


# -- a real Chromium ---------------------------------------------------------------------------------


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
