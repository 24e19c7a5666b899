"""The unparsed floors tell Chromium's console events by their bytes alone: against a real Chromium, every
event of a flood is counted that way (none parsed, none missed), over the pipe and over a websocket."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

import pytest

from benchmarks import chromium
from benchmarks.clients.base import Client, Env
from benchmarks.clients.blocking import BlockingCDPClient
from benchmarks.clients.floor_pipe import FloorPipe, FloorPipeUnparsed
from benchmarks.clients.floor_ws import FloorWebSocket, FloorWebSocketUnparsed
from benchmarks.scenarios import BY_NAME, SCENARIOS, Kind

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


def _flood(make: Callable[[], BlockingCDPClient]) -> tuple[BlockingCDPClient, int]:
    """Run ``events.console`` once on a fresh client: (the client, the events the sample counted)."""
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
    return client, sample.ops


@pytest.mark.parametrize("make", [FloorPipeUnparsed, FloorWebSocketUnparsed])
def test_every_event_of_a_flood_is_told_from_its_bytes(make: Callable[[], BlockingCDPClient]) -> None:
    client, counted = _flood(make)
    assert counted == FLOOD
    assert client.unparsed_events == FLOOD  # a change in Chromium's layout would show here


@pytest.mark.parametrize("make", [FloorPipe, FloorWebSocket])
def test_the_floors_themselves_parse_every_event(make: Callable[[], BlockingCDPClient]) -> None:
    client, counted = _flood(make)
    assert counted == FLOOD
    assert client.unparsed_events == 0


@pytest.mark.parametrize("client", [FloorPipeUnparsed(), FloorWebSocketUnparsed()])
def test_they_run_the_events_scenario_alone(client: Client) -> None:
    for scenario in SCENARIOS:
        reason = client.unsupported(scenario)
        assert (reason is None) == (scenario.kind is Kind.EVENTS), scenario.name
