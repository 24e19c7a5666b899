"""Two more websocket transports for the engine, kept here so the engine's own choice can be re-measured.

Both satisfy ``engine._transport.Transport`` and run under the engine's unchanged connection layer
(``open_connection`` + ``Browser``), so against ``engine.ws`` (the engine's own sans-I/O codec,
``engine._ws_codec``) the only thing that differs is the websocket implementation. Both keep their state
with the engine's own ``LinkState`` (the outbound size check, the closed state and its reason), and
``tests/engine/test_transport_conformance.py`` holds them to the same contract as the engine's transports:

- :class:`TrioWebSocketTransport` is the trio-websocket package, used the way its documentation shows:
  ``connect_websocket_url`` with a nursery we own (the package runs its own reader task there), then
  ``get_message`` / ``send_message``. It gets a large ``max_message_size`` (Chromium sends replies of
  hundreds of MB), 1 MiB reads (the engine's own read size; the package's default is 4 KiB) and a deeper
  message queue than its default of 1. ``send_nowait`` always declines, so the engine's writer task sends.
- :class:`WsprotoTransport` drives wsproto's sans-I/O ``WSConnection`` directly on a ``trio.SocketStream``
  (TCP_NODELAY), with no task of its own. Its I/O is deliberately the engine's own (the same ``FdIO``
  burst reads and non-blocking write on an idle link), so that next to
  ``engine.ws`` it measures the codec alone: wsproto's frame parser, its UTF-8 decoding of text frames and
  its masking, against ours.

Chromium's DevTools server takes text frames, so both send ``str`` (the libraries' text messages), and both
hand the engine bytes, as the Transport protocol asks: wsproto decodes text payloads to ``str``, so they are
encoded back. That round trip is part of what using either library costs.

:func:`connect_over` is ``engine.connect`` for a ``ws://`` URL with the transport chosen by name.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Literal
from urllib.parse import urlsplit

import trio
import trio_websocket
import wsproto
import wsproto.events
import wsproto.utilities
from wsproto.connection import ConnectionState

from engine import Browser, ConnectError, ConnectionClosed, Settings
from engine.lowlevel import (
    CUT_MESSAGE,
    DEFAULT_SETTINGS,
    READ_SIZE,
    WEBSOCKET_MAX_MESSAGE_BYTES,
    FdIO,
    LinkState,
    browser_over,
    collapse_groups,
    write_fully,
)

log = logging.getLogger("benchmarks.ws_transports")

Kind = Literal["trio-websocket", "wsproto"]

TRIO_WEBSOCKET_MAX_MESSAGE = 256 * 1024 * 1024
"""trio-websocket closes the connection (1009) on a longer inbound message; its default is 1 MiB."""

TRIO_WEBSOCKET_QUEUE = 1024
"""Whole messages the package's reader task may hold before it waits for us; its default is 1."""

CLOSE_GRACE_S = 1.0
"""How long a close handshake may take before the connection is just dropped."""


async def _wsproto_upgrade(
    stream: trio.SocketStream, ws: wsproto.WSConnection, host: str, target: str
) -> None:
    """wsproto's HTTP upgrade; frames that arrive behind the 101 stay in its buffer."""
    await stream.send_all(ws.send(wsproto.events.Request(host=host, target=target)))
    while True:
        data = await stream.receive_some(65536)
        if not data:
            raise ConnectError("the server closed the connection during the upgrade")
        ws.receive_data(data)
        for event in ws.events():
            if isinstance(event, wsproto.events.AcceptConnection):
                return
            if isinstance(event, wsproto.events.RejectConnection):
                raise ConnectError(f"the server refused the upgrade (HTTP {event.status_code})")


class TrioWebSocketTransport:
    """CDP messages over a ``trio_websocket.WebSocketConnection``.

    Built by :meth:`open`; the package's reader task runs in the caller's nursery.
    """

    name = "websocket"

    def __init__(self, ws: trio_websocket.WebSocketConnection, max_outbound_bytes: int) -> None:
        self._ws = ws
        self._link = LinkState(self.name, min(max_outbound_bytes, WEBSOCKET_MAX_MESSAGE_BYTES))

    @classmethod
    async def open(cls, nursery: trio.Nursery, url: str, settings: Settings) -> TrioWebSocketTransport:
        """Connect to ``url``; the package's reader task is started in ``nursery``.

        Raises:
            ConnectError: the connection or the handshake failed or took too long.
        """
        try:
            with trio.fail_after(settings.connect_timeout):
                ws = await trio_websocket.connect_websocket_url(
                    nursery,
                    url,
                    max_message_size=TRIO_WEBSOCKET_MAX_MESSAGE,
                    message_queue_size=TRIO_WEBSOCKET_QUEUE,
                    receive_buffer_size=READ_SIZE,
                )
        except trio.TooSlowError:
            raise ConnectError(f"connecting to {url} took longer than {settings.connect_timeout} s") from None
        except (OSError, trio_websocket.HandshakeError, trio_websocket.ConnectionClosed) as exc:
            raise ConnectError(f"could not open the websocket {url}: {exc!r}") from exc
        return cls(ws, settings.max_outbound_bytes)

    @classmethod
    async def over(
        cls, nursery: trio.Nursery, stream: trio.SocketStream, host: str, target: str, settings: Settings
    ) -> TrioWebSocketTransport:
        """The package's upgrade on a connected ``stream`` (a test's socket pair), then the transport."""
        ws = await trio_websocket.wrap_client_stream(
            nursery,
            stream,
            host,
            target,
            max_message_size=TRIO_WEBSOCKET_MAX_MESSAGE,
            message_queue_size=TRIO_WEBSOCKET_QUEUE,
            receive_buffer_size=READ_SIZE,
        )
        return cls(ws, settings.max_outbound_bytes)

    @property
    def max_outbound_bytes(self) -> int:
        return self._link.max_outbound_bytes

    @property
    def backlog(self) -> int:
        return 0

    def send_nowait(self, messages: Sequence[bytes]) -> bool:
        """Always declines: trio-websocket has no non-blocking send, so the engine's writer task sends."""
        link = self._link
        link.check_outbound(messages)
        if self._ws.closed is not None:
            link.close(f"the websocket is closed ({self._ws.closed})")
        if link.reason is not None:
            raise link.error()
        return False

    async def send(self, messages: Sequence[bytes]) -> None:
        """One ``send_message`` per message (the package writes each frame under its own lock)."""
        link = self._link
        link.check_outbound(messages)
        if link.reason is not None:
            await link.raise_closed()
        try:
            for message in messages:
                await self._ws.send_message(message.decode())
        except trio_websocket.ConnectionClosed as exc:
            raise link.broken("the websocket is closed", exc) from exc

    async def receive_batch(self, *, poll: bool = False) -> list[bytes]:
        """The next message (the package hands them over one at a time)."""
        link = self._link
        if link.reason is not None:
            await link.raise_closed()
        try:
            message = await self._ws.get_message()
        except trio_websocket.ConnectionClosed as exc:
            raise link.broken("the websocket is closed", exc) from exc
        return [message.encode() if isinstance(message, str) else message]

    async def aclose(self) -> None:
        """Close handshake within CLOSE_GRACE_S; the package drops the TCP connection either way."""
        self._link.close("the websocket was closed by this client")
        with trio.CancelScope(shield=True):
            with trio.move_on_after(CLOSE_GRACE_S):
                await self._ws.aclose()
            # After a close from the server, the package's client side waits for the server's TCP close
            # and then leaves its stream open (and aclose() returns at once): close it here.
            await trio.aclose_forcefully(self._ws._stream)


class WsprotoTransport:
    """CDP messages through wsproto's ``WSConnection`` on a socket stream, with the engine's own fd I/O.

    Built by :meth:`open`; the HTTP upgrade is wsproto's own.
    """

    name = "websocket"

    def __init__(self, stream: trio.SocketStream, ws: wsproto.WSConnection, max_outbound_bytes: int) -> None:
        self._stream = stream
        self._ws = ws
        self._link = LinkState(self.name, min(max_outbound_bytes, WEBSOCKET_MAX_MESSAGE_BYTES))
        fd = stream.socket.fileno()
        self._send_lock = trio.StrictFIFOLock()
        self._fds = FdIO(fd, fd, lock=self._send_lock, read_size=READ_SIZE, owned=False, lender=stream.socket)
        self._parts: list[str | bytes] = []

    @classmethod
    async def open(cls, url: str, settings: Settings) -> WsprotoTransport:
        """Connect to ``url`` and perform the upgrade through wsproto.

        Raises:
            ConnectError: the connection or the upgrade failed or took too long.
        """
        parts = urlsplit(url)
        if parts.scheme != "ws" or not parts.hostname:
            raise ValueError(f"expected a ws://host:port/path URL, not {url!r}")
        host, port = parts.hostname, parts.port or 80
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        try:
            with trio.fail_after(settings.connect_timeout):
                stream = await trio.open_tcp_stream(host, port)
                try:
                    stream.setsockopt(trio.socket.IPPROTO_TCP, trio.socket.TCP_NODELAY, True)
                    return await cls.over(stream, f"{host}:{port}", target, settings)
                except BaseException:
                    await trio.aclose_forcefully(stream)
                    raise
        except trio.TooSlowError:
            raise ConnectError(f"connecting to {url} took longer than {settings.connect_timeout} s") from None
        except (OSError, trio.BrokenResourceError, wsproto.utilities.ProtocolError) as exc:
            raise ConnectError(f"could not open the websocket {url}: {exc!r}") from exc

    @classmethod
    async def over(
        cls, stream: trio.SocketStream, host: str, target: str, settings: Settings
    ) -> WsprotoTransport:
        """wsproto's upgrade on a connected ``stream`` (a test's socket pair), then the transport."""
        ws = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
        await _wsproto_upgrade(stream, ws, host, target)
        # Frames that arrived behind the 101 are already in wsproto's buffer; receive_batch finds them.
        return cls(stream, ws, settings.max_outbound_bytes)

    @property
    def max_outbound_bytes(self) -> int:
        return self._link.max_outbound_bytes

    @property
    def backlog(self) -> int:
        return len(self._fds.pending)

    def _encode(self, messages: Sequence[bytes]) -> bytes:
        send = self._ws.send
        return b"".join([send(wsproto.events.TextMessage(data=message.decode())) for message in messages])

    def send_nowait(self, messages: Sequence[bytes]) -> bool:
        """Write now if the socket is idle (the engine's FdIO); see ``Transport.send_nowait``."""
        link = self._link
        link.check_outbound(messages)
        if link.reason is not None:
            raise link.error()
        if not self._fds.idle:
            return False
        try:
            return self._fds.write_nowait(self._encode(messages))
        except OSError as exc:
            raise link.broken("the websocket connection broke while sending", exc) from exc

    async def send(self, messages: Sequence[bytes]) -> None:
        link = self._link
        link.check_outbound(messages)
        if link.reason is not None:
            await link.raise_closed()
        await self._write(self._encode(messages))

    async def _write(self, data: bytes) -> None:
        async with self._send_lock:
            backlog = self._fds.take()
            data = backlog + data
            if data:
                try:
                    await write_fully(self._send_some, data, self._cut)
                except BaseException:
                    if backlog and self._link.reason is None:  # cancelled before the first byte
                        self._fds.give_back(backlog)
                    raise

    async def _send_some(self, chunk: memoryview) -> int:
        try:
            return await self._stream.socket.send(chunk)
        except (trio.ClosedResourceError, OSError) as exc:
            raise self._link.broken("the websocket connection broke while sending", exc) from exc

    def _cut(self) -> None:
        self._link.close(CUT_MESSAGE)
        self._stream.socket.close()

    async def receive_batch(self, *, poll: bool = False) -> list[bytes]:
        """Read until at least one message is complete; return every complete one (pings answered)."""
        link = self._link
        messages: list[bytes] = []
        while not messages:
            if link.reason is not None:
                await link.raise_closed()
            try:
                data = await self._fds.read(poll=poll)
            except (trio.ClosedResourceError, trio.BrokenResourceError, OSError) as exc:
                await trio.aclose_forcefully(self._stream)
                raise link.broken("the websocket connection broke", exc) from exc
            if not data:
                link.close("the browser closed the websocket's TCP connection")
                await trio.aclose_forcefully(self._stream)
                raise link.error()
            self._ws.receive_data(data)
            reply = b""
            for event in self._ws.events():
                if isinstance(event, wsproto.events.Message):
                    self._parts.append(event.data)
                    if event.message_finished:
                        messages.append(self._join())
                elif isinstance(event, wsproto.events.Ping):
                    reply += self._ws.send(event.response())
                elif isinstance(event, wsproto.events.CloseConnection):
                    if self._ws.state is ConnectionState.REMOTE_CLOSING:
                        reply += self._ws.send(event.response())
                    link.close(
                        f"the browser closed the websocket ({event.code} {event.reason or ''})".strip()
                    )
            if reply:
                await self._write(reply)
            if link.reason is not None:
                await trio.aclose_forcefully(self._stream)
                if not messages:
                    raise link.error()
        return messages

    def _join(self) -> bytes:
        parts, self._parts = self._parts, []
        if len(parts) == 1:
            only = parts[0]
            return only.encode() if isinstance(only, str) else bytes(only)
        if isinstance(parts[0], str):
            return "".join([p for p in parts if isinstance(p, str)]).encode()
        return b"".join([p for p in parts if isinstance(p, bytes | bytearray)])

    async def aclose(self) -> None:
        """Send a close frame unless a write is in flight, then drop the connection."""
        if self._link.reason is None:
            self._link.close("the websocket was closed by this client")
            with trio.CancelScope(shield=True), trio.move_on_after(CLOSE_GRACE_S):
                try:
                    self._send_lock.acquire_nowait()
                except trio.WouldBlock:
                    pass
                else:
                    try:
                        if self._ws.state is ConnectionState.OPEN:
                            data = self._ws.send(wsproto.events.CloseConnection(code=1000))
                            await write_fully(self._send_some, data, self._cut)
                    except ConnectionClosed:
                        pass
                    finally:
                        self._send_lock.release()
        await trio.aclose_forcefully(self._stream)


@asynccontextmanager
async def connect_over(
    kind: Kind, ws_url: str, *, settings: Settings = DEFAULT_SETTINGS
) -> AsyncIterator[Browser]:
    """``engine.connect(ws_url)`` with the websocket implementation named by ``kind``.

    The nursery opened here owns trio-websocket's reader task, so the transport lives and dies inside the
    caller's task, like the engine's own connection. Leaving the block closes the pages this client opened
    and the connection, never the browser.
    """
    with collapse_groups():
        async with trio.open_nursery() as nursery:
            transport: TrioWebSocketTransport | WsprotoTransport
            if kind == "trio-websocket":
                transport = await TrioWebSocketTransport.open(nursery, ws_url, settings)
            else:
                transport = await WsprotoTransport.open(ws_url, settings)
            try:
                async with browser_over(transport, settings) as browser:
                    yield browser
            finally:
                with trio.CancelScope(shield=True):
                    await transport.aclose()
                nursery.cancel_scope.cancel()
