"""Transport faults from in-process fake peers over real sockets and pipes (no Chromium, except the last).

Each peer misbehaves the way a broken or hostile browser endpoint could: it pings and stops reading, closes
while we cannot write, declares gigabytes in a frame header, never ends a message, or answers the HTTP
handshakes with the wrong thing. Hangs are bounded by ``trio.fail_after``, but what is asserted is the
specific outcome (a message delivered, a ConnectionClosed that says why), never the deadline.
"""

from __future__ import annotations

import json
import os
import re
import socket
import struct
from contextlib import suppress

import pytest
import trio
import trio.testing

from engine import ConnectError, ConnectionClosed, Settings
from engine._framing import InboundTooLarge
from engine._ws_codec import MAX_PONG_BYTES, encode_frame
from engine.lowlevel import (
    NulFramer,
    Opcode,
    WebSocketCodec,
    WebSocketTransport,
    discover_ws_url,
    open_connection,
    open_websocket_transport,
)
from tests.unit.engine.test_transport import pipe_pair, read_client_frame, socket_stream_pair
from tests.unit.engine.test_transport_conformance import answer_upgrade
from tests.unit.faults.server import Handler, read_request, serving

MIB = 1024 * 1024
BIG = 8 * MIB
"""Far more than a socket pair's kernel buffers hold, so a writer of this many bytes blocks until read."""


def server_frame(opcode: int, payload: bytes, *, fin: bool = True) -> bytes:
    return encode_frame(opcode, payload, None, fin=fin)


async def send_until_closed(stream: trio.abc.SendStream, data: bytes) -> None:
    """A peer's write that may meet a link our side has already closed."""
    with suppress(trio.BrokenResourceError):
        await stream.send_all(data)


def pings(count: int) -> bytes:
    """``count`` pings with payloads 0, 1, 2... (4 bytes each), so the latest one can be recognised."""
    return b"".join(server_frame(Opcode.PING, struct.pack("!I", i)) for i in range(count))


# -- websocket control frames never block the reader -------------------------------------------------


def test_a_ping_flood_leaves_one_owed_pong_for_the_latest_ping() -> None:
    codec = WebSocketCodec()
    codec.receive_data(pings(10_000))
    assert codec.control_owed == 6 + 4 <= MAX_PONG_BYTES
    owed = codec.data_to_send()
    assert len(owed) == 6 + 4, "one pong answers the whole flood"
    assert owed[0] == 0x80 | Opcode.PONG
    key = owed[2:6]
    assert bytes(b ^ key[i % 4] for i, b in enumerate(owed[6:])) == struct.pack("!I", 9_999)
    assert codec.control_owed == 0
    assert codec.data_to_send() == b""


async def test_ping_flood_from_a_peer_that_stops_reading_never_blocks_the_reader() -> None:
    client, server = socket_stream_pair()
    # A small send buffer fills after a few pongs, as any buffer does once the peer stops reading.
    client.socket.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_SNDBUF, 4096)
    transport = WebSocketTransport(client)
    count = 5_000

    async def flood() -> None:
        for i in range(count):  # one write each, so the reader sees (and answers) many of them apart
            await server.send_all(server_frame(Opcode.PING, struct.pack("!I", i)))
        await server.send_all(server_frame(Opcode.TEXT, b'{"after":"pings"}'))

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(flood)
            assert await transport.receive_batch() == [b'{"after":"pings"}']
        # Bounded: what the kernel did not take of one pong, and the one pong still owed.
        assert 0 < transport.backlog <= 2 * MAX_PONG_BYTES

        # Once the peer reads again, a send with no messages writes what is owed, and the stream is whole:
        # pongs only, the last one answering the latest ping, then our next message.
        frames: list[tuple[int, bytes]] = []

        async def drain() -> None:
            buffer = bytearray()
            while not frames or frames[-1][0] != Opcode.TEXT:
                frames.append(await read_client_frame(server, buffer))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(drain)
            await transport.send([])
            assert transport.backlog == 0
            await transport.send([b'{"id":1}'])
    assert frames[-1] == (Opcode.TEXT, b'{"id":1}')
    assert frames[-2] == (Opcode.PONG, struct.pack("!I", count - 1))
    assert {opcode for opcode, _ in frames[:-1]} == {Opcode.PONG}
    assert len(frames) - 1 < count, "pongs are coalesced while the peer does not read"
    await transport.aclose()
    await server.aclose()


async def test_a_pong_the_reader_could_not_write_goes_out_through_the_connections_writer() -> None:
    """End to end with the connection layer: no command is sent, yet the latest ping is answered."""
    client, server = socket_stream_pair()
    client.socket.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_SNDBUF, 4096)
    count = 5_000
    with trio.fail_after(10):
        async with open_connection(WebSocketTransport(client)):
            for i in range(count):
                await server.send_all(server_frame(Opcode.PING, struct.pack("!I", i)))
            await server.send_all(server_frame(Opcode.TEXT, b'{"id":99}'))  # a batch for the reader to finish
            buffer = bytearray()
            frames = [await read_client_frame(server, buffer)]
            while frames[-1] != (Opcode.PONG, struct.pack("!I", count - 1)):
                frames.append(await read_client_frame(server, buffer))
    assert {opcode for opcode, _ in frames} == {Opcode.PONG}
    await server.aclose()


async def test_a_send_blocked_on_a_peer_that_stops_reading_does_not_block_the_reader() -> None:
    client, server = socket_stream_pair()
    transport = WebSocketTransport(client)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            sent = trio.Event()

            async def send_big() -> None:
                await transport.send([b"x" * BIG])
                sent.set()

            nursery.start_soon(send_big)
            await trio.lowlevel.wait_readable(server.socket.fileno())
            await server.send_all(server_frame(Opcode.PING, b"hb") + server_frame(Opcode.TEXT, b"[1]"))
            assert await transport.receive_batch() == [b"[1]"]
            assert not sent.is_set(), "the big send still holds the socket"
            assert transport.backlog == 6 + 2, "the pong waits, owed, for the next send"

            buffer = bytearray()
            assert await read_client_frame(server, buffer) == (Opcode.TEXT, b"x" * BIG)
            await sent.wait()
            await transport.send([])
            assert await read_client_frame(server, buffer) == (Opcode.PONG, b"hb")
    await transport.aclose()
    await server.aclose()


async def test_a_close_from_a_peer_that_stops_reading_ends_the_reader_at_once() -> None:
    client, server = socket_stream_pair()
    transport = WebSocketTransport(client)
    with trio.fail_after(10):
        assert transport.send_nowait([b"x" * BIG])
        assert transport.backlog > 0, "the kernel took only part of it; the peer reads nothing"
        await server.send_all(server_frame(Opcode.CLOSE, struct.pack("!H", 1001) + b"going away"))
        with pytest.raises(ConnectionClosed, match="1001 going away"):
            await transport.receive_batch()
        with pytest.raises(ConnectionClosed, match="1001 going away"):
            await transport.send([])
    await server.aclose()


async def test_a_transport_on_a_plain_trio_stream_keeps_the_pong_for_the_next_send() -> None:
    client, server = trio.testing.memory_stream_pair()
    transport = WebSocketTransport(client)
    with trio.fail_after(5):
        await server.send_all(server_frame(Opcode.PING, b"a") + server_frame(Opcode.PING, b"b"))
        await server.send_all(server_frame(Opcode.TEXT, b"{}"))
        assert await transport.receive_batch() == [b"{}"]
        assert transport.backlog == 6 + 1
        await transport.send([])
        assert transport.backlog == 0
        data = await server.receive_some()
        assert len(data) == 6 + 1
        assert (data[0], data[6] ^ data[2]) == (0x80 | Opcode.PONG, ord("b"))
    await transport.aclose()


async def test_a_pipe_send_cancelled_before_its_first_byte_keeps_the_backlog() -> None:
    """A backlog can be the tail of a message; losing it to a cancelled send would garble the stream."""
    message = b"y" * BIG
    with trio.fail_after(10):
        async with pipe_pair() as (pipe, peer_read, _):
            assert pipe.send_nowait([message])
            backlog = pipe.backlog
            assert backlog > 0
            # The peer reads nothing, so the send waits for room before its first byte, and is cancelled.
            with trio.move_on_after(0.2) as scope:
                await pipe.send([b"{}"])
            assert scope.cancelled_caught
            assert pipe.backlog == backlog
            received = bytearray()
            async with trio.open_nursery() as nursery, trio.lowlevel.FdStream(os.dup(peer_read)) as peer:
                nursery.start_soon(pipe.send, [b"{}"])
                while len(received) < len(message) + 4:
                    received += await peer.receive_some(MIB)
            assert received == message + b"\0{}\0"


async def test_a_websocket_send_cancelled_before_its_first_byte_keeps_the_backlog() -> None:
    """A backlog can be the tail of a frame; losing it to a cancelled send would garble the stream."""
    message = b"y" * BIG
    client, server = socket_stream_pair()
    transport = WebSocketTransport(client)
    with trio.fail_after(10):
        assert transport.send_nowait([message])
        backlog = transport.backlog
        assert backlog > 0
        # The peer reads nothing, so the send waits for room before its first byte, and is cancelled.
        with trio.move_on_after(0.2) as scope:
            await transport.send([b"{}"])
        assert scope.cancelled_caught
        assert transport.backlog == backlog
        async with trio.open_nursery() as nursery:
            nursery.start_soon(transport.send, [b"{}"])
            buffer = bytearray()
            assert await read_client_frame(server, buffer) == (Opcode.TEXT, message)
            assert await read_client_frame(server, buffer) == (Opcode.TEXT, b"{}")
    await transport.aclose()
    await server.aclose()


# -- the inbound size cap ----------------------------------------------------------------------------


async def test_a_frame_header_over_the_inbound_limit_closes_the_websocket_at_once() -> None:
    client, server = socket_stream_pair()
    transport = WebSocketTransport(client)
    with trio.fail_after(5):
        # Only the header: a transport that waited for the 8 GiB payload would wait here forever.
        await server.send_all(bytes([0x80 | Opcode.TEXT, 127]) + struct.pack("!Q", 8 * 1024**3))
        expected = (
            "the browser sent a message of 8,589,934,592 bytes, over the 1,073,741,824-byte limit "
            "(Settings.max_inbound_bytes); the websocket was closed. Raise the limit if the message is "
            "legitimate"
        )
        with pytest.raises(ConnectionClosed) as caught:
            await transport.receive_batch()
        assert str(caught.value) == expected
        assert await server.receive_some() == b"", "the link was closed"
        with pytest.raises(ConnectionClosed, match="max_inbound_bytes"):
            await transport.send([b"{}"])
    await server.aclose()


async def test_messages_before_an_oversized_one_are_delivered_then_the_websocket_closes() -> None:
    client, server = socket_stream_pair()
    transport = WebSocketTransport(client, max_inbound_bytes=MIB)
    with trio.fail_after(5):
        await server.send_all(
            server_frame(Opcode.TEXT, b'{"id":1}')
            + bytes([0x80 | Opcode.TEXT, 127])
            + struct.pack("!Q", 2 * MIB)
        )
        assert await transport.receive_batch() == [b'{"id":1}'], "a reply that came whole still counts"
        with pytest.raises(ConnectionClosed, match="of 2,097,152 bytes, over the 1,048,576-byte limit"):
            await transport.receive_batch()
    await server.aclose()


async def test_fragments_adding_up_past_the_inbound_limit_close_the_websocket() -> None:
    client, server = socket_stream_pair()
    transport = WebSocketTransport(client, max_inbound_bytes=MIB)
    part = b"f" * (600 * 1024)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                send_until_closed,
                server,
                server_frame(Opcode.TEXT, part, fin=False)
                + server_frame(Opcode.CONTINUATION, part, fin=False)
                + server_frame(Opcode.CONTINUATION, b"}"),
            )
            with pytest.raises(ConnectionClosed, match=r"at least 1,228,800 bytes, over the 1,048,576-byte"):
                await transport.receive_batch()
    await server.aclose()


async def test_a_pipe_message_exactly_at_the_inbound_limit_is_delivered() -> None:
    message = b"m" * MIB
    with trio.fail_after(5):
        async with pipe_pair(max_inbound_bytes=MIB) as (pipe, _, peer_write), trio.open_nursery() as nursery:
            peer = trio.lowlevel.FdStream(os.dup(peer_write))
            nursery.start_soon(send_until_closed, peer, message + b"\0" + message + b"!\0")
            assert await pipe.receive_batch() == [message]
            with pytest.raises(ConnectionClosed, match=r"of 1,048,577 bytes, over the 1,048,576"):
                await pipe.receive_batch()
            await peer.aclose()


async def test_a_websocket_message_exactly_at_the_inbound_limit_is_delivered() -> None:
    message = b"m" * MIB
    client, server = socket_stream_pair()
    transport = WebSocketTransport(client, max_inbound_bytes=MIB)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                send_until_closed,
                server,
                server_frame(Opcode.TEXT, message) + server_frame(Opcode.TEXT, message + b"!"),
            )
            assert await transport.receive_batch() == [message]
            with pytest.raises(ConnectionClosed, match=r"of 1,048,577 bytes, over the 1,048,576"):
                await transport.receive_batch()
    await server.aclose()


def test_the_nul_framer_refuses_an_unfinished_message_past_its_limit() -> None:
    framer = NulFramer(max_inbound_bytes=MIB)
    chunk = b"n" * (64 * 1024)
    fed = 0
    with pytest.raises(InboundTooLarge) as caught:
        while fed <= 100 * MIB:
            framer.feed(chunk)
            fed += len(chunk)
    assert fed <= MIB, "every byte taken was within the limit"
    assert framer.pending_bytes <= MIB
    assert caught.value.at_least
    assert caught.value.size == MIB + len(chunk)
    # Finished messages too, whether they end in the chunk that starts them or in a later one.
    with pytest.raises(InboundTooLarge, match="of 1,048,577 bytes") as caught:
        NulFramer(max_inbound_bytes=MIB).feed(b"{}\0" + b"z" * (MIB + 1) + b"\0")
    assert caught.value.completed == [b"{}"], "whole messages before it are handed over"
    framer = NulFramer(max_inbound_bytes=MIB)
    framer.feed(b"z" * MIB)
    with pytest.raises(InboundTooLarge, match="of 1,048,577 bytes"):
        framer.feed(b"z\0")


async def test_a_pipe_peer_that_never_writes_a_nul_is_cut_off_at_the_inbound_limit() -> None:
    read_size = 64 * 1024
    async with pipe_pair(max_inbound_bytes=MIB, read_size=read_size) as (pipe, _, peer_write):
        written = 0
        peer = trio.lowlevel.FdStream(os.dup(peer_write))

        async def flood() -> None:
            # Stops by itself after 64 MiB, so that a transport without a limit fails the test by waiting,
            # not by eating memory.
            nonlocal written
            chunk = b"\x01" * read_size
            with pytest.raises(trio.BrokenResourceError):
                while written < 64 * MIB:
                    await peer.send_all(chunk)
                    written += len(chunk)
                await trio.sleep_forever()

        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(flood)
                with pytest.raises(ConnectionClosed, match="over the 1,048,576-byte limit") as caught:
                    await pipe.receive_batch()
        found = re.search(r"a message of at least ([\d,]+) bytes", str(caught.value))
        assert found is not None
        assert MIB < int(found[1].replace(",", "")) <= MIB + read_size, "cut off one read past the limit"
        assert "the pipe was closed" in str(caught.value)
        assert written < 64 * MIB, "the peer's writes failed: the pipe is closed"
        await peer.aclose()


# -- connect-phase errors ----------------------------------------------------------------------------


def answering(status: str, body: bytes) -> Handler:
    async def handler(stream: trio.SocketStream) -> None:
        await read_request(stream)
        head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        await stream.send_all(head.encode() + body)
        await stream.aclose()

    return handler


async def silent(stream: trio.SocketStream) -> None:
    await trio.sleep_forever()


def a_free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


WS_URL = "ws://127.0.0.1:9222/devtools/browser/0f3c"


async def test_discover_ws_url_returns_the_browsers_websocket_url() -> None:
    body = json.dumps({"Browser": "HeadlessChrome/1", "webSocketDebuggerUrl": WS_URL}).encode()
    async with serving(answering("200 OK", body)) as port:
        with trio.fail_after(5):
            assert await discover_ws_url("127.0.0.1", port, Settings()) == WS_URL


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        pytest.param("404 Not Found", b"no such page", r"answered HTTP 404 \(expected 200", id="not-200"),
        pytest.param(
            "200 OK", b"<html>hello</html>", r"did not answer JSON \(expected .*<html>", id="not-json"
        ),
        pytest.param("200 OK", b"[" * 100_000, r"did not answer JSON", id="json-nested-too-deep"),
        pytest.param("200 OK", b"[1, 2]", r"JSON that is not an object .*\[1, 2\]", id="not-an-object"),
        pytest.param("200 OK", b"null", r"JSON that is not an object", id="null"),
        pytest.param("200 OK", b"{}", r"without webSocketDebuggerUrl \(its keys: none\)", id="empty-object"),
        pytest.param(
            "200 OK",
            b'{"Browser": "x", "Protocol-Version": "1.3"}',
            r"without webSocketDebuggerUrl \(its keys: 'Browser', 'Protocol-Version'\)",
            id="no-url",
        ),
        pytest.param(
            "200 OK",
            b'{"webSocketDebuggerUrl": 5}',
            r"webSocketDebuggerUrl that is not a string: 5 \(int\); expected a ws://",
            id="url-not-a-string",
        ),
        pytest.param(
            "200 OK",
            b'{"webSocketDebuggerUrl": "http://127.0.0.1:9222/x"}',
            r"webSocketDebuggerUrl 'http://127.0.0.1:9222/x'; expected a ws://host:port/",
            id="url-not-ws",
        ),
        pytest.param(
            "200 OK",
            b'{"webSocketDebuggerUrl": "ws://127.0.0.1:99999/x"}',
            r"expected a ws://host:port/",
            id="url-bad-port",
        ),
    ],
)
async def test_discover_ws_url_says_what_was_expected_and_what_came(
    status: str, body: bytes, expected: str
) -> None:
    async with serving(answering(status, body)) as port:
        with trio.fail_after(5), pytest.raises(ConnectError, match=expected) as caught:
            await discover_ws_url("127.0.0.1", port, Settings())
    assert f"GET http://127.0.0.1:{port}/json/version" in str(caught.value)


async def test_discover_ws_url_with_nothing_listening_says_it_could_not_connect() -> None:
    port = a_free_port()
    with (
        trio.fail_after(5),
        pytest.raises(ConnectError, match=r"could not connect to http://127\.0\.0\.1"),
    ):
        await discover_ws_url("127.0.0.1", port, Settings())


async def test_discover_ws_url_from_a_server_that_never_answers_names_the_setting() -> None:
    async with serving(silent) as port:
        with trio.fail_after(5), pytest.raises(ConnectError) as caught:
            await discover_ws_url("127.0.0.1", port, Settings(connect_timeout=0.2))
    assert str(caught.value) == (
        f"127.0.0.1:{port} accepted the connection but did not answer GET /json/version within 0.2 s "
        "(Settings.connect_timeout)"
    )


async def test_discover_ws_url_from_a_server_that_hangs_up_says_so() -> None:
    async def hang_up(stream: trio.SocketStream) -> None:
        await stream.aclose()

    async with serving(hang_up) as port:
        with trio.fail_after(5), pytest.raises(ConnectError) as caught:
            await discover_ws_url("127.0.0.1", port, Settings())
    assert "the server closed the connection without an answer" in str(caught.value)


async def test_a_server_that_never_answers_the_upgrade_gives_connect_error() -> None:
    async with serving(silent) as port:
        url = f"ws://127.0.0.1:{port}/devtools/browser/x"
        with trio.fail_after(5), pytest.raises(ConnectError) as caught:
            await open_websocket_transport(url, Settings(connect_timeout=0.2))
    assert str(caught.value) == (
        f"127.0.0.1:{port} accepted the connection but did not answer the websocket upgrade for {url} "
        "within 0.2 s (Settings.connect_timeout)"
    )


async def test_open_websocket_transport_applies_the_settings_inbound_limit() -> None:
    async def upgrade_then_send_too_much(stream: trio.SocketStream) -> None:
        await answer_upgrade(stream)
        await stream.send_all(server_frame(Opcode.TEXT, b"k" * 2048))
        await trio.sleep_forever()

    async with serving(upgrade_then_send_too_much) as port:
        with trio.fail_after(5):
            transport = await open_websocket_transport(
                f"ws://127.0.0.1:{port}/devtools/browser/x", Settings(max_inbound_bytes=1024)
            )
            with pytest.raises(ConnectionClosed, match=r"of 2,048 bytes, over the 1,024-byte limit"):
                await transport.receive_batch()


async def test_a_reset_connection_says_the_browser_reset_it() -> None:
    # A killed browser's socket often ends in a reset (ECONNRESET), not an EOF: say what that means.
    async def upgrade_then_reset(stream: trio.SocketStream) -> None:
        await answer_upgrade(stream)
        stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        stream.socket.close()

    async with serving(upgrade_then_reset) as port:
        with trio.fail_after(5):
            url = f"ws://127.0.0.1:{port}/devtools/browser/x"
            transport = await open_websocket_transport(url, Settings())
            with pytest.raises(ConnectionClosed) as caught:
                await transport.receive_batch()
    assert str(caught.value) == "the browser reset the websocket's TCP connection (it exited or crashed)"
