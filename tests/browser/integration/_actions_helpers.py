"""Helpers of the action tests: open a page, find a ref by role and name, read a value from the page."""

from __future__ import annotations

from typing import Any

import trio

from engine import Browser, Page, Snapshot


async def open_page(browser: Browser, url: str) -> Page:
    with trio.fail_after(20):
        return await browser.new_page(url)


def ref(snap: Snapshot, role: str, name: str) -> str:
    """The ref of the element with this role and name in ``snap`` (fails the test if there is none)."""
    found = [r.ref for r in snap.refs.values() if r.role == role and r.name == name]
    assert found, f"no {role} {name!r} in the snapshot:\n{snap.text}"
    return found[0]


async def value(page: Page, expression: str) -> Any:
    with trio.fail_after(10):
        got = await page.session.execute_raw(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}
        )
    return got["result"].get("value")
