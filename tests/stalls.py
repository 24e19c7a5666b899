"""How long this process was kept from running: the allowance a wall-clock bound in a test must grant.

On 2 cores running the suite with ``-n 2``, a hung script spins a core per browser, and the test process
was measured waking 40-200 ms late, several times in half a second. A bound such as "the caller sees its
outcome within budget + 100 ms" then fails for the machine's sake, not the engine's. So such a test adds
what a sentinel task saw of lateness: on a quiet machine that is about 0, and the bound is the promise.
An error the engine owes shortly before a deadline is expected through :func:`raised_before_deadline`.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Generic, TypeVar

import attrs
import trio

from engine._actionability import RETRY_MARGIN

E = TypeVar("E", bound=BaseException)
T = TypeVar("T")

TICK = 0.005
"""Seconds the sentinel sleeps between looks at the clock."""

JITTER = 0.002
"""Lateness below this is the timer's own jitter and is not counted."""


class Stalls:
    """The seconds the sentinel woke late, summed over the wake-ups that were late by more than ``JITTER``,
    the longest of them, and each (when it woke, how late)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.count = 0
        self.longest = 0.0
        self.wakeups: list[tuple[float, float]] = []

    def since(self, start: float) -> float:
        """The seconds of stall from ``start`` on (a stall that began before it counts from it)."""
        return sum(min(late, woke - start) for woke, late in self.wakeups if woke > start)

    def __repr__(self) -> str:
        return (
            f"<Stalls {self.count} late wake-ups, {self.seconds * 1000:.0f} ms in all, the longest "
            f"{self.longest * 1000:.0f} ms>"
        )


async def stall_this_process(after: float, seconds: float) -> None:
    """After ``after`` seconds, keep every task of this process from running for ``seconds`` (a blocking
    sleep): what a loaded machine does to it, on cue. Start it in a nursery beside the work it is to hit."""
    await trio.sleep(after)
    time.sleep(seconds)  # noqa: ASYNC251 -- the stall is the point


@asynccontextmanager
async def measure_stalls() -> AsyncIterator[Stalls]:
    """Watch the event loop's lateness for the body of the ``async with``."""
    stalls = Stalls()

    due = trio.current_time() + TICK  # watching from before the body runs: a stall at once counts too

    def look() -> None:
        late = trio.current_time() - due
        if late > JITTER:
            stalls.seconds += late
            stalls.count += 1
            stalls.longest = max(stalls.longest, late)
            stalls.wakeups.append((trio.current_time(), late))

    async def sentinel() -> None:
        nonlocal due
        while True:
            await trio.sleep_until(due)
            look()
            due = trio.current_time() + TICK

    async with trio.open_nursery() as nursery:
        nursery.start_soon(sentinel)
        yield stalls
        look()  # a stall at the very end, which the sentinel had no turn to see
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
    ActionError comes RETRY_MARGIN early, so the caller learns which check failed); a call that returns
    or raises anything else fails the test. Tried again only for a stall, as :func:`in_time` says."""
    error, _, elapsed = await in_time(seconds, call, margin=RETRY_MARGIN, tries=tries)
    if not isinstance(error, expected):
        raise AssertionError(f"expected {expected.__name__}, got {error!r}") from error
    if match is not None and not re.search(match, str(error)):
        raise AssertionError(f"{error!r} does not match {match!r}") from error
    return Raised(error, elapsed)


async def in_time(
    seconds: float, call: Callable[[], Awaitable[T]], *, margin: float, tries: int = 3
) -> tuple[Exception | None, T | None, float]:
    """What ``call`` raised or returned, and when, where the engine owes an outcome ``margin`` before
    ``trio.fail_after(seconds)`` fires (run_steps' result comes RESULT_MARGIN_S early).

    On 2 loaded cores this process can stall for longer than that margin, and the engine then wakes after
    the deadline itself: the caller's TooSlowError stands in for the outcome (or it comes late, after
    cleanup the engine does shielded). Such a try is made again, up to ``tries``, only when the sentinel
    saw this process stalled: for half the margin or more within the margin before the deadline (a
    TooSlowError), or at least as long as the outcome came late; without such a stall it fails the test
    (the engine overran its margin). ``call`` must leave the page as it found it, so that a second try
    meets the same state.
    """
    attempt = 0
    while True:
        attempt += 1
        outcome: tuple[Exception | None, T | None, float] | None = None  # None: the deadline fired
        async with measure_stalls() as stalls:  # every outcome leaves this block as a value, not ungrouped
            start = trio.current_time()
            with trio.move_on_after(seconds):
                outcome = await _outcome(call)
        if outcome is not None and outcome[2] - start < seconds:
            return outcome[0], outcome[1], outcome[2] - start
        stalled = stalls.since(start + seconds - margin)
        if outcome is not None:  # it came late: excused when this process was kept from running as long
            excused = stalls.since(start) >= outcome[2] - start - seconds
        else:
            excused = stalled >= margin / 2
        if not excused or attempt == tries:
            came = f"it came {outcome[2] - start:.3f} s in" if outcome is not None else "TooSlowError"
            raise AssertionError(
                f"nothing before the {seconds} s deadline ({came}; try {attempt} of {tries}; this process "
                f"stalled: {stalls}, {stalled * 1000:.0f} ms of it in the {margin} s before the deadline)"
            )


async def _outcome(call: Callable[[], Awaitable[T]]) -> tuple[Exception | None, T | None, float]:
    """The Exception ``call`` raised or what it returned, and when; a cancellation goes on as it is."""
    try:
        value = await call()
    except Exception as exc:
        return exc, None, trio.current_time()
    return None, value, trio.current_time()
