"""The ``evaluate`` scenarios: hung-evaluate recovery, and evaluate latency by ref, ours against Playwright.

Recovery: a page evaluates ``while (true) {}`` with a budget; the figure is the time from the budget's
expiry to the next successful click on a button of the same tab. Ours bounds it with ``trio.fail_after``
(the script is terminated); Playwright's ``page.evaluate`` has no timeout of its own, so it is capped by an
outer ``asyncio.wait_for``, then ``page.click`` is retried until ``--cap`` seconds: a tab that is still
stuck then is counted as not recovered (and replaced by a new tab, so its spinning renderer stops).

Latency: ``page.evaluate(fn, ref=...)`` (identity check included) and ``backend_node_id=`` against
Playwright's ``locator.evaluate`` on ``get_by_role``; and a page-level expression against
``page.evaluate``. Each side launches its own Chromium (same binary, same flags).

    python -m benchmarks.upper_evaluate [--reps 10] [--ops 20] [--cycles 3] [--cap 5] [--seed N] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

from benchmarks.clients.base import AsyncioThread, LoopThread, TrioThread
from benchmarks.sidebyside import Side, bootstrap_ratio, compare, format_table, playwright_page, save
from engine.testing import serve_directory

RESULTS = Path(__file__).parent / "results" / "evaluate.json"
PAGE = (
    b"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Evaluate</title></head><body>"
    b"<h1>Evaluate</h1><button id='go' onclick='window.clicks=(window.clicks||0)+1'>Go</button>"
    b"<p>Some text to read back.</p></body></html>"
)
BUDGET = 0.3  # seconds each hung evaluate gets
HANG = "while (true) {}"


# -- latency -------------------------------------------------------------------------------------------


def _ours(url: str, how: str) -> Side:
    from engine import Page, launch

    state: dict[str, Any] = {}

    async def setup() -> None:
        stack = contextlib.AsyncExitStack()
        browser = await stack.enter_async_context(launch(args=["--disable-quic"]))
        page = await browser.new_page(url)
        snap = await page.snapshot()
        ref = next(r for r in snap.refs.values() if r.role == "button")
        state.update(stack=stack, page=page, ref=ref.ref, node=ref.backend_node_id)

    async def op() -> None:
        page: Page = state["page"]
        with trio.fail_after(5):
            if how == "ref":
                await page.evaluate("(el) => el.textContent", ref=state["ref"])
            elif how == "node":
                await page.evaluate("(el) => el.textContent", backend_node_id=state["node"])
            else:
                await page.evaluate("document.title")

    async def teardown() -> None:
        await state["stack"].aclose()

    names = {"ref": "ours evaluate(ref=)", "node": "ours backend_node_id=", "page": "ours page.evaluate"}
    return Side(names[how], "trio", setup, op, teardown)


def _playwright(url: str, how: str) -> Side:
    state: dict[str, Any] = {}

    async def setup() -> None:
        pw, browser, page = await playwright_page(url)
        state.update(pw=pw, browser=browser, page=page, button=page.get_by_role("button", name="Go"))

    async def op() -> None:
        if how == "ref":
            await state["button"].evaluate("(el) => el.textContent")
        else:
            await state["page"].evaluate("document.title")

    async def teardown() -> None:
        await state["browser"].close()
        await state["pw"].stop()

    name = "playwright locator.evaluate" if how == "ref" else "playwright page.evaluate"
    return Side(name, "asyncio", setup, op, teardown)


# -- recovery ------------------------------------------------------------------------------------------


async def _ours_recovery(url: str, cycles: int, cap: float, stack: contextlib.AsyncExitStack) -> list[float]:
    from engine import Page, launch

    if "page" not in _OURS:
        browser = await stack.enter_async_context(launch(args=["--disable-quic"]))
        _OURS["page"] = await browser.new_page(url)
    page: Page = _OURS["page"]
    out = []
    for _ in range(cycles):
        expiry = time.perf_counter() + BUDGET
        with trio.move_on_after(BUDGET):
            await page.evaluate(HANG)
        with trio.move_on_after(cap) as scope:
            await _cdp_click(page)
        out.append(time.perf_counter() - expiry if not scope.cancelled_caught else math.inf)
    return out


_OURS: dict[str, Any] = {}
_THEIRS: dict[str, Any] = {}


async def _cdp_click(page: Any) -> None:
    session = page.session
    document = await session.execute_raw("DOM.getDocument", {"depth": 0})
    found = await session.execute_raw(
        "DOM.querySelector", {"nodeId": document["root"]["nodeId"], "selector": "#go"}
    )
    quad = (await session.execute_raw("DOM.getBoxModel", {"nodeId": found["nodeId"]}))["model"]["content"]
    x, y = (quad[0] + quad[4]) / 2, (quad[1] + quad[5]) / 2
    for kind in ("mousePressed", "mouseReleased"):
        await session.execute_raw(
            "Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}
        )


async def _playwright_recovery(url: str, cycles: int, cap: float) -> list[float]:
    if "browser" not in _THEIRS:
        pw, browser, page = await playwright_page(url)
        _THEIRS.update(pw=pw, browser=browser, page=page)
    out = []
    for _ in range(cycles):
        page = _THEIRS["page"]
        expiry = time.perf_counter() + BUDGET
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(page.evaluate(HANG), BUDGET)
        try:
            await page.click("#go", timeout=cap * 1000)
            out.append(time.perf_counter() - expiry)
        except Exception:  # Playwright's TimeoutError: the tab is still stuck
            out.append(math.inf)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(page.close(), 5)
            _THEIRS["page"] = await _THEIRS["browser"].new_page()
            await _THEIRS["page"].goto(url)
    return out


async def _playwright_close() -> None:
    if "browser" in _THEIRS:
        await _THEIRS["browser"].close()
        await _THEIRS["pw"].stop()
        _THEIRS.clear()


def recovery(url: str, *, reps: int, cycles: int, cap: float, seed: int | None) -> dict[str, Any]:
    """Interleaved reps of ``cycles`` hang-then-click cycles per side; seconds from expiry to the click."""
    seed = random.randrange(2**32) if seed is None else seed
    rng = random.Random(seed)
    ours_thread = TrioThread("ours-recovery")
    theirs_thread = AsyncioThread("playwright-recovery")
    threads: dict[str, LoopThread] = {"ours": ours_thread, "playwright": theirs_thread}
    for thread in threads.values():
        thread.start()
    stack = ours_thread.exit_stack
    runs: dict[str, list[list[float]]] = {"ours": [], "playwright": []}
    load_before = os.getloadavg()
    try:
        for _ in range(reps):
            order = ["ours", "playwright"]
            rng.shuffle(order)
            for name in order:
                if name == "ours":
                    runs[name].append(ours_thread.call(_ours_recovery, url, cycles, cap, stack, timeout=600))
                else:
                    runs[name].append(theirs_thread.call(_playwright_recovery, url, cycles, cap, timeout=600))
    finally:
        with contextlib.suppress(Exception):
            theirs_thread.call(_playwright_close)
        with contextlib.suppress(Exception):
            ours_thread.call(stack.aclose)
        _OURS.clear()
        for thread in threads.values():
            thread.stop()
    load_after = os.getloadavg()
    result: dict[str, Any] = {
        "title": f"hung evaluate ({BUDGET * 1000:.0f} ms budget): from its expiry to the next click",
        "seed": seed,
        "reps": reps,
        "ops_per_rep": cycles,
        "cpus": os.cpu_count(),
        "load_before": load_before,
        "load_after": load_after,
        "baseline": "ours",
        "cap_s": cap,
        "sides": {},
    }
    medians = {name: [statistics.median(rep) * 1e6 for rep in got] for name, got in runs.items()}
    for name, got in runs.items():
        flat = [x for rep in got for x in rep]
        entry: dict[str, Any] = {
            "median_us": statistics.median(medians[name]),
            "rep_medians_us": medians[name],
            "samples_us": [[x * 1e6 for x in rep] for rep in got],
            "recovered": sum(x != math.inf for x in flat),
            "cycles": len(flat),
        }
        if name != "ours":
            if all(m != math.inf for m in medians[name]):
                point, low, high = bootstrap_ratio(medians["ours"], medians[name], rng)
                entry["ratio_ours_to_this"] = point
                entry["ratio_ci95"] = [low, high]
                entry["verdict"] = (
                    "no difference" if low <= 1.0 <= high else ("faster" if high < 1.0 else "slower")
                )
            else:
                entry["verdict"] = (
                    f"did not recover within {cap} s in {len(flat) - entry['recovered']} of {len(flat)}"
                )
        result["sides"][name] = entry
    return result


def format_recovery(result: dict[str, Any]) -> str:
    lines = [
        f"{result['title']}  (reps={result['reps']} x {result['ops_per_rep']} cycles, seed={result['seed']}, "
        f"load {result['load_before'][0]:.1f} -> {result['load_after'][0]:.1f} on {result['cpus']} cores)"
    ]
    for name, entry in result["sides"].items():
        median = entry["median_us"]
        shown = "never (capped)" if median == math.inf else f"{median / 1000:.1f}ms"
        ratio = ""
        if "ratio_ours_to_this" in entry:
            low, high = entry["ratio_ci95"]
            ratio = f"{entry['ratio_ours_to_this']:.3f}x [{low:.3f}, {high:.3f}] "
        lines.append(
            f"{name:<12} median {shown:>16}  recovered {entry['recovered']}/{entry['cycles']}  "
            f"{ratio}{entry.get('verdict', '')}"
        )
    return "\n".join(lines)


def run(*, reps: int, ops: int, cycles: int, cap: float, seed: int | None) -> list[dict[str, Any]]:
    results = []
    with tempfile.TemporaryDirectory() as folder, serve_directory(Path(folder)) as base:
        Path(folder, "page.html").write_bytes(PAGE)
        url = base.rstrip("/") + "/page.html"
        got = recovery(url, reps=reps, cycles=cycles, cap=cap, seed=seed)
        print(format_recovery(got), flush=True)
        results.append(got)
        for title, sides in (
            (
                "evaluate by ref (el => el.textContent)",
                [_ours(url, "ref"), _playwright(url, "ref"), _ours(url, "node")],
            ),
            ("evaluate a page expression (document.title)", [_ours(url, "page"), _playwright(url, "page")]),
        ):
            result = compare(title, sides, ops_per_rep=ops, reps=reps, warmup=3, seed=seed)
            print(format_table(result), flush=True)
            results.append(result)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--reps", type=int, default=10, help="interleaved repetitions per side (default 10)")
    parser.add_argument("--ops", type=int, default=20, help="evaluates per repetition (default 20)")
    parser.add_argument(
        "--cycles", type=int, default=2, help="hang-then-click cycles per repetition (default 2)"
    )
    parser.add_argument("--cap", type=float, default=5.0, help="seconds before a stuck tab counts as lost")
    parser.add_argument(
        "--seed", type=int, default=None, help="the shuffle's seed (default: random, recorded)"
    )
    parser.add_argument("--quick", action="store_true", help="few repetitions, for a smoke run")
    parser.add_argument(
        "--out", type=Path, default=RESULTS, help=f"where to write the JSON (default {RESULTS})"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.reps, args.ops, args.cycles, args.cap = (
            min(args.reps, 2),
            min(args.ops, 3),
            1,
            min(args.cap, 1.0),
        )
    results = run(reps=args.reps, ops=args.ops, cycles=args.cycles, cap=args.cap, seed=args.seed)
    save({"scenario": "evaluate", "runs": results}, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
