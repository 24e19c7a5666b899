"""The harness logic without a browser: interleaving, failures reported as skipped, statistics, ratios."""

from __future__ import annotations

from typing import ClassVar

import pytest

from benchmarks import report
from benchmarks.clients.base import Client, Env, Sample
from benchmarks.harness import run_scenario
from benchmarks.scenarios import BY_NAME, NEEDS_UPPER_LAYERS, Kind, Scenario

CALLS: list[tuple[str, str]] = []


class Fake(Client):
    name: ClassVar[str] = "fake"
    transport: ClassVar[str] = "websocket"
    latency: ClassVar[float] = 10.0
    fail_setup: ClassVar[bool] = False
    fail_run: ClassVar[int | None] = None

    def __init__(self) -> None:
        self.runs = 0

    def start(self, env: Env) -> None:
        pass

    def setup(self, scenario: Scenario) -> None:
        CALLS.append((self.name, "setup"))
        if self.fail_setup:
            raise RuntimeError("no page")

    def run(self, scenario: Scenario, size: int) -> Sample:
        CALLS.append((self.name, "run"))
        self.runs += 1
        if self.fail_run is not None and self.runs > self.fail_run:
            raise TimeoutError("stuck")
        return Sample([self.latency] * size, size, int(self.latency * size * 1000))

    def teardown(self, scenario: Scenario) -> None:
        CALLS.append((self.name, "teardown"))

    def stop(self) -> None:
        pass


class Floor(Fake):
    name: ClassVar[str] = "floor.ws"


class Peer(Fake):
    name: ClassVar[str] = "peer"
    latency: ClassVar[float] = 30.0


class BrokenSetup(Fake):
    name: ClassVar[str] = "broken"
    fail_setup: ClassVar[bool] = True


class Hangs(Fake):
    name: ClassVar[str] = "hangs"
    fail_run: ClassVar[int | None] = 2  # the warm-up and one measured run succeed


@pytest.fixture(autouse=True)
def _clear() -> None:
    CALLS.clear()


def test_clients_are_interleaved_after_a_warm_up() -> None:
    scenario = BY_NAME["roundtrip.getVersion"]
    out = run_scenario(scenario, [Floor(), Peer()], quick=True)
    _, reps = scenario.sized(quick=True)
    runs = [name for name, what in CALLS if what == "run"]
    assert runs == ["floor.ws", "peer"] * (1 + reps)
    assert out["floor.ws"].reps == reps
    assert CALLS[-2:] == [("floor.ws", "teardown"), ("peer", "teardown")]


def test_failures_are_skipped_with_a_reason_and_hangs_are_flagged() -> None:
    out = run_scenario(BY_NAME["roundtrip.evaluate"], [Floor(), BrokenSetup(), Hangs()], quick=True)
    assert out["broken"].skipped is not None
    assert "no page" in out["broken"].skipped
    assert not out["broken"].hung
    assert out["hangs"].skipped is not None
    assert out["hangs"].hung
    entry = report.entry(out["hangs"])
    assert entry["median_us"] is None
    assert entry["runs"] == 0
    assert "stuck" in entry["skipped"]


def test_placeholders_skip_everyone() -> None:
    # A placeholder of the test's own: the real ones leave the table as their rooms land.
    placeholder = Scenario(
        "test.placeholder", Kind.PLACEHOLDER, "not runnable", skip_reason=NEEDS_UPPER_LAYERS
    )
    out = run_scenario(placeholder, [Floor()], quick=True)
    assert out["floor.ws"].skipped == "needs the upper layers"
    assert CALLS == []


def test_entries_and_ratios() -> None:
    scenario = BY_NAME["roundtrip.getVersion"]
    out = run_scenario(scenario, [Floor(), Peer()], quick=True)
    results: report.Results = {scenario.name: {n: report.entry(c) for n, c in out.items()}}
    report.add_ratios(results)
    floor, peer = results[scenario.name]["floor.ws"], results[scenario.name]["peer"]
    assert floor["median_us"] == 10.0
    assert floor["ops_per_s"] == pytest.approx(100_000)
    assert peer["x_floor"] == 3.0
    assert floor["x_peers"] == {"peer": pytest.approx(0.333)}
    assert "x_peers" in peer
    assert peer["x_peers"] == {}


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert report.percentile(values, 95) == 95.0
    assert report.percentile([7.0], 95) == 7.0
    assert report.percentile([1.0, 2.0], 50) == 1.0
