"""The trio floors without a browser: the shared framing under both waits, and the shared scenarios.

The blocking floors (floor.pipe, floor.ws) and the trio floors (floor.trio.pipe, floor.trio.ws) share the
scenario coroutines (``blocking.FloorScenarios``) and the framing (``NulFrames``, ``FrameReader``); here
both kinds read the same scripted bytes, split at awkward places, and must agree.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import threading
import time
import types
from collections.abc import Generator
from typing import Any

import pytest
import trio

from benchmarks.clients import DEFAULT, FLOORS, REGISTRY, load
from benchmarks.clients.base import Sample
from benchmarks.clients.blocking import FloorScenarios, Message, run_blocking
from benchmarks.clients.floor_pipe import NulFrames, PipeConnection, nul_frames
from benchmarks.clients.floor_trio import (
    FloorTrioPipe,
    FloorTrioWebSocket,
    TrioPipeConnection,
    TrioRawWebSocket,
)
from benchmarks.clients.floor_ws import RawWebSocket, ws_frames
from benchmarks.scenarios import BATCH_SIZE, BY_NAME

INBOUND: list[bytes] = [
    b'{"id":1,"result":{}}',
    b"x" * 1000,  # 16-bit length
    b"fragmented message",
    b"y" * 700_000,  # 64-bit length, larger than one read: read straight into one buffer
    b'{"method":"Runtime.consoleAPICalled"}',
]
OUTBOUND: list[bytes] = [b'{"id":2,"method":"Browser.getVersion"}', b"z" * 300, b"w" * 70_000]
PING = b"are you there"


def test_both_trio_floors_are_registered_run_by_default_and_are_not_floors() -> None:
    assert REGISTRY["floor.trio.pipe"] == "benchmarks.clients.floor_trio:FloorTrioPipe"
    assert REGISTRY["floor.trio.ws"] == "benchmarks.clients.floor_trio:FloorTrioWebSocket"
    assert {"floor.trio.pipe", "floor.trio.ws"} <= set(DEFAULT)
    assert FLOORS == {"websocket": "floor.ws", "pipe": "floor.pipe", "offline": "json.loads.nogc"}
    pipe, ws = load("floor.trio.pipe"), load("floor.trio.ws")
    assert isinstance(pipe, FloorTrioPipe)
    assert (pipe.transport, pipe.own_browser) == ("pipe", True)
    assert isinstance(ws, FloorTrioWebSocket)
    assert (ws.transport, ws.own_browser) == ("websocket", False)


# -- run_blocking --------------------------------------------------------------------------------------


@types.coroutine
def _suspend() -> Generator[None, None, None]:
    yield


def test_run_blocking_runs_a_coroutine_that_never_suspends() -> None:
    async def answer() -> int:
        return 42

    assert run_blocking(answer()) == 42


def test_run_blocking_refuses_a_coroutine_that_suspends() -> None:
    async def waits() -> int:
        await _suspend()
        return 42

    with pytest.raises(RuntimeError, match="suspended"):
        run_blocking(waits())


# -- the pipe ------------------------------------------------------------------------------------------


def test_nul_frames_joins_and_splits_anywhere() -> None:
    data = nul_frames(INBOUND)
    frames = NulFrames()
    got: list[bytes] = []
    for i in range(0, len(data), 4099):
        frames.feed(data[i : i + 4099])
        while (msg := frames.pop()) is not None:
            got.append(bytes(msg))
    assert got == INBOUND
    assert frames.pop() is None


def _pipe_peer(to_client: int, from_client: int, received: list[bytes]) -> None:
    """Write INBOUND in odd pieces with pauses, then read the client's NUL-framed messages."""
    data = nul_frames(INBOUND)
    for i in range(0, len(data), 50_001):
        os.write(to_client, data[i : i + 50_001])
        time.sleep(0.002)
    frames = NulFrames()
    while len(received) < len(OUTBOUND):
        chunk = os.read(from_client, 1 << 16)
        if not chunk:
            return
        frames.feed(chunk)
        while (msg := frames.pop()) is not None:
            received.append(bytes(msg))


@pytest.fixture
def pipes() -> Generator[tuple[int, int, threading.Thread, list[bytes]], None, None]:
    """(client read fd, client write fd, the peer thread, what the peer received)."""
    client_r, peer_w = os.pipe()
    peer_r, client_w = os.pipe()
    received: list[bytes] = []
    peer = threading.Thread(target=_pipe_peer, args=(peer_w, peer_r, received), daemon=True)
    peer.start()
    yield client_r, client_w, peer, received
    peer.join(10)
    for fd in (client_r, peer_w, peer_r, client_w):
        os.close(fd)


def test_blocking_pipe_connection(pipes: tuple[int, int, threading.Thread, list[bytes]]) -> None:
    rfd, wfd, peer, received = pipes
    conn = PipeConnection(rfd, wfd)
    assert [bytes(conn.recv()) for _ in INBOUND] == INBOUND
    conn.send_many(OUTBOUND)
    peer.join(10)
    assert received == OUTBOUND


async def test_trio_pipe_connection_waits_in_trio(
    pipes: tuple[int, int, threading.Thread, list[bytes]],
) -> None:
    rfd, wfd, peer, received = pipes
    conn = TrioPipeConnection(rfd, wfd)
    assert not os.get_blocking(rfd)
    assert not os.get_blocking(wfd)
    assert [bytes(await conn.recv()) for _ in INBOUND] == INBOUND
    await conn.send_many(OUTBOUND)
    await trio.to_thread.run_sync(peer.join, 10)
    assert received == OUTBOUND
    conn.notify_closing()


# -- the websocket -------------------------------------------------------------------------------------


def _server_frame(payload: bytes, opcode: int = 0x1, fin: bool = True) -> bytes:
    """An unmasked server frame."""
    first = (0x80 if fin else 0) | opcode
    n = len(payload)
    if n < 126:
        return struct.pack("!BB", first, n) + payload
    if n < 1 << 16:
        return struct.pack("!BBH", first, 126, n) + payload
    return struct.pack("!BBQ", first, 127, n) + payload


def _client_frames(sock: socket.socket, count: int) -> list[tuple[int, bytes]]:
    """Read ``count`` client frames (masked with the all-zero key): (opcode, payload)."""
    buf = bytearray()

    def need(n: int) -> None:
        while len(buf) < n:
            chunk = sock.recv(1 << 16)
            assert chunk, "client closed early"
            buf.extend(chunk)

    out: list[tuple[int, bytes]] = []
    for _ in range(count):
        need(2)
        opcode, length = buf[0] & 0x0F, buf[1] & 0x7F
        assert buf[1] & 0x80, "client frames are masked"
        head = 2
        if length == 126:
            need(4)
            length, head = struct.unpack_from("!H", buf, 2)[0], 4
        elif length == 127:
            need(10)
            length, head = struct.unpack_from("!Q", buf, 2)[0], 10
        need(head + 4 + length)
        assert bytes(buf[head : head + 4]) == b"\0\0\0\0"
        out.append((opcode, bytes(buf[head + 4 : head + 4 + length])))
        del buf[: head + 4 + length]
    return out


def _ws_peer(listener: socket.socket, received: list[tuple[int, bytes]]) -> None:
    """Upgrade, send INBOUND (one message fragmented, a ping within), read what the client sends."""
    sock, _ = listener.accept()
    with sock:
        request = b""
        while b"\r\n\r\n" not in request:
            request += sock.recv(4096)
        third = INBOUND[2]
        script = (
            _server_frame(INBOUND[1])
            + _server_frame(third[:5], 0x1, fin=False)
            + _server_frame(PING, 0x9)
            + _server_frame(third[5:9], 0x0, fin=False)
            + _server_frame(third[9:], 0x0)
            + _server_frame(INBOUND[3])
            + _server_frame(INBOUND[4])
        )
        # The first frame arrives with the 101 response, so the handshake's leftover bytes are used.
        sock.sendall(b"HTTP/1.1 101 Switching Protocols\r\n\r\n" + _server_frame(INBOUND[0]) + script[:1])
        for i in range(1, len(script), 65_537):
            time.sleep(0.002)
            sock.sendall(script[i : i + 65_537])
        received += _client_frames(sock, 1 + len(OUTBOUND) + 1)


@pytest.fixture
def ws_server() -> Generator[tuple[str, threading.Thread, list[tuple[int, bytes]]], None, None]:
    listener = socket.create_server(("127.0.0.1", 0))
    received: list[tuple[int, bytes]] = []
    peer = threading.Thread(target=_ws_peer, args=(listener, received), daemon=True)
    peer.start()
    yield f"ws://127.0.0.1:{listener.getsockname()[1]}/devtools/browser/x", peer, received
    peer.join(10)
    listener.close()


def _expected_client_frames() -> list[tuple[int, bytes]]:
    return [(0xA, PING), *((0x1, m) for m in OUTBOUND), (0x8, b"")]


def test_outbound_framing() -> None:
    assert ws_frames([b"ab"]) == b"\x81\x82\0\0\0\0ab"


def test_blocking_raw_websocket(ws_server: tuple[str, threading.Thread, list[tuple[int, bytes]]]) -> None:
    url, peer, received = ws_server
    ws = RawWebSocket(url)
    assert [bytes(ws.recv()) for _ in INBOUND] == INBOUND
    ws.send_many(OUTBOUND)
    ws.close()
    peer.join(10)
    assert received == _expected_client_frames()


async def test_trio_raw_websocket_waits_in_trio(
    ws_server: tuple[str, threading.Thread, list[tuple[int, bytes]]],
) -> None:
    url, peer, received = ws_server
    ws = TrioRawWebSocket(url)
    assert [bytes(await ws.recv()) for _ in INBOUND] == INBOUND
    await ws.send_many(OUTBOUND)
    ws.close()
    await trio.to_thread.run_sync(peer.join, 10)
    assert received == _expected_client_frames()


# -- the shared scenarios ------------------------------------------------------------------------------


class FakeBrowser(FloorScenarios):
    """Answers every command, each reply preceded by an unrelated event."""

    def __init__(self) -> None:
        super().__init__()
        self.inbox: list[bytes] = []
        self.commands: list[dict[str, Any]] = []

    async def _send_many(self, messages: list[bytes]) -> None:
        for raw in messages:
            cmd = json.loads(raw)
            self.commands.append(cmd)
            self.inbox.append(b'{"method":"Target.targetInfoChanged","params":{}}')
            self.inbox.append(json.dumps({"id": cmd["id"], "result": {"product": "Fake/1"}}).encode())

    async def _recv(self) -> Message:
        return self.inbox.pop(0)

    async def _sleep(self, seconds: float) -> None:
        raise AssertionError("no setup here")


class TrioFakeBrowser(FakeBrowser):
    """The same, yielding to trio on every read as a wait for the fd would."""

    async def _recv(self) -> Message:
        await trio.lowlevel.checkpoint()
        return await super()._recv()


def _check(fake: FakeBrowser, roundtrip: Sample, batch: Sample) -> None:
    assert roundtrip.ops == 5
    assert len(roundtrip.latencies_us) == 5
    assert all(x > 0 for x in roundtrip.latencies_us)
    assert batch.ops == 2 * BATCH_SIZE
    assert len(batch.latencies_us) == 2
    assert [c["method"] for c in fake.commands[:5]] == ["Browser.getVersion"] * 5
    assert {c.get("sessionId") for c in fake.commands[5:]} == {"S"}
    assert [c["id"] for c in fake.commands] == list(range(1, 6 + 2 * BATCH_SIZE))
    assert fake.inbox == []  # every event and reply was read


def test_the_scenarios_run_blocking() -> None:
    fake = FakeBrowser()
    fake._sessions = ["S"]
    roundtrip = run_blocking(fake.run_scenario(BY_NAME["roundtrip.getVersion"], 5))
    batch = run_blocking(fake.run_scenario(BY_NAME["throughput.1session"], 2))
    _check(fake, roundtrip, batch)


async def test_the_same_scenarios_run_in_trio() -> None:
    fake = TrioFakeBrowser()
    fake._sessions = ["S"]
    roundtrip = await fake.run_scenario(BY_NAME["roundtrip.getVersion"], 5)
    batch = await fake.run_scenario(BY_NAME["throughput.1session"], 2)
    _check(fake, roundtrip, batch)
