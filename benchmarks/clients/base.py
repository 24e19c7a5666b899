"""The blocking interface every client offers the harness, and the loop threads behind the async ones.

The harness is plain blocking code. A blocking client runs in the harness thread; an asyncio client runs
in a thread that owns an asyncio loop; a trio client runs in a thread inside ``trio.run``. Each call
crosses into the client's own loop, and all timing happens there with ``time.perf_counter_ns``, so the
thread hop is never inside a measurement.
"""

from __future__ import annotations

import abc
import asyncio
import concurrent.futures
import contextlib
import os
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import trio

from benchmarks.scenarios import Scenario

T = TypeVar("T")

CALL_TIMEOUT_S = 300.0
"""The longest one harness call into a client may take before the client is marked failed."""


class SkipClient(Exception):
    """A client cannot run (not installed, failed to start, no equivalent call); the message says why."""


@dataclass(frozen=True)
class Env:
    """What the harness gives every client at start.

    Attributes:
        ws_url: the shared browser's websocket endpoint (ws://127.0.0.1:PORT/devtools/browser/ID).
        http_url: the shared browser's http endpoint, when known (http://127.0.0.1:PORT).
        chromium: the executable pipe clients launch for themselves.
        chromium_args: the flags every launched Chromium gets (no user-data-dir, no debugging flag).
        big_page_url: the generated 5,000-element page.
        quick: whether the run is in --quick mode.
        isolate_playwright: give each Playwright client a Chromium of its own (connect_over_cdp instruments
            every page of the browser it attaches to, which slows the other clients down).
        shared: every client was given the same browser (``--connect``); otherwise each has its own.
        page_server: the base URL of the pages' HTTP server.
    """

    ws_url: str
    http_url: str | None
    chromium: str
    chromium_args: tuple[str, ...]
    big_page_url: str
    quick: bool = False
    isolate_playwright: bool = True
    shared: bool = False
    page_server: str = ""


@dataclass
class Sample:
    """What one measured run returns.

    Attributes:
        latencies_us: one number per operation (or per batch / per flood, by scenario kind), in µs.
        ops: operations the run completed (commands or events).
        elapsed_ns: wall time the run's operations took, start to last reply, in ns.
        nbytes: size of the response for decode scenarios, when the client can see it.
        cpu_ns: the client's CPU time over the run (its loop thread's, or its own process's for the Node
            peers); None: the harness measures its own thread (a blocking client runs there). A run with
            untimed work (launching a browser, closing targets) measures it over the timed part only.
        events: events the client received during the timed part (``roundtrip.flood``), when counted.
    """

    latencies_us: list[float] = field(default_factory=list)
    ops: int = 0
    elapsed_ns: int = 0
    nbytes: int | None = None
    cpu_ns: int | None = None
    events: int | None = None


class Client(abc.ABC):
    """The blocking interface the harness drives.

    Lifecycle: ``start(env)`` once, then per scenario ``setup`` / warm-up ``run`` / measured ``run`` x reps
    (interleaved with the other clients) / ``teardown``, and ``stop()`` at the end. Any method may raise
    ``SkipClient`` (or any exception, reported as a failure); the harness then reports the client as
    skipped with the reason, never as zero.
    """

    name: ClassVar[str]
    transport: ClassVar[str]  # "websocket", "pipe" or "offline"
    own_browser: bool = False  # True when the client measures on a Chromium of its own (see README)

    @property
    def rss_pid(self) -> int:
        """The process whose peak RSS is this client's: this one (every Python client shares it)."""
        return os.getpid()

    @property
    def rss_shared(self) -> bool:
        """Whether other clients share the process of ``rss_pid``."""
        return True

    @abc.abstractmethod
    def start(self, env: Env) -> None: ...

    def unsupported(self, scenario: Scenario) -> str | None:
        """Why this client has no equivalent for ``scenario``, or None when it runs it."""
        del scenario
        return None

    @abc.abstractmethod
    def setup(self, scenario: Scenario) -> None: ...

    @abc.abstractmethod
    def run(self, scenario: Scenario, size: int) -> Sample: ...

    @abc.abstractmethod
    def teardown(self, scenario: Scenario) -> None: ...

    @abc.abstractmethod
    def stop(self) -> None: ...


async def _timed_cpu(fn: Callable[..., Awaitable[T]], *args: Any) -> tuple[T, int]:
    """Run ``fn`` on this loop's thread: (its result, the thread's CPU time meanwhile, in ns)."""
    cpu0 = time.thread_time_ns()
    result = await fn(*args)
    return result, time.thread_time_ns() - cpu0


def _with_cpu(got: tuple[T, int]) -> T:
    """The result, a Sample given the loop thread's CPU time unless it measured its own (Node peers)."""
    result, cpu_ns = got
    if isinstance(result, Sample) and result.cpu_ns is None:
        result.cpu_ns = cpu_ns
    return result


class LoopThread(abc.ABC):
    """A thread that owns one event loop; ``call`` runs a coroutine function there and blocks for it."""

    @abc.abstractmethod
    def start(self) -> None: ...

    @abc.abstractmethod
    def call(self, fn: Callable[..., Awaitable[T]], *args: Any, timeout: float = CALL_TIMEOUT_S) -> T: ...

    @abc.abstractmethod
    def stop(self) -> None: ...


class AsyncioThread(LoopThread):
    """An asyncio loop running forever in a daemon thread."""

    def __init__(self, name: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._main, name=f"bench-{name}", daemon=True)

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()
        # Let cancelled tasks finish before closing the loop.
        pending = asyncio.all_tasks(self._loop)
        for task in pending:
            task.cancel()
        if pending:
            self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self._loop.run_until_complete(self._loop.shutdown_asyncgens())
        self._loop.close()

    def start(self) -> None:
        self._thread.start()

    def call(self, fn: Callable[..., Awaitable[T]], *args: Any, timeout: float = CALL_TIMEOUT_S) -> T:
        async def job() -> T:
            return _with_cpu(await _timed_cpu(fn, *args))

        return asyncio.run_coroutine_threadsafe(job(), self._loop).result(timeout)

    def stop(self) -> None:
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(30)


@dataclass
class _Job:
    fn: Callable[..., Awaitable[Any]]
    args: tuple[Any, ...]
    future: concurrent.futures.Future[Any]


class TrioThread(LoopThread):
    """``trio.run`` in a daemon thread, running one job at a time in a single long-lived task.

    Jobs run inside that task, so an async context manager entered by one job (through ``exit_stack``)
    stays open for the next jobs and is exited by the last one, in the same task, as trio requires.
    """

    def __init__(self, name: str) -> None:
        self._ready = threading.Event()
        self._token: trio.lowlevel.TrioToken | None = None
        self._send: trio.MemorySendChannel[_Job | None] | None = None
        self._failure: BaseException | None = None
        self.exit_stack = contextlib.AsyncExitStack()
        self._thread = threading.Thread(target=self._main, name=f"bench-{name}", daemon=True)

    def _main(self) -> None:
        try:
            trio.run(self._serve)
        except BaseException as exc:
            self._failure = exc
        finally:
            self._ready.set()

    async def _serve(self) -> None:
        send, receive = trio.open_memory_channel[_Job | None](64)
        self._send = send
        self._token = trio.lowlevel.current_trio_token()
        self._ready.set()
        current: _Job | None = None
        try:
            async with self.exit_stack:
                async for job in receive:
                    if job is None:
                        break
                    current = job
                    try:
                        result = _with_cpu(await _timed_cpu(job.fn, *job.args))
                    except Exception as exc:
                        job.future.set_exception(exc)
                    else:
                        job.future.set_result(result)
                    current = None
        finally:
            if current is not None and not current.future.done():
                current.future.set_exception(RuntimeError("the trio loop ended during this call"))

    def start(self) -> None:
        self._thread.start()
        self._ready.wait(30)
        if self._token is None:
            raise RuntimeError(f"trio thread did not start: {self._failure!r}")

    def call(self, fn: Callable[..., Awaitable[T]], *args: Any, timeout: float = CALL_TIMEOUT_S) -> T:
        if not self._thread.is_alive() or self._send is None:
            raise RuntimeError(f"the trio loop is gone: {self._failure!r}")
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        trio.from_thread.run_sync(self._send.send_nowait, _Job(fn, args, future), trio_token=self._token)
        return future.result(timeout)

    def stop(self) -> None:
        if self._thread.is_alive() and self._send is not None:
            with contextlib.suppress(Exception):
                trio.from_thread.run_sync(self._send.send_nowait, None, trio_token=self._token)
            self._thread.join(30)
