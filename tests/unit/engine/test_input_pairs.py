"""Input that goes in pairs (a press and its release, a key down and its up) is sent whole or not at all:
a caller whose deadline passed while it waited (a reply read in a stall of the machine) sent the press,
and the release's own first checkpoint raised, so the page kept a mouse button or a key down."""

from __future__ import annotations

from typing import Any

import trio

from engine._input import mouse_click, press
from engine.testing import FakePeer, open_fake_browser
from tests.unit.engine.test_evaluate_units import fake_page


async def sent_before_a_marker(peer: FakePeer, session: Any) -> list[str]:
    """What the peer read before a marker command sent now (each answered)."""
    before: list[str] = []
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session.execute_raw, "Browser.getVersion")
            while (command := await peer.next_command())["method"] != "Browser.getVersion":
                before.append(command["params"].get("type", command["method"]))
                peer.reply(command, {})
            peer.reply(command, {})
    return before


async def test_a_click_whose_caller_is_already_cancelled_presses_nothing() -> None:
    async with open_fake_browser() as (browser, peer):
        with trio.CancelScope() as scope:
            scope.cancel()
            await mouse_click(browser.session, 10, 20)
        assert scope.cancelled_caught
        assert await sent_before_a_marker(peer, browser.session) == []


async def test_a_key_press_whose_caller_is_already_cancelled_sends_no_key_down() -> None:
    async with open_fake_browser() as (browser, peer):
        page = await fake_page(browser, peer)
        with trio.CancelScope() as scope:
            scope.cancel()
            await press(page, "Shift+A", ref=None)
        assert scope.cancelled_caught
        assert await sent_before_a_marker(peer, page.session) == []
