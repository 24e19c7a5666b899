"""The ``snapshot`` scenario: ``page.snapshot()`` against Playwright's ``aria_snapshot(mode="ai")``.

Latency and bytes, on the generated 5,000-element page, on a real documentation page (the pinned
protocol's own documentation of its largest domains, rendered as ordinary HTML: headings, prose, code,
tables and links), and on the demo's small shop page. Each side launches its own Chromium (same binary,
same flags). A third side, the bare ``Accessibility.getFullAXTree`` call that our snapshot is built on,
shows how much of the time is Chromium's.

    python -m benchmarks.upper_snapshot [--reps 10] [--ops 5] [--seed N] [--quick]
"""

from __future__ import annotations

import argparse
import html
import json
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.pages import big_page
from benchmarks.sidebyside import Side, compare, format_table, playwright_page, save
from engine import demo
from engine._util import gc_paused
from engine.testing import serve_directory

RESULTS = Path(__file__).parent / "results" / "snapshot.json"


def docs_page(domains: tuple[str, ...] = ("Page", "Network", "DOM", "Runtime")) -> bytes:
    """The protocol's documentation of ``domains`` as one HTML page, like a large reference page."""
    root = Path(__file__).parent.parent / "protocol-json"
    spec = [
        d
        for name in ("browser_protocol.json", "js_protocol.json")
        for d in json.loads((root / name).read_text())["domains"]
    ]
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Protocol reference</title></head>"
    ]
    parts.append("<body><header><nav aria-label='Domains'><ul>")
    parts += [f"<li><a href='#{d['domain']}'>{d['domain']}</a></li>" for d in spec if d["domain"] in domains]
    parts.append("</ul></nav><input type='search' aria-label='Search the reference'></header><main>")
    for domain in (d for d in spec if d["domain"] in domains):
        name = domain["domain"]
        parts.append(
            f"<section id='{name}'><h1>{name}</h1><p>{html.escape(domain.get('description', ''))}</p>"
        )
        for kind in ("commands", "events", "types"):
            for item in domain.get(kind, []):
                item_id = item.get("name") or item.get("id")
                parts.append(
                    f"<h2 id='{name}.{item_id}'><a href='#{name}.{item_id}'>{name}.{item_id}</a></h2>"
                )
                parts.append(f"<p>{html.escape(item.get('description', ''))}</p>")
                rows = item.get("parameters") or item.get("properties") or []
                if rows:
                    parts.append("<table><tr><th>Name</th><th>Type</th><th>Description</th></tr>")
                    for row in rows:
                        kind_of = row.get("type") or row.get("$ref", "")
                        desc = html.escape(row.get("description", ""))
                        parts.append(
                            f"<tr><td><code>{row['name']}</code></td><td>{kind_of}</td><td>{desc}</td></tr>"
                        )
                    parts.append("</table>")
                parts.append("<button type='button'>Copy example</button>")
        parts.append("</section>")
    parts.append("</main></body></html>")
    return "".join(parts).encode()


def _ours(url: str, *, raw: bool) -> Side:
    from engine import Page, launch

    state: dict[str, Any] = {}

    async def setup() -> None:
        import contextlib

        stack = contextlib.AsyncExitStack()
        browser = await stack.enter_async_context(launch(args=["--disable-quic"]))
        state.update(stack=stack, page=await browser.new_page(url))

    async def op() -> int | None:
        page: Page = state["page"]
        if raw:  # parsed and dropped with the GC paused, as the snapshot does
            with gc_paused():
                await page.session.execute_raw("Accessibility.getFullAXTree")
            return None
        return (await page.snapshot()).stats.bytes

    async def teardown() -> None:
        await state["stack"].aclose()

    return Side("getFullAXTree (floor)" if raw else "cdp-engine snapshot", "trio", setup, op, teardown)


def _playwright(url: str) -> Side:
    state: dict[str, Any] = {}

    async def setup() -> None:
        pw, browser, page = await playwright_page(url)
        state.update(pw=pw, browser=browser, page=page)

    async def op() -> int:
        return len((await state["page"].aria_snapshot(mode="ai")).encode())

    async def teardown() -> None:
        await state["browser"].close()
        await state["pw"].stop()

    return Side("playwright aria_snapshot(ai)", "asyncio", setup, op, teardown)


def run(*, reps: int, ops: int, seed: int | None, quick: bool) -> list[dict[str, Any]]:
    results = []
    with tempfile.TemporaryDirectory() as folder, serve_directory(Path(folder)) as base:
        Path(folder, "big.html").write_bytes(big_page(100 if quick else 1000))
        Path(folder, "docs.html").write_bytes(
            docs_page(("Page",) if quick else ("Page", "Network", "DOM", "Runtime"))
        )
        Path(folder, "shop.html").write_bytes((Path(demo.__file__).parent / "index.html").read_bytes())
        for path, title in (
            ("/big.html", "5,000-element page"),
            ("/docs.html", "protocol reference page"),
            ("/shop.html", "small shop page (the demo's)"),
        ):
            url = base.rstrip("/") + path
            sides = [_ours(url, raw=False), _playwright(url), _ours(url, raw=True)]
            result = compare(f"snapshot: {title}", sides, ops_per_rep=ops, reps=reps, warmup=1, seed=seed)
            print(format_table(result), flush=True)
            results.append(result)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--reps", type=int, default=10, help="interleaved repetitions per side (default 10)")
    parser.add_argument("--ops", type=int, default=5, help="snapshots per repetition (default 5)")
    parser.add_argument(
        "--seed", type=int, default=None, help="the shuffle's seed (default: random, recorded)"
    )
    parser.add_argument("--quick", action="store_true", help="small pages, for a smoke run")
    parser.add_argument(
        "--out", type=Path, default=RESULTS, help=f"where to write the JSON (default {RESULTS})"
    )
    args = parser.parse_args(argv)
    results = run(reps=args.reps, ops=args.ops, seed=args.seed, quick=args.quick)
    save({"scenario": "snapshot", "runs": results}, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
