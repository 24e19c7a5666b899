"""The ``steps`` scenario: the agent loop click -> wait -> read as one ``page.run_steps`` call against three
separate calls that each return a snapshot, on the same page and browser.

Counted per loop: CDP messages the engine sent and received (the round trips on the wire), bytes handed
back to the caller (what an agent would put in its context), and wall time. Rounds alternate the three
ways in a shuffled order; the page is reloaded before each loop and that load is not counted.

    python -m benchmarks.upper_steps [--reps 20] [--seed N] [--quick]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

from benchmarks.sidebyside import bootstrap_ratio, save
from engine import Page, launch
from engine.testing import serve_directory

RESULTS = Path(__file__).parent / "results" / "steps.json"
PAGE = Path(__file__).parent.parent / "tests" / "browser" / "integration" / "pages" / "steps" / "index.html"


async def _separate(page: Page, go: str) -> int:
    """Three tool calls, each answering with a snapshot, as agent tools do today."""
    await page.click(go)
    first = await page.snapshot()
    await page.wait_for(text="Clicked")
    second = await page.snapshot()
    third = await page.snapshot()
    return sum(len(s.text.encode()) for s in (first, second, third))


def _steps(mode: str) -> Callable[[Page, str], Awaitable[int]]:
    async def run(page: Page, go: str) -> int:
        result = await page.run_steps(
            [
                {"type": "click", "target": go},
                {"type": "wait_for", "text": "Clicked", "timeout_ms": 3000},
                {"type": "read_page", "delta": mode == "delta"},
            ],
            return_mode=mode,  # type: ignore[arg-type]
        )
        if not result.ok:
            raise RuntimeError(f"run_steps failed: {result.to_json()}")
        return len(result.dumps().encode())

    return run


async def measure(url: str, reps: int, seed: int) -> dict[str, Any]:
    ways: dict[str, Callable[[Page, str], Awaitable[int]]] = {
        "three calls, a snapshot after each": _separate,
        "run_steps, return_mode=final": _steps("final"),
        "run_steps, return_mode=delta": _steps("delta"),
    }
    rng = random.Random(seed)
    samples: dict[str, dict[str, list[float]]] = {
        name: {"sent": [], "received": [], "bytes": [], "ms": []} for name in ways
    }
    load_before = list(os.getloadavg())
    async with launch() as browser:
        page = await browser.new_page()
        for rep in range(reps + 2):
            order = list(ways)
            rng.shuffle(order)
            for name in order:
                await page.goto(url)
                snap = await page.snapshot()  # the agent's view before the loop (not counted)
                go = next(r.ref for r in snap.refs.values() if r.role == "button" and r.name == "Go")
                before = browser.statistics()
                started = time.perf_counter()
                size = await ways[name](page, go)
                took = (time.perf_counter() - started) * 1e3
                after = browser.statistics()
                if rep < 2:
                    continue  # warm-up
                got = samples[name]
                got["sent"].append(after.messages_sent - before.messages_sent)
                got["received"].append(after.messages_received - before.messages_received)
                got["bytes"].append(size)
                got["ms"].append(took)
    base = "three calls, a snapshot after each"
    result: dict[str, Any] = {
        "title": "steps: click, wait for 'Clicked', read the page",
        "seed": seed,
        "reps": reps,
        "cpus": os.cpu_count(),
        "load_before": load_before,
        "load_after": list(os.getloadavg()),
        "baseline": base,
        "ways": {},
    }
    for name, got in samples.items():
        entry: dict[str, Any] = {key: statistics.median(values) for key, values in got.items()}
        if name != base:
            point, low, high = bootstrap_ratio(got["ms"], samples[base]["ms"], rng)
            entry["time_ratio_to_baseline"] = point
            entry["time_ratio_ci95"] = [low, high]
        result["ways"][name] = entry
    return result


def format_table(result: dict[str, Any]) -> str:
    lines = [
        f"{result['title']}  (reps={result['reps']}, seed={result['seed']}, "
        f"load {result['load_before'][0]:.1f} -> {result['load_after'][0]:.1f} on {result['cpus']} cores)",
        f"{'way':<36} {'sent':>5} {'recv':>5} {'bytes':>7} {'median ms':>10}  time vs three calls (95% CI)",
    ]
    for name, e in result["ways"].items():
        ratio = ""
        if "time_ratio_to_baseline" in e:
            low, high = e["time_ratio_ci95"]
            ratio = f"{e['time_ratio_to_baseline']:.2f}x [{low:.2f}, {high:.2f}]"
        lines.append(
            f"{name:<36} {e['sent']:>5.0f} {e['received']:>5.0f} {e['bytes']:>7.0f} {e['ms']:>10.1f}  {ratio}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--reps", type=int, default=20, help="loops per way (default 20)")
    parser.add_argument("--seed", type=int, default=None, help="the shuffle's seed (default: random)")
    parser.add_argument("--quick", action="store_true", help="3 loops per way, for a smoke run")
    parser.add_argument("--out", type=Path, default=RESULTS, help=f"the JSON (default {RESULTS})")
    args = parser.parse_args(argv)
    seed = random.randrange(2**32) if args.seed is None else args.seed
    with tempfile.TemporaryDirectory() as folder, serve_directory(Path(folder)) as base:
        Path(folder, "steps.html").write_bytes(PAGE.read_bytes())
        result = trio.run(measure, base.rstrip("/") + "/steps.html", 3 if args.quick else args.reps, seed)
    print(format_table(result), flush=True)
    save({"scenario": "steps", "runs": [result]}, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
