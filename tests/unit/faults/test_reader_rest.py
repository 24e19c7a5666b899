"""The resting reader: a lone caller reads its own reply, and nothing else is kept waiting for it.

While no command is pending and nobody listens, the reader task rests and a caller reads the link in its
own task (one task step per round trip, as a one-task client). These tests pin what must still hold: every
caller gets its own reply, events reach hooks and new subscriptions, cancellation and a closed link end
the wait, and a hook (which every Page has, for dialogs) does not keep the reader awake.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import trio
import trio.testing
from trio.testing import MockClock

from engine import ConnectionClosed, Session
from engine._connection import READER_REST_S
from engine._hooks import add_hook
from engine.lowlevel import Connection
from engine.testing import FakePeer

Pair = tuple[Connection, FakePeer, Session]


async def _until(condition: Any) -> None:
    while not condition():
        await trio.sleep(0.0005)


def _virtual_time(clock: MockClock) -> None:
    """Time that moves only while every task waits, for a test that sees the reader at rest and then expects
    the next call to lead. On the real clock a loaded machine can let the rest's timer (READER_REST_S) fire
    in between; the woken reader then reads, and the call follows instead (seen once in a parallel run)."""
    clock.autojump_threshold = 0


async def test_a_lone_caller_leads_even_with_a_hook_on_the_session(pair: Pair, mock_clock: MockClock) -> None:
    connection, peer, browser = pair
    _virtual_time(mock_clock)
    add_hook(browser, ("Page.javascriptDialogOpening",), lambda method, params: None)
    got: list[dict[str, Any]] = []
    with trio.fail_after(5):
        for n in range(3):  # the reader must go back to rest after each call, not stay awake
            await _until(lambda: connection._reader_resting)
            async with trio.open_nursery() as nursery:

                async def call() -> None:
                    got.append(await browser.execute_raw("Browser.getVersion"))

                nursery.start_soon(call)
                command = await peer.next_command()
                await _until(lambda: connection._leading)  # the caller reads the link itself
                peer.reply(command, {"product": f"Fake/{n}"})
    assert got == [{"product": f"Fake/{n}"} for n in range(3)]
    assert not connection._leading


async def test_concurrent_callers_each_get_their_own_reply_in_any_order(pair: Pair) -> None:
    _, peer, browser = pair
    results: dict[int, Any] = {}
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            for n in range(5):

                async def call(n: int = n) -> None:
                    results[n] = await browser.execute_raw("Runtime.evaluate", {"expression": str(n)})

                nursery.start_soon(call)
            commands = [await peer.next_command() for _ in range(5)]
            for command in reversed(commands):
                peer.reply(command, {"echo": command["params"]["expression"]})
    assert results == {n: {"echo": str(n)} for n in range(5)}


async def test_a_hook_gets_its_event_while_the_reader_rests(pair: Pair) -> None:
    connection, peer, browser = pair
    seen = trio.Event()
    add_hook(browser, ("Page.javascriptDialogOpening",), lambda method, params: seen.set())
    with trio.fail_after(5):
        await _until(lambda: connection._reader_resting)
        peer.event("Page.javascriptDialogOpening", {"type": "alert", "message": "hi"})
        await seen.wait()  # within READER_REST_S of the event, with no command pending


async def test_a_subscription_made_while_resting_gets_the_next_event(pair: Pair) -> None:
    connection, peer, browser = pair
    with trio.fail_after(5):
        await _until(lambda: connection._reader_resting)
        async with browser.listen("Page.somethingNewer", strict=False) as events:
            assert connection.listeners == 1
            assert not connection._reader_resting  # someone listens: the reader reads again
            peer.event("Page.somethingNewer", {"n": 1})
            event = await events.receive()
        assert connection.listeners == 0
    assert event.method == "Page.somethingNewer"


async def test_a_cancelled_leader_drops_the_late_reply_and_the_next_call_works(pair: Pair) -> None:
    connection, peer, browser = pair
    with trio.fail_after(5):
        with trio.move_on_after(0.05):
            await browser.execute_raw("Browser.getVersion")
        stale = await peer.next_command()
        assert connection.pending_count() == 0
        peer.reply(stale, {"product": "late"})
        async with trio.open_nursery() as nursery:
            got: list[Any] = []

            async def call() -> None:
                got.append(await browser.execute_raw("Browser.getVersion"))

            nursery.start_soon(call)
            fresh = await peer.next_command()
            peer.reply(fresh, {"product": "fresh"})
    assert got == [{"product": "fresh"}]


async def test_a_leader_answers_only_its_own_reply_whatever_else_reads_alone(
    pair: Pair, mock_clock: MockClock
) -> None:
    """A leader takes a read of one message that is its own reply without the reader's dispatch; anything
    else read alone (an id that is not an integer, a reply orjson refuses, an event, a stray reply) goes
    through the dispatch, as the reader would handle it. (An id that equals its own only as a number ends
    the call with ResponseDecodeError: see test_connection_faults.)"""
    connection, peer, browser = pair
    _virtual_time(mock_clock)
    seen: list[str] = []
    add_hook(browser, ("Page.frameNavigated",), lambda method, params: seen.append(params["n"]))
    with trio.fail_after(5):
        await _until(lambda: connection._reader_resting)
        async with trio.open_nursery() as nursery:
            got: list[Any] = []

            async def call() -> None:
                got.append(await browser.execute_raw("Runtime.evaluate", {"expression": "1"}))

            nursery.start_soon(call)
            command = await peer.next_command()
            await _until(lambda: connection._leading)
            before = connection.statistics()
            peer.send_raw(b'{"id":true,"result":{"as":"bool"}}')
            peer.send({"id": command["id"] + 1000, "result": {"as": "stray"}})
            peer.event("Page.frameNavigated", {"n": "event"})
            await _until(lambda: seen == ["event"])
            assert connection._leading
            assert not got
            peer.send_raw(b'{"id":%d,"result":{"n":NaN}}' % command["id"])  # json.loads takes NaN
    (reply,) = got
    assert reply["n"] != reply["n"]  # NaN: the reply json.loads took
    after = connection.statistics()
    assert after.malformed_messages - before.malformed_messages == 1  # the bool id
    assert after.unknown_id_replies - before.unknown_id_replies == 1
    assert connection.pending_count() == 0


async def test_the_link_closing_under_a_leader_ends_its_call(pair: Pair, mock_clock: MockClock) -> None:
    connection, peer, browser = pair
    _virtual_time(mock_clock)
    with trio.fail_after(5):
        await _until(lambda: connection._reader_resting)
        async with trio.open_nursery() as nursery:

            async def call() -> None:
                with pytest.raises(ConnectionClosed):
                    await browser.execute_raw("Browser.getVersion")

            nursery.start_soon(call)
            await peer.next_command()
            await _until(lambda: connection._leading)
            peer.close()


class _ReaderSteps(trio.abc.Instrument):
    """Counts the task steps of the connection's reader task (the one running ``guarded("reader", ...)``)."""

    def __init__(self) -> None:
        self.steps = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        frame = getattr(task.coro, "cr_frame", None)
        if frame is not None and frame.f_locals.get("name") == "reader":
            self.steps += 1


async def test_back_to_back_calls_leave_the_reader_at_rest(pair: Pair, mock_clock: MockClock) -> None:
    # The resting reader's timer is pushed along as each lead ends, so a stream of lone calls never fires
    # it: one task step per call, the caller's own. (It used to fire every READER_REST_S, and each fire
    # woke the reader, which then read the next reply itself: a second task step for that call.) On a
    # mock clock that moves only as each reply comes, 0.4 READER_REST_S per call: no scheduler timing.
    connection, peer, browser = pair
    steps = _ReaderSteps()
    async with trio.open_nursery() as nursery:

        async def answer() -> None:
            while True:
                command = await peer.next_command()
                mock_clock.jump(0.4 * READER_REST_S)
                peer.reply(command, {"product": "Fake"})

        nursery.start_soon(answer)
        await trio.testing.wait_all_tasks_blocked()
        assert connection._reader_resting
        trio.lowlevel.add_instrument(steps)
        try:
            for _ in range(50):
                await browser.execute_raw("Browser.getVersion")
        finally:
            trio.lowlevel.remove_instrument(steps)
        nursery.cancel_scope.cancel()
    assert steps.steps == 0, f"the reader took {steps.steps} steps during 50 lone calls"


async def test_a_rest_begun_during_a_long_lead_gets_its_timer_back_when_the_lead_ends(
    pair: Pair, mock_clock: MockClock
) -> None:
    # A lead longer than READER_REST_S fires the resting reader's timer; the reader rests again with none
    # (the leader reads everything) and must have one again once the lead ends, or an event that then
    # comes with nothing pending would wait for the next command. Mock clock: no timing.
    connection, peer, browser = pair
    seen = trio.Event()
    add_hook(browser, ("Page.javascriptDialogOpening",), lambda method, params: seen.set())
    async with trio.open_nursery() as nursery:
        await trio.testing.wait_all_tasks_blocked()
        assert connection._reader_resting
        nursery.start_soon(browser.execute_raw, "Browser.getVersion")
        command = await peer.next_command()
        await trio.testing.wait_all_tasks_blocked()
        assert connection._leading
        mock_clock.jump(3 * READER_REST_S)  # the timer fires mid-lead
        await trio.testing.wait_all_tasks_blocked()
        assert connection._rest_scope is not None
        assert connection._rest_scope.deadline == math.inf, "a rest begun during a lead has no timer"
        peer.reply(command, {"product": "Fake"})
    assert not connection._leading
    assert connection._reader_resting
    assert connection._rest_scope is not None
    assert connection._rest_scope.deadline <= trio.current_time() + READER_REST_S
    peer.event("Page.javascriptDialogOpening", {"type": "alert", "message": "hi"})
    await trio.testing.wait_all_tasks_blocked()
    assert not seen.is_set()  # resting: the event waits in the link for the timer
    mock_clock.jump(READER_REST_S)
    with trio.fail_after(1):
        await seen.wait()


async def test_a_leader_waits_with_no_timer_due_within_5_ms(pair: Pair, mock_clock: MockClock) -> None:
    # The resting reader's timer is also the deadline of the leading caller's epoll waits, and a wait
    # with a timer due within a few ms arms and cancels a kernel timer: 7-8 us of CPU per wait on a VM
    # (READER_REST_S). With a 1 ms rest every wait here was due within 1 ms. Mock clock: no timing.
    connection, peer, browser = pair
    due: list[float] = []
    async with trio.open_nursery() as nursery:

        async def answer() -> None:
            while True:
                command = await peer.next_command()
                await trio.testing.wait_all_tasks_blocked()  # the caller now waits for its reply
                assert connection._leading
                due.append(trio.lowlevel.current_statistics().seconds_to_next_deadline)
                mock_clock.jump(0.4 * READER_REST_S)
                peer.reply(command, {"product": "Fake"})

        nursery.start_soon(answer)
        await trio.testing.wait_all_tasks_blocked()
        assert connection._reader_resting
        for _ in range(20):
            await browser.execute_raw("Browser.getVersion")
        nursery.cancel_scope.cancel()
    assert len(due) == 20
    assert min(due) >= 0.005, f"a leading caller waited with a timer due in {min(due) * 1000:.2f} ms"
