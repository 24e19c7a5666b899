"""Transports: whole CDP messages (JSON bytes) out and in, over a pipe or a websocket.

A transport moves bytes and knows nothing of JSON. The connection layer above owns ids, routing and
decoding; it writes batches of messages with :meth:`Transport.send` and reads with
:meth:`Transport.receive_batch`. Here: the contract (:class:`Transport`), what every transport shares
(:class:`LinkState`: the outbound size check and the closed state; :func:`write_fully`; :class:`FdIO`,
non-blocking I/O on file descriptors) and the pipe. The websocket is ``engine._websocket``, its codec
``engine._ws_codec``, connecting to it ``engine._http``; ``tests/engine/test_transport_conformance.py``
runs one contract on all of them.

The pipe is what ``--remote-debugging-pipe`` gives: Chromium reads our commands from its fd 3 and writes
to its fd 4, every message ended by a NUL byte. Chromium reads at most 100 MiB per message from the pipe;
at 100 MiB or more it stops reading the pipe altogether (no error, no disconnect: every later command hangs),
so :class:`PipeTransport` never sends a message that long.

Inbound, every transport stops at ``max_inbound_bytes`` (``Settings.max_inbound_bytes``; see
``engine._framing``).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import NoReturn, Protocol

import trio

from engine._errors import ConnectionClosed, MessageTooLarge
from engine._framing import MAX_INBOUND_BYTES, InboundTooLarge, NulFramer, nul_framed
from engine._settings import DEFAULT_SETTINGS

PIPE_MAX_MESSAGE_BYTES = 100 * 1024 * 1024 - 1
"""The longest message Chromium reads from the pipe (it must be shorter than 100 MiB)."""

READ_SIZE = 1024 * 1024
"""How many bytes one read asks for while a large message comes in (the last read filled its request)."""

SMALL_READ = 64 * 1024
"""How many bytes a read asks for otherwise. glibc serves this from the heap; a read buffer of READ_SIZE
can be an mmap, an mremap to shrink it and a munmap to free it, every read (whether depends on the
process's allocation history: 1 engine process in 6 under strace): about 16 us per small read."""

_PIPE_SIZE = 1024 * 1024
"""The kernel buffer we ask for on our pipes (Linux allows 1 MiB unprivileged); fewer, larger reads."""

CUT_MESSAGE = "a send was cancelled in the middle of a message, so the link was closed"

_READ_STREAK = 16
"""Reads in a row that found data waiting before the reader yields to other tasks anyway."""

BUSY_POLL_S = DEFAULT_SETTINGS.busy_poll
"""How long a read for a lone caller's reply polls the link before it sleeps (``Settings.busy_poll``)."""

_clock = time.perf_counter
_yield_cpu: Callable[[], None] = getattr(os, "sched_yield", lambda: None)


class _HasFileno(Protocol):
    def fileno(self) -> int: ...


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

        With no messages it writes only the backlog: that is how the writer task flushes it. Cancelled
        before its first byte, it leaves the link and the backlog as they were; cancelled after it, it
        closes the link (half a message would garble the stream).

        Raises:
            MessageTooLarge: a message is over ``max_outbound_bytes`` (checked first); nothing was sent.
            ConnectionClosed: the link is gone.
        """
        ...

    async def receive_batch(self, *, poll: bool = False) -> list[bytes]:
        """Wait for the next complete messages and return all that are complete (at least one).

        ``poll``: the caller waits for the one reply it expects soon (a lone command); the transport may
        poll its link for a short while before it sleeps (see :meth:`FdIO.read`), or ignore it.

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
        rest kept as a backlog that the next :meth:`send` writes first (see ``backlog``). A transport with
        no non-blocking write may always return ``False``.

        Raises:
            MessageTooLarge: a message is over ``max_outbound_bytes`` (checked first); nothing was sent.
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


def waiting_probe(transport: object) -> Callable[[], bool] | None:
    """The transport's ``bytes_waiting()`` (whether bytes wait to be read now, without reading them), or None
    for a transport without one. Optional: Connection._reader gathers a flood only when it is there to
    tell that nothing waits, so a transport of the user's own need not have it."""
    probe = getattr(transport, "bytes_waiting", None)
    return probe if callable(probe) else None


class LinkState:
    """What every transport keeps the same way: its outbound limit, and whether it is closed and why.

    The first reason given is the one kept: a link closed by this client, then failing to write, still
    says it was closed by this client. Every later call on the transport raises ConnectionClosed with it.
    Every transport opens ``send`` and ``send_nowait`` the same way::

        link.check_outbound(messages)
        if link.reason is not None:
            raise link.error()            # in send: await link.raise_closed()

    ``reason`` is read inline on the hot paths (``send_nowait``, ``receive_batch``): an attribute test,
    not a call.

    Args:
        name: the transport's name, for messages.
        max_outbound_bytes: the longest message :meth:`check_outbound` lets through.
    """

    __slots__ = ("max_outbound_bytes", "name", "reason")

    def __init__(self, name: str, max_outbound_bytes: int) -> None:
        self.name = name
        self.max_outbound_bytes = max_outbound_bytes
        self.reason: str | None = None
        """None while the link is open; then why it closed."""

    def check_outbound(self, messages: Sequence[bytes]) -> None:
        """The outbound size check, before anything is written (and before the closed check).

        Raises:
            MessageTooLarge: a message is longer than ``max_outbound_bytes``.
        """
        limit = self.max_outbound_bytes
        for message in messages:
            if len(message) > limit:
                raise MessageTooLarge(
                    f"an outbound message of {len(message):,} bytes is over the {self.name}'s limit of "
                    f"{limit:,} bytes; nothing was sent"
                )

    def close(self, reason: str) -> None:
        """Mark the link closed for ``reason``, unless it already is."""
        if self.reason is None:
            self.reason = reason

    def error(self) -> ConnectionClosed:
        """The ConnectionClosed for the recorded reason."""
        return ConnectionClosed(self.reason)

    def broken(self, what: str, exc: BaseException) -> ConnectionClosed:
        """Mark the link closed because ``exc`` broke it during ``what``; the ConnectionClosed to raise."""
        self.close(f"{what}: {exc!r}")
        return ConnectionClosed(self.reason)

    async def raise_closed(self) -> NoReturn:
        """Raise the ConnectionClosed, after a checkpoint (an async call that fails still yields)."""
        await trio.lowlevel.checkpoint()
        raise ConnectionClosed(self.reason)


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


class FdIO:
    """Non-blocking I/O on a link's file descriptors: burst reads, and writes in the caller's own task.

    Reading: a trio stream's ``receive_some`` yields after every successful read; on the round-trip path
    that is one extra pass of the scheduler per reply. Here a read that finds data returns at once, and
    only a long streak of such reads (a flood) yields, so other tasks still run.

    Polling: see :meth:`read`.

    Writing: :meth:`write_nowait` writes at once when the link is idle and keeps what the kernel did not
    take as a backlog (``pending``). The common small command then costs one ``write`` in the caller's own
    task, with no hand-off to a writer task and no pass of the scheduler. Nothing there yields, so nothing
    there can be cancelled in the middle of a message; the transport's next send writes the backlog under
    its send lock (:meth:`take`, then :meth:`send_some`).

    The descriptors live here and nowhere else. The pipe's are owned: made non-blocking here, closed by
    :meth:`close` (which wakes a task waiting on either) and read as -1 from then on, so a late call fails
    with EBADF instead of reaching a number the process has reused. A websocket lends its socket's fd; the
    socket closes it, after the transport has marked itself closed.

    Args:
        read_fd: the fd to read from.
        write_fd: the fd to write to (a socket's is the same as ``read_fd``).
        lock: the transport's send lock: a write now keeps the stream in order only if no send holds it.
        read_size: the most bytes one read asks for (SMALL_READ unless the last read filled its request).
        owned: the fds are this object's to set up and close (the pipe), not a socket's.
        busy_poll: the longest a read asked to poll polls before it sleeps, in seconds; 0: never.
        lender: the socket that lends its fd (not ``owned``): a poll stops when it is closed, as its number
            may then be another file's.
    """

    def __init__(
        self,
        read_fd: int,
        write_fd: int,
        *,
        lock: trio.StrictFIFOLock,
        read_size: int,
        owned: bool,
        busy_poll: float = BUSY_POLL_S,
        lender: _HasFileno | None = None,
    ) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        self.lock = lock
        self.read_size = read_size
        self._small = min(SMALL_READ, read_size)
        self._ask = self._small
        self.pending = b""
        self._streak = 0
        self.busy_poll = busy_poll
        self._quick = True  # the last wait that could poll ended within busy_poll
        self._lender = lender
        self._owned = owned
        self._probe: select.poll | None = None  # for bytes_waiting(), made on first use
        if owned:
            os.set_blocking(read_fd, False)
            os.set_blocking(write_fd, False)

    # -- reading -------------------------------------------------------------------------------------

    async def read(self, *, poll: bool = False) -> bytes:
        """The next bytes (empty at EOF); raises OSError or trio.ClosedResourceError if the fd is gone.

        It reads before it waits, also right after a write: on 2 cores the write to Chromium often gives
        way to it until it has answered, and the reply is then there (measured: 0.81x the wall time of
        waiting first, per Browser.getVersion). A read that fails costs a system call; a wait for bytes
        that are already there costs a pass of the scheduler and an epoll wait.

        With ``poll`` (a lone caller waits for its reply), a read that finds nothing reads again, for up
        to ``busy_poll``, before it sleeps in epoll: on a VM, falling asleep and being woken cost more than
        Chromium takes to answer a small command (measured: a getVersion round trip in 0.58x the time for
        about the same CPU of the whole machine; see the README). Between reads every other runnable task
        and thread runs (:meth:`_poll`). It polls only if the last such wait ended within ``busy_poll``:
        after a slow reply (a navigation, a screenshot) it sleeps at once until a quick one comes again.
        """
        while True:
            try:
                data = os.read(self.read_fd, self._ask)
            except BlockingIOError:
                self._streak = 0
                if not poll or not self.busy_poll:
                    await trio.lowlevel.wait_readable(self.read_fd)
                    continue
                begun = _clock()
                polled = await self._poll(begun) if self._quick else None
                if polled is None:
                    await trio.lowlevel.wait_readable(self.read_fd)
                    self._quick = _clock() - begun <= self.busy_poll
                    continue
                data = polled
            self._ask = self.read_size if len(data) == self._ask else self._small
            self._streak += 1
            if self._streak >= _READ_STREAK:
                self._streak = 0
                # A yield for fairness only: raising Cancelled here would lose the bytes just read (a
                # caller reading its own reply, see Connection._send_and_wait, can be cancelled at any await).
                await trio.lowlevel.cancel_shielded_checkpoint()
            return data

    async def _poll(self, begun: float) -> bytes | None:
        """Read until bytes come (them) or ``busy_poll`` since ``begun`` ends (None).

        Each turn is a trio checkpoint (every other runnable task runs, and a cancellation or a deadline
        ends the poll as it would a sleep) and a ``sched_yield`` (so does any other runnable thread).

        Raises:
            trio.ClosedResourceError: the fd was closed meanwhile (by another task). A task waiting in
                epoll learns it from trio; a poll must look, or read a reused number's bytes.
        """
        while True:
            await trio.lowlevel.checkpoint()
            _yield_cpu()
            if self.read_fd == -1 or (self._lender is not None and self._lender.fileno() != self.read_fd):
                raise trio.ClosedResourceError("the link was closed while a read polled it")
            try:
                return os.read(self.read_fd, self._ask)
            except BlockingIOError:
                pass
            if _clock() - begun > self.busy_poll:
                return None

    def bytes_waiting(self) -> bool:
        """Whether bytes wait to be read now (a poll with no timeout; True once the fd, or the socket that
        lends it, is closed, so that the next read says so)."""
        if self.read_fd == -1 or (self._lender is not None and self._lender.fileno() != self.read_fd):
            return True
        if self._probe is None:
            self._probe = select.poll()
            self._probe.register(self.read_fd, select.POLLIN)
        return bool(self._probe.poll(0))

    # -- writing -------------------------------------------------------------------------------------

    @property
    def idle(self) -> bool:
        """No send holds the lock and no backlog waits: a write now keeps the stream in order."""
        return not self.pending and not self.lock.locked()

    def write_nowait(self, data: bytes) -> bool:
        """Write ``data`` now if idle (False if not: nothing written); what the kernel leaves is the backlog.

        Raises:
            OSError: the fd is broken or closed.
        """
        if self.pending or self.lock.locked():
            return False
        try:
            written = os.write(self.write_fd, data)
        except BlockingIOError:
            written = 0
        if written < len(data):
            self.pending = data[written:]
        return True

    def take(self) -> bytes:
        """The backlog, now the caller's to write (under the send lock)."""
        pending, self.pending = self.pending, b""
        return pending

    def give_back(self, unsent: bytes) -> None:
        """Keep ``unsent`` (taken by :meth:`take`, then not a byte of it written) as the backlog again.

        A send cancelled before its first byte must not lose it: the backlog can be the tail of a frame,
        and the stream is garbled without it.
        """
        self.pending = unsent + self.pending

    async def send_some(self, chunk: memoryview) -> int:
        """Write a prefix of ``chunk``, waiting for room; its length (for :func:`write_fully`).

        Raises:
            OSError, trio.ClosedResourceError: the fd is broken or was closed.
        """
        while True:
            try:
                return os.write(self.write_fd, chunk)
            except BlockingIOError:
                pass
            await trio.lowlevel.wait_writable(self.write_fd)

    # -- closing -------------------------------------------------------------------------------------

    def close(self) -> None:
        """Close owned fds, waking any task that waits on them; idempotent."""
        if self._owned:
            for fd in self._forget():
                trio.lowlevel.notify_closing(fd)
                os.close(fd)

    def _forget(self) -> list[int]:
        fds = [fd for fd in (self.write_fd, self.read_fd) if fd != -1]
        self.read_fd = self.write_fd = -1
        return fds

    def __del__(self) -> None:
        # A transport dropped without aclose() must not leak its pipe (as trio's FdStream does not).
        if getattr(self, "_owned", False):
            for fd in self._forget():
                with contextlib.suppress(OSError):
                    os.close(fd)


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
        read_size: the most bytes one read asks for (SMALL_READ unless the last read filled its request).
        busy_poll: how long a read for a lone caller's reply may poll before it sleeps (FdIO.read).
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
        busy_poll: float = BUSY_POLL_S,
    ) -> None:
        _grow_pipe(read_fd)
        _grow_pipe(write_fd)
        self._link = LinkState(self.name, min(max_outbound_bytes, PIPE_MAX_MESSAGE_BYTES))
        self._framer = NulFramer(max_inbound_bytes=max_inbound_bytes, json_objects=True)
        self._send_lock = trio.StrictFIFOLock()
        self._fds = FdIO(
            read_fd, write_fd, lock=self._send_lock, read_size=read_size, owned=True, busy_poll=busy_poll
        )

    def __repr__(self) -> str:
        state = "closed" if self._link.reason is not None else "open"
        return f"<PipeTransport {state} fds={self._fds.read_fd}/{self._fds.write_fd}>"

    @property
    def max_outbound_bytes(self) -> int:
        """The longest message :meth:`send` accepts."""
        return self._link.max_outbound_bytes

    async def send(self, messages: Sequence[bytes]) -> None:
        """Send whole messages as one write, each followed by a NUL byte.

        Raises:
            MessageTooLarge: a message is over ``max_outbound_bytes``; nothing was sent.
            ConnectionClosed: the pipe is closed or broken.
        """
        link = self._link
        link.check_outbound(messages)
        if link.reason is not None:
            await link.raise_closed()
        fds = self._fds
        async with self._send_lock:
            backlog = fds.take()
            data = backlog + nul_framed(messages)
            if data:
                try:
                    await write_fully(fds.send_some, data, self._cut)
                except (trio.ClosedResourceError, OSError) as exc:
                    raise link.broken("the pipe to the browser broke while sending", exc) from exc
                except BaseException:
                    if backlog and link.reason is None:
                        fds.give_back(backlog)
                    raise

    def send_nowait(self, messages: Sequence[bytes]) -> bool:
        """Write now if the pipe is idle; see :meth:`Transport.send_nowait`."""
        link = self._link
        if len(messages) != 1 or len(messages[0]) > link.max_outbound_bytes:  # one message: checked inline
            link.check_outbound(messages)
        if link.reason is not None:
            raise link.error()
        try:
            return self._fds.write_nowait(nul_framed(messages))
        except OSError as exc:
            raise link.broken("the pipe to the browser broke while sending", exc) from exc

    @property
    def backlog(self) -> int:
        return len(self._fds.pending)

    def _cut(self) -> None:
        self._link.close(CUT_MESSAGE)
        self._fds.close()

    def bytes_waiting(self) -> bool:
        """Whether bytes wait in the pipe now (see :func:`waiting_probe`)."""
        return self._fds.bytes_waiting()

    async def receive_batch(self, *, poll: bool = False) -> list[bytes]:
        """Read until at least one message is complete; return every complete one (``poll``: FdIO.read).

        Raises:
            ConnectionClosed: Chromium closed its end (it exited), or the pipe was closed here.
        """
        link = self._link
        while True:
            if link.reason is not None:
                await link.raise_closed()
            try:
                data = await self._fds.read(poll=poll)
            except (trio.ClosedResourceError, trio.BrokenResourceError, OSError) as exc:
                raise link.broken("the pipe from the browser broke", exc) from exc
            if not data:
                unfinished = self._framer.pending_bytes
                detail = f" in the middle of a message ({unfinished:,} bytes)" if unfinished else ""
                link.close(f"the browser closed the pipe{detail} (it exited or crashed)")
                raise link.error()
            try:
                messages = self._framer.feed(data)
            except InboundTooLarge as exc:
                link.close(exc.explain("pipe"))
                self._fds.close()
                if exc.completed:
                    return list(exc.completed)
                raise link.error() from exc
            if messages:
                return messages

    async def aclose(self) -> None:
        """Close both pipe ends; Chromium takes the end of its input as a request to exit."""
        self._link.close("the pipe was closed by this client")
        self._fds.close()
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
