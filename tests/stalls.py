"""How long this process was kept from running: the allowance a wall-clock bound in a test must grant.

On 2 cores running the suite with ``-n 2``, a hung script spins a core per browser, and the test process
was measured waking 40-200 ms late, several times in half a second. A bound such as "the caller sees its
outcome within budget + 100 ms" then fails for the machine's sake, not the engine's. So such a test adds
what a sentinel task saw of lateness: on a quiet machine that is about 0, and the bound is the promise.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

TICK = 0.005
"""Seconds the sentinel sleeps between looks at the clock."""

JITTER = 0.002
"""Lateness below this is the timer's own jitter and is not counted."""


class Stalls:
    """The seconds the sentinel woke late, summed over the wake-ups that were late by more than ``JITTER``."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.count = 0

    def __repr__(self) -> str:
        return f"<Stalls {self.count} late wake-ups, {self.seconds * 1000:.0f} ms in all>"


@asynccontextmanager
async def measure_stalls() -> AsyncIterator[Stalls]:
    """Watch the event loop's lateness for the body of the ``async with``."""
    stalls = Stalls()

    async def sentinel() -> None:
        while True:
            due = trio.current_time() + TICK
            await trio.sleep_until(due)
            late = trio.current_time() - due
            if late > JITTER:
                stalls.seconds += late
                stalls.count += 1

    async with trio.open_nursery() as nursery:
        nursery.start_soon(sentinel)
        yield stalls
        nursery.cancel_scope.cancel()
