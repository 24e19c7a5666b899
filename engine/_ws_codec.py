"""A sans-I/O RFC 6455 websocket codec for the client side of a CDP connection, and its handshake checks.

:class:`WebSocketCodec` turns messages into bytes to send and received bytes into events, with no socket in
sight, so it is tested on its own (the trio transport around it is ``engine._websocket``). It does only
what a CDP client needs: masked client frames, text/binary/continuation, ping (answered with pong), close,
and 7/16/64-bit lengths. Payloads are never decoded as UTF-8: the JSON bytes go straight up to the
connection, which parses them once. A message over ``max_inbound_bytes`` fails as soon as a frame header
says so, before its payload is buffered.

Errors are split by blame, as h11 splits them: :class:`LocalProtocolError` when this client asks for
something the protocol forbids (a bug on our side: the transport guards against it), and
:class:`RemoteProtocolError` when the peer's bytes break RFC 6455 (the transport drops the connection and
says that the browser broke the protocol). Both are :class:`WebSocketProtocolError`. A message over the
inbound limit is :class:`~engine._framing.InboundTooLarge`, shared with the pipe's framer.
"""

from __future__ import annotations

import base64
import enum
import hashlib
import os
import struct
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import attrs

from engine._framing import MAX_INBOUND_BYTES, InboundTooLarge


class Opcode(enum.IntEnum):
    """A frame's opcode (RFC 6455 section 5.2); 0x8 and above are control frames."""

    CONTINUATION = 0x0
    TEXT = 0x1
    BINARY = 0x2
    CLOSE = 0x8
    PING = 0x9
    PONG = 0xA


# The decoder compares opcodes per frame: reading a member off the enum class costs about 45 ns, a module
# global about 1 ns (measured on CPython 3.11), so the hot paths use these.
_CONTINUATION = Opcode.CONTINUATION
_TEXT = Opcode.TEXT
_BINARY = Opcode.BINARY
_CLOSE = Opcode.CLOSE
_PING = Opcode.PING
_PONG = Opcode.PONG

MAX_PONG_BYTES = 2 + 4 + 125
"""The longest pong we owe: a 2-byte header, the mask key and a ping's longest payload."""

_HEADER_SHORT = struct.Struct("!BB")
_HEADER_16 = struct.Struct("!BBH")
_HEADER_64 = struct.Struct("!BBQ")
_MASK_CHUNK = 16 * 1024
_from_bytes = int.from_bytes  # bound once: looked up on ``int`` it costs 50 ns a call, twice a frame
_ACCEPT_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

_c_mask: Callable[[bytes, bytes], bytes] | None
try:  # C masking from the websockets package (a pure function, no I/O)
    from websockets.speedups import apply_mask as _c_mask
except ImportError:  # no wheel for this platform: the integer XOR of encode_frame and mask_payload
    _c_mask = None
"""Measured (CPython 3.11, 2 cores), a whole frame: 42 bytes (a command) 0.31 us against 0.53; 5 MB (a
``Fetch.fulfillRequest`` body) 4.5 ms against 15.2."""


class WebSocketProtocolError(Exception):
    """RFC 6455 was broken; see the two kinds below for whose doing it was."""


class LocalProtocolError(WebSocketProtocolError):
    """This client asked the codec for something the protocol forbids (send after close, a long ping)."""


class RemoteProtocolError(WebSocketProtocolError):
    """The peer broke RFC 6455 (a masked server frame, a bad opcode, a stray continuation, a bad upgrade)."""


class Message(NamedTuple):
    """A whole data message (text or binary), its payload as received.

    A named tuple, not an attrs class: one is made per frame, and a frozen attrs instance costs two
    ``object.__setattr__`` calls to build.
    """

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

    Whole-buffer integer XOR, in cache-sized pieces (about 2.5 ns a byte). A payload of one piece or less
    is masked inline by :func:`encode_frame`.
    """
    size = len(payload)
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
    """One frame; masked with ``key`` (what a client must do) unless ``key`` is None (a server's frame)."""
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
    if _c_mask is not None:
        return header + key + _c_mask(payload, key)
    if size <= _MASK_CHUNK:  # one integer XOR, here: a command's frame costs no call for its mask
        masked = _from_bytes(payload, "little") ^ _from_bytes((key * (size // 4 + 1))[:size], "little")
        return header + key + masked.to_bytes(size, "little")
    return b"".join((header, key, mask_payload(payload, key)))


_KEYS_AHEAD = 256


class _KeyPool:
    """``os.urandom`` drawn 4 KiB at a time: one getrandom(2) per 1,024 mask keys instead of one per frame,
    from the same source RFC 6455 asks for."""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._pool = b""
        self._at = 0

    def __call__(self, count: int) -> bytes:
        at = self._at
        if at + count > len(self._pool):
            self._pool = os.urandom(max(self._size, count))
            at = 0
        self._at = at + count
        return self._pool[at : at + count]


class WebSocketCodec:
    """The client side of a websocket connection, without I/O.

    Feed received bytes to :meth:`receive_data` and act on the events it returns; send what
    :meth:`encode_messages`, :meth:`ping` and :meth:`close` return, and when ``control_owed`` is not zero
    send :meth:`data_to_send` (a pong, the reply to a close) before the next of those.

    Args:
        mask_keys: source of masking keys, called with a byte count; ``os.urandom`` (drawn in bulk) unless
            testing.
        max_inbound_bytes: the longest message to accept; a frame header or fragments over it raise
            InboundTooLarge at once.
    """

    def __init__(
        self,
        *,
        mask_keys: Callable[[int], bytes] | None = None,
        max_inbound_bytes: int = MAX_INBOUND_BYTES,
    ) -> None:
        self._mask_keys = _KeyPool() if mask_keys is None else mask_keys
        self._keys: list[bytes] = []  # keys for single frames, drawn ahead (see _draw_keys)
        self._max_inbound = max_inbound_bytes
        self._buffer = bytearray()
        self._fragments: bytearray | None = None
        self._fragments_binary = False
        # What we owe the peer: the payload of its latest unanswered ping (one pong answers all; a flood of
        # pings costs one small frame, not one per ping) and the reply to its close.
        self._ping: bytes | None = None
        self._close_reply = b""
        #: Bytes of control frames :meth:`data_to_send` would return (at most one pong and a close reply).
        #: An attribute, kept by ``_recount``: the transport reads it several times per command.
        self.control_owed = 0
        self.close_sent = False
        self.close_received: CloseReceived | None = None

    # -- sending -------------------------------------------------------------------------------------

    def encode_messages(self, payloads: Sequence[bytes], *, binary: bool = False) -> bytes:
        """Frames for whole messages, one frame each, joined for one write.

        Raises:
            LocalProtocolError: the websocket was closed (a close frame was sent or answered).
        """
        if self.close_sent:
            raise LocalProtocolError("cannot send after the websocket was closed")
        opcode = _BINARY if binary else _TEXT
        if len(payloads) == 1:  # the common case: one command written in its caller's task
            ahead = self._keys
            return encode_frame(opcode, payloads[0], ahead.pop() if ahead else self._draw_keys())
        keys = self._mask_keys(4 * len(payloads))
        return b"".join(
            encode_frame(opcode, payload, keys[4 * i : 4 * i + 4]) for i, payload in enumerate(payloads)
        )

    def _draw_keys(self) -> bytes:
        """A key for one frame, and the next ones into ``_keys``: a list's pop per frame costs less than a
        call to the key source."""
        pool = self._mask_keys(4 * _KEYS_AHEAD)
        self._keys = [pool[at : at + 4] for at in range(len(pool) - 4, 0, -4)]  # popped last first: in order
        return pool[:4]

    def ping(self, payload: bytes = b"") -> bytes:
        """A ping frame.

        Raises:
            LocalProtocolError: the payload is over 125 bytes (the limit of every control frame).
        """
        if len(payload) > 125:
            raise LocalProtocolError("a ping payload is at most 125 bytes")
        return encode_frame(_PING, payload, self._mask_keys(4))

    def close(self, code: int = 1000, reason: str = "") -> bytes:
        """The close frame to send (empty if one was already sent).

        A pong still owed is dropped: it would follow the close frame. Send :meth:`data_to_send` first.
        """
        if self.close_sent:
            return b""
        self.close_sent = True
        self._ping = None
        self._recount()
        payload = struct.pack("!H", code) + reason.encode()[:123]
        return encode_frame(_CLOSE, payload, self._mask_keys(4))

    def _recount(self) -> None:
        pong = 0 if self._ping is None else 6 + len(self._ping)
        self.control_owed = pong + len(self._close_reply)

    def data_to_send(self) -> bytes:
        """Control frames the codec owes the peer (the latest ping's pong, the close reply); forgets them."""
        data = b""
        if self._ping is not None:
            data = encode_frame(_PONG, self._ping, self._mask_keys(4))
            self._ping = None
        if self._close_reply:
            data += self._close_reply
            self._close_reply = b""
        self.control_owed = 0
        return data

    # -- receiving -----------------------------------------------------------------------------------

    def receive_data(self, data: bytes | bytearray, payloads: list[bytes] | None = None) -> list[Event]:
        """Decode received bytes into the events they complete.

        Only the frame header is looked at until a frame is complete, and the unfinished tail grows in
        place, so a frame of hundreds of megabytes costs linear time. Lengths are checked on the header:
        a frame declaring more than the limit (or a control frame over 125 bytes) fails before its payload
        is waited for.

        Given ``payloads``, the common case's messages (whole unmasked data frames at the start of ``data``)
        are appended there as their payloads (text or binary alike), before any message of the returned
        events, instead of becoming :class:`Message` events: a transport that wants only the payloads skips
        an object and a loop step per message. ``InboundTooLarge.completed`` does not repeat them.

        Raises:
            RemoteProtocolError: the peer broke the protocol; the connection should be dropped.
            InboundTooLarge: a message is over ``max_inbound_bytes``; the connection should be dropped.
        """
        events: list[Event] = []
        buffer = self._buffer
        if (
            self._fragments is None
            and self.close_received is None
            and (not buffer or _completes(buffer, len(data)))
        ):
            if buffer:
                # The tail of the last read begins a frame this read completes. Joined, the frames after it
                # still take the fast path: in an event flood nearly every read ends mid-frame (measured:
                # 2.5 us a frame on the general path, 1.2 on the fast one). Each frame is joined at most
                # once, so this stays linear however the reads cut it.
                data = bytes(buffer) + data
                buffer.clear()
            if payloads is None:
                data = self._whole_frames(data, events, False)
            else:
                data = self._whole_frames(data, payloads, True)
        buffer += data
        position = 0
        available = len(buffer)
        while self.close_received is None and available - position >= 2:
            first, second = buffer[position], buffer[position + 1]
            if second & 0x80:
                raise RemoteProtocolError("the server sent a masked frame")
            if first & 0x70:
                raise RemoteProtocolError("a frame has reserved bits set (no extension was agreed)")
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
                    raise RemoteProtocolError("a frame length has its most significant bit set")
            opcode = first & 0x0F
            if opcode >= _CLOSE:
                if size > 125 or not first & 0x80:
                    raise RemoteProtocolError("a control frame is fragmented or longer than 125 bytes")
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

    def single_message(self, data: bytes | bytearray) -> bytes | None:
        """The payload of ``data`` if it is exactly one whole, final, unmasked data frame with a 7- or 16-bit
        length within the limit, and nothing is buffered; else None, and ``data`` is for
        :meth:`receive_data` (which this has not changed).

        The reply to a lone command is such a read. Taken here, it skips the general path's loop and its
        event object: about a tenth of the client's instructions per round trip.
        """
        if self._buffer or self._fragments is not None or self.close_received is not None:
            return None
        size = len(data)
        if size < 2 or data[0] not in (0x81, 0x82):
            return None
        length = data[1]
        start = 2
        if length >= 126:  # a 16-bit length; or a 64-bit one, or a set mask bit: the general path's
            if length != 126 or size < 4:
                return None
            length = (data[2] << 8) | data[3]
            start = 4
        if length != size - start or length > self._max_inbound:
            return None
        return bytes(data[start:])

    def _whole_frames(self, data: bytes | bytearray, out: list[Any], raw: bool) -> bytes | bytearray:
        """The common case, read straight from ``data``: whole, final, unmasked data frames with a 7- or
        16-bit length, within the limit, appended to ``out`` as Message events (``raw``: as their payloads).
        Returns the rest, from the first frame that is anything else (a control frame, a fragment, a cut
        frame, an error), for the general path to take.

        It skips copying every read into the buffer and out again: one copy per message instead of three.
        """
        position = 0
        available = len(data)
        limit = min(self._max_inbound, 0xFFFF)
        while available - position >= 2:
            first, size = data[position], data[position + 1]
            if first not in (0x81, 0x82):  # FIN, no reserved bits, text or binary
                break
            header = 2
            if size >= 126:  # (a set mask bit lands here too: the general path refuses it)
                if size != 126 or available - position < 4:
                    break
                size = (data[position + 2] << 8) | data[position + 3]
                header = 4
            end = position + header + size
            if size > limit or end > available:
                break
            payload = bytes(data[position + header : end])
            out.append(payload if raw else Message(payload, first == 0x82))
            position = end
        return data[position:] if position else data

    def _frame(self, fin: bool, opcode: int, payload: bytes) -> Event | None:
        """Act on one complete frame."""
        if opcode >= _CLOSE:
            if opcode == _PING:
                if not self.close_sent:
                    self._ping = payload
                    self._recount()
                return Ping(payload)
            if opcode == _PONG:
                return Pong(payload)
            if opcode == _CLOSE:
                return self._closed_by_peer(payload)
            raise RemoteProtocolError(f"unknown control opcode {opcode:#x}")
        if opcode == _CONTINUATION:
            if self._fragments is None:
                raise RemoteProtocolError("a continuation frame arrived with no message to continue")
            self._fragments += payload
            if not fin:
                return None
            data, self._fragments = bytes(self._fragments), None
            return Message(data, self._fragments_binary)
        if opcode == _TEXT:
            binary = False
        elif opcode == _BINARY:
            binary = True
        else:
            raise RemoteProtocolError(f"unknown data opcode {opcode:#x}")
        if self._fragments is not None:
            raise RemoteProtocolError("a new message started before the previous one was finished")
        if fin:
            return Message(payload, binary)
        self._fragments = bytearray(payload)
        self._fragments_binary = binary
        return None

    def _closed_by_peer(self, payload: bytes) -> CloseReceived:
        if len(payload) == 1:
            raise RemoteProtocolError("a close frame has a 1-byte payload")
        code = int.from_bytes(payload[:2], "big") if payload else None
        event = CloseReceived(code, payload[2:].decode("utf-8", "replace"))
        self.close_received = event
        if not self.close_sent:
            # Not self.close(): a pong owed for a ping that came before this close still goes first.
            self.close_sent = True
            self._close_reply = encode_frame(_CLOSE, struct.pack("!H", code or 1000), self._mask_keys(4))
            self._recount()
        return event


def _completes(head: bytearray, more: int) -> bool:
    """Whether ``more`` bytes complete the frame that begins with ``head`` (True while its length is not in
    ``head`` yet); never for a frame with a 64-bit length, which the fast path does not take."""
    if len(head) < 2:
        return True
    size = head[1] & 0x7F
    if size == 127:
        return False
    if size == 126:
        if len(head) < 4:
            return True
        return len(head) + more >= 4 + ((head[2] << 8) | head[3])
    return len(head) + more >= 2 + size


# -- the opening handshake (RFC 6455 section 4), without I/O ---------------------------------------------


def handshake_key() -> str:
    """A fresh Sec-WebSocket-Key: 16 random bytes, base64."""
    return base64.b64encode(os.urandom(16)).decode()


def accept_for(key: str) -> str:
    """The Sec-WebSocket-Accept a server must answer to ``key``."""
    return base64.b64encode(hashlib.sha1(key.encode() + _ACCEPT_GUID).digest()).decode()


def check_upgrade(status: int, headers: Sequence[tuple[bytes, bytes]], key: str) -> None:
    """Validate the server's answer to the upgrade request.

    Raises:
        RemoteProtocolError: not a 101, or the Upgrade/Connection/Accept headers are wrong.
    """
    if status != 101:
        raise RemoteProtocolError(f"the server answered the websocket upgrade with HTTP {status}")
    fields: dict[bytes, bytes] = {}
    for name, value in headers:
        fields[name.lower()] = value
    if fields.get(b"upgrade", b"").lower() != b"websocket":
        raise RemoteProtocolError("the upgrade response has no 'Upgrade: websocket'")
    if b"upgrade" not in [token.strip() for token in fields.get(b"connection", b"").lower().split(b",")]:
        raise RemoteProtocolError("the upgrade response has no 'Connection: Upgrade'")
    if fields.get(b"sec-websocket-accept", b"").decode("latin-1") != accept_for(key):
        raise RemoteProtocolError("the server's Sec-WebSocket-Accept does not match our key")
