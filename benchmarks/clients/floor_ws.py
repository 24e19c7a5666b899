"""The websocket floor: a blocking client on a raw socket, and the websocket-client package for comparison.

Both set TCP_NODELAY. The raw one was measured faster on every scenario here (see README), so it is the
floor ("floor.ws"); the websocket-client one stays runnable as "floor.ws.websocket-client" so the choice
can be re-measured on another machine.

The raw client frames with an all-zero masking key: a valid RFC 6455 client frame whose masking is the
identity, so no per-byte work is done. Server frames are unmasked; pings are answered; fragmented
messages are joined; large messages are read straight into one buffer. The handshake, the framing and
the frame parsing (``handshake``, ``ws_frames``, ``FrameReader``) are shared with the trio websocket floor
(``floor_trio``), which differs only in how it waits for the socket.
"""

from __future__ import annotations

import base64
import contextlib
import os
import socket
import struct
import time
import urllib.parse
from typing import Any, ClassVar

from benchmarks.chromium import launch_websocket
from benchmarks.clients.base import Env
from benchmarks.clients.blocking import BlockingCDPClient, Message, Unparsed

SOCKET_TIMEOUT_S = 120.0
CHUNK = 1 << 16
"""What a read for headers and small frames asks for (larger payloads are read straight into their own
buffer). 64 KiB comes from glibc's heap; a larger buffer per read can cost an mmap, an mremap and a munmap
every time, depending on the process's allocation history (see floor_pipe.SMALL_READ)."""
_ZERO_MASK = b"\0\0\0\0"


def _frame(payload: bytes, opcode: int = 0x1) -> bytes:
    n = len(payload)
    if n < 126:
        header = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
    elif n < 1 << 16:
        header = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
    else:
        header = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
    return header + _ZERO_MASK + payload


CLOSE_FRAME = _frame(b"", 0x8)


def ws_frames(messages: list[bytes]) -> bytes:
    """Whole messages as one write: one text frame each, all-zero masking key."""
    return b"".join([_frame(m) for m in messages])


def handshake(url: str) -> tuple[socket.socket, bytes]:
    """A blocking TCP_NODELAY socket upgraded to a websocket, and the bytes that came after the response."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    port = parts.port or 80
    sock = socket.create_connection((host, port), timeout=SOCKET_TIMEOUT_S)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        rest = _upgrade(sock, f"{host}:{port}", parts.path or "/")
    except BaseException:
        sock.close()
        raise
    return sock, rest


def _upgrade(sock: socket.socket, host: str, path: str) -> bytes:
    """Send the upgrade request, read the 101 response; the bytes read past it."""
    key = base64.b64encode(os.urandom(16)).decode()
    request = (
        f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    sock.sendall(request.encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError("connection closed during the websocket handshake")
        head += chunk
    head, _, rest = head.partition(b"\r\n\r\n")
    if b" 101 " not in head.split(b"\r\n", 1)[0]:
        raise ConnectionError(f"websocket handshake refused: {head[:200]!r}")
    return rest


class FrameReader:
    """The reading half of the raw websocket, without I/O; shared by the blocking and the trio floors.

    The I/O side loops: ``header()`` (reading more while it answers how many bytes it needs), then
    ``take(length)`` (or, for a payload larger than what is buffered, ``take_partial`` and reading the
    rest straight into that one buffer), then ``message(...)``, which answers the whole message or None
    (a fragment, or a control frame whose reply it queues in ``replies`` for the I/O side to send).
    """

    def __init__(self, initial: bytes = b"") -> None:
        self.buf = bytearray(initial)
        self.pos = 0  # start of the unread bytes
        self.replies: list[bytes] = []
        self._fragments: list[Message] = []

    def header(self) -> tuple[int, int] | int:
        """Consume the next frame's header: (its first byte, its payload length); or, when the header is
        not all buffered yet, how many unread bytes it needs."""
        buf = self.buf
        pos = self.pos
        avail = len(buf) - pos
        if avail < 2:
            return 2
        b1 = buf[pos + 1]
        length = b1 & 0x7F
        extra = 2 if length == 126 else 8 if length == 127 else 0
        masked = 4 if b1 & 0x80 else 0
        if avail < 2 + extra + masked:
            return 2 + extra + masked
        if masked:
            raise ConnectionError("the server sent a masked frame")
        if extra == 2:
            length = struct.unpack_from("!H", buf, pos + 2)[0]
        elif extra == 8:
            length = struct.unpack_from("!Q", buf, pos + 2)[0]
        self.pos = pos + 2 + extra
        return buf[pos], length

    def compact(self) -> None:
        """Drop the consumed bytes, so that ``len(buf)`` is the unread count and reads append."""
        if self.pos:
            del self.buf[: self.pos]
            self.pos = 0

    def take(self, n: int) -> Message | None:
        """The next ``n`` bytes, consumed, when they are all buffered; else None."""
        start = self.pos
        if len(self.buf) - start < n:
            return None
        self.pos = start + n
        return self.buf[start : self.pos]

    def take_partial(self, n: int) -> tuple[bytearray, int]:
        """For a payload of ``n`` bytes not all buffered: a buffer of ``n`` bytes starting with what is
        buffered (all consumed), and how many bytes that is. The caller reads the rest into it."""
        avail = len(self.buf) - self.pos
        out = bytearray(n)
        out[:avail] = self.buf[self.pos :]
        self.buf.clear()
        self.pos = 0
        return out, avail

    def message(self, b0: int, payload: Message) -> Message | None:
        """The whole message this frame completes; None for a fragment or a control frame."""
        opcode = b0 & 0x0F
        if opcode in (0x0, 0x1, 0x2):
            if b0 & 0x80:
                if not self._fragments:
                    return payload
                self._fragments.append(payload)
                whole = b"".join(self._fragments)
                self._fragments.clear()
                return whole
            self._fragments.append(payload)
        elif opcode == 0x8:
            raise ConnectionError("the browser closed the websocket")
        elif opcode == 0x9:
            self.replies.append(_frame(bytes(payload), 0xA))
        return None


class RawWebSocket:
    """The smallest websocket client that talks to Chromium correctly (blocking)."""

    def __init__(self, url: str) -> None:
        self._sock, rest = handshake(url)
        self._frames = FrameReader(rest)

    def send_many(self, messages: list[bytes]) -> None:
        self._sock.sendall(ws_frames(messages))

    def _fill(self, need: int) -> None:
        """Make at least ``need`` unread bytes available in the buffer."""
        self._frames.compact()
        buf = self._frames.buf
        while len(buf) < need:
            chunk = self._sock.recv(max(CHUNK, need - len(buf)))
            if not chunk:
                raise ConnectionError("the browser closed the websocket")
            buf += chunk

    def _read_large(self, n: int) -> Message:
        out, got = self._frames.take_partial(n)
        view = memoryview(out)
        while got < n:
            k = self._sock.recv_into(view[got:], n - got)
            if not k:
                raise ConnectionError("the browser closed the websocket")
            got += k
        return out

    def recv(self) -> Message:
        frames = self._frames
        while True:
            header = frames.header()
            while isinstance(header, int):
                self._fill(header)
                header = frames.header()
            b0, length = header
            payload = frames.take(length)
            if payload is None:
                payload = self._read_large(length)
            msg = frames.message(b0, payload)
            if msg is not None:
                return msg
            while frames.replies:
                self._sock.sendall(frames.replies.pop(0))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.sendall(CLOSE_FRAME)
        self._sock.close()


class LibWebSocket:
    """The same interface over the websocket-client package."""

    def __init__(self, url: str) -> None:
        import websocket

        self._ws: Any = websocket.create_connection(
            url,
            timeout=SOCKET_TIMEOUT_S,
            sockopt=((socket.IPPROTO_TCP, socket.TCP_NODELAY, 1),),
            skip_utf8_validation=True,
            enable_multithread=False,
            suppress_origin=True,
        )

    def send_many(self, messages: list[bytes]) -> None:
        for m in messages:
            self._ws.send(m)  # a text frame; bytes are sent as they are

    def recv(self) -> Message:
        _opcode, data = self._ws.recv_data()
        return bytes(data)

    def close(self) -> None:
        self._ws.close()


class FloorWebSocket(BlockingCDPClient):
    """The websocket floor over the raw socket client."""

    name: ClassVar[str] = "floor.ws"
    transport: ClassVar[str] = "websocket"

    def __init__(self) -> None:
        super().__init__()
        self._ws: RawWebSocket | LibWebSocket | None = None

    def _connect(self, url: str) -> RawWebSocket | LibWebSocket:
        return RawWebSocket(url)

    def _open(self, env: Env) -> None:
        self._ws = self._connect(env.ws_url)

    async def _send_many(self, messages: list[bytes]) -> None:
        assert self._ws is not None
        self._ws.send_many(messages)

    async def _recv(self) -> Message:
        assert self._ws is not None
        return self._ws.recv()

    def _close(self) -> None:
        if self._ws is not None:
            self._ws.close()
            self._ws = None

    async def _cold_start(self) -> tuple[int, int]:
        assert self._env is not None
        browser = launch_websocket(self._env.chromium, self._env.chromium_args)  # not timed
        saved = self._ws
        fresh: RawWebSocket | LibWebSocket | None = None
        try:
            cpu0 = time.thread_time_ns()
            t0 = time.perf_counter_ns()
            self._ws = fresh = self._connect(browser.ws_url)
            await self.call("Browser.getVersion")
            elapsed = time.perf_counter_ns() - t0
            cpu = time.thread_time_ns() - cpu0
        finally:
            self._ws = saved
            if fresh is not None:
                fresh.close()
            browser.stop()
        return elapsed, cpu


class FloorWebSocketClientLib(FloorWebSocket):
    """The websocket floor over the websocket-client package (kept for re-measuring the choice)."""

    name: ClassVar[str] = "floor.ws.websocket-client"

    def _connect(self, url: str) -> RawWebSocket | LibWebSocket:
        return LibWebSocket(url)


class FloorWebSocketUnparsed(Unparsed, FloorWebSocket):
    """The websocket floor that tells console events by their bytes (``events.console`` only)."""

    name: ClassVar[str] = "floor.ws.unparsed"
