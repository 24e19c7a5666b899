"""The suite's own allowance for a stalled process: it tries again only for a stall it measured."""

from __future__ import annotations

import time

import pytest
import trio
from trio.testing import MockClock

from tests.stalls import raised_before_deadline, stall_this_process


async def test_the_error_owed_before_the_deadline_is_returned_with_its_time() -> None:
    async def fails() -> None:
        await trio.sleep(0.05)
        raise ValueError("the check failed")

    raised = await raised_before_deadline(ValueError, 1.0, fails, match="check")
    assert str(raised.error) == "the check failed"
    assert 0.05 <= raised.elapsed < 1.0


async def test_running_past_the_deadline_without_a_stall_fails_at_once(mock_clock: MockClock) -> None:
    mock_clock.autojump_threshold = 0  # virtual time: no stall of the machine's can be seen
    calls = 0

    async def overruns() -> None:
        nonlocal calls
        calls += 1
        await trio.sleep(1)

    with pytest.raises(
        AssertionError, match=r"nothing before the 0\.1 s deadline \(TooSlowError; try 1 of 3"
    ):
        await raised_before_deadline(ValueError, 0.1, overruns)
    assert calls == 1


async def test_a_stall_of_this_process_past_the_deadline_is_tried_again() -> None:
    calls = 0

    async def stalls_once() -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            time.sleep(0.15)  # noqa: ASYNC251 -- the stall is the point: no task of this process runs
            await trio.lowlevel.checkpoint()
        raise ValueError("late but owed")

    raised = await raised_before_deadline(ValueError, 0.1, stalls_once)
    assert calls == 2
    assert str(raised.error) == "late but owed"


async def test_another_error_a_return_or_a_mismatch_fails() -> None:
    async def other() -> None:
        raise KeyError("x")

    async def returns() -> None:
        return None

    with pytest.raises(AssertionError, match="expected ValueError, got KeyError"):
        await raised_before_deadline(ValueError, 1.0, other)
    with pytest.raises(AssertionError, match="expected ValueError, got None"):
        await raised_before_deadline(ValueError, 1.0, returns)
    with pytest.raises(AssertionError, match="does not match"):
        await raised_before_deadline(KeyError, 1.0, other, match="y")


async def test_an_error_raised_after_the_deadline_fails(mock_clock: MockClock) -> None:
    mock_clock.autojump_threshold = 0

    async def late() -> None:
        with trio.CancelScope(shield=True):  # past the deadline, and the caller's scope never fired
            await trio.sleep(0.2)
        raise ValueError("too late to be owed")

    with pytest.raises(AssertionError, match=r"before the 0\.1 s deadline \(it came 0\.200 s in; try 1 of 3"):
        await raised_before_deadline(ValueError, 0.1, late)


async def test_an_error_in_time_counts_even_when_this_process_stalls_after_it() -> None:
    async def in_time() -> None:
        await trio.sleep(0.03)
        raise ValueError("owed and raised in time")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(stall_this_process, 0.04, 0.1)
        raised = await raised_before_deadline(ValueError, 0.1, in_time)
    assert raised.elapsed < 0.1


async def test_an_error_late_by_less_than_a_stall_of_this_process_is_tried_again() -> None:
    calls = 0

    async def late_once() -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            time.sleep(0.15)  # noqa: ASYNC251 -- no checkpoint after it: the error comes 0.05 s late
        raise ValueError("owed")

    raised = await raised_before_deadline(ValueError, 0.1, late_once)
    assert calls == 2
    assert raised.elapsed < 0.1
