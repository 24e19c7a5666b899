"""Transports: the NUL framer, the pipe and websocket transports against fake peers."""

from __future__ import annotations

import fractions
import json
import math
import os
import re
import socket
import struct
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from functools import partial
from typing import Any, Literal

import attrs
import orjson
import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

import engine._framing
from engine import CDPError, ConnectError, ConnectionClosed, MessageTooLarge, Settings
from engine._framing import EARLY_OBJECT_MAX, nul_framed
from engine._transport import SMALL_READ, FdIO
from engine._ws_codec import encode_frame, mask_payload
from engine.lowlevel import (
    CUT_MESSAGE,
    PIPE_MAX_MESSAGE_BYTES,
    WEBSOCKET_MAX_MESSAGE_BYTES,
    NulFramer,
    Opcode,
    PipeTransport,
    Transport,
    WebSocketTransport,
    fetch_json_version,
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


@given(st.lists(st.binary(max_size=20).map(lambda b: b.replace(b"\0", b"")), max_size=5), st.data())
def test_framed_messages_come_back_whole_however_the_reads_cut_them(
    messages: list[bytes], data: st.DataObject
) -> None:
    wire = nul_framed(messages)
    assert wire == b"".join(message + b"\0" for message in messages)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=4)))
    framer = NulFramer()
    out: list[bytes] = []
    for start, end in zip([0, *cuts], [*cuts, len(wire)], strict=True):
        out += framer.feed(wire[start:end])
    assert out == [message for message in messages if message]  # an empty message is skipped
    assert framer.pending_bytes == 0


def test_a_whole_object_comes_out_before_its_nul_and_the_nul_is_skipped() -> None:
    framer = NulFramer(json_objects=True)
    assert framer.feed(b'{"id":1,"result":{}}') == [b'{"id":1,"result":{}}']
    assert framer.pending_bytes == 0
    assert framer.feed(b"\0") == []  # its NUL, in a read of its own
    assert framer.feed(b'{"id":2') == []
    assert framer.feed(b',"result":{"a":"}"}}') == [b'{"id":2,"result":{"a":"}"}}']
    assert framer.feed(b'\0{"id":3}\0{"id":4}') == [b'{"id":3}', b'{"id":4}']  # owed NUL, then the next
    assert framer.feed(b"\0") == []


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**31), 2**31) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
)


@given(st.lists(st.dictionaries(st.text(max_size=3), _JSON, max_size=4), max_size=4), st.data())
def test_json_objects_come_back_whole_however_the_reads_cut_them(
    objects: list[dict[str, Any]], data: st.DataObject
) -> None:
    messages = [orjson.dumps(obj) for obj in objects]
    wire = nul_framed(messages)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=6)))
    framer = NulFramer(json_objects=True)
    out: list[bytes] = []
    for start, end in zip([0, *cuts], [*cuts, len(wire)], strict=True):
        if start < end:
            out += framer.feed(wire[start:end])
    assert out == messages
    assert framer.pending_bytes == 0


def test_only_a_whole_json_object_comes_out_early() -> None:
    framer = NulFramer(json_objects=True)
    assert framer.feed(b'{"a":{"b":1}') == []  # ends in } but is not whole yet
    assert framer.feed(b"}") == [b'{"a":{"b":1}}']
    assert framer.feed(b'\0"}"') == []  # whole JSON, not an object: waits for its NUL
    assert framer.feed(b"\0[1]") == [b'"}"']
    assert framer.feed(b"\0") == [b"[1]"]
    big = b'{"s":"' + b"x" * EARLY_OBJECT_MAX + b'"}'
    assert framer.feed(big) == []  # too long to parse on spec
    assert framer.feed(b"\0") == [big]
    assert NulFramer().feed(b"{}") == []  # a plain NUL framer knows nothing of JSON


@pytest.mark.parametrize("loads", [orjson.loads, json.loads], ids=["orjson", "json"])
def test_the_early_check_works_with_either_parser_and_survives_deep_nesting(
    loads: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine._framing, "_json_loads", loads)
    framer = NulFramer(json_objects=True)
    assert framer.feed(b'{"id":1,"result":{}}') == [b'{"id":1,"result":{}}']
    deep = b'{"a":' + b"[" * 50_000 + b"}"  # orjson refuses the depth, json.loads recurses: not whole
    assert framer.feed(b"\0" + deep) == []
    assert framer.feed(b"\0") == [deep]  # whole or not, its NUL ends it (the connection reports it)


def test_bytes_after_an_early_object_are_a_message_of_their_own() -> None:
    """A peer that sent more than one object before the NUL (not Chromium) gets its extra bytes seen: the
    connection reports them as a malformed message instead of the framer folding them into the next."""
    framer = NulFramer(json_objects=True)
    assert framer.feed(b'{"id":1}') == [b'{"id":1}']
    assert framer.feed(b' junk\0{"id":2}\0') == [b" junk", b'{"id":2}']


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


async def test_reads_are_small_unless_a_large_message_is_coming_in() -> None:
    """64 KiB reads (a larger buffer per read can cost an mmap, mremap and munmap each), and reads of
    ``read_size`` while the last one filled its request, so a large message takes few reads."""
    ours, peer = socket.socketpair()
    for sock in (ours, peer):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    ours.setblocking(False)
    fds = FdIO(ours.fileno(), ours.fileno(), lock=trio.StrictFIFOLock(), read_size=1 << 20, owned=False)
    try:
        with trio.fail_after(5):
            peer.sendall(b"s" * 300)
            assert len(await fds.read()) == 300
            large = 200 * 1024
            peer.sendall(b"L" * large)
            sizes = [len(await fds.read())]
            while sum(sizes) < large:
                sizes.append(len(await fds.read()))
            assert sizes == [SMALL_READ, large - SMALL_READ]  # the second read asked for up to 1 MiB
            peer.sendall(b"s" * 300 + b"t" * SMALL_READ)
            assert len(await fds.read()) == SMALL_READ  # back to small reads after a short one
    finally:
        ours.close()
        peer.close()


@asynccontextmanager
async def polling_fds(busy_poll: float) -> AsyncIterator[tuple[FdIO, socket.socket]]:
    """An FdIO on one end of a socket pair (the other end is the peer's), polling up to ``busy_poll``."""
    ours, peer = socket.socketpair()
    ours.setblocking(False)
    fds = FdIO(
        ours.fileno(),
        ours.fileno(),
        lock=trio.StrictFIFOLock(),
        read_size=1 << 20,
        owned=False,
        busy_poll=busy_poll,
    )
    try:
        yield fds, peer
    finally:
        ours.close()
        peer.close()


def send_later(peer: socket.socket, delay: float, data: bytes) -> None:
    """In a thread: the peer's write, ``delay`` seconds from now."""
    time.sleep(delay)
    peer.sendall(data)


async def read_with_cpu(fds: FdIO, peer: socket.socket, delay: float) -> float:
    """The thread CPU time a polling read takes for bytes the peer writes ``delay`` seconds later."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(trio.to_thread.run_sync, send_later, peer, delay, b"reply")
        await trio.lowlevel.checkpoint()  # the thread task starts before the clock does
        cpu = time.thread_time()
        assert await fds.read(poll=True) == b"reply"
        return time.thread_time() - cpu


async def test_a_polling_read_sleeps_after_busy_poll_and_then_stops_polling() -> None:
    """The poll is bounded by ``busy_poll``; after a reply slower than that, the next waits sleep at once,
    until a wait ends within ``busy_poll`` again. (Upper bounds only: a loaded machine gives a polling
    thread less CPU, never more.)"""
    with trio.fail_after(10):
        async with polling_fds(busy_poll=0.1) as (fds, peer):
            assert await read_with_cpu(fds, peer, 0.4) < 0.3, "polled past busy_poll"
            assert await read_with_cpu(fds, peer, 0.4) < 0.03, "polled again right after a slow reply"
            await read_with_cpu(fds, peer, 0.0)  # a quick reply: polling may begin again
            assert await read_with_cpu(fds, peer, 0.4) < 0.3


async def test_a_polling_read_gives_way_to_runnable_tasks() -> None:
    """While another task of the run can run, the read sleeps in epoll at once: polling would hold it."""
    turns = 0

    async def other() -> None:
        nonlocal turns
        while True:
            turns += 1
            await trio.lowlevel.checkpoint()

    with trio.fail_after(10):
        async with polling_fds(busy_poll=5.0) as (fds, peer), trio.open_nursery() as nursery:
            nursery.start_soon(other)
            await trio.to_thread.run_sync(peer.sendall, b"quick")
            assert await fds.read(poll=True) == b"quick"
            nursery.start_soon(trio.to_thread.run_sync, send_later, peer, 0.2, b"reply")
            await trio.sleep(0.01)
            before = turns
            assert await fds.read(poll=True) == b"reply"
            assert turns - before > 10, "the other task was held while the read polled"
            nursery.cancel_scope.cancel()


async def test_a_polling_read_ends_at_the_callers_deadline() -> None:
    """No deadline waits for the poll: it stops at the next one due, and the cancellation is on time."""
    with trio.fail_after(10):
        async with polling_fds(busy_poll=5.0) as (fds, _):
            start = trio.current_time()
            with trio.move_on_after(0.05) as scope:
                await fds.read(poll=True)
            assert scope.cancelled_caught
            assert trio.current_time() - start < 1.0


async def test_a_polling_read_never_reads_a_reused_fd() -> None:
    """Another task closes the socket mid-poll and the number goes to a new socket with bytes waiting: the
    poll raises ClosedResourceError (as a wait in epoll does) and never reads the stranger's bytes."""
    ours, peer = socket.socketpair()
    ours.setblocking(False)
    number = ours.fileno()
    fds = FdIO(
        number, number, lock=trio.StrictFIFOLock(), read_size=1 << 20, owned=False, busy_poll=5.0, lender=ours
    )
    strangers: list[socket.socket] = []

    async def close_and_reuse() -> None:
        await trio.sleep(0.05)
        ours.close()
        strangers.extend(socket.socketpair())  # the lowest free numbers: ours among them
        reused = next(s for s in strangers if s.fileno() == number)
        next(s for s in strangers if s is not reused).sendall(b"stranger")

    try:
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(close_and_reuse)
                with pytest.raises(trio.ClosedResourceError):
                    await fds.read(poll=True)
            assert any(s.fileno() == number for s in strangers), (
                "the number was not reused: the test proves nothing"
            )
    finally:
        for sock in (ours, peer, *strangers):
            sock.close()


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


async def test_a_pipe_reply_is_read_before_its_nul_is_written() -> None:
    """Chromium writes a message's NUL with a write of its own: the reply must not wait for it."""
    with trio.fail_after(5):
        async with pipe_pair() as (transport, _, peer_write):
            os.write(peer_write, b'{"id":1,"result":{}}')
            assert await transport.receive_batch() == [b'{"id":1,"result":{}}']
            os.write(peer_write, b"\0")
            os.write(peer_write, b'{"id":2,"result":{}}\0')
            assert await transport.receive_batch() == [b'{"id":2,"result":{}}']


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


@pytest.mark.parametrize("value", [-0.001, "0.5", float("nan"), True, float("inf"), 10**400, 1.5])
def test_busy_poll_refuses_what_is_not_a_duration(value: Any) -> None:
    """Refused when the Settings are made, with the field's name, not inside the first command's read; an
    infinite poll would spin a core for as long as a reply takes."""
    with pytest.raises(
        ValueError, match=r"Settings\.busy_poll is a number of seconds from 0 \(never poll\) to 1,"
    ):
        Settings(busy_poll=value)
    assert Settings(busy_poll=0).busy_poll == 0
    assert Settings(busy_poll=1).busy_poll == 1


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("navigation_timeout", "30", TypeError),  # failed later as a TypeError inside trio
        ("evaluate_timeout", 0.0, ValueError),  # every evaluate ran out at once
        ("launch_timeout", -1.0, ValueError),
        ("attach_timeout", float("nan"), ValueError),
        ("connect_timeout", -math.inf, ValueError),
        ("close_timeout", 10**400, ValueError),  # past float's range: trio's deadline arithmetic fails
        ("max_inbound_bytes", 0, ValueError),
        ("stderr_tail_lines", 2.5, TypeError),
        ("protocol_trace", "yes", TypeError),
    ],
)
def test_settings_refuse_what_no_wait_or_limit_can_use(
    field: str, value: Any, error: type[Exception]
) -> None:
    with pytest.raises(error, match=rf"Settings\.{field} is .*, not {re.escape(repr(value))}$"):
        Settings(**{field: value})


def test_settings_take_any_real_number_and_no_limit() -> None:
    settings = Settings(
        evaluate_timeout=math.inf, navigation_timeout=fractions.Fraction(3, 2), stderr_tail_lines=0
    )
    assert settings.evaluate_timeout == math.inf
    assert attrs.evolve(settings, kill_timeout=1).kill_timeout == 1


def test_settings_show_what_each_field_means_in_help() -> None:
    doc = Settings.__doc__ or ""
    for field in attrs.fields(Settings):
        assert f"\n        {field.name}: " in doc, field.name
    assert Settings(stderr_tail_lines=0, evaluate_timeout=0.4).evaluate_timeout == 0.4
