"""What the asyncio peers (cdp-use, Playwright, pydoll) share: ``gather``, events counted by a callback,
and the cold start on a websocket browser launched untimed."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from benchmarks import chromium
from benchmarks.clients.asyncbase import AsyncClient, AsyncDriver, Body, Thunk
from benchmarks.clients.base import AsyncioThread, Env, LoopThread
from benchmarks.scenarios import flood_start_expression, flood_stop_expression

Handler = Callable[[object], None]
Subscribe = Callable[[Handler], Awaitable[Any]]
"""Registers a handler of one event in the framework's own way; returns what ``Unsubscribe`` takes."""
Unsubscribe = Callable[[Any], Awaitable[object]]


class AsyncioClient(AsyncClient):
    """A client whose driver runs in an asyncio loop of its own thread."""

    def make_loop(self) -> LoopThread:
        return AsyncioThread(self.name)


class AsyncioDriver(AsyncDriver):
    async def gather(self, thunks: Sequence[Thunk]) -> None:
        await asyncio.gather(*(t() for t in thunks))


async def time_flood(count: int, subscribe: Subscribe, unsubscribe: Unsubscribe, run: Thunk) -> int:
    """``console_flood``: ns from starting ``run`` (which makes the page log ``count`` times) until the
    ``count``-th event reached the handler."""
    clock = time.perf_counter_ns
    done: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    seen = 0

    def on_event(event: object) -> None:
        nonlocal seen
        seen += 1
        if seen == count and not done.done():
            done.set_result(clock())

    token = await subscribe(on_event)
    try:
        begin = clock()
        reply = asyncio.ensure_future(run())
        end = await done
        await reply
    finally:
        await unsubscribe(token)
    return end - begin


async def count_during(
    subscribe: Subscribe, unsubscribe: Unsubscribe, evaluate: Callable[[str], Awaitable[object]], body: Body
) -> int:
    """``under_flood``: start the page's emitter, wait for its first event, run ``body``, stop the emitter;
    the events delivered while ``body`` ran."""
    first: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    seen = 0

    def on_event(event: object) -> None:
        nonlocal seen
        seen += 1
        if not first.done():
            first.set_result(None)

    token = await subscribe(on_event)
    try:
        await evaluate(flood_start_expression())
        await first
        before = seen
        await body()
        during = seen - before
        await evaluate(flood_stop_expression())
    finally:
        await unsubscribe(token)
    return during


async def websocket_cold_start(
    env: Env,
    connect: Callable[[str], Awaitable[Any]],
    first_call: Callable[[Any], Awaitable[object]],
    disconnect: Callable[[Any], Awaitable[object]],
) -> tuple[int, int]:
    """``cold_start`` over a websocket: a fresh browser launched untimed, then (wall ns, this thread's CPU ns)
    from ``connect(ws_url)`` to the reply of ``first_call(client)``; disconnecting and stopping untimed."""
    fresh = await asyncio.to_thread(chromium.launch_websocket, env.chromium, env.chromium_args)
    client: Any = None
    try:
        cpu0 = time.thread_time_ns()
        t0 = time.perf_counter_ns()
        client = await connect(fresh.ws_url)
        await first_call(client)
        elapsed = time.perf_counter_ns() - t0
        cpu = time.thread_time_ns() - cpu0
    finally:
        if client is not None:
            await disconnect(client)
        await asyncio.to_thread(fresh.stop)
    return elapsed, cpu
