"""The ``click`` scenario: ``page.click(ref)`` (actionability included) against Playwright's
``locator.click()`` on the same button, and a blind CDP click at the box centre as the floor.

Each side launches its own Chromium (same binary, same flags) and loads the same small page; every side
clicks the same button, which counts its clicks, so a side that stopped clicking is caught at the end.

    python -m benchmarks.upper_click [--reps 10] [--ops 20] [--seed N] [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.sidebyside import Side, compare, format_table, playwright_page, save
from engine.testing import serve_directory

RESULTS = Path(__file__).parent / "results" / "click.json"

PAGE = b"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Click</title></head><body>
<h1>Checkout</h1><p>Some text before the button, as on a real form.</p>
<label>Name <input value="Ada"></label>
<button id="buy" onclick="window.clicks = (window.clicks || 0) + 1">Buy now</button>
</body></html>"""


async def _clicks_engine(page: Any) -> int:
    got = await page.session.execute_raw(
        "Runtime.evaluate", {"expression": "window.clicks || 0", "returnByValue": True}
    )
    return int(got["result"]["value"])


def _ours(url: str, *, blind: bool) -> Side:
    from engine import launch

    state: dict[str, Any] = {}

    async def setup() -> None:
        stack = contextlib.AsyncExitStack()
        browser = await stack.enter_async_context(launch(args=["--disable-quic"]))
        page = await browser.new_page(url)
        snap = await page.snapshot()
        ref = next(r.ref for r in snap.refs.values() if r.role == "button" and r.name == "Buy now")
        state.update(stack=stack, page=page, ref=ref, backend=snap.refs[ref].backend_node_id, ops=0)

    async def op() -> None:
        page = state["page"]
        state["ops"] += 1
        if not blind:
            await page.click(state["ref"])
            return
        # The floor: what a blind raw-CDP tool does, the box centre and a press and release, no checks.
        session = page.session
        quad = (await session.execute_raw("DOM.getContentQuads", {"backendNodeId": state["backend"]}))[
            "quads"
        ][0]
        x, y = sum(quad[0::2]) / 4, sum(quad[1::2]) / 4
        base = {"x": x, "y": y, "button": "left", "clickCount": 1}
        session.connection.call_nowait(session, "Input.dispatchMouseEvent", {"type": "mousePressed", **base})
        await session.execute_raw("Input.dispatchMouseEvent", {"type": "mouseReleased", **base})

    async def teardown() -> None:
        try:
            clicks = await _clicks_engine(state["page"])
            if clicks != state["ops"]:
                raise RuntimeError(f"{state['ops']} clicks sent but the button counted {clicks}")
        finally:
            await state["stack"].aclose()

    return Side("blind CDP click (floor)" if blind else "cdp-engine click(ref)", "trio", setup, op, teardown)


def _playwright(url: str) -> Side:
    state: dict[str, Any] = {}

    async def setup() -> None:
        pw, browser, page = await playwright_page(url)
        state.update(
            pw=pw, browser=browser, page=page, button=page.get_by_role("button", name="Buy now"), ops=0
        )

    async def op() -> None:
        state["ops"] += 1
        await state["button"].click()

    async def teardown() -> None:
        try:
            clicks = await state["page"].evaluate("window.clicks || 0")
            if clicks != state["ops"]:
                raise RuntimeError(f"{state['ops']} clicks sent but the button counted {clicks}")
        finally:
            await state["browser"].close()
            await state["pw"].stop()

    return Side("playwright locator.click()", "asyncio", setup, op, teardown)


def run(*, reps: int, ops: int, seed: int | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder, serve_directory(Path(folder)) as base:
        Path(folder, "click.html").write_bytes(PAGE)
        url = base.rstrip("/") + "/click.html"
        sides = [_ours(url, blind=False), _playwright(url), _ours(url, blind=True)]
        result = compare("click: a button by ref", sides, ops_per_rep=ops, reps=reps, warmup=3, seed=seed)
        print(format_table(result), flush=True)
        return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--reps", type=int, default=10, help="interleaved repetitions per side (default 10)")
    parser.add_argument("--ops", type=int, default=20, help="clicks per repetition (default 20)")
    parser.add_argument(
        "--seed", type=int, default=None, help="the shuffle's seed (default: random, recorded)"
    )
    parser.add_argument("--quick", action="store_true", help="2 reps of 3 clicks, for a smoke run")
    parser.add_argument(
        "--out", type=Path, default=RESULTS, help=f"where to write the JSON (default {RESULTS})"
    )
    args = parser.parse_args(argv)
    reps, ops = (2, 3) if args.quick else (args.reps, args.ops)
    result = run(reps=reps, ops=ops, seed=args.seed)
    save({"scenario": "click", "runs": [result]}, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
