"""The trio floors: the floor's scenarios in ONE trio task, waiting for the fd in trio instead of in read(2).

``floor.trio.pipe`` and ``floor.trio.ws`` run the very coroutines of the blocking floors
(``blocking.FloorScenarios``), over the same framing (``floor_pipe.NulFrames``, ``floor_ws.FrameReader``)
on the same transport, with no reader task, no pending map and no routing: write the JSON with a
non-blocking ``os.write`` / ``socket.send`` (waiting with ``trio.lowlevel.wait_writable`` on a partial
write), read with a non-blocking ``os.read`` / ``socket.recv`` and, only when it would block,
``trio.lowlevel.wait_readable``; every message is parsed, and events between a command and its reply
are parsed and dropped. So next to ``floor.pipe`` / ``floor.ws`` the one difference is the wait: a
trip through trio's run loop and epoll instead of a blocking read. That is the event loop's share of
any trio client on that transport; what a trio client costs beyond ``floor.trio.*`` is its own.

Each client runs in a ``TrioThread`` of its own. The pipe variant launches its own Chromium (like
``floor.pipe``); the websocket variant uses the shared browser.
"""

from __future__ import annotations

import abc
import contextlib
import os
import time
from typing import ClassVar

import trio

from benchmarks.chromium import PipeBrowser, launch_pipe, launch_websocket
from benchmarks.clients.asyncbase import START_TIMEOUT_S
from benchmarks.clients.base import Client, Env, Sample, TrioThread
from benchmarks.clients.blocking import FloorScenarios, Message
from benchmarks.clients.floor_pipe import PIPE_SIZE, SMALL_READ, NulFrames, next_read_size, nul_frames
from benchmarks.clients.floor_ws import CHUNK, CLOSE_FRAME, FrameReader, handshake, ws_frames
from benchmarks.scenarios import Scenario

TEARDOWN_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0


class TrioPipeConnection:
    """NUL-delimited messages over a pair of non-blocking pipe fds, waiting in trio."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        # O_NONBLOCK is per open file description: our ends only, Chromium's ends stay blocking.
        os.set_blocking(read_fd, False)
        os.set_blocking(write_fd, False)
        self._rfd = read_fd
        self._wfd = write_fd
        self._frames = NulFrames()
        self._ask = SMALL_READ

    async def send_many(self, messages: list[bytes]) -> None:
        data = memoryview(nul_frames(messages))
        while data:
            try:
                n = os.write(self._wfd, data)
            except BlockingIOError:
                await trio.lowlevel.wait_writable(self._wfd)
                continue
            data = data[n:]

    async def recv(self) -> Message:
        frames = self._frames
        while (msg := frames.pop()) is None:
            try:
                chunk = os.read(self._rfd, self._ask)
            except BlockingIOError:
                await trio.lowlevel.wait_readable(self._rfd)
                continue
            if not chunk:
                raise ConnectionError("the browser closed the pipe")
            self._ask = next_read_size(len(chunk), self._ask)
            frames.feed(chunk)
        return msg

    def notify_closing(self) -> None:
        """Tell trio the fds are about to be closed (by the browser's ``stop``)."""
        for fd in (self._rfd, self._wfd):
            trio.lowlevel.notify_closing(fd)


class TrioRawWebSocket:
    """The raw-socket floor's websocket on a non-blocking socket, waiting in trio."""

    def __init__(self, url: str) -> None:
        self._sock, rest = handshake(url)  # blocking: setup, never measured
        self._sock.setblocking(False)
        self._fd = self._sock.fileno()
        self._frames = FrameReader(rest)

    async def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                n = self._sock.send(view)
            except BlockingIOError:
                await trio.lowlevel.wait_writable(self._fd)
                continue
            view = view[n:]

    async def send_many(self, messages: list[bytes]) -> None:
        await self._write(ws_frames(messages))

    async def _recv_some(self, n: int) -> bytes:
        while True:
            try:
                chunk = self._sock.recv(n)
            except BlockingIOError:
                await trio.lowlevel.wait_readable(self._fd)
                continue
            if not chunk:
                raise ConnectionError("the browser closed the websocket")
            return chunk

    async def _fill(self, need: int) -> None:
        """Make at least ``need`` unread bytes available in the buffer."""
        self._frames.compact()
        buf = self._frames.buf
        while len(buf) < need:
            buf += await self._recv_some(max(CHUNK, need - len(buf)))

    async def _read_large(self, n: int) -> Message:
        out, got = self._frames.take_partial(n)
        view = memoryview(out)
        while got < n:
            try:
                k = self._sock.recv_into(view[got:], n - got)
            except BlockingIOError:
                await trio.lowlevel.wait_readable(self._fd)
                continue
            if not k:
                raise ConnectionError("the browser closed the websocket")
            got += k
        return out

    async def recv(self) -> Message:
        frames = self._frames
        while True:
            header = frames.header()
            while isinstance(header, int):
                await self._fill(header)
                header = frames.header()
            b0, length = header
            payload = frames.take(length)
            if payload is None:
                payload = await self._read_large(length)
            msg = frames.message(b0, payload)
            if msg is not None:
                return msg
            while frames.replies:
                await self._write(frames.replies.pop(0))

    def close(self) -> None:
        trio.lowlevel.notify_closing(self._fd)
        with contextlib.suppress(OSError):
            self._sock.send(CLOSE_FRAME)
        self._sock.close()


class TrioCDPClient(FloorScenarios, Client):
    """The floor's scenarios in one task of a ``TrioThread``, over primitives that wait in trio."""

    def __init__(self) -> None:
        super().__init__()
        self._loop = TrioThread(self.name)
        self._started = False

    @abc.abstractmethod
    async def _open(self, env: Env) -> None: ...

    @abc.abstractmethod
    async def _close(self) -> None: ...

    async def _sleep(self, seconds: float) -> None:
        await trio.sleep(seconds)

    def start(self, env: Env) -> None:
        self._env = env
        self._loop.start()
        self._started = True
        self._loop.call(self._open, env, timeout=START_TIMEOUT_S)

    def setup(self, scenario: Scenario) -> None:
        self._loop.call(self.setup_pages, scenario)

    def run(self, scenario: Scenario, size: int) -> Sample:
        return self._loop.call(self.run_scenario, scenario, size)

    def teardown(self, scenario: Scenario) -> None:
        self._loop.call(self.close_pages, timeout=TEARDOWN_TIMEOUT_S)

    def stop(self) -> None:
        if self._started:
            try:
                self._loop.call(self._close, timeout=STOP_TIMEOUT_S)
            finally:
                self._loop.stop()


class FloorTrioPipe(TrioCDPClient):
    """The pipe floor in one trio task, on a Chromium of its own."""

    name: ClassVar[str] = "floor.trio.pipe"
    transport: ClassVar[str] = "pipe"
    own_browser = True

    def __init__(self) -> None:
        super().__init__()
        self._browser: PipeBrowser | None = None
        self._conn: TrioPipeConnection | None = None

    async def _open(self, env: Env) -> None:
        self._browser = launch_pipe(env.chromium, env.chromium_args, pipe_size=PIPE_SIZE)
        self._conn = TrioPipeConnection(self._browser.read_fd, self._browser.write_fd)
        # The first command answers once the browser is up.
        await self.call("Browser.getVersion")

    async def _send_many(self, messages: list[bytes]) -> None:
        assert self._conn is not None
        await self._conn.send_many(messages)

    async def _recv(self) -> Message:
        assert self._conn is not None
        return await self._conn.recv()

    async def _cold_start(self) -> tuple[int, int]:
        assert self._env is not None
        saved = self._conn
        browser: PipeBrowser | None = None
        fresh: TrioPipeConnection | None = None
        try:
            cpu0 = time.thread_time_ns()
            t0 = time.perf_counter_ns()
            browser = launch_pipe(self._env.chromium, self._env.chromium_args, pipe_size=PIPE_SIZE)
            self._conn = fresh = TrioPipeConnection(browser.read_fd, browser.write_fd)
            await self.call("Browser.getVersion")
            elapsed = time.perf_counter_ns() - t0
            cpu = time.thread_time_ns() - cpu0
        finally:
            self._conn = saved
            if fresh is not None:
                fresh.notify_closing()
            if browser is not None:
                browser.stop()
        return elapsed, cpu

    async def _close(self) -> None:
        if self._conn is not None:
            self._conn.notify_closing()
            self._conn = None
        if self._browser is not None:
            self._browser.stop()
            self._browser = None


class FloorTrioWebSocket(TrioCDPClient):
    """The raw-socket websocket floor in one trio task, on the shared browser."""

    name: ClassVar[str] = "floor.trio.ws"
    transport: ClassVar[str] = "websocket"

    def __init__(self) -> None:
        super().__init__()
        self._ws: TrioRawWebSocket | None = None

    async def _open(self, env: Env) -> None:
        self._ws = TrioRawWebSocket(env.ws_url)

    async def _send_many(self, messages: list[bytes]) -> None:
        assert self._ws is not None
        await self._ws.send_many(messages)

    async def _recv(self) -> Message:
        assert self._ws is not None
        return await self._ws.recv()

    async def _cold_start(self) -> tuple[int, int]:
        assert self._env is not None
        browser = await trio.to_thread.run_sync(launch_websocket, self._env.chromium, self._env.chromium_args)
        saved = self._ws
        fresh: TrioRawWebSocket | None = None
        try:
            cpu0 = time.thread_time_ns()
            t0 = time.perf_counter_ns()
            # The handshake blocks (as in every floor.trio.ws setup): the floor's least possible connect.
            self._ws = fresh = TrioRawWebSocket(browser.ws_url)
            await self.call("Browser.getVersion")
            elapsed = time.perf_counter_ns() - t0
            cpu = time.thread_time_ns() - cpu0
        finally:
            self._ws = saved
            if fresh is not None:
                fresh.close()
            await trio.to_thread.run_sync(browser.stop)
        return elapsed, cpu

    async def _close(self) -> None:
        if self._ws is not None:
            self._ws.close()
            self._ws = None
