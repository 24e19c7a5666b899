"""The unparsed floors without a browser: which scripted messages they count as the page's console events
(told from their bytes alone), and that an event laid out otherwise stops them instead of being parsed."""

from __future__ import annotations

import json
from typing import ClassVar

import pytest

from benchmarks.clients.base import Client
from benchmarks.clients.blocking import FloorScenarios, Message, ProtocolError, run_blocking
from benchmarks.clients.floor_pipe import FloorPipeUnparsed
from benchmarks.clients.floor_ws import FloorWebSocketUnparsed
from benchmarks.scenarios import BY_NAME, SCENARIOS, Kind

SESSION = "8E6B3A7F0C1D2E3F"
PARAMS = '"params":{"type":"log","args":[{"type":"number","value":1,"description":"1"}]}'


def _event(session: str | None, *, method_first: bool = True) -> bytes:
    tail = f',"sessionId":"{session}"' if session is not None else ""
    if method_first:
        return f'{{"method":"Runtime.consoleAPICalled",{PARAMS}{tail}}}'.encode()
    return f'{{{PARAMS},"method":"Runtime.consoleAPICalled"{tail}}}'.encode()


class Flood(FloorScenarios):
    """Answers the flood's evaluate with ``script`` (the reply's place in it marked by None)."""

    def __init__(self, script: list[bytes | None]) -> None:
        super().__init__()
        self._sessions = [SESSION]
        self.script = script
        self.inbox: list[bytes] = []

    async def _send_many(self, messages: list[bytes]) -> None:
        (raw,) = messages
        reply = json.dumps({"id": json.loads(raw)["id"], "result": {}, "sessionId": SESSION}).encode()
        self.inbox += [reply if item is None else item for item in self.script]

    async def _recv(self) -> Message:
        return self.inbox.pop(0)  # an IndexError, not a hang, if the flood reads past the script

    async def _sleep(self, seconds: float) -> None:
        raise AssertionError("no setup here")


class UnparsedFlood(Flood):
    parse_events: ClassVar[bool] = False


@pytest.mark.parametrize("floor", [Flood, UnparsedFlood])
def test_only_the_pages_own_console_events_count(floor: type[Flood]) -> None:
    other = _event("0000000000000000")  # another page's, same length of id
    browser = _event(None)  # a browser-level one
    mine = _event(SESSION)
    fake = floor([mine, other, None, browser, mine, other, mine])
    sample = run_blocking(fake.run_scenario(BY_NAME["events.console"], 3))
    assert sample.ops == 3
    assert fake.inbox == []  # it read to the third of its own, no further and no sooner


def test_an_event_laid_out_otherwise_stops_the_unparsed_floor() -> None:
    fake = UnparsedFlood([_event(SESSION), None, _event(SESSION, method_first=False)])
    with pytest.raises(ProtocolError, match="has Chromium changed its layout"):
        run_blocking(fake.run_scenario(BY_NAME["events.console"], 2))


def test_the_parsed_floor_counts_it() -> None:
    fake = Flood([_event(SESSION), None, _event(SESSION, method_first=False)])
    assert run_blocking(fake.run_scenario(BY_NAME["events.console"], 2)).ops == 2
    assert fake.inbox == []


@pytest.mark.parametrize("client", [FloorPipeUnparsed(), FloorWebSocketUnparsed()])
def test_they_run_the_events_scenario_alone(client: Client) -> None:
    for scenario in SCENARIOS:
        reason = client.unsupported(scenario)
        assert (reason is None) == (scenario.kind is Kind.EVENTS), scenario.name
