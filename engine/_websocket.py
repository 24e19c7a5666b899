"""A minimal RFC 6455 websocket client for CDP: a pure codec, the trio transport, and the HTTP bits.

:class:`WebSocketCodec` is sans-I/O: frames are encoded to bytes and received bytes are decoded to events,
with no socket in sight, so it is tested on its own. It does only what a CDP client needs: masked client
frames, text/binary/continuation, ping (answered with pong), close, and 7/16/64-bit lengths. Payloads are
never decoded as UTF-8: the JSON bytes go straight up to the connection, which parses them once. A message
over ``max_inbound_bytes`` fails as soon as a frame header says so, before its payload is buffered.

:class:`WebSocketTransport` drives the codec on a trio stream. Its reader never waits on a write: a peer that
pings and stops reading must not stop the messages behind the pings. It owes at most one pong (RFC 6455
5.5.3 allows answering only the most recent ping), written at once when the socket is idle, otherwise by the
next :meth:`~WebSocketTransport.send`; ``backlog`` counts it so that the connection's writer sends it.

:func:`open_websocket_transport` performs the HTTP upgrade for a ``ws://`` URL, :func:`fetch_json_version`
reads ``/json/version`` and :func:`discover_ws_url` turns it into a checked ``ws://`` URL (all through h11).

Chromium's DevTools server accepts incoming frames of up to 100 MiB (it resets the TCP connection on longer
ones) and sends messages of hundreds of megabytes, each as a single frame.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import struct
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

import attrs
import h11
import trio

from engine._errors import ConnectionClosed
from engine._settings import Settings
from engine._transport import (
    CUT_MESSAGE,
    MAX_INBOUND_BYTES,
    READ_SIZE,
    EagerWriter,
    FdReader,
    InboundTooLarge,
    check_outbound,
    write_fully,
)

WEBSOCKET_MAX_MESSAGE_BYTES = 100 * 1024 * 1024 - 14
"""The longest message Chromium's DevTools websocket server takes from a client: the whole frame (a 14-byte
header with its 64-bit length and mask key, plus the payload) must fit in 100 MiB."""

_ACCEPT_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_MAX_HTTP_BODY = 1024 * 1024
_MASK_CHUNK = 16 * 1024

OP_CONTINUATION = 0x0
OP_TEXT = 0x1
OP_BINARY = 0x2
OP_CLOSE = 0x8
OP_PING = 0x9
OP_PONG = 0xA

_HEADER_SHORT = struct.Struct("!BB")
_HEADER_16 = struct.Struct("!BBH")
_HEADER_64 = struct.Struct("!BBQ")

MAX_PONG_BYTES = 2 + 4 + 125
"""The longest pong we owe: a 2-byte header, the mask key and a ping's longest payload."""


class WebSocketProtocolError(Exception):
    """The peer broke RFC 6455 (a masked server frame, a bad opcode, a stray continuation...)."""


@attrs.frozen
class Message:
    """A whole data message (text or binary), its payload as received."""

    data: bytes
    binary: bool = False


@attrs.frozen
class Ping:
    """The peer sent a ping; the codec owes the pong (only the latest ping's, see data_to_send)."""

    payload: bytes


@attrs.frozen
class Pong:
    """The peer answered a ping."""

    payload: bytes


@attrs.frozen
class CloseReceived:
    """The peer closed the websocket; ``code`` is None when its close frame carried no status."""

    code: int | None
    reason: str


Event = Message | Ping | Pong | CloseReceived


def mask_payload(payload: bytes, key: bytes) -> bytes:
    """XOR ``payload`` with the 4-byte ``key`` repeated (RFC 6455 section 5.3); masking twice undoes it.

    Whole-buffer integer XOR, in cache-sized pieces for long payloads (about 2.5 ns a byte).
    """
    size = len(payload)
    if size <= _MASK_CHUNK:
        if not size:
            return b""
        stream = (key * (size // 4 + 1))[:size]
        return (int.from_bytes(payload, "little") ^ int.from_bytes(stream, "little")).to_bytes(size, "little")
    key_stream = key * (_MASK_CHUNK // 4)
    key_int = int.from_bytes(key_stream, "little")
    out = bytearray(size)
    whole = size - size % _MASK_CHUNK
    with memoryview(payload) as view:
        for start in range(0, whole, _MASK_CHUNK):
            end = start + _MASK_CHUNK
            out[start:end] = (int.from_bytes(view[start:end], "little") ^ key_int).to_bytes(
                _MASK_CHUNK, "little"
            )
        rest = size - whole
        if rest:
            tail = int.from_bytes(view[whole:], "little") ^ int.from_bytes(key_stream[:rest], "little")
            out[whole:] = tail.to_bytes(rest, "little")
    return bytes(out)


def encode_frame(opcode: int, payload: bytes, key: bytes | None, *, fin: bool = True) -> bytes:
    """One frame; masked with ``key`` (what a client must do) unless ``key`` is None."""
    first = (0x80 if fin else 0) | opcode
    mask_bit = 0x80 if key is not None else 0
    size = len(payload)
    if size < 126:
        header = _HEADER_SHORT.pack(first, mask_bit | size)
    elif size < 0x10000:
        header = _HEADER_16.pack(first, mask_bit | 126, size)
    else:
        header = _HEADER_64.pack(first, mask_bit | 127, size)
    if key is None:
        return header + payload
    return b"".join((header, key, mask_payload(payload, key)))


class WebSocketCodec:
    """The client side of a websocket connection, without I/O.

    Feed received bytes to :meth:`receive_data` and act on the events it returns; send what
    :meth:`encode_messages`, :meth:`ping` and :meth:`close` return, and when ``control_owed`` is not zero
    send :meth:`data_to_send` (a pong, the reply to a close) before the next of those.

    Args:
        mask_keys: source of masking keys, called with a byte count; ``os.urandom`` unless testing.
        max_inbound_bytes: the longest message to accept; a frame header or fragments over it raise
            InboundTooLarge at once.
    """

    def __init__(
        self, *, mask_keys: Callable[[int], bytes] = os.urandom, max_inbound_bytes: int = MAX_INBOUND_BYTES
    ) -> None:
        self._mask_keys = mask_keys
        self._max_inbound = max_inbound_bytes
        self._buffer = bytearray()
        self._fragments: bytearray | None = None
        self._fragments_binary = False
        # What we owe the peer: the payload of its latest unanswered ping (one pong answers all; a flood of
        # pings costs one small frame, not one per ping) and the reply to its close.
        self._ping: bytes | None = None
        self._close_reply = b""
        self.close_sent = False
        self.close_received: CloseReceived | None = None

    # -- sending -------------------------------------------------------------------------------------

    def encode_messages(self, payloads: Sequence[bytes], *, binary: bool = False) -> bytes:
        """Frames for whole messages, one frame each, joined for one write."""
        if self.close_sent:
            raise WebSocketProtocolError("cannot send after the websocket was closed")
        opcode = OP_BINARY if binary else OP_TEXT
        keys = self._mask_keys(4 * len(payloads))
        return b"".join(
            encode_frame(opcode, payload, keys[4 * i : 4 * i + 4]) for i, payload in enumerate(payloads)
        )

    def ping(self, payload: bytes = b"") -> bytes:
        """A ping frame (payload up to 125 bytes)."""
        if len(payload) > 125:
            raise ValueError("a ping payload is at most 125 bytes")
        return encode_frame(OP_PING, payload, self._mask_keys(4))

    def close(self, code: int = 1000, reason: str = "") -> bytes:
        """The close frame to send (empty if one was already sent).

        A pong still owed is dropped: it would follow the close frame. Send :meth:`data_to_send` first.
        """
        if self.close_sent:
            return b""
        self.close_sent = True
        self._ping = None
        payload = struct.pack("!H", code) + reason.encode()[:123]
        return encode_frame(OP_CLOSE, payload, self._mask_keys(4))

    @property
    def control_owed(self) -> int:
        """Bytes of control frames :meth:`data_to_send` would return (at most one pong and a close reply)."""
        pong = 0 if self._ping is None else 6 + len(self._ping)
        return pong + len(self._close_reply)

    def data_to_send(self) -> bytes:
        """Control frames the codec owes the peer (the latest ping's pong, the close reply); forgets them."""
        data = b""
        if self._ping is not None:
            data = encode_frame(OP_PONG, self._ping, self._mask_keys(4))
            self._ping = None
        if self._close_reply:
            data += self._close_reply
            self._close_reply = b""
        return data

    # -- receiving -----------------------------------------------------------------------------------

    def receive_data(self, data: bytes | bytearray) -> list[Event]:
        """Decode received bytes into the events they complete.

        Only the frame header is looked at until a frame is complete, and the unfinished tail grows in
        place, so a frame of hundreds of megabytes costs linear time. Lengths are checked on the header:
        a frame declaring more than the limit (or a control frame over 125 bytes) fails before its payload
        is waited for.

        Raises:
            WebSocketProtocolError: the peer broke the protocol; the connection should be dropped.
            InboundTooLarge: a message is over ``max_inbound_bytes``; the connection should be dropped.
        """
        buffer = self._buffer
        buffer += data
        events: list[Event] = []
        position = 0
        available = len(buffer)
        while self.close_received is None and available - position >= 2:
            first, second = buffer[position], buffer[position + 1]
            if second & 0x80:
                raise WebSocketProtocolError("the server sent a masked frame")
            if first & 0x70:
                raise WebSocketProtocolError("a frame has reserved bits set (no extension was agreed)")
            size = second & 0x7F
            header = 2
            if size == 126:
                header = 4
                if available - position < header:
                    break
                size = int.from_bytes(buffer[position + 2 : position + 4], "big")
            elif size == 127:
                header = 10
                if available - position < header:
                    break
                size = int.from_bytes(buffer[position + 2 : position + 10], "big")
                if size >> 63:
                    raise WebSocketProtocolError("a frame length has its most significant bit set")
            opcode = first & 0x0F
            if opcode >= 0x8:
                if size > 125 or not first & 0x80:
                    raise WebSocketProtocolError("a control frame is fragmented or longer than 125 bytes")
            elif size > self._max_inbound or (
                self._fragments is not None and len(self._fragments) + size > self._max_inbound
            ):
                held = len(self._fragments) if self._fragments is not None else 0
                raise InboundTooLarge(
                    held + size, self._max_inbound, at_least=not first & 0x80, completed=events
                )
            end = position + header + size
            if end > available:
                break
            with memoryview(buffer) as view:
                payload = bytes(view[position + header : end])
            position = end
            event = self._frame(bool(first & 0x80), opcode, payload)
            if event is not None:
                events.append(event)
        if position:
            del buffer[:position]
        return events

    def _frame(self, fin: bool, opcode: int, payload: bytes) -> Event | None:
        """Act on one complete frame."""
        if opcode >= 0x8:
            if opcode == OP_PING:
                if not self.close_sent:
                    self._ping = payload
                return Ping(payload)
            if opcode == OP_PONG:
                return Pong(payload)
            if opcode == OP_CLOSE:
                return self._closed_by_peer(payload)
            raise WebSocketProtocolError(f"unknown control opcode {opcode:#x}")
        if opcode == OP_CONTINUATION:
            if self._fragments is None:
                raise WebSocketProtocolError("a continuation frame arrived with no message to continue")
            self._fragments += payload
            if not fin:
                return None
            data, self._fragments = bytes(self._fragments), None
            return Message(data, self._fragments_binary)
        if opcode not in (OP_TEXT, OP_BINARY):
            raise WebSocketProtocolError(f"unknown data opcode {opcode:#x}")
        if self._fragments is not None:
            raise WebSocketProtocolError("a new message started before the previous one was finished")
        if fin:
            return Message(payload, opcode == OP_BINARY)
        self._fragments = bytearray(payload)
        self._fragments_binary = opcode == OP_BINARY
        return None

    def _closed_by_peer(self, payload: bytes) -> CloseReceived:
        if len(payload) == 1:
            raise WebSocketProtocolError("a close frame has a 1-byte payload")
        code = int.from_bytes(payload[:2], "big") if payload else None
        event = CloseReceived(code, payload[2:].decode("utf-8", "replace"))
        self.close_received = event
        if not self.close_sent:
            # Not self.close(): a pong owed for a ping that came before this close still goes first.
            self.close_sent = True
            self._close_reply = encode_frame(OP_CLOSE, struct.pack("!H", code or 1000), self._mask_keys(4))
        return event


def handshake_key() -> str:
    """A fresh Sec-WebSocket-Key: 16 random bytes, base64."""
    return base64.b64encode(os.urandom(16)).decode()


def accept_for(key: str) -> str:
    """The Sec-WebSocket-Accept a server must answer to ``key``."""
    return base64.b64encode(hashlib.sha1(key.encode() + _ACCEPT_GUID).digest()).decode()


def check_upgrade(status: int, headers: Sequence[tuple[bytes, bytes]], key: str) -> None:
    """Validate the server's answer to the upgrade request.

    Raises:
        WebSocketProtocolError: not a 101, or the Upgrade/Connection/Accept headers are wrong.
    """
    if status != 101:
        raise WebSocketProtocolError(f"the server answered the websocket upgrade with HTTP {status}")
    fields: dict[bytes, bytes] = {}
    for name, value in headers:
        fields[name.lower()] = value
    if fields.get(b"upgrade", b"").lower() != b"websocket":
        raise WebSocketProtocolError("the upgrade response has no 'Upgrade: websocket'")
    if b"upgrade" not in [token.strip() for token in fields.get(b"connection", b"").lower().split(b",")]:
        raise WebSocketProtocolError("the upgrade response has no 'Connection: Upgrade'")
    if fields.get(b"sec-websocket-accept", b"").decode("latin-1") != accept_for(key):
        raise WebSocketProtocolError("the server's Sec-WebSocket-Accept does not match our key")


class WebSocketTransport:
    """CDP messages as websocket text frames on a trio stream.

    Built by :func:`open_websocket_transport`; the stream must have finished the HTTP upgrade.

    Args:
        stream: the upgraded connection (a ``trio.SocketStream`` with TCP_NODELAY, or any trio stream).
        initial_data: bytes that arrived right behind the upgrade response.
        max_outbound_bytes: the longest message to send; capped at WEBSOCKET_MAX_MESSAGE_BYTES.
        max_inbound_bytes: the longest message to accept; a longer one closes the websocket
            (ConnectionClosed), as soon as its frame header arrives.
        read_size: bytes asked for per read.
    """

    name = "websocket"

    def __init__(
        self,
        stream: trio.abc.Stream,
        *,
        initial_data: bytes = b"",
        max_outbound_bytes: int = WEBSOCKET_MAX_MESSAGE_BYTES,
        max_inbound_bytes: int = MAX_INBOUND_BYTES,
        read_size: int = READ_SIZE,
    ) -> None:
        self._stream = stream
        self._socket = stream.socket if isinstance(stream, trio.SocketStream) else None
        self._codec = WebSocketCodec(max_inbound_bytes=max_inbound_bytes)
        self._initial = initial_data
        self._max_outbound = min(max_outbound_bytes, WEBSOCKET_MAX_MESSAGE_BYTES)
        self._read_size = read_size
        self._send_lock = trio.StrictFIFOLock()
        self._eager: EagerWriter | None = None
        self._fd_reader: FdReader | None = None
        if self._socket is not None:
            self._eager = EagerWriter(self._socket.fileno(), self._send_lock)
            self._fd_reader = FdReader(self._socket.fileno(), read_size)
        self._closed: str | None = None

    def __repr__(self) -> str:
        return f"<WebSocketTransport {'closed' if self._closed else 'open'}>"

    @property
    def max_outbound_bytes(self) -> int:
        """The longest message :meth:`send` accepts."""
        return self._max_outbound

    async def send(self, messages: Sequence[bytes]) -> None:
        """Send whole messages as text frames in one write.

        Raises:
            MessageTooLarge: a message is over ``max_outbound_bytes``; nothing was sent.
            ConnectionClosed: the websocket is closed or broken.
        """
        check_outbound(messages, self._max_outbound, self.name)
        if self._closed is not None:
            await trio.lowlevel.checkpoint()
            raise ConnectionClosed(self._closed)
        data = self._codec.encode_messages(messages)
        await self._write(data)

    def send_nowait(self, messages: Sequence[bytes]) -> bool:
        """Write now if the socket is idle; see :meth:`Transport.send_nowait`."""
        check_outbound(messages, self._max_outbound, self.name)
        if self._closed is not None:
            raise ConnectionClosed(self._closed)
        eager = self._eager
        if eager is None:
            return False
        data = self._codec.encode_messages(messages)
        if self._codec.control_owed:  # rare: a pong the reader could not write
            if not eager.idle:
                return False
            data = self._codec.data_to_send() + data
        try:
            return eager.write_nowait(data)
        except OSError as exc:
            if self._closed is None:
                self._closed = f"the websocket connection broke while sending: {exc!r}"
            raise ConnectionClosed(self._closed) from exc

    @property
    def backlog(self) -> int:
        """Bytes waiting for :meth:`send`: what ``send_nowait`` left, plus an owed pong or close reply."""
        owed = self._codec.control_owed
        return owed + len(self._eager.pending) if self._eager is not None else owed

    async def _write(self, data: bytes) -> None:
        async with self._send_lock:
            # Under the lock, in this order: the tail of a frame send_nowait began, then owed control
            # frames (between whole frames, where RFC 6455 allows them), then ``data``.
            owed = self._codec.data_to_send()
            if self._eager is not None:
                owed = self._eager.take() + owed
            if owed:
                data = owed + data
            if data:
                try:
                    await write_fully(self._send_some, data, self._cut)
                except BaseException:
                    # Cancelled before the first byte: keep what was owed. (A plain trio stream has no
                    # backlog; there ``owed`` is whole control frames, and dropping a pong is harmless.)
                    if owed and self._closed is None and self._eager is not None:
                        self._eager.give_back(owed)
                    raise

    def _write_control_nowait(self) -> None:
        """Write owed control frames now if the socket is idle; never waits (the reader calls this).

        When it is not idle (a send holds the lock or a backlog waits), they stay owed: ``backlog`` counts
        them and the next :meth:`send` writes them first. Bytes the kernel does not take become the backlog.
        """
        eager = self._eager
        if eager is None or not eager.idle:
            return
        try:
            eager.write_nowait(self._codec.data_to_send())
        except OSError as exc:
            if self._closed is None:
                self._closed = f"the websocket connection broke while sending: {exc!r}"

    async def _send_some(self, chunk: memoryview) -> int:
        try:
            if self._socket is not None:
                return await self._socket.send(chunk)
            await self._stream.send_all(bytes(chunk))
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            if self._closed is None:
                self._closed = f"the websocket connection broke while sending: {exc!r}"
            raise ConnectionClosed(self._closed) from exc
        return len(chunk)

    def _cut(self) -> None:
        self._closed = CUT_MESSAGE
        if self._socket is not None:
            self._socket.close()

    async def receive_batch(self) -> list[bytes]:
        """Read until at least one message is complete; return every complete one.

        Pings are answered on the way, without waiting: the pong is written now if the socket is idle, else
        it is left in ``backlog`` for the next :meth:`send`. A close from the browser ends the transport
        (its reply is written only if that needs no wait).

        Raises:
            ConnectionClosed: the browser closed the websocket or the TCP connection, or it was closed here,
                or a message is over ``max_inbound_bytes``.
        """
        messages: list[bytes] = []
        while not messages:
            if self._closed is not None:
                await trio.lowlevel.checkpoint()
                raise ConnectionClosed(self._closed)
            data: bytes | bytearray
            if self._initial:
                data, self._initial = self._initial, b""
            else:
                data = await self._read()
            try:
                events = self._codec.receive_data(data)
            except WebSocketProtocolError as exc:
                await self._abort(f"the browser broke the websocket protocol: {exc}")
                raise ConnectionClosed(self._closed) from exc
            except InboundTooLarge as exc:
                await self._abort(exc.explain("websocket"))
                messages = [event.data for event in exc.completed if type(event) is Message]
                if messages:
                    return messages
                raise ConnectionClosed(self._closed) from exc
            for event in events:
                if type(event) is Message:
                    messages.append(event.data)
                elif type(event) is CloseReceived:
                    reason = f"{event.code} {event.reason}".strip() if event.code else "no status"
                    self._closed = f"the browser closed the websocket ({reason})"
            if self._codec.control_owed:
                self._write_control_nowait()
            if self._closed is not None:
                await trio.aclose_forcefully(self._stream)
                if not messages:
                    raise ConnectionClosed(self._closed)
        return messages

    async def _read(self) -> bytes | bytearray:
        try:
            if self._fd_reader is not None:
                data: bytes | bytearray = await self._fd_reader.read()
            else:
                data = await self._stream.receive_some(self._read_size)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            await self._abort(f"the websocket connection broke: {exc!r}")
            raise ConnectionClosed(self._closed) from exc
        if not data:
            await self._abort("the browser closed the websocket's TCP connection (it exited or crashed)")
            raise ConnectionClosed(self._closed)
        return data

    async def _abort(self, reason: str) -> None:
        if self._closed is None:
            self._closed = reason
        await trio.aclose_forcefully(self._stream)

    async def aclose(self) -> None:
        """Send a close frame unless a write is in flight (within a second), then drop the connection."""
        if self._closed is None:
            self._closed = "the websocket was closed by this client"
            with trio.CancelScope(shield=True, deadline=trio.current_time() + 1.0):
                try:
                    self._send_lock.acquire_nowait()
                except trio.WouldBlock:
                    pass
                else:
                    # After what is owed: the tail of a frame send_nowait began, then a pong.
                    data = self._eager.take() if self._eager is not None else b""
                    data += self._codec.data_to_send() + self._codec.close()
                    try:
                        await write_fully(self._send_some, data, self._cut)
                    except ConnectionClosed:
                        pass
                    finally:
                        self._send_lock.release()
        await trio.aclose_forcefully(self._stream)


def _split_ws_url(url: str) -> tuple[str, int, str]:
    parts = urlsplit(url)
    if parts.scheme != "ws" or not parts.hostname:
        raise ValueError(f"expected a ws://host:port/path URL, not {url!r}")
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    return parts.hostname, parts.port or 80, target


def _host_header(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


async def _http_exchange(
    stream: trio.abc.Stream, request: h11.Request
) -> tuple[h11.InformationalResponse | h11.Response, bytes, bytes]:
    """Send a body-less request; return the response head, its body and any bytes past it."""
    client = h11.Connection(h11.CLIENT)
    await stream.send_all(client.send(request) + client.send(h11.EndOfMessage()))
    head: h11.InformationalResponse | h11.Response | None = None
    body = bytearray()
    while True:
        event = client.next_event()
        if event is h11.NEED_DATA:
            data = await stream.receive_some(65536)
            client.receive_data(bytes(data))
            continue
        if isinstance(event, h11.InformationalResponse) and event.status_code == 101:
            return event, b"", client.trailing_data[0]
        if isinstance(event, h11.Response):
            head = event
        elif isinstance(event, h11.Data):
            body += event.data
            if len(body) > _MAX_HTTP_BODY:
                raise WebSocketProtocolError("the HTTP response body is unreasonably long")
        elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
            if head is None:
                raise WebSocketProtocolError("the server closed the connection without an answer")
            return head, bytes(body), b""


def _json_version_url(host: str, port: int) -> str:
    return f"http://{_host_header(host, port)}/json/version"


async def _connect_http(host: str, port: int, where: str) -> trio.SocketStream:
    try:
        return await trio.open_tcp_stream(host, port)
    except OSError as exc:
        raise ConnectionClosed(
            f"could not connect to {where} (expected a browser started with --remote-debugging-port "
            f"listening there): {exc}"
        ) from exc


async def _get_json_version(stream: trio.abc.Stream, host: str, port: int, where: str) -> tuple[int, bytes]:
    """Send ``GET /json/version`` on ``stream``; return the status and the body."""
    request = h11.Request(
        method="GET",
        target="/json/version",
        headers=[("Host", _host_header(host, port)), ("Accept", "application/json")],
    )
    try:
        head, body, _ = await _http_exchange(stream, request)
    except (OSError, trio.BrokenResourceError, h11.ProtocolError, WebSocketProtocolError) as exc:
        raise ConnectionClosed(f"GET {where} failed: {exc}") from exc
    return head.status_code, body


def _decode_json_version(status: int, body: bytes, where: str) -> dict[str, Any]:
    expected = "expected 200 and the browser's version as a JSON object"
    if status != 200:
        raise ConnectionClosed(f"GET {where} answered HTTP {status} ({expected}): {body[:200]!r}")
    try:
        version = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise ConnectionClosed(f"GET {where} did not answer JSON ({expected}): {body[:200]!r}") from exc
    if not isinstance(version, dict):
        raise ConnectionClosed(
            f"GET {where} answered JSON that is not an object ({expected}): {body[:200]!r}"
        )
    return version


def _checked_ws_url(version: dict[str, Any], where: str) -> str:
    """``version["webSocketDebuggerUrl"]`` if it is a ``ws://`` URL; a ConnectionClosed that says why not."""
    if "webSocketDebuggerUrl" not in version:
        keys = ", ".join(repr(key) for key in list(version)[:12]) or "none"
        if len(version) > 12:
            keys += f", ... ({len(version)} in all)"
        raise ConnectionClosed(
            f"GET {where} answered a JSON object without webSocketDebuggerUrl (its keys: {keys}); "
            "expected the /json/version of a browser's DevTools endpoint"
        )
    url = version["webSocketDebuggerUrl"]
    if not isinstance(url, str):
        raise ConnectionClosed(
            f"GET {where} answered a webSocketDebuggerUrl that is not a string: {url!r:.200} "
            f"({type(url).__name__}); expected a ws://host:port/... URL"
        )
    try:
        _split_ws_url(url)
    except ValueError:
        raise ConnectionClosed(
            f"GET {where} answered webSocketDebuggerUrl {url!r:.200}; expected a ws://host:port/... URL"
        ) from None
    return url


async def fetch_json_version(host: str, port: int) -> dict[str, Any]:
    """GET ``/json/version`` from a browser's DevTools HTTP endpoint (bound it with ``trio.fail_after``).

    Returns:
        The decoded JSON: ``Browser``, ``Protocol-Version``, ``webSocketDebuggerUrl``, ...

    Raises:
        ConnectionClosed: nothing listens there, or the answer is not a JSON object.
    """
    where = _json_version_url(host, port)
    async with await _connect_http(host, port, where) as stream:
        status, body = await _get_json_version(stream, host, port, where)
    return _decode_json_version(status, body, where)


async def discover_ws_url(host: str, port: int, settings: Settings) -> str:
    """The browser's ``ws://`` URL from its ``/json/version``; bounded by ``settings.connect_timeout``.

    The two waits are timed apart so that the error says which one stalled: nothing answering the TCP
    handshake, or a server that accepted and never answered.

    Raises:
        ConnectionClosed: no answer, or not the answer a browser gives; the message says what was expected
            and what came.
    """
    where = _json_version_url(host, port)
    limit = settings.connect_timeout
    deadline = trio.current_time() + limit
    stream: trio.SocketStream | None = None
    with trio.move_on_at(deadline):
        stream = await _connect_http(host, port, where)
    if stream is None:
        raise ConnectionClosed(
            f"could not connect to {where}: the TCP handshake got no answer within {limit} s "
            "(Settings.connect_timeout)"
        )
    answer: tuple[int, bytes] | None = None
    async with stream:
        with trio.move_on_at(deadline):
            answer = await _get_json_version(stream, host, port, where)
    if answer is None:
        raise ConnectionClosed(
            f"{_host_header(host, port)} accepted the connection but did not answer GET /json/version "
            f"within {limit} s (Settings.connect_timeout)"
        )
    return _checked_ws_url(_decode_json_version(*answer, where), where)


async def _upgrade(stream: trio.abc.Stream, host: str, port: int, target: str) -> bytes:
    """The HTTP upgrade; returns the bytes that followed the 101 response."""
    key = handshake_key()
    request = h11.Request(
        method="GET",
        target=target,
        headers=[
            ("Host", _host_header(host, port)),
            ("Upgrade", "websocket"),
            ("Connection", "Upgrade"),
            ("Sec-WebSocket-Key", key),
            ("Sec-WebSocket-Version", "13"),
        ],
    )
    head, body, rest = await _http_exchange(stream, request)
    if head.status_code != 101:
        text = body[:200].decode("utf-8", "replace")
        raise WebSocketProtocolError(f"the server answered the upgrade with HTTP {head.status_code}: {text}")
    check_upgrade(head.status_code, list(head.headers), key)
    return rest


async def open_websocket_transport(url: str, settings: Settings) -> WebSocketTransport:
    """Connect to a ``ws://`` DevTools URL; bounded by ``settings.connect_timeout``.

    Raises:
        ConnectionClosed: the connection or the upgrade failed or took too long (the message says which).
        ValueError: ``url`` is not a ``ws://`` URL.
    """
    host, port, target = _split_ws_url(url)
    limit = settings.connect_timeout
    connected = False
    try:
        with trio.fail_after(limit):
            stream = await trio.open_tcp_stream(host, port)
            connected = True
            try:
                # trio sets TCP_NODELAY on TCP streams already; say so here, where latency is decided.
                stream.setsockopt(trio.socket.IPPROTO_TCP, trio.socket.TCP_NODELAY, True)
                rest = await _upgrade(stream, host, port, target)
            except BaseException:
                await trio.aclose_forcefully(stream)
                raise
    except trio.TooSlowError:
        if connected:
            raise ConnectionClosed(
                f"{_host_header(host, port)} accepted the connection but did not answer the websocket "
                f"upgrade for {url} within {limit} s (Settings.connect_timeout)"
            ) from None
        raise ConnectionClosed(
            f"could not open the websocket {url}: the TCP handshake got no answer within {limit} s "
            "(Settings.connect_timeout)"
        ) from None
    except (OSError, trio.BrokenResourceError, h11.ProtocolError, WebSocketProtocolError) as exc:
        raise ConnectionClosed(f"could not open the websocket {url}: {exc}") from exc
    return WebSocketTransport(
        stream,
        initial_data=rest,
        max_outbound_bytes=settings.max_outbound_bytes,
        max_inbound_bytes=settings.max_inbound_bytes,
    )
