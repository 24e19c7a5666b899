"""Counters of the evaluate room: ``page.metrics()`` and ``browser.metrics()``.

Plain Python: the evaluate engine and the Playwright adapter record into a :class:`MetricsRecorder` per
page and one per browser; ``metrics()`` returns a frozen :class:`EvaluateMetrics` snapshot.
"""

from __future__ import annotations

from collections import Counter, deque

import attrs

DURATIONS_KEPT = 2048
"""Durations kept for the percentiles (the most recent ones): a bounded window, not the whole life."""


@attrs.frozen(kw_only=True)
class EvaluateMetrics:
    """What evaluate did on a page (or on every page of a browser) so far.

    ``p50_ms`` and ``p95_ms`` are over the last ``DURATIONS_KEPT`` calls (None before the first).
    ``fallbacks`` counts evaluate-by-ref calls the Playwright adapter sent through Playwright, by reason.
    """

    evaluations: int
    errors: int
    timeouts: int
    terminations: int
    disarm_probes: int
    fallbacks: dict[str, int]
    p50_ms: float | None
    p95_ms: float | None


def _percentile(ordered: list[float], fraction: float) -> float | None:
    if not ordered:
        return None
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


class MetricsRecorder:
    """Mutable counters; ``snapshot()`` freezes them. ``parent`` (the browser's) gets every record too."""

    def __init__(self, parent: MetricsRecorder | None = None) -> None:
        self._parent = parent
        self.evaluations = 0
        self.errors = 0
        self.timeouts = 0
        self.terminations = 0
        self.disarm_probes = 0
        self.fallbacks: Counter[str] = Counter()
        self._durations: deque[float] = deque(maxlen=DURATIONS_KEPT)

    def call(self, seconds: float, *, error: bool = False, timeout: bool = False) -> None:
        """One evaluate ended after ``seconds`` (with a page error, or past its budget)."""
        self.evaluations += 1
        self.errors += error
        self.timeouts += timeout
        self._durations.append(seconds * 1000)
        if self._parent is not None:
            self._parent.call(seconds, error=error, timeout=timeout)

    def terminated(self, probes: int) -> None:
        """A Runtime.terminateExecution was sent, then ``probes`` evaluates made sure none stayed armed."""
        self.terminations += 1
        self.disarm_probes += probes
        if self._parent is not None:
            self._parent.terminated(probes)

    def fallback(self, reason: str) -> None:
        self.fallbacks[reason] += 1
        if self._parent is not None:
            self._parent.fallback(reason)

    def snapshot(self) -> EvaluateMetrics:
        ordered = sorted(self._durations)
        return EvaluateMetrics(
            evaluations=self.evaluations,
            errors=self.errors,
            timeouts=self.timeouts,
            terminations=self.terminations,
            disarm_probes=self.disarm_probes,
            fallbacks=dict(self.fallbacks),
            p50_ms=_percentile(ordered, 0.5),
            p95_ms=_percentile(ordered, 0.95),
        )
