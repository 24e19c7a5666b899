"""Coverage against Playwright: what its AI snapshot gives a ref, ours shows with the same role and name.

Playwright (>= 1.50) runs the same Chromium (``executable_path``) in a thread of its own (it is asyncio).
Documented differences, by design: nameless structural wrappers (generic, group, rowgroup, none) are
hoisted away in ours; content under aria-hidden, which Playwright's AI mode keeps, is absent from ours
(hidden from assistive technology by the page's author); Playwright names no iframe, ours uses its title.
"""

from __future__ import annotations

import asyncio
import re

import pytest
import trio

from engine import Browser, launch

pytestmark = pytest.mark.browser

PAGES_TO_COMPARE = ("form.html", "table.html", "shadow.html", "frames.html")
HOISTED = {"generic", "group", "rowgroup", "none", "presentation"}
_LINE = re.compile(r'^\s*- (?P<role>[\w-]+)(?: "(?P<name>(?:[^"\\]|\\.)*)")?(?P<rest>.*)$')


def _pairs(text: str, *, with_ref_only: bool) -> list[tuple[str, str]]:
    out = []
    for line in text.splitlines():
        match = _LINE.match(line)
        if match is None or (with_ref_only and "[ref=" not in match["rest"]):
            continue
        name = (match["name"] or "").replace('\\"', '"').replace("\\\\", "\\")
        out.append((match["role"], name))
    return out


def _playwright_snapshots(urls: list[str]) -> list[str]:
    from playwright.async_api import async_playwright

    async def run() -> list[str]:
        async with async_playwright() as p:
            browser = await p.chromium.launch(
                executable_path="/usr/bin/chromium",
                args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--site-per-process"],
            )
            try:
                page = await browser.new_page()
                out = []
                for url in urls:
                    await page.goto(url, timeout=20_000)
                    await page.wait_for_timeout(300)  # the out-of-process frames load after `load`
                    out.append(await page.aria_snapshot(mode="ai", timeout=20_000))
                return out
            finally:
                await browser.close()

    return asyncio.run(run())


async def _ours(browser: Browser, urls: list[str]) -> list[tuple[str, dict[tuple[str, str], int]]]:
    out = []
    for url in urls:
        page = await browser.new_page(url)
        await page.session.execute_raw(
            "Runtime.evaluate", {"expression": "new Promise(r => setTimeout(r, 300))", "awaitPromise": True}
        )
        snap = await page.snapshot()
        found: dict[tuple[str, str], int] = {}
        for pair in _pairs(snap.text, with_ref_only=False) + [(r.role, r.name) for r in snap.refs.values()]:
            found[pair] = found.get(pair, 0) + 1
        out.append((snap.text, found))
        await page.close()
    return out


async def test_every_element_playwright_gives_a_ref_is_in_our_snapshot(server: str, peer_port: str) -> None:
    urls = [f"{server}/refs/{name}?peer={peer_port}" for name in PAGES_TO_COMPARE]
    with trio.fail_after(60):
        theirs = await trio.to_thread.run_sync(_playwright_snapshots, urls)
    with trio.fail_after(60):
        async with launch(args=["--site-per-process"]) as browser:
            ours = await _ours(browser, urls)
    compared = 0
    for url, their_text, (our_text, found) in zip(urls, theirs, ours, strict=True):
        hidden = "aria hidden"  # form.html's aria-hidden button, which Playwright's AI mode lists
        for role, name in _pairs(their_text, with_ref_only=True):
            if (role in HOISTED and not name) or hidden in name.lower():
                continue
            if role == "iframe":
                assert any(r == "iframe" for r, _ in found), f"{url}: no iframe in\n{our_text}"
            elif role == "button" and not name and "Invisible aria hidden" in their_text:
                continue  # that aria-hidden button again: Playwright computes no name for it
            else:
                assert (role, name) in found, f"{url}: {role} {name!r} missing from ours:\n{our_text}"
            compared += 1
    assert compared >= 40  # the four pages hold this many refs that Playwright and we both name
