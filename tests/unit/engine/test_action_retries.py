"""The retry loop of the actionability checks: it stops RETRY_MARGIN before the caller's deadline with an
ActionError that carries the last failed check, and never retries a stale ref."""

from __future__ import annotations

import pytest
import trio
from trio.testing import MockClock

from engine import ActionError, StaleRefError
from engine._actionability import RETRY_MARGIN, NotYet, retry_until_deadline


async def test_retries_until_the_margin_then_raises_the_last_reason(autojump_clock: MockClock) -> None:
    # Virtual time (the clock jumps whenever all tasks wait): a busy machine cannot make the bound fail.
    calls: list[float] = []

    async def attempt() -> NotYet:
        calls.append(trio.current_time())
        return NotYet("hit test", "another element would get the click: x", in_the_way="x")

    start = trio.current_time()
    with trio.fail_after(1.0), pytest.raises(ActionError) as caught:
        await retry_until_deadline("click", "e4", attempt)
    elapsed = trio.current_time() - start
    assert 1.0 - RETRY_MARGIN - 0.21 <= elapsed <= 1.0 - RETRY_MARGIN + 0.01
    assert len(calls) >= 5
    assert (caught.value.ref, caught.value.check, caught.value.in_the_way) == ("e4", "hit test", "x")
    assert "click e4" in str(caught.value)


async def test_a_result_ends_the_retries_at_once() -> None:
    results: list[NotYet | str] = [NotYet("stable", "moving"), NotYet("stable", "moving"), "done"]

    async def attempt() -> NotYet | str:
        return results.pop(0)

    with trio.fail_after(1):
        assert await retry_until_deadline("click", "e1", attempt) == "done"


async def test_a_stale_ref_is_raised_at_once_not_retried() -> None:
    calls = 0

    async def attempt() -> NotYet:
        nonlocal calls
        calls += 1
        raise StaleRefError("ref e1 is stale", ref="e1", reason="removed")

    with trio.fail_after(1), pytest.raises(StaleRefError):
        await retry_until_deadline("click", "e1", attempt)
    assert calls == 1


async def test_an_attempt_that_hangs_is_cut_at_the_margin_with_an_action_error() -> None:
    async def attempt() -> NotYet:
        await trio.sleep_forever()
        raise AssertionError

    with trio.fail_after(0.5), pytest.raises(ActionError, match="did not finish in time"):
        await retry_until_deadline("click", "e2", attempt)


async def test_a_miss_from_act_is_retried_and_act_runs_past_the_retries_stop(
    autojump_clock: MockClock,
) -> None:
    acted: list[str] = []

    async def attempt() -> str:
        return f"target{len(acted)}"

    async def act(target: str) -> NotYet | None:
        acted.append(target)
        if len(acted) == 1:
            return NotYet("hit target at input", "the press landed on x", in_the_way="x")
        await trio.sleep(0.55)  # into the margin: an input is not cut short by the retries' stop
        return None

    with trio.fail_after(0.9):
        await trio.sleep(0.3)
        assert await retry_until_deadline("click", "e2", attempt, act) == "target1"
    assert acted == ["target0", "target1"]


async def test_a_miss_from_act_at_the_deadline_names_the_input_check(autojump_clock: MockClock) -> None:
    async def attempt() -> str:
        return "target"

    async def act(_: str) -> NotYet:
        return NotYet("hit target at input", "the press landed on x", in_the_way="x")

    with trio.fail_after(1.0), pytest.raises(ActionError) as caught:
        await retry_until_deadline("click", "e3", attempt, act)
    assert (caught.value.check, caught.value.in_the_way) == ("hit target at input", "x")
