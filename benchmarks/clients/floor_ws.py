"""The websocket floor: a blocking client on a raw socket, and the websocket-client package for comparison.

Both set TCP_NODELAY. The raw one was measured faster on every scenario here (see README), so it is the
floor ("floor.ws"); the websocket-client one stays runnable as "floor.ws.websocket-client" so the choice
can be re-measured on another machine.

The raw client frames with an all-zero masking key: a valid RFC 6455 client frame whose masking is the
identity, so no per-byte work is done. Server frames are unmasked; pings are answered; fragmented
messages are joined; large messages are read straight into one buffer.
"""

from __future__ import annotations

import base64
import contextlib
import os
import socket
import struct
import urllib.parse
from typing import Any, ClassVar

from benchmarks.clients.base import Env
from benchmarks.clients.blocking import BlockingCDPClient, Message

SOCKET_TIMEOUT_S = 120.0
CHUNK = 1 << 18
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


class RawWebSocket:
    """The smallest websocket client that talks to Chromium correctly."""

    def __init__(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or "127.0.0.1"
        port = parts.port or 80
        self._sock = socket.create_connection((host, port), timeout=SOCKET_TIMEOUT_S)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (
            f"GET {parts.path or '/'} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        self._sock.sendall(request.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self._sock.recv(4096)
            if not chunk:
                raise ConnectionError("connection closed during the websocket handshake")
            head += chunk
        head, _, rest = head.partition(b"\r\n\r\n")
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise ConnectionError(f"websocket handshake refused: {head[:200]!r}")
        self._buf = bytearray(rest)
        self._pos = 0

    def send_many(self, messages: list[bytes]) -> None:
        self._sock.sendall(b"".join([_frame(m) for m in messages]))

    def _fill(self, need: int) -> None:
        """Make at least ``need`` unread bytes available in the buffer."""
        buf = self._buf
        if self._pos:
            del buf[: self._pos]
            self._pos = 0
        while len(buf) < need:
            chunk = self._sock.recv(max(CHUNK, need - len(buf)))
            if not chunk:
                raise ConnectionError("the browser closed the websocket")
            buf += chunk

    def _read_exact(self, n: int) -> Message:
        avail = len(self._buf) - self._pos
        if avail >= n:
            start = self._pos
            self._pos += n
            return self._buf[start : self._pos]
        # A large payload: take what is buffered, then read the rest straight into one buffer.
        out = bytearray(n)
        out[:avail] = self._buf[self._pos :]
        self._buf.clear()
        self._pos = 0
        view = memoryview(out)
        got = avail
        while got < n:
            k = self._sock.recv_into(view[got:], n - got)
            if not k:
                raise ConnectionError("the browser closed the websocket")
            got += k
        return out

    def recv(self) -> Message:
        fragments: list[Message] = []
        while True:
            if len(self._buf) - self._pos < 2:
                self._fill(2)
            b0 = self._buf[self._pos]
            b1 = self._buf[self._pos + 1]
            length = b1 & 0x7F
            extra = 2 if length == 126 else 8 if length == 127 else 0
            masked = 4 if b1 & 0x80 else 0
            if len(self._buf) - self._pos < 2 + extra + masked:
                self._fill(2 + extra + masked)
            pos = self._pos + 2
            if extra == 2:
                length = struct.unpack_from("!H", self._buf, pos)[0]
            elif extra == 8:
                length = struct.unpack_from("!Q", self._buf, pos)[0]
            self._pos = pos + extra + masked
            if masked:
                raise ConnectionError("the server sent a masked frame")
            payload = self._read_exact(length)
            opcode = b0 & 0x0F
            if opcode in (0x0, 0x1, 0x2):
                if b0 & 0x80:
                    if not fragments:
                        return payload
                    fragments.append(payload)
                    return b"".join(fragments)
                fragments.append(payload)
            elif opcode == 0x8:
                raise ConnectionError("the browser closed the websocket")
            elif opcode == 0x9:
                self._sock.sendall(_frame(bytes(payload), 0xA))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.sendall(_frame(b"", 0x8))
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

    def _send_many(self, messages: list[bytes]) -> None:
        assert self._ws is not None
        self._ws.send_many(messages)

    def _recv(self) -> Message:
        assert self._ws is not None
        return self._ws.recv()

    def _close(self) -> None:
        if self._ws is not None:
            self._ws.close()
            self._ws = None


class FloorWebSocketClientLib(FloorWebSocket):
    """The websocket floor over the websocket-client package (kept for re-measuring the choice)."""

    name: ClassVar[str] = "floor.ws.websocket-client"

    def _connect(self, url: str) -> RawWebSocket | LibWebSocket:
        return LibWebSocket(url)
