"""The cold start, navigation, attach and flood scenarios as data, and what the harness records for them."""

from __future__ import annotations

import os
import random
from typing import ClassVar

import pytest

from benchmarks import context, report
from benchmarks.clients.base import Client, Env, Sample
from benchmarks.harness import run_scenario
from benchmarks.pages import PageServer
from benchmarks.scenarios import (
    BY_NAME,
    FLOOD_MAX_MS,
    FLOOD_PER_TICK,
    FLOOD_TICK_MS,
    Kind,
    Scenario,
    flood_start_expression,
    flood_stop_expression,
    small_page_url,
)

NEW = {
    "coldstart": Kind.COLDSTART,
    "navigate.load": Kind.NAVIGATE,
    "attach.50": Kind.ATTACH,
    "roundtrip.flood": Kind.FLOOD,
}


class Flooded(Client):
    """Reports events and its own CPU time, as the flood scenario's clients do."""

    name: ClassVar[str] = "flooded"
    transport: ClassVar[str] = "websocket"

    def start(self, env: Env) -> None:
        pass

    def setup(self, scenario: Scenario) -> None:
        pass

    def run(self, scenario: Scenario, size: int) -> Sample:
        # 1 ms per command, 10 events per command: 10,000 events/s.
        return Sample([1000.0] * size, size, size * 1_000_000, cpu_ns=size * 50_000, events=10 * size)

    def teardown(self, scenario: Scenario) -> None:
        pass

    def stop(self) -> None:
        pass


class OwnProcess(Flooded):
    name: ClassVar[str] = "own-process"

    @property
    def rss_pid(self) -> int:
        return os.getppid()

    @property
    def rss_shared(self) -> bool:
        return False


def test_the_new_scenarios_are_registered_with_ten_full_reps() -> None:
    for name, kind in NEW.items():
        scenario = BY_NAME[name]
        assert scenario.kind is kind
        size, reps = scenario.sized(quick=False)
        assert reps >= 10
        assert size >= 1
        assert scenario.sized(quick=True)[0] <= size
    assert BY_NAME["attach.50"].size == 50
    assert BY_NAME["coldstart"].pages == BY_NAME["attach.50"].pages == 0  # they open what they time
    assert BY_NAME["navigate.load"].pages == BY_NAME["roundtrip.flood"].pages == 1


def test_one_warm_up_launch_or_batch_but_a_fifth_of_the_commands() -> None:
    assert BY_NAME["coldstart"].warmup_size(quick=False) == 1
    assert BY_NAME["attach.50"].warmup_size(quick=False) == 1
    assert BY_NAME["navigate.load"].warmup_size(quick=False) == 4
    assert BY_NAME["roundtrip.flood"].warmup_size(quick=False) == 40


def test_the_flood_is_about_ten_thousand_events_a_second_and_ends_by_itself() -> None:
    assert FLOOD_PER_TICK * 1000 / FLOOD_TICK_MS == 10_000
    start = flood_start_expression()
    assert f"console.log(i); }}, {FLOOD_TICK_MS})" in start
    assert f"i < {FLOOD_PER_TICK}" in start
    assert f"setTimeout(() => clearInterval(h), {FLOOD_MAX_MS})" in start
    assert "clearInterval(globalThis.__benchFlood)" in flood_stop_expression()


def test_the_small_page_is_served() -> None:
    import urllib.request

    with PageServer() as pages:
        url = small_page_url(pages.url(""))
        assert url.endswith("/small.html")
        with urllib.request.urlopen(url, timeout=10) as response:
            body = response.read()
    assert b"<title>small</title>" in body
    assert len(body) < 1024


def test_events_per_second_cpu_per_op_and_peak_rss_are_recorded() -> None:
    scenario = BY_NAME["roundtrip.flood"]
    out = run_scenario(scenario, [Flooded(), OwnProcess()], quick=True, rng=random.Random(1))
    entry = report.entry(out["flooded"])
    assert entry["events_per_s"] == pytest.approx(10_000)
    assert entry["cpu_us_per_op"] == 50.0  # the client's own figure, not the harness thread's
    assert entry["peak_rss_mib"] > 0
    assert entry["peak_rss_of"] == report.RSS_SHARED
    other = report.entry(out["own-process"])
    assert other["peak_rss_of"] == report.RSS_OWN
    assert other["peak_rss_mib"] > 0


def test_peak_rss_is_a_window_that_can_be_reset() -> None:
    pid = os.getpid()
    assert context.reset_peak_rss(pid)
    before = context.peak_rss_kib(pid)
    assert before is not None
    block = bytearray(64 * 1024 * 1024)
    block[::4096] = b"x" * len(block[::4096])  # touch every page
    grown = context.peak_rss_kib(pid)
    assert grown is not None
    assert grown >= before + 60 * 1024
    del block
    assert context.reset_peak_rss(pid)
    after = context.peak_rss_kib(pid)
    assert after is not None
    assert after < grown - 30 * 1024
