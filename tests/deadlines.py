"""Running code with no deadline of the caller's, for the tests of what the engine does then."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio


@asynccontextmanager
async def without_a_deadline() -> AsyncIterator[None]:
    """No deadline of the caller's: a shielded scope hides the test's own, which a watchdog replaces."""
    with trio.CancelScope(shield=True) as no_deadline:
        async with trio.open_nursery() as nursery:

            async def watchdog() -> None:
                await trio.sleep(20)
                no_deadline.cancel()

            nursery.start_soon(watchdog)
            assert trio.current_effective_deadline() == float("inf")
            yield
            nursery.cancel_scope.cancel()
    assert not no_deadline.cancelled_caught
