"""A burst of events in one read: the reader gives a filling subscription's consumer turns, never waits on it.

One read from Chromium can hold thousands of events (a page that logs in a loop); the reader dispatches a
read message by message, so without a turn for the consumer a default subscription (1,024 events) would
overflow on a burst its consumer keeps up with. And consumers waiting on one subscription: each event wakes
one of those still waiting, none that left.
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


def _log(n: int) -> bytes:
    return json.dumps({"method": "Runtime.consoleAPICalled", "params": {"n": n}}).encode()


class _Inbound:
    """A transport that takes every command and answers none: its reads are the subclass's events."""

    name = "fake"
    max_outbound_bytes = 1 << 20
    backlog = 0

    async def send(self, messages: Sequence[bytes]) -> None:
        await trio.lowlevel.checkpoint()

    def send_nowait(self, messages: Sequence[bytes]) -> bool:
        return True

    async def aclose(self) -> None:
        pass


class _OneBurst(_Inbound):
    """A transport whose first read is ``BURST`` events at once; then nothing more arrives."""

    def __init__(self) -> None:
        self._burst = [_log(n) for n in range(BURST)]
        self.ready = trio.Event()

    async def receive_batch(self, *, poll: bool = False) -> list[bytes]:
        await self.ready.wait()
        if self._burst:
            burst, self._burst = self._burst, []
            return burst
        await trio.sleep_forever()
        raise AssertionError


class _Feed(_Inbound):
    """A transport whose reads are the batches the test sends into ``inbox``.

    ``cancel_with_read`` is cancelled as the next batch is handed over (a deadline that runs out as the
    socket turns readable), ``cancel_after_read`` when the reader comes back for more, right after that
    batch's events were pushed (before a consumer they woke has run)."""

    def __init__(self) -> None:
        self.inbox, self._outbox = trio.open_memory_channel[list[bytes]](10)
        self.cancel_with_read: trio.CancelScope | None = None
        self.cancel_after_read: trio.CancelScope | None = None
        self._read = False

    async def receive_batch(self, *, poll: bool = False) -> list[bytes]:
        if self._read and self.cancel_after_read is not None:
            self.cancel_after_read.cancel()
        batch = await self._outbox.receive()
        self._read = True
        if self.cancel_with_read is not None:
            self.cancel_with_read.cancel()
        return batch


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


async def test_a_waiter_cancelled_in_the_lot_leaves_the_next_event_to_the_others() -> None:
    transport = _Feed()
    got: dict[str, int] = {}
    with trio.fail_after(10):
        async with open_connection(transport) as connection, trio.open_nursery() as nursery:
            async with connection.sessions.browser.listen("Runtime.consoleAPICalled", typed=False) as events:

                async def wait(name: str, scope: trio.CancelScope) -> None:
                    with scope:
                        try:
                            got[name] = (await events.receive()).params["n"]
                        except trio.EndOfChannel:
                            got[name] = -1

                gone = trio.CancelScope()
                nursery.start_soon(wait, "gone", gone)
                nursery.start_soon(wait, "stays", trio.CancelScope())
                await trio.testing.wait_all_tasks_blocked()
                gone.cancel()
                await trio.testing.wait_all_tasks_blocked()
                await transport.inbox.send([_log(1)])  # one waiter left: it is woken, not counted as two
                await trio.testing.wait_all_tasks_blocked()
                assert got == {"stays": 1}
                # Nobody waits now: the next event is kept for whoever asks.
                await transport.inbox.send([_log(2)])
                await trio.testing.wait_all_tasks_blocked()
                assert (await events.receive()).params["n"] == 2
                # Two waiters, two events in one read: each is woken for one.
                for name in ("a", "b"):
                    nursery.start_soon(wait, name, trio.CancelScope())
                await trio.testing.wait_all_tasks_blocked()
                await transport.inbox.send([_log(3), _log(4)])
                await trio.testing.wait_all_tasks_blocked()
                assert sorted((got["a"], got["b"])) == [3, 4]
                # A waiter still there when the subscription ends is let go of; then a later event finds
                # nobody to wake.
                nursery.start_soon(wait, "at close", trio.CancelScope())
                await trio.testing.wait_all_tasks_blocked()
            await trio.testing.wait_all_tasks_blocked()
            assert got["at close"] == -1
            await transport.inbox.send([_log(5)])
            await trio.testing.wait_all_tasks_blocked()
    assert set(got) == {"stays", "a", "b", "at close"}  # the cancelled one received nothing


@pytest.mark.parametrize("when", ["with the read", "after the read"])
async def test_a_waiter_cancelled_as_an_event_comes_leaves_it_to_the_next_waiter(when: str) -> None:
    # With the read: the waiter leaves the queue at its cancellation, before the event is pushed (a count
    # of waiters taken down only when the cancelled task ran went to -1, and the next lone waiter was never
    # woken). After: the event woke the waiter, which then raised Cancelled with the event still buffered,
    # and the other waiter slept until a later event came.
    transport = _Feed()
    got: dict[str, int] = {}
    with trio.fail_after(10):
        async with (
            open_connection(transport) as connection,
            trio.open_nursery() as nursery,
            connection.sessions.browser.listen("Runtime.consoleAPICalled", typed=False) as events,
        ):

            async def wait(name: str, scope: trio.CancelScope) -> None:
                with scope:
                    got[name] = (await events.receive()).params["n"]

            cancelled = trio.CancelScope()
            nursery.start_soon(wait, "cancelled", cancelled)
            await trio.testing.wait_all_tasks_blocked()
            if when == "with the read":
                transport.cancel_with_read = cancelled
            else:
                nursery.start_soon(wait, "other", trio.CancelScope())
                await trio.testing.wait_all_tasks_blocked()
                transport.cancel_after_read = cancelled
            await transport.inbox.send([_log(1)])
            await trio.testing.wait_all_tasks_blocked()
            assert cancelled.cancelled_caught
            if when == "with the read":
                assert (await events.receive()).params["n"] == 1  # kept, not handed to the one gone
                nursery.start_soon(wait, "other", trio.CancelScope())
                await trio.testing.wait_all_tasks_blocked()
                await transport.inbox.send([_log(2)])
                await trio.testing.wait_all_tasks_blocked()
                assert got == {"other": 2}
            else:
                assert got == {"other": 1}
