"""``make demo``: a short tour of cdp-engine on a headless Chromium it launches itself."""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import trio

import cdp
from engine import ActionError, StaleRefError, launch
from engine._serve import serve_directory
from engine.cli import drift_report

HERE = Path(__file__).parent
_BANNER = """document.body.insertAdjacentHTML('beforeend',
  '<div id="banner" role="dialog" aria-label="Cookie banner" style="position:fixed;inset:0">OK?</div>')"""


def _row(name: str, samples: list[float]) -> str:
    samples = sorted(samples)
    p95 = samples[int(len(samples) * 0.95) - 1]
    return f"| {name:<42} | {statistics.median(samples):>9.0f} | {p95:>9.0f} |"


async def tour(base_url: str) -> None:
    print(f"cdp bindings for devtools-protocol {cdp.PROTOCOL_VERSION}: {len(cdp.DOMAINS)} domains")
    drift = (await drift_report(None)).splitlines()
    print("0. drift between the pinned protocol and this Chromium (cdp-engine drift for the whole list):")
    for line in drift:
        if not line.startswith("  "):
            print(f"     {line}")
    print()
    async with launch() as browser:
        version = await browser.version()
        print(f"1. launched {version.product} over the pipe (protocol {version.protocol_version})")

        page = await browser.new_page()
        async with page.session.listen(cdp.runtime.ConsoleAPICalled, buffer_size=64) as console:
            await page.session.execute(cdp.runtime.enable())
            result = await page.goto(f"{base_url}/index.html")
            print(f"2. loaded the bundled page (frame {result.frame_id[:8]}..., loader {result.loader_id})")
            with trio.fail_after(5):
                ready = await console.wait_for(lambda e: e.args[0].value == "demo page ready")
            print(f"3. event subscription: console.{ready.type_} -> {ready.args[0].value!r}")

            doc = await page.session.execute(cdp.dom.get_document(depth=-1))
            found = await page.session.execute(
                cdp.dom.query_selector(node_id=doc.root.node_id, selector="button")
            )
            described = await page.session.execute(cdp.dom.describe_node(node_id=found.node_id))
            print(
                f"4. typed DOM: <{described.node.local_name}> "
                f"backendNodeId={described.node.backend_node_id}, document URL {doc.root.document_url}"
            )

            snap = await page.snapshot()
            print(
                f"5. page.snapshot(), read from Chromium's AX tree ({snap.stats.refs} refs, "
                f"{snap.stats.bytes} bytes, {snap.stats.duration_ms:.0f} ms); refs resolve to DOM nodes "
                "after an identity check:"
            )
            for line in snap.text.splitlines():
                print(f"     {line}")
            button = next(ref for ref in snap.refs.values() if ref.role == "button")
            node = await page.resolve(button.ref)
            print(f"   page.resolve({button.ref!r}) -> backendNodeId {node.backend_node_id} ({node.name!r})")

            tea = next(r for r in snap.refs.values() if r.role == "button" and r.name == "Add tea")
            search = next(r for r in snap.refs.values() if r.role == "searchbox")
            await page.click(tea.ref)  # raw CDP input, after the actionability checks
            with trio.fail_after(5):
                await page.wait_for(text="Cart (1)")
                added = await console.wait_for(lambda e: e.args[0].value == "added")
            await page.fill(search.ref, "green tea")
            count = await page.evaluate("document.getElementById('count').textContent")
            print(
                f"6. action: page.click({tea.ref!r}) -> console {added.args[1].value!r}, cart count {count}; "
                f"page.fill({search.ref!r}, 'green tea')"
            )
            delta = await page.snapshot(delta=True)
            print("   page.snapshot(delta=True), what changed since the last snapshot:")
            for line in delta.text.splitlines():
                print(f"     {line}")

        # Fail closed: a covered button is not clicked, a removed one is not retargeted.
        coffee = next(r for r in snap.refs.values() if r.role == "button" and r.name == "Add coffee")
        await page.evaluate(_BANNER)
        try:
            with trio.fail_after(1):
                await page.click(coffee.ref)
        except ActionError as exc:
            print(
                f"   a cookie banner covers {coffee.ref!r}: ActionError check={exc.check!r}, in the way: "
                f"{exc.in_the_way}; nothing was clicked"
            )
        await page.evaluate(
            "document.getElementById('banner').remove(); document.querySelector('li').remove()"
        )
        try:
            await page.click(tea.ref)
        except StaleRefError as exc:
            print(
                f"   its <li> removed, {tea.ref!r} raises StaleRefError ({exc.reason}), never another button"
            )

        hung = "(el) => { while (true) {} }"
        started = time.perf_counter()
        with trio.move_on_after(0.3):  # the caller's deadline is the page's budget
            await page.evaluate(hung, ref=coffee.ref)
        took = (time.perf_counter() - started) * 1e3
        print(
            f"7. bounded evaluate by ref: `{hung}` on {coffee.ref!r} under trio.move_on_after(0.3) "
            f"returned after {took:.0f} ms"
        )
        after = await page.evaluate("(el, n) => el.textContent + ' x' + n", 6 * 7, ref=coffee.ref)
        print(f"   the script was terminated and the tab is still usable: evaluate by ref -> {after!r}")

        steps = await page.run_steps(
            [
                {"type": "click", "target": coffee.ref},
                {"type": "wait_for", "text": "Cart (2)", "timeout_ms": 3000},
                {"type": "read_page"},
            ],
            return_mode="final",
        )
        took_steps = sum(step.duration_ms for step in steps.steps)
        print(
            f"8. page.run_steps: click, wait_for, read_page in one call: ok={steps.ok}, {took_steps:.0f} ms"
        )

        print("\n9. latency (microseconds, this machine, this run; `make bench` for the side-by-side):")
        print(f"| {'call':<42} |    median |       p95 |")
        print(f"|{'-' * 44}|-----------|-----------|")
        for label, session, command in (
            ("Browser.getVersion (browser)", browser.session, cdp.browser.get_version()),
            ("Runtime.evaluate 1+1 (page session)", page.session, cdp.runtime.evaluate(expression="1+1")),
        ):
            samples = []
            for _ in range(220):
                t0 = time.perf_counter_ns()
                await session.execute(command)
                samples.append((time.perf_counter_ns() - t0) / 1e3)
            print(_row(f"{label} x200", samples[20:]))
        for label, call, times in (
            ("page.evaluate('1+1')", lambda: page.evaluate("1+1"), 200),
            (f"page.click({coffee.ref!r})", lambda: page.click(coffee.ref), 40),
            ("page.snapshot()", page.snapshot, 40),
        ):
            samples = []
            for _ in range(times + 5):
                t0 = time.perf_counter_ns()
                await call()
                samples.append((time.perf_counter_ns() - t0) / 1e3)
            print(_row(f"{label} x{times}", samples[5:]))
        stats = browser.statistics()
        print(
            f"\nconnection: {stats.messages_sent} sent, {stats.messages_received} received, "
            f"{stats.pending} pending, {stats.sessions} sessions"
        )
    print("browser closed, profile removed")


def main() -> None:
    with serve_directory(HERE) as base_url:
        trio.run(tour, base_url)


if __name__ == "__main__":
    main()
