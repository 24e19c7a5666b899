"""The websocket transport: CDP messages as text frames, the codec (``engine._ws_codec``) driven on trio.

Its reader never waits on a write: a peer that pings and stops reading must not stop the messages behind
the pings. It owes at most one pong (RFC 6455 5.5.3 allows answering only the most recent ping), written at
once when the socket is idle, otherwise by the next :meth:`~WebSocketTransport.send`; ``backlog`` counts
it so that the connection's writer sends it.

On a socket it does its own non-blocking I/O on the socket's fd (:class:`~engine._transport.FdIO`, as the
pipe does); on any other trio stream it uses the stream's own calls. :func:`open_websocket_transport`
connects: the HTTP upgrade is ``engine._http``'s.

Chromium's DevTools server accepts incoming frames of up to 100 MiB (it resets the TCP connection on longer
ones) and sends messages of hundreds of megabytes, each as a single frame.
"""

from __future__ import annotations

from collections.abc import Sequence

import trio

from engine._errors import ConnectionClosed
from engine._framing import MAX_INBOUND_BYTES, InboundTooLarge
from engine._http import open_upgraded_stream
from engine._settings import Settings
from engine._transport import BUSY_POLL_S, CUT_MESSAGE, READ_SIZE, FdIO, LinkState, write_fully
from engine._ws_codec import CloseReceived, Message, RemoteProtocolError, WebSocketCodec

WEBSOCKET_MAX_MESSAGE_BYTES = 100 * 1024 * 1024 - 14
"""The longest message Chromium's DevTools websocket server takes from a client: the whole frame (a 14-byte
header with its 64-bit length and mask key, plus the payload) must fit in 100 MiB."""

_BROKE_WHILE_SENDING = "the websocket connection broke while sending"


def _broke(exc: BaseException) -> str:
    """What a failed read means; a reset is how a killed browser's socket often ends."""
    if isinstance(exc, ConnectionResetError) or isinstance(exc.__cause__, ConnectionResetError):
        return "the browser reset the websocket's TCP connection (it exited or crashed)"
    return f"the websocket connection broke: {exc!r}"


class WebSocketTransport:
    """CDP messages as websocket text frames on a trio stream.

    Built by :func:`open_websocket_transport`; the stream must have finished the HTTP upgrade.

    Args:
        stream: the upgraded connection (a ``trio.SocketStream`` with TCP_NODELAY, or any trio stream).
        initial_data: bytes that arrived right behind the upgrade response.
        max_outbound_bytes: the longest message to send; capped at WEBSOCKET_MAX_MESSAGE_BYTES.
        max_inbound_bytes: the longest message to accept; a longer one closes the websocket
            (ConnectionClosed), as soon as its frame header arrives.
        read_size: the most bytes one read asks for.
        busy_poll: how long a read for a lone caller's reply may poll before it sleeps (FdIO.read).
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
        busy_poll: float = BUSY_POLL_S,
    ) -> None:
        self._stream = stream
        self._socket = stream.socket if isinstance(stream, trio.SocketStream) else None
        self._link = LinkState(self.name, min(max_outbound_bytes, WEBSOCKET_MAX_MESSAGE_BYTES))
        self._codec = WebSocketCodec(max_inbound_bytes=max_inbound_bytes)
        self._initial = initial_data
        self._read_size = read_size
        self._send_lock = trio.StrictFIFOLock()
        self._fds: FdIO | None = None
        if self._socket is not None:
            fd = self._socket.fileno()
            self._fds = FdIO(
                fd,
                fd,
                lock=self._send_lock,
                read_size=read_size,
                owned=False,
                busy_poll=busy_poll,
                lender=self._socket,
            )

    def __repr__(self) -> str:
        return f"<WebSocketTransport {'closed' if self._link.reason is not None else 'open'}>"

    @property
    def max_outbound_bytes(self) -> int:
        """The longest message :meth:`send` accepts."""
        return self._link.max_outbound_bytes

    async def send(self, messages: Sequence[bytes]) -> None:
        """Send whole messages as text frames in one write.

        Raises:
            MessageTooLarge: a message is over ``max_outbound_bytes``; nothing was sent.
            ConnectionClosed: the websocket is closed or broken.
        """
        link = self._link
        link.check_outbound(messages)
        if link.reason is not None:
            await link.raise_closed()
        await self._write(self._codec.encode_messages(messages))

    def send_nowait(self, messages: Sequence[bytes]) -> bool:
        """Write now if the socket is idle; see :meth:`Transport.send_nowait`."""
        link = self._link
        if len(messages) != 1 or len(messages[0]) > link.max_outbound_bytes:  # one message: checked inline
            link.check_outbound(messages)
        if link.reason is not None:
            raise link.error()
        fds = self._fds
        if fds is None:
            return False
        data = self._codec.encode_messages(messages)
        if self._codec.control_owed:  # rare: a pong the reader could not write
            if not fds.idle:
                return False
            data = self._codec.data_to_send() + data
        try:
            return fds.write_nowait(data)
        except OSError as exc:
            raise link.broken(_BROKE_WHILE_SENDING, exc) from exc

    @property
    def backlog(self) -> int:
        """Bytes waiting for :meth:`send`: what ``send_nowait`` left, plus an owed pong or close reply."""
        owed = self._codec.control_owed
        return owed + len(self._fds.pending) if self._fds is not None else owed

    async def _write(self, data: bytes) -> None:
        async with self._send_lock:
            # Under the lock, in this order: the tail of a frame send_nowait began, then owed control
            # frames (between whole frames, where RFC 6455 allows them), then ``data``.
            owed = self._codec.data_to_send()
            if self._fds is not None:
                owed = self._fds.take() + owed
            if owed:
                data = owed + data
            if data:
                try:
                    await write_fully(self._send_some, data, self._cut)
                except BaseException:
                    # Cancelled before the first byte: keep what was owed. (A plain trio stream has no
                    # backlog; there ``owed`` is whole control frames, and dropping a pong is harmless.)
                    if owed and self._link.reason is None and self._fds is not None:
                        self._fds.give_back(owed)
                    raise

    def _write_control_nowait(self) -> None:
        """Write owed control frames now if the socket is idle; never waits (the reader calls this).

        When it is not idle (a send holds the lock or a backlog waits), they stay owed: ``backlog`` counts
        them and the next :meth:`send` writes them first. Bytes the kernel does not take become the backlog.
        """
        fds = self._fds
        if fds is None or not fds.idle:
            return
        try:
            fds.write_nowait(self._codec.data_to_send())
        except OSError as exc:
            self._link.broken(_BROKE_WHILE_SENDING, exc)

    async def _send_some(self, chunk: memoryview) -> int:
        try:
            if self._socket is not None:
                return await self._socket.send(chunk)
            await self._stream.send_all(bytes(chunk))
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            raise self._link.broken(_BROKE_WHILE_SENDING, exc) from exc
        return len(chunk)

    def _cut(self) -> None:
        self._link.close(CUT_MESSAGE)
        if self._socket is not None:
            self._socket.close()

    def bytes_waiting(self) -> bool:
        """Whether bytes wait to be read now (see ``waiting_probe``); always True on a stream other than a
        socket, which cannot tell."""
        return bool(self._initial) or self._fds is None or self._fds.bytes_waiting()

    async def receive_batch(self, *, poll: bool = False) -> list[bytes]:
        """Read until at least one message is complete; return every complete one (``poll``: FdIO.read).

        Pings are answered on the way, without waiting: the pong is written now if the socket is idle, else
        it is left in ``backlog`` for the next :meth:`send`. A close from the browser ends the transport
        (its reply is written only if that needs no wait).

        Raises:
            ConnectionClosed: the browser closed the websocket or the TCP connection, or it was closed here,
                or a message is over ``max_inbound_bytes``.
        """
        link = self._link
        messages: list[bytes] = []
        while not messages:
            if link.reason is not None:
                await link.raise_closed()
            data: bytes | bytearray
            if self._initial:
                data, self._initial = self._initial, b""
            else:
                # Read inline, not in a method of its own: one coroutine frame less to resume per wait.
                try:
                    if self._fds is not None:
                        data = await self._fds.read(poll=poll)
                    else:
                        data = await self._stream.receive_some(self._read_size)
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                    await self._abort(_broke(exc))
                    raise link.error() from exc
                if not data:
                    await self._abort(
                        "the browser closed the websocket's TCP connection (it exited or crashed)"
                    )
                    raise link.error()
                payload = self._codec.single_message(data)
                if payload is not None:
                    return [payload]
            try:
                events = self._codec.receive_data(data, messages)
            except RemoteProtocolError as exc:
                await self._abort(f"the browser broke the websocket protocol: {exc}")
                raise link.error() from exc
            except InboundTooLarge as exc:
                await self._abort(exc.explain("websocket"))
                messages += [event.data for event in exc.completed if type(event) is Message]
                if messages:
                    return messages
                raise link.error() from exc
            for event in events:
                if type(event) is Message:
                    messages.append(event.data)
                elif type(event) is CloseReceived:
                    reason = f"{event.code} {event.reason}".strip() if event.code else "no status"
                    link.close(f"the browser closed the websocket ({reason})")
            if self._codec.control_owed:
                self._write_control_nowait()
            if link.reason is not None:
                await trio.aclose_forcefully(self._stream)
                if not messages:
                    raise link.error()
        return messages

    async def _abort(self, reason: str) -> None:
        self._link.close(reason)
        await trio.aclose_forcefully(self._stream)

    async def aclose(self) -> None:
        """Send a close frame unless a write is in flight (within a second), then drop the connection."""
        if self._link.reason is None:
            self._link.close("the websocket was closed by this client")
            with trio.CancelScope(shield=True, deadline=trio.current_time() + 1.0):
                try:
                    self._send_lock.acquire_nowait()
                except trio.WouldBlock:
                    pass
                else:
                    # After what is owed: the tail of a frame send_nowait began, then a pong.
                    data = self._fds.take() if self._fds is not None else b""
                    data += self._codec.data_to_send() + self._codec.close()
                    try:
                        await write_fully(self._send_some, data, self._cut)
                    except ConnectionClosed:
                        pass
                    finally:
                        self._send_lock.release()
        await trio.aclose_forcefully(self._stream)


async def open_websocket_transport(url: str, settings: Settings) -> WebSocketTransport:
    """Connect to a ``ws://`` DevTools URL; bounded by ``settings.connect_timeout``.

    Raises:
        ConnectError: the connection or the upgrade failed or took too long (the message says which).
        ValueError: ``url`` is not a ``ws://`` URL.
    """
    stream, rest = await open_upgraded_stream(url, settings)
    return WebSocketTransport(
        stream,
        initial_data=rest,
        max_outbound_bytes=settings.max_outbound_bytes,
        max_inbound_bytes=settings.max_inbound_bytes,
        busy_poll=settings.busy_poll,
    )
