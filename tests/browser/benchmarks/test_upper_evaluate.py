"""The evaluate scenarios run end to end with tiny sizes, so they cannot rot between benchmark runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import upper_evaluate

pytestmark = pytest.mark.browser


def test_evaluate_scenarios_measure_recovery_and_latency_against_playwright(tmp_path: Path) -> None:
    out = tmp_path / "evaluate.json"
    argv = ["--quick", "--reps", "2", "--ops", "2", "--cap", "0.5", "--seed", "7", "--out", str(out)]
    assert upper_evaluate.main(argv) == 0
    recovery, by_ref, page = json.loads(out.read_text())["runs"]
    assert recovery["sides"]["ours"]["recovered"] == recovery["sides"]["ours"]["cycles"] == 2
    assert recovery["sides"]["ours"]["median_us"] < 500_000
    assert recovery["sides"]["playwright"]["cycles"] == 2
    assert "verdict" in recovery["sides"]["playwright"]
    assert list(by_ref["sides"]) == [
        "ours evaluate(ref=)",
        "playwright locator.evaluate",
        "ours backend_node_id=",
    ]
    assert list(page["sides"]) == ["ours page.evaluate", "playwright page.evaluate"]
    for run in (by_ref, page):
        low, high = run["sides"][list(run["sides"])[1]]["ratio_ci95"]
        assert 0 < low <= high
        assert run["seed"] == 7
