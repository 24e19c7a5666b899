"""Side-by-side runner for the upper-room scenarios (snapshot, click, evaluate): ours against Playwright.

Each side runs in a thread that owns its own loop (trio or asyncio) and, by its own ``setup``, its own
browser, so only the client differs. Repetitions interleave the sides in an order shuffled per rep
(seed recorded); each rep yields one median per side, and a ratio's 95% confidence interval is bootstrapped
from the per-rep medians. A ratio whose interval holds 1.0 is reported as "no difference".
"""

from __future__ import annotations

import json
import os
import random
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from benchmarks.clients.base import AsyncioThread, LoopThread, TrioThread
from engine.lowlevel import BASE_FLAGS

BOOTSTRAP_RESAMPLES = 2000
CHROMIUM = "/usr/bin/chromium"
# The engine's own launch flags, so Playwright's browser runs as ours does (Playwright adds --headless).
PLAYWRIGHT_ARGS = [flag for flag in BASE_FLAGS if flag != "--headless"]


async def playwright_page(url: str, *args: str) -> tuple[Any, Any, Any]:
    """Playwright started, its Chromium launched over its pipe (``args`` added), a page on ``url``:
    ``(playwright, browser, page)``; stop with ``await browser.close(); await playwright.stop()``."""
    from playwright.async_api import async_playwright

    pw = await async_playwright().start()
    browser = await pw.chromium.launch(executable_path=CHROMIUM, args=[*args, *PLAYWRIGHT_ARGS])
    page = await browser.new_page()
    await page.goto(url)
    return pw, browser, page


@dataclass(frozen=True)
class Side:
    """One contender: ``op`` is one measured operation; ``setup``/``teardown`` run once, unmeasured.

    Any value ``op`` returns is kept per rep as ``extra`` (e.g. bytes of a snapshot) when it is a number.
    """

    name: str
    loop: Literal["trio", "asyncio"]
    setup: Callable[[], Awaitable[None]]
    op: Callable[[], Awaitable[Any]]
    teardown: Callable[[], Awaitable[None]]


def _median_and_extra(side: Side, count: int) -> Callable[[], Awaitable[tuple[list[float], list[float]]]]:
    async def run() -> tuple[list[float], list[float]]:
        times: list[float] = []
        extras: list[float] = []
        for _ in range(count):
            start = time.perf_counter_ns()
            got = await side.op()
            times.append((time.perf_counter_ns() - start) / 1000)
            if isinstance(got, int | float) and not isinstance(got, bool):
                extras.append(float(got))
        return times, extras

    return run


def bootstrap_ratio(ours: list[float], theirs: list[float], rng: random.Random) -> tuple[float, float, float]:
    """Median(ours)/median(theirs) and its bootstrap 95% interval, from per-rep medians."""
    point = statistics.median(ours) / statistics.median(theirs)
    ratios = sorted(
        statistics.median(rng.choices(ours, k=len(ours)))
        / statistics.median(rng.choices(theirs, k=len(theirs)))
        for _ in range(BOOTSTRAP_RESAMPLES)
    )
    return point, ratios[int(0.025 * len(ratios))], ratios[int(0.975 * len(ratios)) - 1]


def compare(
    title: str,
    sides: list[Side],
    *,
    ops_per_rep: int = 20,
    reps: int = 10,
    warmup: int = 3,
    seed: int | None = None,
) -> dict[str, Any]:
    """Run every side ``reps`` times, interleaved in shuffled order; the first side is the baseline."""
    seed = random.randrange(2**32) if seed is None else seed
    rng = random.Random(seed)
    threads: dict[str, LoopThread] = {}
    for side in sides:
        thread: LoopThread = TrioThread(side.name) if side.loop == "trio" else AsyncioThread(side.name)
        thread.start()
        threads[side.name] = thread
    samples: dict[str, list[list[float]]] = {s.name: [] for s in sides}
    extras: dict[str, list[float]] = {s.name: [] for s in sides}
    load_before = os.getloadavg()
    try:
        for side in sides:
            threads[side.name].call(side.setup)
            threads[side.name].call(_median_and_extra(side, warmup))
        for _ in range(reps):
            order = list(sides)
            rng.shuffle(order)
            for side in order:
                times, extra = threads[side.name].call(_median_and_extra(side, ops_per_rep))
                samples[side.name].append(times)
                extras[side.name].extend(extra)
    finally:
        for side in sides:
            try:
                threads[side.name].call(side.teardown)
            finally:
                threads[side.name].stop()
    load_after = os.getloadavg()
    medians = {name: [statistics.median(rep) for rep in reps_] for name, reps_ in samples.items()}
    base = sides[0].name
    result: dict[str, Any] = {
        "title": title,
        "seed": seed,
        "reps": reps,
        "ops_per_rep": ops_per_rep,
        "cpus": os.cpu_count(),
        "load_before": load_before,
        "load_after": load_after,
        "baseline": base,
        "sides": {},
    }
    for side in sides:
        name = side.name
        entry: dict[str, Any] = {
            "median_us": statistics.median(medians[name]),
            "rep_medians_us": medians[name],
            "samples_us": samples[name],
        }
        if extras[name]:
            entry["extra_median"] = statistics.median(extras[name])
        if name != base:
            point, low, high = bootstrap_ratio(medians[base], medians[name], rng)
            entry["ratio_ours_to_this"] = point
            entry["ratio_ci95"] = [low, high]
            entry["verdict"] = (
                "no difference" if low <= 1.0 <= high else ("faster" if high < 1.0 else "slower")
            )
        result["sides"][name] = entry
    return result


def format_table(result: dict[str, Any]) -> str:
    """A plain-text table: median per side, and the baseline's ratio to each other side with its CI."""
    base = result["baseline"]
    lines = [
        f"{result['title']}  (reps={result['reps']} x {result['ops_per_rep']} ops, seed={result['seed']}, "
        f"load {result['load_before'][0]:.1f} -> {result['load_after'][0]:.1f} on {result['cpus']} cores)",
        f"{'side':<28} {'median':>12} {'extra':>10}  {base} / side (95% CI)",
    ]
    for name, entry in result["sides"].items():
        extra = f"{entry['extra_median']:.0f}" if "extra_median" in entry else "-"
        ratio = ""
        if "ratio_ours_to_this" in entry:
            low, high = entry["ratio_ci95"]
            ratio = f"{entry['ratio_ours_to_this']:.2f}x [{low:.2f}, {high:.2f}] {entry['verdict']}"
        lines.append(f"{name:<28} {entry['median_us'] / 1000:>10.2f}ms {extra:>10}  {ratio}")
    return "\n".join(lines)


def save(result: dict[str, Any], path: str | Path) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(result, indent=1) + "\n")
