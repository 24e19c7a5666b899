"""engine.playwright against a real Playwright-launched Chromium: attach, ref mapping, fallback, recovery."""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from engine import StaleRefError
from engine.lowlevel import BASE_FLAGS
from engine.playwright import (
    CDPUnavailable,
    PlaywrightRunner,
    PlaywrightTab,
    PlaywrightUnavailable,
    attach,
    open_runner,
)
from tests.stalls import measure_stalls

pytestmark = pytest.mark.browser

# The engine's own launch flags (Playwright adds --headless).
FLAGS = [flag for flag in BASE_FLAGS if flag != "--headless"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@asynccontextmanager
async def playwright_tab(
    server: str, *, endpoint: str | None = None, path: str = "evaluate/index.html"
) -> AsyncIterator[PlaywrightTab]:
    """A Playwright-launched Chromium with a debugging port, its page on the test page, and our tab on it."""
    port = free_port()

    async def launch(runner: PlaywrightRunner) -> tuple[Any, Any]:
        browser = await runner.playwright.chromium.launch(
            executable_path="/usr/bin/chromium", args=[f"--remote-debugging-port={port}", *FLAGS]
        )
        page = await browser.new_page()
        await page.goto(f"{server}/{path}")
        return browser, page

    async with open_runner() as runner:
        with trio.fail_after(30):
            pw_browser, pw_page = await runner.run(launch, runner)
        try:
            # attach bounds its own handshakes (Settings.connect_timeout, attach_timeout)
            async with attach(runner, pw_page, endpoint or f"http://127.0.0.1:{port}") as tab:
                yield tab
        finally:
            with trio.move_on_after(10):
                await runner.run(pw_browser.close)


async def pw_clicks(page: Any) -> int:
    return int(await page.evaluate("window.clicks || 0"))


async def pw_click(page: Any) -> None:
    await page.click("#go", timeout=5000)


async def test_our_hung_evaluate_is_terminated_while_a_playwright_click_on_the_tab_waits_and_succeeds(
    server: str,
) -> None:
    async with playwright_tab(server) as tab:
        assert tab.page is not None
        with trio.fail_after(10):
            snap = await tab.page.snapshot()
        assert '- button "Go"' in snap.text
        clicked_at: list[float] = []

        async def playwright_click() -> None:
            await trio.sleep(0.2)  # our script is running by now: the renderer is busy
            await tab.run(pw_click)
            clicked_at.append(time.perf_counter())

        async with measure_stalls() as stalls:
            started = time.perf_counter()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(playwright_click)
                with pytest.raises(trio.TooSlowError), trio.fail_after(1):
                    await tab.page.evaluate("while (true) {}")
                ended = time.perf_counter()
        assert ended - started <= 1.1 + stalls.seconds, (ended - started, stalls)
        assert clicked_at
        # The click went through as soon as the script was stopped.
        assert clicked_at[0] - ended < 1.0 + stalls.seconds, (clicked_at[0] - ended, stalls)
        with trio.fail_after(5):
            assert await tab.run(pw_clicks) == 1
            assert await tab.page.evaluate("window.clicks") == 1


async def test_playwright_refs_map_to_backend_node_ids_with_the_same_duplicate_rule(server: str) -> None:
    async with playwright_tab(server) as tab:
        with trio.fail_after(10):
            refs = await tab.map_refs()
        by_name = {(r.role, r.name, r.nth): r for r in refs.values()}
        go = by_name["button", "Go", 0]
        twins = [by_name["button", "Twin", 0], by_name["button", "Twin", 1]]
        assert go.backend_node_id is not None
        assert twins[0].backend_node_id != twins[1].backend_node_id
        assert all(t.backend_node_id for t in twins)
        with trio.fail_after(10):
            assert await tab.evaluate("(el) => el.id", ref=go.ref) == "go"
            # The second look-alike is the one whose previous sibling is the first.
            got = await tab.evaluate(
                "(el) => el.previousElementSibling.textContent", ref=twins[1], fallback="cdp"
            )
            assert got == "Twin"
            same = await tab.evaluate(
                "(el) => el.previousElementSibling.textContent", ref=twins[1], fallback="playwright"
            )
            assert same == "Twin"
        metrics = tab.metrics()
        assert metrics.fallbacks == {"playwright": 1}


async def test_auto_falls_back_to_playwright_without_a_backend_node_id(server: str) -> None:
    async with playwright_tab(server) as tab:
        with trio.fail_after(10):
            refs = await tab.map_refs()
            ref = next(r for r in refs.values() if r.name == "Go")
            tab.refs[ref.ref] = unmapped = type(ref)(
                ref=ref.ref, role=ref.role, name=ref.name, nth=ref.nth, backend_node_id=None
            )
            assert await tab.evaluate("(el, n) => el.id.length + n", 1, ref=unmapped.ref) == 3
            with pytest.raises(CDPUnavailable, match="no backendNodeId"):
                await tab.evaluate("(el) => el.id", ref=unmapped, fallback="cdp")
        assert tab.metrics().fallbacks == {"no backendNodeId": 1}
        assert tab.page is not None
        assert tab.page.metrics().fallbacks == {"no backendNodeId": 1}  # also in our page's metrics


async def test_auto_falls_back_to_playwright_when_cdp_attach_is_refused(server: str) -> None:
    async with playwright_tab(server, endpoint=f"http://127.0.0.1:{free_port()}") as tab:
        assert tab.page is None
        assert tab.cdp_refused
        with trio.fail_after(10):
            refs = await tab.map_refs()
            go = next(r for r in refs.values() if r.name == "Go")
            assert go.backend_node_id is None  # nothing to map with
            assert await tab.evaluate("(el) => el.id", ref=go) == "go"
        assert list(tab.metrics().fallbacks) == [f"CDP attach refused ({tab.cdp_refused})"]


async def test_the_playwright_fallback_acts_on_each_refs_own_element_unnamed_and_moved_by_aria_owns(
    server: str,
) -> None:
    async with playwright_tab(server, path="evaluate/refs.html") as tab:
        with trio.fail_after(10):
            refs = await tab.map_refs()
            ids = {}
            for ref in refs.values():
                if ref.role in ("textbox", "button"):
                    ours = await tab.evaluate("(el) => el.id", ref=ref, fallback="cdp")
                    theirs = await tab.evaluate("(el) => el.id", ref=ref, fallback="playwright")
                    assert theirs == ours, (ref, ours, theirs)
                    ids[ref.role, ref.name, ref.nth] = theirs
        # Unnamed look-alikes are counted apart from the named "Email"; the group owns the second "Go".
        assert ids == {
            ("textbox", "Email", 0): "email",
            ("textbox", "", 0): "anon1",
            ("textbox", "", 1): "anon2",
            ("button", "Go", 0): "owned",
            ("button", "Go", 1): "first",
            ("button", "Save: now", 0): "save",
            ("button", "It's #1", 0): "its",
        }


async def test_the_playwright_fallback_refuses_at_once_a_ref_it_cannot_pin(server: str) -> None:
    async with playwright_tab(server, path="evaluate/refs.html") as tab:
        with trio.fail_after(10):
            refs = await tab.map_refs()
        by_name = {(r.role, r.name, r.nth): r for r in refs.values()}
        generic = next(r for r in refs.values() if r.role == "generic")
        started = time.perf_counter()
        with trio.fail_after(10):
            with pytest.raises(PlaywrightUnavailable, match="generic"):
                await tab.evaluate("(el) => el.id", ref=generic, fallback="playwright")
            await tab.run(lambda page: page.evaluate("document.getElementById('anon1').remove()"))
            await tab.run(lambda page: page.evaluate("email.setAttribute('aria-label', 'Mail')"))
            with pytest.raises(StaleRefError) as gone:
                await tab.evaluate("(el) => el.id", ref=by_name["textbox", "", 0], fallback="playwright")
            assert gone.value.reason == "removed"
            with pytest.raises(StaleRefError) as renamed:
                await tab.evaluate("(el) => el.id", ref=by_name["textbox", "Email", 0], fallback="playwright")
            assert renamed.value.reason == "renamed"
            # The other unnamed textbox is still its own element, never its removed look-alike's stand-in.
            ref = by_name["textbox", "", 1]
            assert await tab.evaluate("(el) => el.id", ref=ref, fallback="playwright") == "anon2"
        assert time.perf_counter() - started < 5  # none of them waited for its deadline


async def assert_let_go_at_the_deadline(tab: PlaywrightTab, fn: Any) -> None:
    """``tab.run(fn)`` under a 0.5 s deadline raises TooSlowError within 0.1 s of it: the trio caller is
    never held by Playwright (past what the machine kept this process from running)."""
    async with measure_stalls() as stalls:
        started = time.perf_counter()
        with pytest.raises(trio.TooSlowError), trio.fail_after(0.5):
            await tab.run(fn)
        took = time.perf_counter() - started
    assert took < 0.6 + stalls.seconds, (took, stalls)


async def test_a_stuck_playwright_evaluate_is_recovered_by_termination(server: str) -> None:
    async with playwright_tab(server) as tab:

        async def hang(page: Any) -> Any:
            return await page.evaluate("while (true) {}")

        await assert_let_go_at_the_deadline(tab, hang)
        with trio.fail_after(10):
            await tab.run(pw_click)  # waits for the recovery, then works
            assert await tab.run(pw_clicks) == 1
        assert tab.recoveries == {"terminated": 1}


async def test_a_blocked_playwright_loop_never_blocks_trio_and_playwright_is_reconnected(server: str) -> None:
    async with playwright_tab(server) as tab:
        old_runner = tab.runner
        gaps: list[float] = []

        async def ticker() -> None:
            last = time.perf_counter()
            while True:
                await trio.sleep(0.01)
                now = time.perf_counter()
                gaps.append(now - last)
                last = now

        async def block(page: Any) -> None:
            time.sleep(4)  # noqa: ASYNC251 (a synchronous call: the whole asyncio loop is stuck)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ticker)
            await assert_let_go_at_the_deadline(tab, block)
            with trio.fail_after(30):
                await tab.run(pw_click)  # after the recovery: a new loop, Playwright reconnected
                assert await tab.run(pw_clicks) == 1
            nursery.cancel_scope.cancel()
        assert max(gaps) < 0.3, max(gaps)  # the trio thread kept running throughout
        assert tab.recoveries == {"reconnected": 1}
        assert tab.runner is not old_runner
