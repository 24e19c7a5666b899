"""``make demo``: a short tour of cdp-engine on a headless Chromium it launches itself."""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import trio

import cdp
from engine import ProtocolError, launch
from engine._serve import serve_directory
from engine.cli import drift_report

HERE = Path(__file__).parent


def _row(name: str, samples: list[float]) -> str:
    samples = sorted(samples)
    p95 = samples[int(len(samples) * 0.95) - 1]
    return f"| {name:<36} | {statistics.median(samples):>9.0f} | {p95:>9.0f} |"


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

            box = await page.session.execute(cdp.dom.get_box_model(node_id=found.node_id))
            x = sum(box.model.content[0::2]) / 4
            y = sum(box.model.content[1::2]) / 4
            for kind in ("mousePressed", "mouseReleased"):
                await page.session.execute(
                    cdp.input.dispatch_mouse_event(
                        type_=kind, x=x, y=y, button=cdp.input.MouseButton.LEFT, click_count=1
                    )
                )
            with trio.fail_after(5):
                added = await console.wait_for(lambda e: e.args[0].value == "added")
            count = await page.session.execute(
                cdp.runtime.evaluate(expression="document.getElementById('count').textContent")
            )
            print(
                f"6. action: clicked the button at ({x:.0f}, {y:.0f}) -> console {added.args[1].value!r}, "
                f"cart count {count.result.value}"
            )

        hung = "while (true) {}"
        started = time.perf_counter()
        try:
            with trio.fail_after(5):  # the caller's deadline; the page's own budget is `timeout`
                await page.session.execute(cdp.runtime.evaluate(expression=hung, timeout=300))
            text = "finished?"
        except ProtocolError as exc:
            text = exc.message
        took = (time.perf_counter() - started) * 1e3
        print(f"7. bounded evaluate: `{hung}` with a 300 ms budget ended after {took:.0f} ms: {text}")
        after = await page.session.execute(cdp.runtime.evaluate(expression="6 * 7"))
        print(f"   the tab is still usable: 6 * 7 = {after.result.value}")

        print("\n8. latency (microseconds, 200 sequential calls each, this machine, this run):")
        print("| call                                 |    median |       p95 |")
        print("|--------------------------------------|-----------|-----------|")
        for label, session, command in (
            ("Browser.getVersion (browser)", browser.session, cdp.browser.get_version()),
            ("Runtime.evaluate 1+1 (page session)", page.session, cdp.runtime.evaluate(expression="1+1")),
        ):
            samples = []
            for _ in range(220):
                t0 = time.perf_counter_ns()
                await session.execute(command)
                samples.append((time.perf_counter_ns() - t0) / 1e3)
            print(_row(label, samples[20:]))
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
