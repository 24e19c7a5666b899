"""An action's navigation watch does not depend on when the link is read after the input's reply.

The input's reply comes from the browser process; the renderer's ``Page.frameRequestedNavigation`` comes
on another channel and may follow it. The watch makes a round trip through the renderer after the action,
so the request is in before it decides whether there is a navigation to wait for.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio

from engine import ConnectionClosed, Session
from engine._waiting import BARRIER_TIMEOUT, navigation_watch
from engine.lowlevel import Connection
from engine.testing import FakePeer

Pair = tuple[Connection, FakePeer, Session]


async def test_a_navigation_requested_after_the_inputs_reply_is_waited_for(pair: Pair) -> None:
    _, peer, browser = pair
    steps: list[str] = []

    async def renderer() -> None:
        click = await peer.next_command()
        peer.reply(click)  # the input's reply, before the renderer's event
        barrier = await peer.next_command()
        assert barrier["method"] == "Page.getFrameTree"
        peer.event(
            "Page.frameRequestedNavigation",
            {
                "frameId": "F",
                "reason": "anchorClick",
                "url": "http://127.0.0.1/next",
                "disposition": "currentTab",
            },
        )
        peer.reply(barrier, {"frameTree": {"frame": {"id": "F"}}})
        await trio.sleep(0.05)
        peer.event(
            "Page.frameNavigated", {"frame": {"id": "F", "loaderId": "L2", "url": "http://127.0.0.1/next"}}
        )
        steps.append("new document parsed")
        peer.event("Page.lifecycleEvent", {"frameId": "F", "loaderId": "L2", "name": "DOMContentLoaded"})

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(renderer)
            async with navigation_watch([browser]):
                await browser.execute_raw(
                    "Input.dispatchMouseEvent", {"type": "mouseReleased", "x": 1, "y": 1}
                )
            steps.append("action returned")
    assert steps == ["new document parsed", "action returned"]


async def test_a_renderer_that_does_not_answer_holds_the_action_for_the_barrier_timeout_only(
    pair: Pair,
) -> None:
    """A handler still running after the input (the main thread busy) does not hold the action forever."""
    _, peer, browser = pair
    seen: list[dict[str, Any]] = []

    async def busy_renderer() -> None:
        peer.reply(await peer.next_command())
        seen.append(await peer.next_command())  # never answered

    with trio.fail_after(BARRIER_TIMEOUT + 4):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(busy_renderer)
            start = trio.current_time()
            async with navigation_watch([browser]):
                await browser.execute_raw(
                    "Input.dispatchMouseEvent", {"type": "mouseReleased", "x": 1, "y": 1}
                )
            waited = trio.current_time() - start
    assert seen
    assert seen[0]["method"] == "Page.getFrameTree"
    assert BARRIER_TIMEOUT <= waited < BARRIER_TIMEOUT + 3


async def test_a_key_waits_one_task_turn_in_the_page_and_makes_no_other_round_trip(pair: Pair) -> None:
    # press: a form that Enter submits asks for its navigation from a task the key posted. The barrier is
    # then a setTimeout(0) awaited in the page (after that task), not a second round trip of its own.
    _, peer, browser = pair
    sent: list[dict[str, Any]] = []

    async def renderer() -> None:
        key = await peer.next_command()
        peer.reply(key)
        barrier = await peer.next_command()
        sent.append(barrier)
        peer.reply(barrier, {"result": {"type": "undefined"}})

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(renderer)
            async with navigation_watch([browser], task_turn=True):
                await browser.execute_raw("Input.dispatchKeyEvent", {"type": "keyUp", "key": "Enter"})
    assert [(c["method"], c["params"]) for c in sent] == [
        ("Runtime.evaluate", {"expression": "new Promise((r) => setTimeout(r, 0))", "awaitPromise": True})
    ]


async def test_a_link_lost_under_the_looks_at_two_renderers_raises_one_error(pair: Pair) -> None:
    # Both looks failed with the link, and the click raised an ExceptionGroup (seen once, browser killed).
    connection, peer, browser = pair
    frame = connection.sessions.create("S2", target_id="T2", target_type="iframe", parent=browser)

    async def renderers() -> None:
        peer.reply(await peer.next_command())  # the input
        for _ in range(2):
            assert (await peer.next_command())["method"] == "Page.getFrameTree"
        peer.close()

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(renderers)
            with pytest.raises(ConnectionClosed):  # one error, not a group of two
                async with navigation_watch([browser, frame]):
                    await browser.execute_raw(
                        "Input.dispatchMouseEvent", {"type": "mouseReleased", "x": 1, "y": 1}
                    )
