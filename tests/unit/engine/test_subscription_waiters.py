"""Consumers waiting on one subscription: the count of waiters that decides whether an event wakes one."""

from __future__ import annotations

import json
from collections.abc import Sequence

import trio
import trio.testing

from engine.lowlevel import open_connection


class _Feed:
    """A transport whose reads are what the test sends into ``inbox``, one batch at a time."""

    name = "fake"
    max_outbound_bytes = 1 << 20
    backlog = 0

    def __init__(self) -> None:
        self.inbox, self._outbox = trio.open_memory_channel[list[bytes]](10)

    async def receive_batch(self, *, poll: bool = False) -> list[bytes]:
        return await self._outbox.receive()

    async def send(self, messages: Sequence[bytes]) -> None:
        await trio.lowlevel.checkpoint()

    def send_nowait(self, messages: Sequence[bytes]) -> bool:
        return True

    async def aclose(self) -> None:
        pass


def _log(n: int) -> list[bytes]:
    return [json.dumps({"method": "Runtime.consoleAPICalled", "params": {"n": n}}).encode()]


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
                await transport.inbox.send(_log(1))  # one waiter left: it is woken, not counted as two
                await trio.testing.wait_all_tasks_blocked()
                assert got == {"stays": 1}
                # Nobody waits now: the next event is kept for whoever asks.
                await transport.inbox.send(_log(2))
                await trio.testing.wait_all_tasks_blocked()
                assert (await events.receive()).params["n"] == 2
                # Two waiters, two events in one read: each is woken for one.
                for name in ("a", "b"):
                    nursery.start_soon(wait, name, trio.CancelScope())
                await trio.testing.wait_all_tasks_blocked()
                await transport.inbox.send(_log(3) + _log(4))
                await trio.testing.wait_all_tasks_blocked()
                assert sorted((got["a"], got["b"])) == [3, 4]
                # A waiter still there when the subscription ends is let go of; then a later event finds
                # nobody to wake.
                nursery.start_soon(wait, "at close", trio.CancelScope())
                await trio.testing.wait_all_tasks_blocked()
            await trio.testing.wait_all_tasks_blocked()
            assert got["at close"] == -1
            await transport.inbox.send(_log(5))
            await trio.testing.wait_all_tasks_blocked()
    assert set(got) == {"stays", "a", "b", "at close"}  # the cancelled one received nothing
