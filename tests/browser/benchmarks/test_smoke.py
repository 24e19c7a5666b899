"""The latency suite runs end to end in --quick mode and writes results of the promised shape.

Timings are never asserted (the machine is shared and noisy); only that the numbers exist and are positive,
and that clients that cannot run are reported as skipped with a reason instead of as zero.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks import report

ROOT = Path(__file__).resolve().parents[3]
CHROMIUM = os.environ.get("CDP_BENCH_CHROMIUM", "/usr/bin/chromium")
SCENARIOS = [
    "roundtrip.getVersion",
    "roundtrip.evaluate",
    "coldstart",
    "navigate.load",
    "attach.50",
    "roundtrip.flood",
]
CLIENTS = [
    "floor.ws",
    "floor.pipe",
    "floor.trio.ws",
    "floor.trio.pipe",
    "cdp-use",
    "pydoll",
    "engine.ws",
    "engine.pipe",
    "puppeteer.pipe",
    "chrome-remote-interface",
]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no Chromium at {CHROMIUM}"),
]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    out = tmp_path_factory.mktemp("bench") / "latest.json"
    command = [
        sys.executable,
        "-m",
        "benchmarks",
        "--quick",
        "--force",  # the shared test machine is often busier than its cores; the file records it
        "--seed",
        "11",
        "--json",
        str(out),
        "--chromium",
        CHROMIUM,
        "--scenarios",
        ",".join(SCENARIOS),
        "--clients",
        ",".join(CLIENTS),
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(out.read_text()), out


def test_top_level_shape(results: tuple[dict[str, Any], Path]) -> None:
    doc, _ = results
    assert set(doc) == {"context", "quick", "load", "cross_transport", "scenarios"}
    ctx = doc["context"]
    assert {"git", "argv", "seed", "versions", "cpu", "cores", "os", "loadavg_at_start"} <= set(ctx)
    assert ctx["seed"] == 11
    assert "--quick" in ctx["argv"]
    assert set(ctx["git"]) == {"commit", "dirty"}
    assert ctx["versions"]["chromium"]
    assert ctx["versions"]["trio"]
    assert ctx["shared_browser"] is False
    assert list(doc["scenarios"]) == SCENARIOS
    for scenario in SCENARIOS:
        assert set(doc["load"][scenario]) == {"before", "after", "settled_s"}
    assert "engine.pipe / engine.ws" in doc["cross_transport"]["roundtrip.getVersion"]


def test_every_client_is_measured_or_skipped_with_a_reason(results: tuple[dict[str, Any], Path]) -> None:
    doc, _ = results
    for scenario, clients in doc["scenarios"].items():
        assert set(clients) == set(CLIENTS), scenario
        for name, entry in clients.items():
            assert {"median_us", "p95_us", "ops_per_s", "runs"} <= set(entry), (scenario, name)
            if "skipped" in entry:
                assert isinstance(entry["skipped"], str)
                assert entry["skipped"]
                assert entry["median_us"] is None  # never a zero standing in for "did not run"
                continue
            assert entry["median_us"] > 0, (scenario, name)
            assert entry["p95_us"] >= entry["median_us"], (scenario, name)
            assert entry["ops_per_s"] > 0, (scenario, name)
            assert isinstance(entry["runs"], int)
            assert entry["runs"] > 0
            assert entry["cpu_us_per_op"] > 0, (scenario, name)
            assert len(entry["samples_us"]) == entry["reps"] == len(entry["rep_medians_us"])
            assert sum(len(rep) for rep in entry["samples_us"]) == entry["runs"]


def test_the_floors_and_cdp_use_ran(results: tuple[dict[str, Any], Path]) -> None:
    doc, _ = results
    for scenario, clients in doc["scenarios"].items():
        for name in ("floor.ws", "floor.pipe", "cdp-use", "puppeteer.pipe", "chrome-remote-interface"):
            assert "skipped" not in clients[name], (scenario, name, clients[name].get("skipped"))
            assert clients[name]["browser"] == "own"


def test_pydoll_ran_and_says_why_it_has_no_attach(results: tuple[dict[str, Any], Path]) -> None:
    doc, _ = results
    for scenario, clients in doc["scenarios"].items():
        entry = clients["pydoll"]
        if scenario == "attach.50":
            assert "no session to attach" in entry["skipped"]
            continue
        assert "skipped" not in entry, (scenario, entry.get("skipped"))
        assert entry["browser"] == "own"


def test_the_trio_floors_ran_as_peers_of_the_blocking_floors(results: tuple[dict[str, Any], Path]) -> None:
    doc, _ = results
    for scenario, clients in doc["scenarios"].items():
        for name, floor, browser in (
            ("floor.trio.ws", "floor.ws", "own"),
            ("floor.trio.pipe", "floor.pipe", "own"),
        ):
            entry = clients[name]
            assert "skipped" not in entry, (scenario, name, entry.get("skipped"))
            assert entry["median_us"] > 0, (scenario, name)
            assert entry["ops_per_s"] > 0, (scenario, name)
            assert entry["browser"] == browser
            # x floor stays against the blocking floor of the transport; the trio floor is a peer column.
            ratio = entry["x_floor"]
            # Recomputed as the report does (paired per-rep medians), so only the written rounding (3 places)
            # separates them; the rounded `median_us` of a microsecond-fast floor would not.
            mine, theirs = entry["rep_medians_us"], clients[floor]["rep_medians_us"]
            n = min(len(mine), len(theirs))
            expected = statistics.median(mine[:n]) / statistics.median(theirs[:n])
            assert ratio["ratio"] == pytest.approx(expected, abs=5e-4 + 1e-9)
            assert ratio["ci95"][0] <= ratio["ratio"] <= ratio["ci95"][1]
            assert name in clients[floor]["x_peers"], (scenario, name)
            # Only the same transport is ever compared.
            other = "floor.pipe" if floor == "floor.ws" else "floor.ws"
            assert other not in entry["x_peers"]


def test_peak_rss_beside_wall_time_and_the_flood_really_floods(results: tuple[dict[str, Any], Path]) -> None:
    doc, _ = results
    for scenario, clients in doc["scenarios"].items():
        for name, entry in clients.items():
            if entry.get("median_us") is None:
                continue
            assert entry["peak_rss_mib"] > 0, (scenario, name)
            node = name.startswith(("puppeteer", "chrome-remote"))
            assert entry["peak_rss_of"] == (report.RSS_OWN if node else report.RSS_SHARED), (scenario, name)
    for name, entry in doc["scenarios"]["roundtrip.flood"].items():
        # Every measured client received events while its commands ran (~10,000/s offered).
        assert entry["events_per_s"] > 100, name


def test_cold_starts_are_launches_on_the_pipe_and_connects_on_the_websocket(
    results: tuple[dict[str, Any], Path],
) -> None:
    doc, _ = results
    got = doc["scenarios"]["coldstart"]
    for name in ("floor.ws", "floor.pipe", "engine.ws", "engine.pipe", "puppeteer.pipe"):
        assert "skipped" not in got[name], (name, got[name].get("skipped"))
        assert got[name]["runs"] == got[name]["reps"]  # one fresh browser per sample
        assert got[name]["transport"] == ("pipe" if name.endswith(".pipe") else "websocket"), name
    # Not compared by time: a connect's first reply waits for the fresh browser to finish starting, and
    # with 2 reps under the suite's load it once took longer than a whole launch (519 against 345 ms).


def test_markdown_and_chart_are_written_beside_the_json(results: tuple[dict[str, Any], Path]) -> None:
    _, path = results
    md = path.with_suffix(".md").read_text()
    assert "roundtrip.getVersion" in md
    assert "| floor.ws" in md
    png = path.with_suffix(".png").read_bytes()
    assert png.startswith(b"\x89PNG")
