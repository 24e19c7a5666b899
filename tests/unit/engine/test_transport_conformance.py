"""One contract for every transport, as ``trio.testing.check_two_way_stream`` is one for every trio stream.

Each test runs on the pipe, the engine's websocket, and the two websocket transports the benchmarks keep
for comparison (trio-websocket, wsproto), each against an in-process peer: the other ends of two
``os.pipe()`` pairs, or the other end of a socket pair, which answers the HTTP upgrade and then speaks
websocket frames built with the engine's codec. No browser. (Socket pairs, not loopback TCP: a TCP send
buffer drains into the peer's receive buffer in the background, so "the link is full, a send waits before
its first byte" cannot be arranged on it.)

The contract (``engine._transport.Transport``):

- whole messages go both ways, in order, however large, and a batch is never empty;
- what arrives in one read comes back in one batch (a transport whose library hands messages over one at
  a time, trio-websocket, is exempt);
- ``send_nowait`` either takes the messages (written, or partly with the rest as ``backlog``, which the
  next ``send`` writes first) or declines having written nothing; it declines while a send is in progress
  or a backlog waits; a transport may always decline (trio-websocket does);
- a message over ``max_outbound_bytes`` raises MessageTooLarge before any byte of its batch is written;
- ``aclose`` is idempotent and wakes a blocked ``receive_batch`` with ConnectionClosed; every call after it
  raises ConnectionClosed;
- the peer's EOF ends the link: what came before it is delivered, then ConnectionClosed, also for sends;
- a send or receive cancelled before its first byte leaves the link usable, its backlog intact.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from functools import partial
from typing import Protocol

import attrs
import h11
import pytest
import trio
import trio.testing

from benchmarks.clients.ws_transports import TrioWebSocketTransport, WsprotoTransport
from engine import ConnectionClosed, MessageTooLarge, Settings
from engine._http import websocket_upgrade
from engine._transport import waiting_probe
from engine._ws_codec import accept_for, encode_frame, mask_payload
from engine.lowlevel import Opcode, PipeTransport, Transport, WebSocketTransport

MIB = 1024 * 1024
BIG = 4 * MIB
"""More than a link lets through to a peer that does not read: a 1 MiB pipe, a socket pair's buffers."""

LIMIT = 32 * MIB
"""The outbound limit every transport is opened with, unless a test asks for another."""

SMALL = [b'{"id":1,"method":"Browser.getVersion"}', "\u00e9\u00e8".encode() * 20, b"{}"]
"""Short messages; the second is UTF-8 that is not ASCII (the websocket libraries decode text frames)."""


# -- peers: the other end of the link, written without the transports' code ------------------------------


class Peer(Protocol):
    """The far end of a transport's link, as a test drives it."""

    @property
    def fileno(self) -> int:
        """Readable once the transport's bytes have arrived."""
        ...

    async def send(self, messages: Sequence[bytes]) -> None:
        """Whole messages to the transport, in one write."""
        ...

    async def receive(self) -> bytes:
        """The transport's next whole message; EOFError when the link has ended."""
        ...

    async def hang_up(self) -> None:
        """End the link from this side without a goodbye: EOF for the transport."""
        ...

    async def drain(self) -> None:
        """Read (and answer a close handshake) until the link ends."""
        ...


class PipePeer:
    """The browser's side of the pipe: NUL-terminated messages on two fds."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.fileno = read_fd
        self._reader = trio.lowlevel.FdStream(read_fd)
        self._writer = trio.lowlevel.FdStream(write_fd)
        self._buffer = bytearray()
        self._scanned = 0

    async def send(self, messages: Sequence[bytes]) -> None:
        await self._writer.send_all(b"".join(message + b"\0" for message in messages))

    async def receive(self) -> bytes:
        while (end := self._buffer.find(b"\0", self._scanned)) == -1:
            self._scanned = len(self._buffer)
            data = await self._reader.receive_some(MIB)
            if not data:
                raise EOFError("the transport closed the pipe")
            self._buffer += data
        message = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        self._scanned = 0
        return message

    async def hang_up(self) -> None:
        await self._writer.aclose()

    async def drain(self) -> None:
        with suppress(EOFError, trio.ClosedResourceError, trio.BrokenResourceError):
            while True:
                await self.receive()

    async def aclose(self) -> None:
        await self._writer.aclose()
        await self._reader.aclose()


class WebSocketPeer:
    """The server's side of an upgraded connection: unmasked frames out, masked client frames in."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self._stream = stream
        self._buffer = bytearray()
        self._close_sent = False

    @property
    def fileno(self) -> int:
        return self._stream.socket.fileno()

    async def send(self, messages: Sequence[bytes]) -> None:
        await self._stream.send_all(
            b"".join(encode_frame(Opcode.TEXT, message, None) for message in messages)
        )

    async def _need(self, size: int) -> None:
        while len(self._buffer) < size:
            data = await self._stream.receive_some(MIB)
            if not data:
                raise EOFError("the transport closed the connection")
            self._buffer += data

    async def _frame(self) -> tuple[bool, int, bytes]:
        await self._need(2)
        assert self._buffer[1] & 0x80, "a client's frames are masked"
        size, header = self._buffer[1] & 0x7F, 2
        if size == 126:
            await self._need(4)
            size, header = int.from_bytes(self._buffer[2:4], "big"), 4
        elif size == 127:
            await self._need(10)
            size, header = int.from_bytes(self._buffer[2:10], "big"), 10
        await self._need(header + 4 + size)
        first = self._buffer[0]
        key = bytes(self._buffer[header : header + 4])
        payload = mask_payload(bytes(self._buffer[header + 4 : header + 4 + size]), key)
        del self._buffer[: header + 4 + size]
        return bool(first & 0x80), first & 0x0F, payload

    async def receive(self) -> bytes:
        message = bytearray()
        while True:
            fin, opcode, payload = await self._frame()
            if opcode == Opcode.PING:
                await self._stream.send_all(encode_frame(Opcode.PONG, payload, None))
            elif opcode == Opcode.CLOSE:
                if not self._close_sent:
                    self._close_sent = True
                    await self._stream.send_all(encode_frame(Opcode.CLOSE, payload[:2], None))
                raise EOFError("the transport closed the websocket")
            elif opcode != Opcode.PONG:
                message += payload
                if fin:
                    return bytes(message)

    async def hang_up(self) -> None:
        await self._stream.aclose()

    async def drain(self) -> None:
        with suppress(EOFError, trio.ClosedResourceError, trio.BrokenResourceError):
            while True:
                await self.receive()


async def answer_upgrade(stream: trio.SocketStream) -> None:
    """The server's half of the HTTP upgrade (h11)."""
    server = h11.Connection(h11.SERVER)
    event: object = h11.NEED_DATA
    while not isinstance(event, h11.Request):
        if event is h11.NEED_DATA:
            server.receive_data(await stream.receive_some(65536))
        event = server.next_event()
    key = dict(event.headers)[b"sec-websocket-key"].decode()
    headers = [("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Accept", accept_for(key))]
    answer = server.send(h11.InformationalResponse(status_code=101, headers=headers))
    assert answer is not None
    await stream.send_all(answer)


# -- the transports under test ---------------------------------------------------------------------------

Link = AbstractAsyncContextManager[tuple[Transport, Peer]]
Connect = Callable[[trio.Nursery, trio.SocketStream, Settings], Awaitable[Transport]]
TARGET = "/devtools/browser/conformance"


@asynccontextmanager
async def _closing(transport: Transport, peer: Peer) -> AsyncIterator[tuple[Transport, Peer]]:
    try:
        yield transport, peer
    finally:
        with trio.CancelScope(shield=True), trio.fail_after(5):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(peer.drain)  # so that a close handshake is answered at once
                await transport.aclose()


@asynccontextmanager
async def pipe_link(max_outbound_bytes: int) -> AsyncIterator[tuple[Transport, Peer]]:
    ours_read, peer_write = os.pipe()
    peer_read, ours_write = os.pipe()
    peer = PipePeer(peer_read, peer_write)
    transport = PipeTransport(ours_read, ours_write, max_outbound_bytes=max_outbound_bytes)
    try:
        async with _closing(transport, peer) as pair:
            yield pair
    finally:
        await peer.aclose()


@asynccontextmanager
async def websocket_link(connect: Connect, max_outbound_bytes: int) -> AsyncIterator[tuple[Transport, Peer]]:
    client, server = (trio.SocketStream(sock) for sock in trio.socket.socketpair())
    settings = Settings(max_outbound_bytes=max_outbound_bytes)
    async with server, trio.open_nursery() as nursery:
        upgraded = trio.Event()

        async def serve() -> None:
            await answer_upgrade(server)
            upgraded.set()

        nursery.start_soon(serve)
        transport = await connect(nursery, client, settings)
        await upgraded.wait()
        try:
            async with _closing(transport, WebSocketPeer(server)) as pair:
                yield pair
        finally:
            nursery.cancel_scope.cancel()  # trio-websocket's reader task


async def _engine_websocket(
    nursery: trio.Nursery, stream: trio.SocketStream, settings: Settings
) -> Transport:
    rest = await websocket_upgrade(stream, "127.0.0.1", 9222, TARGET)
    return WebSocketTransport(stream, initial_data=rest, max_outbound_bytes=settings.max_outbound_bytes)


async def _trio_websocket(nursery: trio.Nursery, stream: trio.SocketStream, settings: Settings) -> Transport:
    return await TrioWebSocketTransport.over(nursery, stream, "127.0.0.1:9222", TARGET, settings)


async def _wsproto(nursery: trio.Nursery, stream: trio.SocketStream, settings: Settings) -> Transport:
    return await WsprotoTransport.over(stream, "127.0.0.1:9222", TARGET, settings)


@attrs.frozen
class Case:
    """A transport under test and what it promises beyond the common contract."""

    open: Callable[[int], Link]
    eager: bool = True
    """``send_nowait`` writes at once on an idle link (otherwise it always declines)."""
    whole_bursts: bool = True
    """Messages that arrive in one read come back in one batch."""


CASES = [
    pytest.param(Case(pipe_link), id="pipe"),
    pytest.param(Case(partial(websocket_link, _engine_websocket)), id="websocket"),
    pytest.param(
        Case(partial(websocket_link, _trio_websocket), eager=False, whole_bursts=False), id="trio-websocket"
    ),
    pytest.param(Case(partial(websocket_link, _wsproto)), id="wsproto"),
]

EAGER_CASES = [param for param in CASES if getattr(param.values[0], "eager", False)]
"""The transports whose send_nowait writes (trio-websocket's always declines: it has no backlog to test)."""


async def receive_messages(transport: Transport, count: int) -> list[list[bytes]]:
    """Batches until ``count`` messages have come."""
    batches: list[list[bytes]] = []
    while sum(map(len, batches)) < count:
        batch = await transport.receive_batch()
        assert batch, "a batch holds at least one message"
        batches.append(batch)
    return batches


async def peer_receives(peer: Peer, count: int) -> list[bytes]:
    return [await peer.receive() for _ in range(count)]


# -- the contract ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES)
async def test_whole_messages_go_both_ways_in_order(case: Case) -> None:
    outbound = [*SMALL, b"o" * (3 * MIB), b'{"id":2}']
    inbound = [b'{"method":"Target.targetCreated"}', b"i" * (3 * MIB), *SMALL]
    with trio.fail_after(20):
        async with case.open(LIMIT) as (transport, peer):
            assert transport.name in ("pipe", "websocket")
            async with trio.open_nursery() as nursery:
                nursery.start_soon(transport.send, outbound[:2])
                assert await peer_receives(peer, 2) == outbound[:2]
                nursery.start_soon(transport.send, outbound[2:])
                assert await peer_receives(peer, 3) == outbound[2:]
                nursery.start_soon(peer.send, inbound)
                batches = await receive_messages(transport, len(inbound))
            assert [message for batch in batches for message in batch] == inbound


@pytest.mark.parametrize("case", CASES)
async def test_what_arrives_in_one_read_comes_back_in_one_batch(case: Case) -> None:
    with trio.fail_after(10):
        async with case.open(LIMIT) as (transport, peer):
            await peer.send(SMALL)
            batches = await receive_messages(transport, len(SMALL))
            assert [message for batch in batches for message in batch] == SMALL
            if case.whole_bursts:
                assert batches == [SMALL]


@pytest.mark.parametrize("case", CASES)
async def test_send_nowait_takes_the_messages_or_writes_nothing(case: Case) -> None:
    with trio.fail_after(10):
        async with case.open(LIMIT) as (transport, peer):
            taken = transport.send_nowait(SMALL[:2])
            assert taken is case.eager, "an idle link takes them at once, unless the transport never does"
            assert transport.backlog == 0
            if not taken:
                await transport.send(SMALL[:2])
            await transport.send([b"end"])
            assert await peer_receives(peer, 3) == [*SMALL[:2], b"end"], (
                "a declined send_nowait wrote nothing"
            )


@pytest.mark.parametrize("case", CASES)
async def test_send_nowait_declines_while_a_send_is_in_progress(case: Case) -> None:
    big = b"b" * BIG
    with trio.fail_after(20):
        async with case.open(LIMIT) as (transport, peer), trio.open_nursery() as nursery:
            nursery.start_soon(transport.send, [big])
            await trio.lowlevel.wait_readable(peer.fileno)  # the send has begun; the peer reads nothing
            assert transport.send_nowait([b"declined"]) is False
            assert await peer.receive() == big
            await transport.send([b"after"])
            assert await peer.receive() == b"after"


@pytest.mark.parametrize("case", EAGER_CASES)
async def test_send_nowait_keeps_what_the_kernel_did_not_take_as_a_backlog(case: Case) -> None:
    big = b"b" * BIG
    with trio.fail_after(20):
        async with case.open(LIMIT) as (transport, peer):
            assert transport.send_nowait([big]) is True
            assert transport.backlog > 0, "the peer reads nothing, so the kernel took only part of it"
            assert transport.send_nowait([b"declined"]) is False, "a backlog waits"
            async with trio.open_nursery() as nursery:
                nursery.start_soon(transport.send, [])  # what the connection's writer does with a backlog
                assert await peer.receive() == big
            assert transport.backlog == 0
            await transport.send([b"after"])
            assert await peer.receive() == b"after"


@pytest.mark.parametrize("case", EAGER_CASES)
async def test_send_nowait_of_several_keeps_their_order_when_the_first_fills_the_kernel(case: Case) -> None:
    big = b"b" * BIG
    with trio.fail_after(20):
        async with case.open(LIMIT) as (transport, peer):
            assert transport.send_nowait([big, *SMALL]) is True
            assert transport.backlog > len(b"".join(SMALL)), "the kernel took only part of the first"
            async with trio.open_nursery() as nursery:
                nursery.start_soon(transport.send, [])
                assert await peer_receives(peer, 4) == [big, *SMALL]
            assert transport.backlog == 0
            assert transport.send_nowait(SMALL) is True, "an idle link again"
            assert await peer_receives(peer, 3) == SMALL


@pytest.mark.parametrize("case", CASES)
async def test_an_oversized_message_is_refused_before_anything_is_written(case: Case) -> None:
    limit = 1000
    fits, too_long = b"f" * limit, b"x" * (limit + 1)
    with trio.fail_after(10):
        async with case.open(limit) as (transport, peer):
            assert transport.max_outbound_bytes == limit
            with pytest.raises(MessageTooLarge, match="1,001 bytes"):
                transport.send_nowait([fits, too_long])
            with pytest.raises(MessageTooLarge, match="1,001 bytes"):
                await transport.send([fits, too_long])
            assert transport.backlog == 0
            await transport.send([fits])
            assert await peer.receive() == fits, "nothing of the refused batches went out"


@pytest.mark.parametrize("case", CASES)
async def test_aclose_wakes_a_blocked_receive_and_is_idempotent(case: Case) -> None:
    with trio.fail_after(10):
        async with case.open(LIMIT) as (transport, peer):
            woken = trio.Event()

            async def receive() -> None:
                with pytest.raises(ConnectionClosed):
                    await transport.receive_batch()
                woken.set()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(receive)
                nursery.start_soon(peer.drain)
                await trio.testing.wait_all_tasks_blocked()
                with trio.fail_after(2):
                    await transport.aclose()
            assert woken.is_set()
            await transport.aclose()
            with pytest.raises(ConnectionClosed):
                await transport.receive_batch()
            with pytest.raises(ConnectionClosed):
                await transport.send([b"{}"])
            with pytest.raises(ConnectionClosed):
                transport.send_nowait([b"{}"])


@pytest.mark.parametrize("case", CASES)
async def test_eof_from_the_peer_delivers_what_came_then_closes_the_link(case: Case) -> None:
    with trio.fail_after(10):
        async with case.open(LIMIT) as (transport, peer):
            await peer.send([b"[1]", b"[2]"])
            await peer.hang_up()
            received: list[bytes] = []
            with pytest.raises(ConnectionClosed):
                while True:
                    received += await transport.receive_batch()
            assert received == [b"[1]", b"[2]"]
            with pytest.raises(ConnectionClosed):
                await transport.receive_batch()
            with pytest.raises(ConnectionClosed):
                await transport.send([b"{}"])


@pytest.mark.parametrize("case", CASES)
async def test_a_send_cancelled_before_its_first_byte_leaves_the_link_usable(case: Case) -> None:
    big = b"b" * BIG
    with trio.fail_after(20):
        async with case.open(LIMIT) as (transport, peer):
            with trio.CancelScope() as scope:
                scope.cancel()
                await transport.send([b"cancelled at once"])
            assert scope.cancelled_caught
            async with trio.open_nursery() as nursery:
                nursery.start_soon(transport.send, [big])
                await trio.lowlevel.wait_readable(peer.fileno)
                with trio.move_on_after(0.2) as waiting:
                    await transport.send([b"cancelled while waiting"])  # behind the blocked send
                assert waiting.cancelled_caught
                assert await peer.receive() == big
            await transport.send([b"after"])
            assert await peer.receive() == b"after"


@pytest.mark.parametrize("case", EAGER_CASES)
async def test_a_send_cancelled_before_its_first_byte_keeps_the_backlog(case: Case) -> None:
    big = b"b" * BIG
    with trio.fail_after(20):
        async with case.open(LIMIT) as (transport, peer):
            assert transport.send_nowait([big])
            backlog = transport.backlog
            with trio.move_on_after(0.2) as waiting:
                await transport.send([b"cancelled while waiting"])  # waits for room before its first byte
            assert waiting.cancelled_caught
            assert transport.backlog == backlog
            async with trio.open_nursery() as nursery:
                nursery.start_soon(transport.send, [b"after"])
                assert await peer_receives(peer, 2) == [big, b"after"]


@pytest.mark.parametrize("case", CASES)
async def test_a_receive_cancelled_while_waiting_leaves_the_link_usable(case: Case) -> None:
    with trio.fail_after(10):
        async with case.open(LIMIT) as (transport, peer):
            with trio.move_on_after(0.05) as waiting:
                await transport.receive_batch()
            assert waiting.cancelled_caught
            await peer.send([b"late"])
            assert await transport.receive_batch() == [b"late"]


@pytest.mark.parametrize("case", CASES[:2])
async def test_readable_tells_whether_bytes_wait_without_reading_them(case: Case) -> None:
    # What Connection._reader asks before it gathers a flood (Settings.gather): it never waits while
    # bytes are there.
    with trio.fail_after(10):
        async with case.open(LIMIT) as (transport, peer):
            readable = waiting_probe(transport)
            assert readable is not None
            assert not readable()
            await peer.send(SMALL[:1])
            while not readable():
                await trio.sleep(0.001)
            assert readable()  # looking read nothing
            assert await transport.receive_batch() == SMALL[:1]
            assert not readable()
            await transport.aclose()
            assert readable()  # closed: the next read says so


async def test_a_transport_of_ones_own_need_not_tell_whether_bytes_wait() -> None:
    async with partial(websocket_link, _wsproto)(LIMIT) as (transport, _):
        assert waiting_probe(transport) is None
