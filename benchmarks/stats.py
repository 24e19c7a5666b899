"""The statistics behind every claim: per-rep medians, ratios with a bootstrap 95% interval, verdicts.

A ratio is ``median(per-rep medians of A) / median(per-rep medians of B)``. Its interval comes from a
paired bootstrap over the repetitions: rep ``i`` of A and rep ``i`` of B ran in the same shuffled round,
so they share that moment's machine load, and resampling the rounds (not the two lists apart) keeps that
pairing. An interval that holds 1.0 is reported as "no difference", whatever the point estimate says.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

BOOTSTRAP_RESAMPLES = 2000
CONFIDENCE = 0.95
FASTER = "faster"
SLOWER = "slower"
NO_DIFFERENCE = "no difference"


@dataclass(frozen=True)
class Ratio:
    """``a / b`` of two clients' medians, with its bootstrap interval and what it means."""

    ratio: float
    low: float
    high: float
    reps: int

    @property
    def verdict(self) -> str:
        """Lower is faster: A is faster when the whole interval is below 1."""
        if self.high < 1.0:
            return FASTER
        if self.low > 1.0:
            return SLOWER
        return NO_DIFFERENCE

    def as_json(self) -> dict[str, object]:
        # The verdict of the interval as written: a high of 0.9996 is stored as 1.0, which holds 1.
        written = Ratio(round(self.ratio, 3), round(self.low, 3), round(self.high, 3), self.reps)
        return {
            "ratio": written.ratio,
            "ci95": [written.low, written.high],
            "verdict": written.verdict,
            "reps": self.reps,
        }


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty sequence."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def ratio_ci(
    a: Sequence[float], b: Sequence[float], *, seed: int, resamples: int = BOOTSTRAP_RESAMPLES
) -> Ratio:
    """The ratio of the medians of ``a`` and ``b`` (per-rep medians, paired by rep) and its 95% interval.

    Pairs are the first ``min(len(a), len(b))`` reps (a client that failed mid-run has fewer).

    Raises:
        ValueError: either side has no reps, or a median is zero.
    """
    n = min(len(a), len(b))
    if n == 0:
        raise ValueError("a ratio needs at least one rep on each side")
    a, b = list(a[:n]), list(b[:n])
    point = statistics.median(a) / statistics.median(b)
    rng = random.Random(seed)
    draws: list[float] = []
    for _ in range(resamples):
        idx = [rng.randrange(n) for _ in range(n)]
        draws.append(statistics.median([a[i] for i in idx]) / statistics.median([b[i] for i in idx]))
    tail = (1 - CONFIDENCE) / 2 * 100
    return Ratio(point, percentile(draws, tail), percentile(draws, 100 - tail), n)
