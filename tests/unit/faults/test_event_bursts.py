"""A burst of events in one read: the reader gives a filling subscription's consumer turns, never waits on it.

One read from Chromium can hold thousands of events (a page that logs in a loop); the reader dispatches a
read message by message, so without a turn for the consumer a default subscription (1,024 events) would
overflow on a burst its consumer keeps up with.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
import trio
import trio.testing

from engine import EventOverflow
from engine._session import CONSUMER_TURN
from engine.lowlevel import open_connection

BURST = 3000


class _OneBurst:
    """A transport whose first read is ``BURST`` events at once; then nothing more arrives."""

    name = "fake"
    max_outbound_bytes = 1 << 20
    backlog = 0

    def __init__(self) -> None:
        self._burst = [
            json.dumps({"method": "Runtime.consoleAPICalled", "params": {"n": n}}).encode()
            for n in range(BURST)
        ]
        self.ready = trio.Event()

    async def receive_batch(self, *, poll: bool = False) -> list[bytes]:
        await self.ready.wait()
        if self._burst:
            burst, self._burst = self._burst, []
            return burst
        await trio.sleep_forever()
        raise AssertionError

    async def send(self, messages: Sequence[bytes]) -> None:
        await trio.lowlevel.checkpoint()

    def send_nowait(self, messages: Sequence[bytes]) -> bool:
        return True

    async def aclose(self) -> None:
        pass


async def test_a_default_subscription_keeps_up_with_a_burst_in_one_read() -> None:
    transport = _OneBurst()
    got: list[int] = []
    ahead = 0
    with trio.fail_after(10):
        async with (
            open_connection(transport) as connection,
            connection.sessions.browser.listen("Runtime.consoleAPICalled", typed=False) as events,
        ):
            transport.ready.set()
            async for event in events:
                got.append(event.params["n"])
                ahead = max(ahead, events.statistics().buffered)
                if len(got) == BURST:
                    break
    assert got == list(range(BURST))
    assert connection.statistics().events_dropped == 0
    # Parsed events wait for their consumer at most about CONSUMER_TURN at a time (one more if the scheduler
    # runs the reader first after its turn). It was 512, half the buffer: events parsed far ahead of their
    # consumer outlive the GC's young collections.
    assert ahead <= CONSUMER_TURN + 1, ahead


async def test_a_consumer_that_does_not_read_only_loses_events_by_its_policy() -> None:
    # The reader yields while the buffer fills, but never waits: the burst is dispatched in full, the
    # buffer holds its 1,024, and the rest is lost where the consumer will see it.
    transport = _OneBurst()
    with trio.fail_after(10):
        async with (
            open_connection(transport) as connection,
            connection.sessions.browser.listen("Runtime.consoleAPICalled", typed=False) as events,
        ):
            transport.ready.set()
            while connection.events_delivered + connection.events_dropped < BURST:
                await trio.sleep(0.001)
            assert connection.events_dropped == BURST - 1024
            first = [(await events.receive()).params["n"] for _ in range(1024)]
            with pytest.raises(EventOverflow, match=f"{BURST - 1024} event"):
                await events.receive()
    assert first == list(range(1024))


class _Steps(trio.abc.Instrument):
    def __init__(self) -> None:
        self.steps = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.steps += 1


async def test_a_consumer_that_does_not_read_costs_the_reader_a_turn_per_64_events() -> None:
    # It may be awaiting the command that makes the events (with a buffer large enough for them): a turn
    # (two yields) after every event would cost two scheduler passes each, about 5,900 here.
    transport = _OneBurst()
    steps = _Steps()
    with trio.fail_after(10):
        async with (
            open_connection(transport) as connection,
            connection.sessions.browser.listen("Runtime.consoleAPICalled", typed=False, buffer_size=BURST),
        ):
            await trio.testing.wait_all_tasks_blocked()
            trio.lowlevel.add_instrument(steps)
            try:
                transport.ready.set()
                await trio.testing.wait_all_tasks_blocked()
            finally:
                trio.lowlevel.remove_instrument(steps)
            assert connection.events_delivered == BURST
    assert steps.steps <= 2 * BURST // CONSUMER_TURN + 10, f"{steps.steps} task steps to dispatch one read"
