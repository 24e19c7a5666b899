"""How long this process was kept from running: the allowance a wall-clock bound in a test must grant.

On 2 cores running the suite with ``-n 2``, a hung script spins a core per browser, and the test process
was measured waking 40-200 ms late, several times in half a second. A bound such as "the caller sees its
outcome within budget + 100 ms" then fails for the machine's sake, not the engine's. So such a test adds
what a sentinel task saw of lateness: on a quiet machine that is about 0, and the bound is the promise.
An error the engine owes shortly before a deadline is expected through :func:`raised_before_deadline`.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Generic, TypeVar

import attrs
import trio

from engine._actionability import RETRY_MARGIN

E = TypeVar("E", bound=BaseException)

TICK = 0.005
"""Seconds the sentinel sleeps between looks at the clock."""

JITTER = 0.002
"""Lateness below this is the timer's own jitter and is not counted."""


class Stalls:
    """The seconds the sentinel woke late, summed over the wake-ups that were late by more than ``JITTER``,
    and the longest of them."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.count = 0
        self.longest = 0.0

    def __repr__(self) -> str:
        return (
            f"<Stalls {self.count} late wake-ups, {self.seconds * 1000:.0f} ms in all, the longest "
            f"{self.longest * 1000:.0f} ms>"
        )


@asynccontextmanager
async def measure_stalls() -> AsyncIterator[Stalls]:
    """Watch the event loop's lateness for the body of the ``async with``."""
    stalls = Stalls()

    async def sentinel(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        due = trio.current_time() + TICK
        task_status.started()  # watching from before the body runs: a stall at once counts too
        while True:
            await trio.sleep_until(due)
            late = trio.current_time() - due
            if late > JITTER:
                stalls.seconds += late
                stalls.count += 1
                stalls.longest = max(stalls.longest, late)
            due = trio.current_time() + TICK

    async with trio.open_nursery() as nursery:
        await nursery.start(sentinel)
        yield stalls
        nursery.cancel_scope.cancel()


@attrs.frozen
class Raised(Generic[E]):
    """What :func:`raised_before_deadline` saw: the error, and the seconds from the call to it."""

    error: E
    elapsed: float


async def raised_before_deadline(
    expected: type[E],
    seconds: float,
    call: Callable[[], Awaitable[object]],
    *,
    match: str | None = None,
    tries: int = 3,
) -> Raised[E]:
    """The ``expected`` error that ``call`` owes before ``trio.fail_after(seconds)`` fires (an action's
    ActionError comes RETRY_MARGIN early, so the caller learns which check failed).

    On 2 loaded cores this process can stall for longer than that margin, and the engine then wakes after
    the deadline itself: the caller's TooSlowError stands in for the error. Such a try is made again, up
    to ``tries``, only when the sentinel saw one stall of this process of half the margin or more; a
    TooSlowError without such a stall fails the test (the engine overran its margin), and so does a call
    that returns, or raises after the deadline. ``call`` must leave the page as it found it, so that a
    second try meets the same state.
    """
    attempt = 0
    while True:
        attempt += 1
        start = trio.current_time()
        late = False
        async with measure_stalls() as stalls:  # every outcome leaves this block as a value, not ungrouped
            try:
                with trio.fail_after(seconds):
                    outcome: BaseException | None = await _raised(call)
            except trio.TooSlowError:
                late = True
        if not late:
            if not isinstance(outcome, expected):
                raise AssertionError(f"expected {expected.__name__}, got {outcome!r}") from outcome
            if match is not None and not re.search(match, str(outcome)):
                raise AssertionError(f"{outcome!r} does not match {match!r}") from outcome
            elapsed = trio.current_time() - start
            if elapsed >= seconds:
                raise AssertionError(f"{outcome!r} came {elapsed:.3f} s in, after the {seconds} s deadline")
            return Raised(outcome, elapsed)
        if stalls.longest < RETRY_MARGIN / 2 or attempt == tries:
            raise AssertionError(
                f"no {expected.__name__} before the {seconds} s deadline (try {attempt} of {tries}; this "
                f"process stalled: {stalls})"
            )


async def _raised(call: Callable[[], Awaitable[object]]) -> BaseException | None:
    """The Exception ``call`` raised (None if it returned); a cancellation goes on as it is."""
    try:
        await call()
    except Exception as exc:
        return exc
    return None
