"""The side-by-side runner: interleaved reps in two loops, a ratio with its bootstrap interval."""

from __future__ import annotations

import asyncio
import random

import trio

from benchmarks.sidebyside import Side, bootstrap_ratio, compare, format_table


async def _nothing() -> None:
    return None


def test_compare_runs_a_trio_and_an_asyncio_side_and_reports_the_ratio_with_an_interval() -> None:
    async def trio_op() -> int:
        await trio.sleep(0.002)
        return 7

    async def asyncio_op() -> None:
        await asyncio.sleep(0.0)

    result = compare(
        "toy",
        [
            Side("slow-trio", "trio", _nothing, trio_op, _nothing),
            Side("fast-asyncio", "asyncio", _nothing, asyncio_op, _nothing),
        ],
        ops_per_rep=3,
        reps=4,
        warmup=1,
        seed=5,
    )
    assert result["seed"] == 5
    assert len(result["sides"]["slow-trio"]["rep_medians_us"]) == 4
    assert result["sides"]["slow-trio"]["extra_median"] == 7
    other = result["sides"]["fast-asyncio"]
    low, high = other["ratio_ci95"]
    assert low <= other["ratio_ours_to_this"] <= high
    assert other["verdict"] == "slower"  # 2 ms sleeps against none
    assert "fast-asyncio" in format_table(result)


def test_bootstrap_interval_holds_one_for_equal_samples() -> None:
    same = [100.0, 101.0, 99.0, 100.5, 99.5]
    point, low, high = bootstrap_ratio(same, list(same), random.Random(1))
    assert point == 1.0
    assert low <= 1.0 <= high
