"""The harness logic without a browser: interleaving, failures reported as skipped, statistics, ratios."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any, ClassVar

import pytest

from benchmarks import context, harness, report
from benchmarks.clients.base import Client, Env, Sample
from benchmarks.harness import parse_args, run_scenario
from benchmarks.scenarios import BY_NAME, NEEDS_UPPER_LAYERS, SCENARIOS, Kind, Scenario
from benchmarks.stats import percentile

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


class PipePeer(Fake):
    name: ClassVar[str] = "pipe-peer"
    transport: ClassVar[str] = "pipe"


class BrokenSetup(Fake):
    name: ClassVar[str] = "broken"
    fail_setup: ClassVar[bool] = True


class BrokenInANursery(Fake):
    """Its set-up fails inside a trio nursery, which wraps the error in a group of one."""

    name: ClassVar[str] = "nursery"

    def setup(self, scenario: Scenario) -> None:
        raise ExceptionGroup("Exceptions from Trio nursery", [ConnectionError("the browser closed the pipe")])


class Hangs(Fake):
    name: ClassVar[str] = "hangs"
    fail_run: ClassVar[int | None] = 2  # the warm-up and one measured run succeed


class Flaky(Fake):
    """Its first warm-up fails (as Playwright's screenshot once did); every later run succeeds."""

    name: ClassVar[str] = "flaky"
    fails: ClassVar[int] = 1

    def run(self, scenario: Scenario, size: int) -> Sample:
        if self.runs < self.fails:
            self.runs += 1
            raise RuntimeError("Unable to capture screenshot")
        return super().run(scenario, size)


class AlwaysFails(Flaky):
    name: ClassVar[str] = "always"
    fails: ClassVar[int] = 1_000


@pytest.fixture(autouse=True)
def _clear() -> None:
    CALLS.clear()


def rng(seed: int = 7) -> random.Random:
    return random.Random(seed)


def test_every_round_runs_each_client_once_in_a_shuffled_order_after_a_warm_up() -> None:
    scenario = BY_NAME["roundtrip.getVersion"]
    out = run_scenario(scenario, [Floor(), Peer()], quick=False, rng=rng())
    _, reps = scenario.sized(quick=False)
    runs = [name for name, what in CALLS if what == "run"]
    assert runs[:2] == ["floor.ws", "peer"]  # the warm-up, in the given order
    rounds = [runs[i : i + 2] for i in range(2, len(runs), 2)]
    assert len(rounds) == reps >= 10
    assert all(sorted(r) == ["floor.ws", "peer"] for r in rounds)
    assert {tuple(r) for r in rounds} == {("floor.ws", "peer"), ("peer", "floor.ws")}  # both orders occur
    assert out["floor.ws"].reps == reps
    assert CALLS[-2:] == [("floor.ws", "teardown"), ("peer", "teardown")]


def test_reps_given_replace_the_scenarios_own() -> None:
    scenario = BY_NAME["roundtrip.getVersion"]
    out = run_scenario(scenario, [Floor(), Peer()], quick=False, rng=rng(), reps=3)
    runs = [name for name, what in CALLS if what == "run"]
    assert len(runs) == 2 + 2 * 3  # the warm-ups, then 3 rounds
    assert out["floor.ws"].reps == out["peer"].reps == 3


def test_reps_must_allow_an_interval(capsys: pytest.CaptureFixture[str]) -> None:
    assert parse_args(["--reps", "90"]).reps == 90
    assert parse_args([]).reps is None
    with pytest.raises(SystemExit):
        parse_args(["--reps", "1"])
    assert "--reps must be at least 2" in capsys.readouterr().err


def test_a_readme_without_the_block_of_the_results_file_is_refused_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    readme = tmp_path / "README.md"
    begin, end = report.readme_markers("latest")
    readme.write_text(f"intro\n{begin}\n{end}\n")
    assert parse_args(["--readme", str(readme)]).readme == readme  # latest.json's block is there
    with pytest.raises(SystemExit):
        parse_args(["--readme", str(readme), "--json", str(tmp_path / "focus.json")])
    err = capsys.readouterr().err
    assert "has no table generated from focus.json" in err
    assert report.readme_markers("focus")[0] in err
    with pytest.raises(SystemExit):
        parse_args(["--readme", str(tmp_path / "missing.md")])
    assert "cannot read --readme" in capsys.readouterr().err


def test_the_same_seed_gives_the_same_order() -> None:
    scenario = BY_NAME["roundtrip.getVersion"]
    run_scenario(scenario, [Floor(), Peer()], quick=False, rng=rng(3))
    first = [name for name, what in CALLS if what == "run"]
    CALLS.clear()
    run_scenario(scenario, [Floor(), Peer()], quick=False, rng=rng(3))
    assert [name for name, what in CALLS if what == "run"] == first


def test_failures_are_skipped_with_a_reason_and_hangs_are_flagged() -> None:
    out = run_scenario(
        BY_NAME["roundtrip.evaluate"], [Floor(), BrokenSetup(), Hangs()], quick=True, rng=rng()
    )
    assert out["broken"].skipped is not None
    assert "no page" in out["broken"].skipped
    assert not out["broken"].hung
    assert out["hangs"].skipped is not None
    assert out["hangs"].hung
    entry = report.entry(out["hangs"])
    assert entry["median_us"] is None
    assert entry["runs"] == 0
    assert "stuck" in entry["skipped"]


def test_a_failure_wrapped_by_a_nursery_is_reported_as_what_failed() -> None:
    out = run_scenario(BY_NAME["roundtrip.evaluate"], [Floor(), BrokenInANursery()], quick=True, rng=rng())
    assert out["nursery"].skipped == (
        "failed in setup or warm-up (ConnectionError: the browser closed the pipe)"
    )


def test_placeholders_skip_everyone() -> None:
    # A placeholder of the test's own: the real ones left the table as their rooms landed.
    placeholder = Scenario(
        "test.placeholder", Kind.PLACEHOLDER, "not runnable", skip_reason=NEEDS_UPPER_LAYERS
    )
    out = run_scenario(placeholder, [Floor()], quick=True, rng=rng())
    assert out["floor.ws"].skipped == "needs the upper layers"
    assert CALLS == []


def _results(scenario: Scenario, clients: list[Client]) -> report.Results:
    """One quick run of ``scenario`` over ``clients``, as the report reads it, with its ratios."""
    out = run_scenario(scenario, clients, quick=True, rng=rng())
    results: report.Results = {scenario.name: {n: report.entry(c) for n, c in out.items()}}
    report.add_ratios(results, seed=1)
    return results


def test_entries_and_ratios() -> None:
    scenario = BY_NAME["roundtrip.getVersion"]
    results = _results(scenario, [Floor(), Peer(), PipePeer()])
    got = results[scenario.name]
    floor, peer = got["floor.ws"], got["peer"]
    assert floor["median_us"] == 10.0
    assert floor["ops_per_s"] == pytest.approx(100_000)
    assert peer["x_floor"] == {"ratio": 3.0, "ci95": [3.0, 3.0], "verdict": "slower", "reps": 3}
    assert floor["x_peers"]["peer"]["ratio"] == pytest.approx(0.333)
    assert floor["x_peers"]["peer"]["verdict"] == "faster"
    # A pipe client is never a websocket client's peer.
    assert "pipe-peer" not in floor["x_peers"]
    assert got["pipe-peer"]["x_peers"] == {}
    # The raw samples are kept, per rep.
    assert floor["samples_us"] == [[10.0] * 30] * 3
    assert floor["rep_medians_us"] == [10.0] * 3


class TrioFloor(Fake):
    name: ClassVar[str] = "floor.trio.ws"
    latency: ClassVar[float] = 20.0


class Engine(Fake):
    name: ClassVar[str] = "engine.ws"
    latency: ClassVar[float] = 25.0


class PipeFloor(Fake):
    name: ClassVar[str] = "floor.trio.pipe"
    transport: ClassVar[str] = "pipe"


def _doc(results: report.Results) -> dict[str, Any]:
    """A results document around ``results``, with the committed full run's context."""
    latest: dict[str, Any] = json.loads(
        (Path(__file__).parents[3] / "benchmarks/results/latest.json").read_text()
    )
    return {**latest, "scenarios": results, "cross_transport": {}}


def test_the_room_each_peer_leaves_is_the_trio_floor_over_it() -> None:
    scenario = BY_NAME["roundtrip.getVersion"]
    clients: list[Client] = [Floor(), TrioFloor(), Engine(), Peer(), PipeFloor(), PipePeer()]
    results = _results(scenario, clients)
    doc = _doc(results)
    table = report.readme_table(doc).splitlines()
    # Only peers get a column, each against the floor of its own transport: not the engine, not a floor.
    header = next(line for line in table if line.startswith("| scenario | floor.trio.ws / "))
    assert header == "| scenario | floor.trio.ws / peer | floor.trio.pipe / pipe-peer |"
    row = table[table.index(header) + 2]
    assert row == ("| roundtrip.getVersion | 0.67 [0.67, 0.67] faster | 1.00 [1.00, 1.00] no difference |")
    # The same ratio in the .md's column, on the peer's row; none on the floor's own.
    md = report.markdown(doc)
    assert "trio floor / this" in md
    assert report.ROOM_NOTE not in md  # there the column says it, beside each peer's row
    peer_row = next(line for line in md.splitlines() if line.startswith("| peer |"))
    assert peer_row.endswith("| 0.67 [0.67, 0.67] faster |")
    floor_row = next(line for line in md.splitlines() if line.startswith("| floor.trio.ws |"))
    assert floor_row.endswith("| - |")


def test_no_trio_floor_no_room_table() -> None:
    scenario = BY_NAME["roundtrip.getVersion"]
    results = _results(scenario, [Floor(), Engine(), Peer()])
    table = report.readme_table(_doc(results))
    assert report.ROOM_NOTE not in table
    assert "engine.ws over each peer" in table


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 95) == 95.0
    assert percentile([7.0], 95) == 7.0
    assert percentile([1.0, 2.0], 50) == 1.0


def test_every_full_scenario_has_at_least_ten_reps() -> None:
    for scenario in SCENARIOS:
        if scenario.kind is not Kind.PLACEHOLDER:
            assert scenario.sized(quick=False)[1] >= 10, scenario.name


def test_a_failed_warm_up_is_retried_once_and_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("benchmarks.harness.WARMUP_RETRY_PAUSE_S", 0.0)
    out = run_scenario(
        BY_NAME["roundtrip.evaluate"], [Floor(), Flaky(), AlwaysFails()], quick=True, rng=rng()
    )
    flaky = report.entry(out["flaky"])
    assert flaky["median_us"] == Flaky.latency  # measured after the retry
    assert flaky["warmup_retried"] == "RuntimeError: Unable to capture screenshot"
    always = report.entry(out["always"])
    assert always["median_us"] is None  # a second failure skips it, with the reason
    assert "Unable to capture screenshot" in always["skipped"]
    assert "warmup_retried" not in report.entry(out["floor.ws"])


class Interrupted(Fake):
    """Ctrl-C while it starts (after it began, say, launching its browser)."""

    name: ClassVar[str] = "interrupted"

    def start(self, env: Env) -> None:
        raise KeyboardInterrupt


def test_a_start_interrupted_part_way_stops_the_clients_begun_so_far(monkeypatch: pytest.MonkeyPatch) -> None:
    stopped: list[str] = []
    classes = {cls.name: cls for cls in (Floor, Peer, Interrupted)}

    def load(name: str) -> Client:
        client = classes[name]()
        client.stop = lambda: stopped.append(name)  # type: ignore[method-assign]
        return client

    monkeypatch.setattr(harness, "load", load)
    monkeypatch.setattr(harness, "own_env", lambda client, env, browsers, capture: env)
    env = Env(ws_url="ws://127.0.0.1:1/x", http_url=None, chromium="", chromium_args=(), big_page_url="")
    with pytest.raises(KeyboardInterrupt):
        harness.start_clients(["floor.ws", "peer", "interrupted"], env, [])
    assert stopped == ["floor.ws", "peer", "interrupted"]


def test_the_commit_and_dirty_flag_are_read_before_anything_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    # Read at the end, an edit made during a 26-minute run marked the clean run dirty (and a commit made
    # meanwhile would have been named as the one measured).
    calls: list[str] = []

    def git() -> dict[str, Any]:
        calls.append("git")
        return {"commit": "0123456789abcdef", "dirty": False}

    def no_browser(executable: str) -> tuple[str, str, str | None]:
        calls.append("browser")
        raise RuntimeError("stops the run here")

    monkeypatch.setattr(context, "git", git)
    monkeypatch.setattr(harness, "probe_version", no_browser)
    monkeypatch.setattr(harness, "remove_leftovers", lambda: None)
    assert harness.main(["--force", "--scenarios", "roundtrip.getVersion", "--clients", "engine.ws"]) == 2
    assert calls == ["git", "browser"]
