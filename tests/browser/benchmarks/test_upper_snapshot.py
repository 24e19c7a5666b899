"""The snapshot scenario runs end to end with tiny sizes, so it cannot rot between benchmark runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import upper_snapshot

pytestmark = pytest.mark.browser


def test_snapshot_scenario_measures_ours_playwright_and_the_floor(tmp_path: Path) -> None:
    out = tmp_path / "snapshot.json"
    argv = ["--quick", "--reps", "2", "--ops", "1", "--seed", "7", "--out", str(out)]
    assert upper_snapshot.main(argv) == 0
    runs = json.loads(out.read_text())["runs"]
    assert [r["title"] for r in runs] == [
        "snapshot: 5,000-element page",
        "snapshot: protocol reference page",
        "snapshot: small shop page (the demo's)",
    ]
    for run in runs:
        sides = run["sides"]
        assert list(sides) == ["cdp-engine snapshot", "playwright aria_snapshot(ai)", "getFullAXTree (floor)"]
        assert sides["cdp-engine snapshot"]["extra_median"] > 100  # bytes of our snapshot
        assert sides["playwright aria_snapshot(ai)"]["extra_median"] > 100
        low, high = sides["playwright aria_snapshot(ai)"]["ratio_ci95"]
        assert 0 < low <= high
        assert run["seed"] == 7
