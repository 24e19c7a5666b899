"""Gathering: while events stream in to a subscriber, the reader waits Settings.gather before each read.

In a flood a read brings two or three events, and the wake-up from epoll that precedes it costs more than
they do; waiting a millisecond takes in a dozen per wake-up. These tests pin what must hold with it: every
event arrives, in order, in fewer reads; a reply is never held back by a wait (a send ends it, and no wait
begins while a command sent in the last FRESH_S is unanswered); an event that trickles in after a flood is
delivered as it comes; replies alone are never gathered. Virtual time (autojump): the reads and waits are
exactly those of the schedule, on any machine.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import pytest
import trio
import trio.lowlevel
import trio.testing
from trio.testing import MockClock

from engine import Settings
from engine._connection import FRESH_S, GATHER_AFTER
from engine.lowlevel import Connection, open_connection

GATHER = Settings().gather
EVERY = GATHER / 5  # 5,000 events a second with the default


class _Stream:
    """A transport whose read returns every message that arrived since the last read, as a socket's does,
    and counts what each read brought. Commands wait in ``commands`` for the test to answer."""

    name = "fake"
    max_outbound_bytes = 1 << 20
    backlog = 0

    def __init__(self, read_limit: int = 1 << 30) -> None:
        self._arrive, self._arrived = trio.open_memory_channel[bytes](math.inf)
        self._command, self.commands = trio.open_memory_channel[dict[str, Any]](math.inf)
        self._read_limit = read_limit  # bytes a read takes at most (it takes at least one message)
        self._held: list[bytes] = []
        self.reads: list[int] = []

    def push(self, message: dict[str, Any]) -> None:
        self._arrive.send_nowait(json.dumps(message).encode())

    async def send(self, messages: Sequence[bytes]) -> None:
        self.send_nowait(messages)
        await trio.lowlevel.checkpoint()

    def send_nowait(self, messages: Sequence[bytes]) -> bool:
        for message in messages:
            self._command.send_nowait(json.loads(message))
        return True

    def bytes_waiting(self) -> bool:
        return bool(self._held) or self._arrived.statistics().current_buffer_used > 0

    async def receive_batch(self, *, poll: bool = False) -> list[bytes]:
        if not self._held:
            self._held.append(await self._arrived.receive())
        while True:
            try:
                self._held.append(self._arrived.receive_nowait())
            except trio.WouldBlock:
                break
        size, count = len(self._held[0]), 1
        while count < len(self._held) and size + len(self._held[count]) <= self._read_limit:
            size += len(self._held[count])
            count += 1
        batch, self._held = self._held[:count], self._held[count:]
        self.reads.append(len(batch))
        return batch

    async def aclose(self) -> None:
        pass


async def _flood(
    stream: _Stream, count: int, every: float = EVERY, first: int = 0, burst: int = 1, pad: int = 0
) -> None:
    """``count`` events, ``burst`` at a time, one burst every ``every`` (each ``pad`` bytes longer)."""
    for n in range(first, first + count):
        params = {"n": n, "at": trio.current_time(), "pad": "x" * pad}
        stream.push({"method": "Runtime.consoleAPICalled", "params": params})
        if (n - first + 1) % burst == 0:
            await trio.sleep(every)


async def _answer(stream: _Stream, after: float) -> None:
    command = await stream.commands.receive()
    await trio.sleep(after)
    stream.push({"id": command["id"], "result": {"product": "Fake"}})


async def _until(condition: Any) -> None:
    while not condition():
        await trio.sleep(EVERY / 20)


def _waits(connection: Connection) -> int:
    return connection.statistics().gathering_waits


@asynccontextmanager
async def _subscribed(
    stream: _Stream, gather: float = GATHER, **listen: Any
) -> AsyncIterator[tuple[Connection, Any, trio.Nursery]]:
    """A connection over ``stream``, a subscription to its events (untyped; ``listen``: its buffer) and a
    nursery for the peer's tasks (cancelled on the way out), within 10 s of virtual time."""
    with trio.fail_after(10):
        async with (
            open_connection(stream, Settings(gather=gather)) as connection,
            connection.sessions.browser.listen("Runtime.consoleAPICalled", typed=False, **listen) as events,
            trio.open_nursery() as nursery,
        ):
            yield connection, events, nursery
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize("gather", [GATHER, 0.0], ids=["gathered", "gather=0"])
async def test_a_flood_reaches_its_subscriber_whole_and_in_order_in_fewer_reads(
    autojump_clock: MockClock, gather: float
) -> None:
    stream = _Stream()
    got: list[int] = []
    async with _subscribed(stream, gather) as (connection, events, nursery):
        nursery.start_soon(_flood, stream, 500)
        async for event in events:
            got.append(event.params["n"])
            if len(got) == 500:
                break
    assert got == list(range(500))
    if gather:
        # GATHER_AFTER reads one event each, then one read a millisecond (5 events) to the end.
        assert len(stream.reads) <= GATHER_AFTER + 500 // 5 + 2, stream.reads
        assert _waits(connection) >= 90
    else:
        assert len(stream.reads) == 500
        assert _waits(connection) == 0


@pytest.mark.parametrize("reply_after", [0.0, GATHER / 2])
async def test_a_command_sent_during_a_gathered_flood_gets_its_reply_as_it_comes(
    autojump_clock: MockClock, reply_after: float
) -> None:
    # Sent while the reader waits before a read: the send ends the wait. And while it is unanswered no
    # new wait begins, so a reply that comes half a wait later is read then, not at the end of a wait.
    stream = _Stream()
    async with _subscribed(stream) as (connection, events, nursery):
        await _gathering(connection, stream, events, nursery)
        nursery.start_soon(_answer, stream, reply_after)
        begun = trio.current_time()
        await connection.sessions.browser.execute_raw("Browser.getVersion")
        took = trio.current_time() - begun
    assert took <= reply_after + EVERY / 10, took


async def _drain(events: Any) -> None:
    async for _ in events:
        pass


async def _gathering(connection: Connection, stream: _Stream, events: Any, nursery: trio.Nursery) -> None:
    """Start a flood (bursts of three: every read brings enough to go on gathering) that the consumer drains,
    and return as the reader begins a wait before a read."""
    nursery.start_soon(partial(_flood, stream, 6000, burst=3))
    nursery.start_soon(_drain, events)
    await _until(lambda: connection._gather_scope is not None)


async def test_a_caller_that_sends_again_at_each_reply_finds_the_reader_not_waiting(
    autojump_clock: MockClock,
) -> None:
    # Commands in a loop during a flood: a wait began after each reply, for the next send to end at once.
    # Each cost the client a timer and a cancellation: 3-6% on every round trip (measured on Chromium,
    # one connection, gathering on and off in alternate blocks). A reply read is followed by no wait.
    stream = _Stream()
    async with _subscribed(stream) as (connection, events, nursery):
        await _gathering(connection, stream, events, nursery)
        before = _waits(connection)
        for _ in range(20):
            nursery.start_soon(_answer, stream, EVERY / 2)
            await connection.sessions.browser.execute_raw("Browser.getVersion")
        assert _waits(connection) == before
        await trio.sleep(FRESH_S)  # and with the loop over, the flood is gathered again
        assert _waits(connection) > before


async def test_a_command_long_in_flight_does_not_stop_the_gathering(autojump_clock: MockClock) -> None:
    # As a Runtime.evaluate whose loop logs: its reply comes after the flood it makes. Within FRESH_S of
    # the send nothing waits (its reply may be quick); after that the flood is gathered.
    stream = _Stream()
    async with _subscribed(stream) as (connection, events, nursery):

        async def evaluate() -> None:
            await connection.sessions.browser.execute_raw("Runtime.evaluate", {"expression": "loop()"})

        nursery.start_soon(evaluate)
        command = await stream.commands.receive()
        sent = trio.current_time()
        nursery.start_soon(_flood, stream, 2000)
        nursery.start_soon(_drain, events)
        await trio.sleep_until(sent + FRESH_S * 0.9)
        assert _waits(connection) == 0
        await trio.sleep_until(sent + FRESH_S * 2)
        assert _waits(connection) >= FRESH_S * 0.9 / GATHER
        # Quick commands meanwhile (every 20 waits, each answered within one) keep it gathering.
        before = _waits(connection)
        for _ in range(5):
            nursery.start_soon(_answer, stream, EVERY)
            await connection.sessions.browser.execute_raw("Browser.getVersion")
            await trio.sleep(GATHER * 20)
        assert _waits(connection) - before >= 5 * 20 * 0.8
        stream.push({"id": command["id"], "result": {"result": {"type": "undefined"}}})
        await _until(lambda: not connection.pending_count())
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("every", [GATHER * 5, GATHER * 0.6], ids=["slow", "one_or_two_per_wait"])
async def test_events_that_trickle_in_after_a_flood_are_delivered_as_they_come(
    autojump_clock: MockClock, every: float
) -> None:
    stream = _Stream()
    late: list[float] = []
    async with _subscribed(stream) as (connection, events, nursery):
        nursery.start_soon(_flood, stream, 300)
        for _ in range(300):
            await events.receive()
        assert _waits(connection) > 0
        nursery.start_soon(_flood, stream, 40, every, 300)
        for _ in range(40):
            event = await events.receive()
            late.append(trio.current_time() - event.params["at"])
    # A read that brings fewer than GATHER_MIN ends the gathering; quick reads start it again after
    # GATHER_AFTER, so at this rate one wait in GATHER_AFTER + 1 reads may hold an event back.
    assert sum(delay > 0 for delay in late) <= 40 // (GATHER_AFTER + 1) + 1, late


async def test_a_flood_faster_than_a_read_a_wait_takes_is_read_without_waiting(
    autojump_clock: MockClock,
) -> None:
    # 16 KiB events, 256 KiB a millisecond, reads of at most 64 KiB (as FdIO's first ask): waiting before
    # each read would take in a quarter of the flood and fall ever further behind. Bytes already waiting
    # are read at once.
    stream = _Stream(read_limit=64 * 1024)
    late: list[float] = []
    async with _subscribed(stream) as (connection, events, nursery):
        await _flood(stream, 100)  # a light flood first: the reader gathers
        for _ in range(100):
            await events.receive()
        assert _waits(connection) > 0
        nursery.start_soon(partial(_flood, stream, 800, GATHER / 2, first=100, burst=8, pad=16 * 1024))
        for _ in range(800):
            event = await events.receive()
            late.append(trio.current_time() - event.params["at"])
    assert max(late) <= GATHER, max(late)


async def test_nothing_waits_while_events_wait_to_be_read(autojump_clock: MockClock) -> None:
    # This process is the slower side: every read finds the next events there (2,000 at once, read 20 at a
    # time). A wait would only delay them, and cost a wake-up of its own.
    stream = _Stream(read_limit=20 * 60)
    with trio.fail_after(10):
        async with (
            open_connection(stream) as connection,
            connection.sessions.browser.listen("Runtime.consoleAPICalled", typed=False) as events,
        ):
            for n in range(2000):
                stream.push(
                    {"method": "Runtime.consoleAPICalled", "params": {"n": n, "at": trio.current_time()}}
                )
            for _ in range(2000):
                event = await events.receive()
                assert trio.current_time() == event.params["at"]
    assert len(stream.reads) >= 2000 // 20
    assert _waits(connection) <= 1  # the one after the last read, when nothing was left


async def test_a_transport_that_cannot_tell_whether_bytes_wait_is_never_gathered(
    autojump_clock: MockClock,
) -> None:
    class _Mute(_Stream):
        bytes_waiting = None  # type: ignore[assignment]

    stream = _Mute()
    async with _subscribed(stream) as (connection, events, nursery):
        nursery.start_soon(_flood, stream, 200)
        for _ in range(200):
            await events.receive()
    assert _waits(connection) == 0
    assert len(stream.reads) == 200


async def test_replies_alone_are_never_gathered(autojump_clock: MockClock) -> None:
    # No subscription: 64 commands in flight, answered one every EVERY once FRESH_S has passed, are read
    # by the reader task (not a leading caller) as they come.
    stream = _Stream()
    with trio.fail_after(10):
        async with open_connection(stream) as connection, trio.open_nursery() as nursery:
            connection.lead_when_alone = False

            async def answer_all() -> None:
                commands = [await stream.commands.receive() for _ in range(64)]
                # The first at once, the rest after FRESH_S (when they no longer count as just sent).
                stream.push({"id": commands[0]["id"], "result": {}})
                await trio.sleep(FRESH_S * 1.5)
                for command in commands[1:]:
                    stream.push({"id": command["id"], "result": {}})
                    await trio.sleep(EVERY)

            nursery.start_soon(answer_all)
            browser = connection.sessions.browser
            await connection.call_all([(browser, "Runtime.evaluate", {"expression": "1"})] * 64)
    assert _waits(connection) == 0
    assert len(stream.reads) == 64


@pytest.mark.parametrize("value", [-0.001, 0.2, "0.001", True, None])
def test_gather_refuses_what_is_not_a_short_duration(value: Any) -> None:
    with pytest.raises(
        ValueError, match=r"Settings\.gather is a number of seconds from 0 \(never wait\) to 0.1,"
    ):
        Settings(gather=value)


async def test_every_command_of_a_group_sent_during_a_flood_gets_its_reply_as_it_comes(
    autojump_clock: MockClock,
) -> None:
    # execute_all's newest command answered first, the older half a wait later: still read at once.
    stream = _Stream()
    async with _subscribed(stream) as (connection, events, nursery):
        await _gathering(connection, stream, events, nursery)

        async def answer_newest_first() -> None:
            first, second = await stream.commands.receive(), await stream.commands.receive()
            stream.push({"id": second["id"], "result": {}})
            await trio.sleep(GATHER / 2)
            stream.push({"id": first["id"], "result": {}})

        nursery.start_soon(answer_newest_first)
        begun = trio.current_time()
        browser = connection.sessions.browser
        await connection.call_all([(browser, "Browser.getVersion", None)] * 2)
        took = trio.current_time() - begun
    assert took <= GATHER / 2 + EVERY / 10, took


async def test_a_fire_and_forget_command_does_not_end_the_protection_of_the_one_before(
    autojump_clock: MockClock,
) -> None:
    # A call, then a call_nowait (as the dialog hook sends while a call is in flight): the call's reply,
    # half a wait later, is read as it comes.
    stream = _Stream()
    async with _subscribed(stream) as (connection, events, nursery):
        await _gathering(connection, stream, events, nursery)
        nursery.start_soon(_answer, stream, GATHER / 2)
        browser = connection.sessions.browser
        await trio.lowlevel.checkpoint()
        begun = trio.current_time()
        async with trio.open_nursery() as both:
            both.start_soon(browser.execute_raw, "Browser.getVersion")
            while not connection.pending_count():  # sent first (no time passes)
                await trio.lowlevel.checkpoint()
            connection.call_nowait(browser, "Page.handleJavaScriptDialog", {"accept": True})
        took = trio.current_time() - begun
    assert took <= GATHER / 2 + EVERY / 10, took


async def test_a_command_sent_between_a_read_and_the_next_wait_gets_its_reply_as_it_comes(
    autojump_clock: MockClock,
) -> None:
    # Sent by the consumer while the reader gives it a turn (before the reader decides to wait): no wait
    # begins while it is unanswered.
    stream = _Stream()
    async with _subscribed(stream, buffer_size=8, overflow="drop_oldest") as (connection, events, nursery):
        nursery.start_soon(partial(_flood, stream, 3000, burst=6))
        async for event in events:
            # A consumer's turn: the reader yielded amid a read's events, not in a wait.
            if event.params["n"] >= 600 and _waits(connection) > 20 and connection._gather_scope is None:
                break
        nursery.start_soon(_answer, stream, GATHER / 2)
        begun = trio.current_time()
        await connection.sessions.browser.execute_raw("Browser.getVersion")
        took = trio.current_time() - begun
    assert took <= GATHER / 2 + EVERY / 10, took


async def test_sparse_bursts_after_a_flood_end_the_gathering(autojump_clock: MockClock) -> None:
    # Bursts of three every 100 ms are no stream: after the first, whose read waited for its bytes, no
    # wait begins, and a fourth message 0.3 ms after each burst is delivered as it comes.
    stream = _Stream()
    late: list[float] = []
    async with _subscribed(stream) as (connection, events, nursery):
        await _flood(stream, 300, burst=3)
        for _ in range(300):
            await events.receive()
        before = _waits(connection)

        async def bursts() -> None:
            for _ in range(20):
                await trio.sleep(0.1)
                await _flood(stream, 3, every=0.0003, burst=3)
                await _flood(stream, 1)

        nursery.start_soon(bursts)
        for _ in range(80):
            event = await events.receive()
            late.append(trio.current_time() - event.params["at"])
    assert _waits(connection) - before <= 1
    assert max(late[8:]) == 0, late


def test_a_virtual_clock_that_does_not_move_never_starts_a_wait() -> None:
    # A MockClock with no autojump (pytest-trio's mock_clock): a wait's deadline would never come, and the
    # events after it would never be delivered.
    async def main() -> None:
        stream = _Stream()
        async with (
            open_connection(stream) as connection,
            connection.sessions.browser.listen("Runtime.consoleAPICalled", typed=False) as events,
        ):
            for n in range(20):
                stream.push({"method": "Runtime.consoleAPICalled", "params": {"n": n}})
                await trio.testing.wait_all_tasks_blocked()
                assert events.statistics().buffered == 1, f"event {n} was not delivered"
                await events.receive()
            assert _waits(connection) == 0

    trio.run(main, clock=MockClock())
