"""Transports: whole CDP messages (JSON bytes) out and in, over a pipe or a websocket.

A transport moves bytes and knows nothing of JSON. The connection layer above owns ids, routing and
decoding; it writes batches of messages with :meth:`Transport.send` and reads with
:meth:`Transport.receive_batch`.

The pipe is what ``--remote-debugging-pipe`` gives: Chromium reads our commands from its fd 3 and writes
to its fd 4, every message ended by a NUL byte. Chromium reads at most 100 MiB per message from the pipe;
at 100 MiB or more it stops reading the pipe altogether (no error, no disconnect: every later command hangs),
so :class:`PipeTransport` never sends a message that long.

Inbound, both transports stop at ``max_inbound_bytes`` (``Settings.max_inbound_bytes``): a peer that never
ends its message (no NUL, a frame header declaring gigabytes) closes the link instead of growing our memory.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

import trio

from engine._errors import ConnectionClosed, MessageTooLarge
from engine._settings import DEFAULT_SETTINGS

PIPE_MAX_MESSAGE_BYTES = 100 * 1024 * 1024 - 1
"""The longest message Chromium reads from the pipe (it must be shorter than 100 MiB)."""

READ_SIZE = 1024 * 1024
"""How many bytes one read asks for."""

_PIPE_SIZE = 1024 * 1024
"""The kernel buffer we ask for on our pipes (Linux allows 1 MiB unprivileged); fewer, larger reads."""

MAX_INBOUND_BYTES = DEFAULT_SETTINGS.max_inbound_bytes
"""The default inbound cap (``Settings.max_inbound_bytes``): a transport built without settings is bounded."""


class InboundTooLarge(Exception):
    """A framer met a message over its inbound limit (sans-I/O; the transport closes the link).

    Args:
        size: the message's length, or what arrived of it so far when ``at_least``.
        limit: the inbound limit it is over.
        at_least: the message is not finished, so ``size`` is a lower bound.
        completed: what the same call completed before it (messages or events). They are whole and may
            answer waiting commands, so the transport delivers them before it reports the closed link.
    """

    def __init__(
        self, size: int, limit: int, *, at_least: bool = False, completed: Sequence[Any] = ()
    ) -> None:
        self.size = size
        self.limit = limit
        self.at_least = at_least
        self.completed = completed
        super().__init__(f"a message of {'at least ' if at_least else ''}{size:,} bytes")

    def explain(self, link: str) -> str:
        """The ConnectionClosed text: what came, the limit and its setting, what happened, what to do."""
        return (
            f"the browser sent {self}, over the {self.limit:,}-byte limit (Settings.max_inbound_bytes); "
            f"the {link} was closed. Raise the limit if the message is legitimate"
        )


class Transport(Protocol):
    """What the connection layer needs from a link to the browser."""

    @property
    def name(self) -> str:
        """``"pipe"`` or ``"websocket"``, for messages and statistics."""
        ...

    @property
    def max_outbound_bytes(self) -> int:
        """The longest message :meth:`send` accepts; longer ones raise MessageTooLarge."""
        ...

    async def send(self, messages: Sequence[bytes]) -> None:
        """Send whole messages, in order, in as few writes as possible, after what ``backlog`` holds.

        With no messages it writes only the backlog: that is how the writer task flushes it.

        Raises:
            MessageTooLarge: a message is over ``max_outbound_bytes``; nothing was sent.
            ConnectionClosed: the link is gone.
        """
        ...

    async def receive_batch(self) -> list[bytes]:
        """Wait for the next complete messages and return all that are complete (at least one).

        Raises:
            ConnectionClosed: the link ended (EOF, error, closed locally).
        """
        ...

    async def aclose(self) -> None:
        """Close the link; idempotent, quick, and it wakes a task blocked in send or receive."""
        ...

    def send_nowait(self, messages: Sequence[bytes]) -> bool:
        """Write whole messages now, without yielding, if the link is idle.

        Returns ``False`` (nothing written) when a send is in progress or a backlog waits; then use
        :meth:`send`. Returns ``True`` when the messages were taken: written, or partly written with the
        rest kept as a backlog that the next :meth:`send` writes first (see ``backlog``).

        Raises:
            MessageTooLarge: a message is over ``max_outbound_bytes``; nothing was sent.
            ConnectionClosed: the link is gone.
        """
        ...

    @property
    def backlog(self) -> int:
        """Bytes that wait for the next :meth:`send`: the rest of a :meth:`send_nowait`, and control frames
        the transport owes the peer (a websocket's pong or close reply, which its reader never waits to
        write). Whoever sees it above zero must make sure a send follows, with no messages if need be.
        """
        ...


def check_outbound(messages: Sequence[bytes], limit: int, name: str) -> None:
    """Raise MessageTooLarge if any message is longer than ``limit`` (before anything is written)."""
    for message in messages:
        if len(message) > limit:
            raise MessageTooLarge(
                f"an outbound message of {len(message):,} bytes is over the {name}'s limit of {limit:,} "
                "bytes; nothing was sent"
            )


async def write_fully(
    send_some: Callable[[memoryview], Awaitable[int]], data: bytes, break_link: Callable[[], None]
) -> None:
    """Write all of ``data`` with ``send_some`` (which writes a prefix and returns its length).

    Cancellation is honoured at any point. Before the first byte it leaves the link as it was; after it, a
    message is cut in half and would garble the stream, so ``break_link`` is called first (the transport
    then closes itself and raises ConnectionClosed from then on).
    """
    await trio.lowlevel.checkpoint_if_cancelled()
    sent = 0
    try:
        with memoryview(data) as view:
            while sent < len(view):
                with view[sent:] as rest:
                    sent += await send_some(rest)
    except trio.Cancelled:
        if sent:
            break_link()
        raise
    await trio.lowlevel.cancel_shielded_checkpoint()


CUT_MESSAGE = "a send was cancelled in the middle of a message, so the link was closed"

_READ_STREAK = 16
"""Reads in a row that found data waiting before the reader yields to other tasks anyway."""


class FdReader:
    """Reads from a non-blocking fd with one wake-up per message burst.

    A trio stream's ``receive_some`` yields after every successful read; on the round-trip path that is
    one extra pass of the scheduler per reply. Here a read that finds data returns at once, and only a
    long streak of such reads (a flood) yields, so other tasks still run.
    """

    def __init__(self, fd: int, size: int) -> None:
        self.fd = fd
        self.size = size
        self._streak = 0

    async def read(self) -> bytes:
        while True:
            try:
                data = os.read(self.fd, self.size)
            except BlockingIOError:
                self._streak = 0
                await trio.lowlevel.wait_readable(self.fd)
                continue
            self._streak += 1
            if self._streak >= _READ_STREAK:
                self._streak = 0
                await trio.lowlevel.checkpoint()
            return data


class EagerWriter:
    """``send_nowait`` for an fd: write at once when idle, keep what the kernel did not take as a backlog.

    The common small command then costs one ``write`` in the caller's own task, with no hand-off to a
    writer task and no pass of the scheduler. Nothing here yields, so nothing here can be cancelled in the
    middle of a message; the backlog is written by the next ``send`` under the transport's send lock.
    """

    def __init__(self, fd: int, lock: trio.StrictFIFOLock) -> None:
        self.fd = fd
        self.lock = lock
        self.pending = b""

    @property
    def idle(self) -> bool:
        """No send holds the lock and no backlog waits: a write now keeps the stream in order."""
        return not self.pending and not self.lock.locked()

    def write_nowait(self, data: bytes) -> bool:
        if self.pending or self.lock.locked():
            return False
        try:
            written = os.write(self.fd, data)
        except BlockingIOError:
            written = 0
        if written < len(data):
            self.pending = data[written:]
        return True

    def take(self) -> bytes:
        pending, self.pending = self.pending, b""
        return pending

    def give_back(self, unsent: bytes) -> None:
        """Keep ``unsent`` (taken by :meth:`take`, then not a byte of it written) as the backlog again.

        A send cancelled before its first byte must not lose it: the backlog can be the tail of a frame,
        and the stream is garbled without it.
        """
        self.pending = unsent + self.pending


class NulFramer:
    """Splits a byte stream into NUL-terminated messages (sans-I/O).

    Each byte is searched once: only the newly fed chunk is scanned, and the unfinished message is kept in
    a bytearray that grows in place, so a message of hundreds of megabytes costs linear time. The limit is
    a length comparison per chunk: a chunk no longer than the limit cannot hold a message over it, so only
    the unfinished message (and, with a limit below the read size, a long chunk) is measured.

    Args:
        max_inbound_bytes: the longest message; a longer one, finished or not, raises InboundTooLarge.
    """

    def __init__(self, *, max_inbound_bytes: int = MAX_INBOUND_BYTES) -> None:
        self._partial = bytearray()
        self._limit = max_inbound_bytes

    @property
    def pending_bytes(self) -> int:
        """Bytes of an unfinished message held back."""
        return len(self._partial)

    def feed(self, data: bytes) -> list[bytes]:
        """Add received bytes; return the messages they complete (empty messages are skipped).

        Raises:
            InboundTooLarge: a message is over ``max_inbound_bytes``; nothing more should be fed.
        """
        messages: list[bytes] = []
        limit = self._limit
        if self._partial:
            end = data.find(b"\0")
            held = len(self._partial)
            if end == -1:
                if held + len(data) > limit:
                    raise InboundTooLarge(held + len(data), limit, at_least=True)
                self._partial += data
                return messages
            if held + end > limit:
                raise InboundTooLarge(held + end, limit)  # nothing before it in this chunk
            with memoryview(data) as view:
                self._partial += view[:end]
            messages.append(bytes(self._partial))
            self._partial = bytearray()
            data = data[end + 1 :]
        parts = data.split(b"\0")
        tail = parts.pop()
        if len(data) > limit:
            for part in parts:
                if len(part) > limit:
                    raise InboundTooLarge(len(part), limit, completed=messages)
                if part:
                    messages.append(part)
            if len(tail) > limit:
                raise InboundTooLarge(len(tail), limit, at_least=True, completed=messages)
        else:
            messages.extend(part for part in parts if part)
        if tail:
            self._partial += tail
        return messages


def _nul_framed(messages: Sequence[bytes]) -> bytes:
    parts: list[bytes] = []
    for message in messages:
        parts.append(message)
        parts.append(b"\0")
    return b"".join(parts)


def _grow_pipe(fd: int) -> None:
    """Ask for a larger kernel pipe buffer; harmless when refused."""
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _PIPE_SIZE)


class PipeTransport:
    """NUL-framed messages over a pair of pipe file descriptors (``--remote-debugging-pipe``).

    Args:
        read_fd: our end of the pipe Chromium writes to (its fd 4). Owned (closed) by the transport.
        write_fd: our end of the pipe Chromium reads from (its fd 3). Owned (closed) by the transport.
        max_outbound_bytes: the longest message to send; capped at PIPE_MAX_MESSAGE_BYTES.
        max_inbound_bytes: the longest message to accept; a longer one closes the pipe (ConnectionClosed).
        read_size: bytes asked for per read.
    """

    name = "pipe"

    def __init__(
        self,
        read_fd: int,
        write_fd: int,
        *,
        max_outbound_bytes: int = PIPE_MAX_MESSAGE_BYTES,
        max_inbound_bytes: int = MAX_INBOUND_BYTES,
        read_size: int = READ_SIZE,
    ) -> None:
        _grow_pipe(read_fd)
        _grow_pipe(write_fd)
        self._reader = trio.lowlevel.FdStream(read_fd)
        self._writer = trio.lowlevel.FdStream(write_fd)
        self._max_outbound = min(max_outbound_bytes, PIPE_MAX_MESSAGE_BYTES)
        self._read_size = read_size
        self._framer = NulFramer(max_inbound_bytes=max_inbound_bytes)
        self._send_lock = trio.StrictFIFOLock()
        self._eager = EagerWriter(write_fd, self._send_lock)
        self._fd_reader = FdReader(read_fd, read_size)
        self._closed: str | None = None

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<PipeTransport {state} fds={self._reader.fileno()}/{self._writer.fileno()}>"

    @property
    def max_outbound_bytes(self) -> int:
        """The longest message :meth:`send` accepts."""
        return self._max_outbound

    async def send(self, messages: Sequence[bytes]) -> None:
        """Send whole messages as one write, each followed by a NUL byte.

        Raises:
            MessageTooLarge: a message is over ``max_outbound_bytes``; nothing was sent.
            ConnectionClosed: the pipe is closed or broken.
        """
        check_outbound(messages, self._max_outbound, self.name)
        if self._closed is not None:
            await trio.lowlevel.checkpoint()
            raise ConnectionClosed(self._closed)
        async with self._send_lock:
            backlog = self._eager.take()
            data = backlog + _nul_framed(messages)
            if data:
                try:
                    await write_fully(self._send_some, data, self._cut)
                except BaseException:
                    if backlog and self._closed is None:
                        self._eager.give_back(backlog)
                    raise

    def send_nowait(self, messages: Sequence[bytes]) -> bool:
        """Write now if the pipe is idle; see :meth:`Transport.send_nowait`."""
        check_outbound(messages, self._max_outbound, self.name)
        if self._closed is not None:
            raise ConnectionClosed(self._closed)
        try:
            return self._eager.write_nowait(_nul_framed(messages))
        except OSError as exc:
            raise self._failed("the pipe to the browser broke while sending", exc) from exc

    @property
    def backlog(self) -> int:
        return len(self._eager.pending)

    async def _send_some(self, chunk: memoryview) -> int:
        while True:
            fd = self._writer.fileno()
            try:
                return os.write(fd, chunk)
            except BlockingIOError:
                pass
            except OSError as exc:
                raise self._failed("the pipe to the browser broke while sending", exc) from exc
            try:
                await trio.lowlevel.wait_writable(fd)
            except (trio.ClosedResourceError, OSError) as exc:
                raise self._failed("the pipe to the browser broke while sending", exc) from exc

    def _failed(self, what: str, exc: BaseException) -> ConnectionClosed:
        if self._closed is None:
            self._closed = f"{what}: {exc!r}"
        return ConnectionClosed(self._closed)

    def _cut(self) -> None:
        self._closed = CUT_MESSAGE
        self._writer.close()
        self._reader.close()

    async def receive_batch(self) -> list[bytes]:
        """Read until at least one message is complete; return every complete one.

        Raises:
            ConnectionClosed: Chromium closed its end (it exited), or the pipe was closed here.
        """
        while True:
            if self._closed is not None:
                await trio.lowlevel.checkpoint()
                raise ConnectionClosed(self._closed)
            try:
                data = await self._fd_reader.read()
            except (trio.ClosedResourceError, trio.BrokenResourceError, OSError) as exc:
                raise self._failed("the pipe from the browser broke", exc) from exc
            if not data:
                unfinished = self._framer.pending_bytes
                detail = f" in the middle of a message ({unfinished:,} bytes)" if unfinished else ""
                self._closed = f"the browser closed the pipe{detail} (it exited or crashed)"
                raise ConnectionClosed(self._closed)
            try:
                messages = self._framer.feed(data)
            except InboundTooLarge as exc:
                self._closed = exc.explain("pipe")
                self._writer.close()
                self._reader.close()
                if exc.completed:
                    return list(exc.completed)
                raise ConnectionClosed(self._closed) from exc
            if messages:
                return messages

    async def aclose(self) -> None:
        """Close both pipe ends; Chromium takes the end of its input as a request to exit."""
        if self._closed is None:
            self._closed = "the pipe was closed by this client"
        self._writer.close()
        self._reader.close()
        await trio.lowlevel.checkpoint()


def make_pipe_pair() -> tuple[tuple[int, int], tuple[int, int]]:
    """Two pipes for a child: ((our read fd, our write fd), (child's read fd, child's write fd)).

    All four are close-on-exec. The child's two are numbered 5 or above, so a child can ``dup2`` them onto
    3 and 4 without one overwriting the other.
    """
    to_child_read, to_child_write = os.pipe()
    from_child_read, from_child_write = os.pipe()
    try:
        child_read = fcntl.fcntl(to_child_read, fcntl.F_DUPFD_CLOEXEC, 5)
        try:
            child_write = fcntl.fcntl(from_child_write, fcntl.F_DUPFD_CLOEXEC, 5)
        except OSError:
            os.close(child_read)
            raise
    except OSError:
        for fd in (to_child_write, from_child_read):
            os.close(fd)
        raise
    finally:
        os.close(to_child_read)
        os.close(from_child_write)
    return (from_child_read, to_child_write), (child_read, child_write)
