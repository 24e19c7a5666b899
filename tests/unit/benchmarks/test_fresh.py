"""The fresh-browser runner without a browser: each rep starts and stops every client, failures are kept."""

from __future__ import annotations

import dataclasses
import random
from typing import Any, ClassVar

import pytest

from benchmarks import chromium, context, fresh, report
from benchmarks.clients.base import Client, Env, Sample
from benchmarks.report import Collected
from benchmarks.scenarios import BY_NAME, Scenario

LOG: list[tuple[str, str]] = []
ENV = Env(ws_url="", http_url=None, chromium="/usr/bin/chromium", chromium_args=(), big_page_url="")
SCENARIOS = [BY_NAME["roundtrip.getVersion"], BY_NAME["throughput.1session"]]


class Fake(Client):
    """Launches nothing (``own_browser``), logs every call, answers in ``latency`` µs."""

    name: ClassVar[str] = "fake"
    transport: ClassVar[str] = "websocket"
    own_browser = True
    latency: ClassVar[float] = 10.0
    fail_start: ClassVar[bool] = False
    fail_runs_after: ClassVar[int | None] = None

    def __init__(self) -> None:
        self.runs = 0

    def start(self, env: Env) -> None:
        LOG.append((self.name, "start"))
        if self.fail_start:
            raise RuntimeError("no browser")

    def setup(self, scenario: Scenario) -> None:
        LOG.append((self.name, f"setup {scenario.name}"))

    def run(self, scenario: Scenario, size: int) -> Sample:
        LOG.append((self.name, f"run {scenario.name}"))
        self.runs += 1
        if self.fail_runs_after is not None and self.runs > self.fail_runs_after:
            raise RuntimeError("the page crashed")
        return Sample([self.latency] * size, size, int(self.latency * size * 1000))

    def teardown(self, scenario: Scenario) -> None:
        LOG.append((self.name, f"teardown {scenario.name}"))

    def stop(self) -> None:
        LOG.append((self.name, "stop"))


class Engine(Fake):
    name: ClassVar[str] = "engine.ws"


class Floor(Fake):
    name: ClassVar[str] = "floor.trio.ws"
    latency: ClassVar[float] = 8.0


class WontStart(Fake):
    name: ClassVar[str] = "wont-start"
    fail_start: ClassVar[bool] = True


class Crashes(Fake):
    name: ClassVar[str] = "crashes"
    fail_runs_after: ClassVar[int | None] = 1  # the first warm-up passes, the measured run fails


FAKES: dict[str, type[Fake]] = {c.name: c for c in (Engine, Floor, WontStart, Crashes)}


@pytest.fixture(autouse=True)
def _fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    LOG.clear()
    monkeypatch.setattr(fresh, "load", lambda name: FAKES[name]())
    monkeypatch.setattr(fresh, "SETTLE_S", 0.0)
    monkeypatch.setattr(context, "settle", lambda: 0.0)


def collecting(labels: list[str]) -> fresh.Collecting:
    return {s.name: {label: Collected("websocket", own_browser=True) for label in labels} for s in SCENARIOS}


def test_every_rep_starts_each_client_anew_and_stops_it_after_the_scenarios() -> None:
    labels = ["engine.ws", "floor.trio.ws", "floor.trio.ws#2"]
    got = collecting(labels)
    failed: dict[str, str] = {}
    for _ in range(3):
        fresh.run_rep(labels, ENV, SCENARIOS, quick=True, rng=random.Random(3), got=got, failed=failed)
    assert failed == {}
    assert [call for _, call in LOG].count("start") == 9  # three clients, three reps
    assert [call for _, call in LOG].count("stop") == 9
    for scenario in SCENARIOS:
        size, _ = scenario.sized(quick=True)
        for label in labels:
            assert (
                got[scenario.name][label].reps_us
                == [[Floor.latency if "floor" in label else 10.0] * size] * 3
            )
    # Within a rep: all start before any scenario, each scenario is set up, run and torn down, then all stop.
    first_rep = LOG[: len(LOG) // 3]
    calls = [call for _, call in first_rep]
    assert calls[:3] == ["start"] * 3
    assert calls[-3:] == ["stop"] * 3
    assert calls.index("teardown roundtrip.getVersion") < calls.index("setup throughput.1session")


def test_a_copy_is_another_instance_of_the_same_client() -> None:
    assert fresh.client_name("floor.trio.ws#2") == "floor.trio.ws"
    assert fresh.client_name("engine.ws") == "engine.ws"
    args = fresh.parse_args(["--clients", "engine.ws,floor.trio.ws,floor.trio.ws#2", "--reps", "3"])
    assert args.clients == ["engine.ws", "floor.trio.ws", "floor.trio.ws#2"]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--clients", "engine.ws,nope"], "unknown client 'nope'"),
        (["--clients", "engine.ws,engine.ws"], "named twice"),
        (["--scenarios", "roundtrip.nothing"], "unknown scenario"),
        (["--reps", "1"], "at least 2"),
    ],
)
def test_bad_arguments_say_what_is_wrong(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        fresh.parse_args(argv)
    assert says in capsys.readouterr().err


def test_a_client_that_fails_to_start_or_run_is_recorded_and_the_others_go_on() -> None:
    labels = ["engine.ws", "wont-start", "crashes"]
    got = collecting(labels)
    failed: dict[str, str] = {}
    fresh.run_rep(labels, ENV, SCENARIOS, quick=True, rng=random.Random(1), got=got, failed=failed)
    assert failed["wont-start"] == "failed to start (RuntimeError: no browser)"
    assert failed["crashes"].startswith("failed in rep 1 (RuntimeError: the page crashed)")
    assert ("wont-start", "stop") in LOG  # a half-started client is stopped too
    assert ("crashes", "stop") in LOG
    assert len(got["roundtrip.getVersion"]["engine.ws"].reps_us) == 1
    assert len(got["throughput.1session"]["engine.ws"].reps_us) == 1
    assert ("crashes", "setup throughput.1session") not in LOG  # not used again after its failure


def test_the_readme_block_quotes_the_engine_over_its_floor_and_the_control() -> None:
    labels = ["engine.ws", "floor.trio.ws", "floor.trio.ws#2"]
    got = collecting(labels)
    failed: dict[str, str] = {}
    for seed in range(4):
        fresh.run_rep(labels, ENV, SCENARIOS, quick=True, rng=random.Random(seed), got=got, failed=failed)
    results: report.Results = {
        name: {label: report.entry(c) for label, c in by_label.items()} for name, by_label in got.items()
    }
    report.add_ratios(results, seed=5)
    doc: dict[str, Any] = {
        "context": {
            "git": {"commit": "0123456789abcdef", "dirty": False},
            "versions": {"chromium": "156.0"},
            "seed": 5,
            "cores": 2,
        },
        "reps": 4,
        "load_per_rep": [[0.5, 0.4, 0.3], [1.5, 0.6, 0.3]],
        "scenarios": results,
    }
    block = fresh.readme_block(doc)
    assert block.startswith(fresh.README_BEGIN)
    assert block.endswith(fresh.README_END)
    assert (
        "commit 0123456789; Chromium 156.0; 4 reps, each on new browsers; seed 5; 1-minute load 0.5-1.5"
        in block
    )
    assert "| engine.ws / floor.trio.ws | floor.trio.ws#2 / floor.trio.ws |" in block
    assert "| roundtrip.getVersion | 1.25 [1.25, 1.25] slower | 1.00 [1.00, 1.00] no difference |" in block
    assert "chrome-remote-interface" not in block  # a column only when both of its clients ran
    assert fresh.readme_text_block(f"intro\n{block}\nrest") == block


def test_shared_reps_launch_one_browser_for_the_websocket_clients_and_stop_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    launched: list[FakeBrowser] = []

    class FakeBrowser:
        def __init__(self) -> None:
            self.ws_url = f"ws://127.0.0.1:1/devtools/browser/{len(launched)}"
            self.http_url = "http://127.0.0.1:1"
            self.stopped = False
            launched.append(self)

        def stop(self) -> None:
            self.stopped = True

    seen: list[str] = []
    monkeypatch.setattr(chromium, "launch_websocket", lambda *_: FakeBrowser())
    monkeypatch.setattr(Fake, "own_browser", False)  # websocket clients, given the rep's browser
    monkeypatch.setattr(Fake, "start", lambda self, env: seen.append(env.ws_url))
    labels = ["engine.ws", "floor.trio.ws"]
    got = collecting(labels)
    shared = dataclasses.replace(ENV, shared=True)
    for seed in range(2):
        fresh.run_rep(labels, shared, SCENARIOS, quick=True, rng=random.Random(seed), got=got, failed={})
    assert [b.stopped for b in launched] == [True, True]
    assert seen == [launched[0].ws_url] * 2 + [launched[1].ws_url] * 2
    assert not got["roundtrip.getVersion"]["engine.ws"].own_browser
