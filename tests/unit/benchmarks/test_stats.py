"""The bootstrap ratio: its point, its interval, and the verdict that an interval holding 1 forces."""

from __future__ import annotations

import random

import pytest

from benchmarks.report import fmt_ratio
from benchmarks.stats import FASTER, NO_DIFFERENCE, SLOWER, ratio_ci


def noisy(center: float, n: int, spread: float, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [center * (1 + rng.uniform(-spread, spread)) for _ in range(n)]


def test_a_clear_difference_has_an_interval_that_excludes_one() -> None:
    r = ratio_ci(noisy(80, 10, 0.02, 1), noisy(100, 10, 0.02, 2), seed=5)
    assert r.ratio == pytest.approx(0.8, abs=0.02)
    assert r.low <= r.ratio <= r.high < 1
    assert r.verdict == FASTER
    assert ratio_ci(noisy(120, 10, 0.02, 1), noisy(100, 10, 0.02, 2), seed=5).verdict == SLOWER


def test_a_small_difference_inside_the_noise_is_no_difference() -> None:
    r = ratio_ci(noisy(98, 10, 0.2, 3), noisy(100, 10, 0.2, 4), seed=5)
    assert r.low < 1 < r.high
    assert r.verdict == NO_DIFFERENCE
    assert r.as_json()["verdict"] == "no difference"


def test_reps_are_paired_so_shared_drift_cancels() -> None:
    # Both clients slow down together round by round (the machine's load): paired, the ratio is exact.
    drift = [100.0 * (1 + i) for i in range(10)]
    r = ratio_ci([0.9 * d for d in drift], drift, seed=1)
    assert r.ratio == pytest.approx(0.9)
    assert r.low < 1.0
    assert r.verdict == FASTER


def test_the_seed_fixes_the_interval_and_empty_input_is_refused() -> None:
    a, b = noisy(90, 10, 0.1, 1), noisy(100, 10, 0.1, 2)
    assert ratio_ci(a, b, seed=9) == ratio_ci(a, b, seed=9)
    with pytest.raises(ValueError, match="at least one rep"):
        ratio_ci([], b, seed=1)


def test_a_bound_near_one_is_printed_so_that_it_does_not_read_as_one() -> None:
    def shown(low: float, high: float, verdict: str) -> str:
        return fmt_ratio({"ratio": 0.93, "ci95": [low, high], "verdict": verdict})

    assert shown(0.871, 0.9971, FASTER) == "0.93 [0.87, 0.997] faster"
    assert shown(1.0012, 1.2, SLOWER) == "0.93 [1.001, 1.20] slower"
    assert shown(0.9, 1.0, NO_DIFFERENCE) == "0.93 [0.90, 1.00] no difference"
    assert shown(0.5, 0.994, FASTER) == "0.93 [0.50, 0.99] faster"
