"""How long an ended action waits for its hit-target guard's removal when the page never answers."""

from __future__ import annotations

from typing import Any, cast

import pytest
import trio
import trio.testing

from engine._hit_target import REMOVE_RESERVE, REMOVE_WAIT, REMOVE_WAIT_LATE, remove_guard
from engine._session import Session


class _BusyPage:
    """A session whose page is in an endless loop: no call is ever answered."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    async def execute_raw(self, method: str, params: Any = None) -> dict[str, Any]:
        self.sent.append(method)
        await trio.sleep_forever()
        raise AssertionError


@pytest.mark.parametrize(
    ("deadline", "returns_at"),
    [
        (None, REMOVE_WAIT),  # no deadline: the removal's own wait
        (10.0, REMOVE_WAIT),  # a far deadline: the same
        (0.1, 0.1 - REMOVE_RESERVE),  # a near one: it leaves the action its margin (it held 0.25 s)
        (0.01, REMOVE_WAIT_LATE),  # past what it leaves: a short wait still, never the whole one
    ],
)
async def test_the_wait_for_a_removal_the_page_never_answers_ends_before_the_callers_deadline(
    deadline: float | None, returns_at: float, autojump_clock: trio.testing.MockClock
) -> None:
    page = _BusyPage()
    start = trio.current_time()
    budget = deadline if deadline is not None else float("inf")
    with trio.CancelScope(deadline=start + budget):
        await remove_guard(cast(Session, page), "handle", "token")
    assert page.sent == ["Runtime.callFunctionOn"]
    assert trio.current_time() - start == pytest.approx(returns_at)


async def test_a_cancelled_action_waits_only_the_short_late_wait(
    autojump_clock: trio.testing.MockClock,
) -> None:
    page = _BusyPage()
    start = trio.current_time()
    with trio.CancelScope() as scope:
        scope.cancel()
        await remove_guard(cast(Session, page), "handle", "token")
    assert trio.current_time() - start == pytest.approx(REMOVE_WAIT_LATE)
