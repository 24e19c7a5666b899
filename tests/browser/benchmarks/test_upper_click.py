"""The click scenario runs end to end with tiny sizes, so it cannot rot between benchmark runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import upper_click

pytestmark = pytest.mark.browser


def test_click_scenario_measures_ours_playwright_and_the_floor(tmp_path: Path) -> None:
    out = tmp_path / "click.json"
    assert upper_click.main(["--quick", "--seed", "7", "--out", str(out)]) == 0
    (run,) = json.loads(out.read_text())["runs"]
    assert list(run["sides"]) == [
        "cdp-engine click(ref)",
        "playwright locator.click()",
        "blind CDP click (floor)",
    ]
    for side in run["sides"].values():
        assert side["median_us"] > 0
    low, high = run["sides"]["playwright locator.click()"]["ratio_ci95"]
    assert 0 < low <= high
    assert run["seed"] == 7
