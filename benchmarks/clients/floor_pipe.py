"""The pipe floor: os.write / os.read on --remote-debugging-pipe fds, NUL-framed JSON, its own Chromium.

A pipe is 1:1 with the browser that inherited it, so this client launches a Chromium of its own with the
same flags as the shared one. The pipe buffers are enlarged to 1 MiB (F_SETPIPE_SZ) when the kernel
allows, which cuts the number of reads for large responses.

The NUL framing (``NulFrames``, ``nul_frames``) is shared with the trio pipe floor (``floor_trio``).
"""

from __future__ import annotations

import os
import time
from typing import ClassVar

from benchmarks.chromium import PipeBrowser, launch_pipe
from benchmarks.clients.base import Env
from benchmarks.clients.blocking import BlockingCDPClient, Message, Unparsed, run_blocking

PIPE_SIZE = 1 << 20
READ_CHUNK = 1 << 20
SMALL_READ = 1 << 16
"""Reads ask for 64 KiB unless the last one filled what it asked for (a large message: then 1 MiB). glibc
serves 64 KiB from the heap; a larger buffer per read can be an mmap, an mremap and a munmap every time
(whether it is depends on the process's allocation history), about 16 us per read."""


def next_read_size(got: int, asked: int) -> int:
    return READ_CHUNK if got == asked else SMALL_READ


def nul_frames(messages: list[bytes]) -> bytes:
    """Whole messages as one write: each followed by its NUL."""
    return b"\0".join(messages) + b"\0"


class NulFrames:
    """The reading half of NUL framing, without I/O: ``feed`` what was read, ``pop`` whole messages."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._pos = 0  # start of the next unread message
        self._scan = 0  # where to resume looking for the next NUL

    def feed(self, chunk: bytes) -> None:
        self._buf += chunk

    def pop(self) -> Message | None:
        """The next whole message, or None when more must be read first."""
        buf = self._buf
        end = buf.find(b"\0", self._scan)
        if end >= 0:
            msg = buf[self._pos : end]
            self._pos = self._scan = end + 1
            if self._pos == len(buf):
                buf.clear()
                self._pos = self._scan = 0
            return msg
        self._scan = len(buf)
        if self._pos:
            del buf[: self._pos]
            self._scan -= self._pos
            self._pos = 0
        return None


class PipeConnection:
    """NUL-delimited messages over a pair of blocking pipe fds."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self._rfd = read_fd
        self._wfd = write_fd
        self._frames = NulFrames()
        self._ask = SMALL_READ

    def send_many(self, messages: list[bytes]) -> None:
        data = memoryview(nul_frames(messages))
        while data:
            n = os.write(self._wfd, data)
            data = data[n:]

    def recv(self) -> Message:
        frames = self._frames
        while (msg := frames.pop()) is None:
            chunk = os.read(self._rfd, self._ask)
            if not chunk:
                raise ConnectionError("the browser closed the pipe")
            self._ask = next_read_size(len(chunk), self._ask)
            frames.feed(chunk)
        return msg


class FloorPipe(BlockingCDPClient):
    """The pipe floor."""

    name: ClassVar[str] = "floor.pipe"
    transport: ClassVar[str] = "pipe"
    own_browser = True

    def __init__(self) -> None:
        super().__init__()
        self._browser: PipeBrowser | None = None
        self._conn: PipeConnection | None = None

    def _open(self, env: Env) -> None:
        self._browser = launch_pipe(env.chromium, env.chromium_args, pipe_size=PIPE_SIZE)
        self._conn = PipeConnection(self._browser.read_fd, self._browser.write_fd)
        # The first command answers once the browser is up.
        run_blocking(self.call("Browser.getVersion"))

    async def _send_many(self, messages: list[bytes]) -> None:
        assert self._conn is not None
        self._conn.send_many(messages)

    async def _recv(self) -> Message:
        assert self._conn is not None
        return self._conn.recv()

    async def _cold_start(self) -> tuple[int, int]:
        assert self._env is not None
        saved = self._conn
        browser: PipeBrowser | None = None
        try:
            cpu0 = time.thread_time_ns()
            t0 = time.perf_counter_ns()
            browser = launch_pipe(self._env.chromium, self._env.chromium_args, pipe_size=PIPE_SIZE)
            self._conn = PipeConnection(browser.read_fd, browser.write_fd)
            await self.call("Browser.getVersion")
            elapsed = time.perf_counter_ns() - t0
            cpu = time.thread_time_ns() - cpu0
        finally:
            self._conn = saved
            if browser is not None:
                browser.stop()
        return elapsed, cpu

    def _close(self) -> None:
        if self._browser is not None:
            self._browser.stop()
            self._browser = None
            self._conn = None


class FloorPipeUnparsed(Unparsed, FloorPipe):
    """The pipe floor that tells console events by their bytes (``events.console`` only)."""

    name: ClassVar[str] = "floor.pipe.unparsed"
