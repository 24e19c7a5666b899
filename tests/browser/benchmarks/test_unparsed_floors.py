"""The unparsed floors tell Chromium's console events by their bytes alone: against a real Chromium a flood
ends with every event counted that way, over the pipe and over a websocket. (An event of the page laid out
otherwise raises; a miss would leave the floor reading past the flood until the deadline.)"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

import pytest

from benchmarks import chromium
from benchmarks.clients.base import Env
from benchmarks.clients.blocking import BlockingCDPClient
from benchmarks.clients.floor_pipe import FloorPipeUnparsed
from benchmarks.clients.floor_ws import FloorWebSocketUnparsed
from benchmarks.scenarios import BY_NAME

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(chromium.CHROMIUM), reason=f"no Chromium at {chromium.CHROMIUM}"),
]

FLOOD = 500
DEADLINE_S = 60.0


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """A blocking floor's reads have no timeout of their own: SIGALRM ends one that hangs."""

    def expired(_signum: int, _frame: FrameType | None) -> None:
        raise TimeoutError(f"the floor did not finish within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("make", [FloorPipeUnparsed, FloorWebSocketUnparsed])
def test_a_flood_ends_with_every_event_told_from_its_bytes(make: Callable[[], BlockingCDPClient]) -> None:
    client = make()
    scenario = BY_NAME["events.console"]
    browser = chromium.launch_websocket() if client.transport == "websocket" else None
    env = Env(
        ws_url=browser.ws_url if browser else "",
        http_url=None,
        chromium=chromium.CHROMIUM,
        chromium_args=chromium.FLAGS,
        big_page_url="",
    )
    try:
        with _deadline(DEADLINE_S):
            client.start(env)
            try:
                client.setup(scenario)
                sample = client.run(scenario, FLOOD)
                client.teardown(scenario)
            finally:
                client.stop()
    finally:
        if browser is not None:
            browser.stop()
    assert sample.elapsed_ns > 0
