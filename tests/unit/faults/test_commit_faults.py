"""Commands against a fake tab that behaves as Chromium does when a new document commits: a screenshot or
an input pending at the commit is never answered, and a capture, a reload or a history command asked for
as the old document leaves is refused."""

from __future__ import annotations

import base64
from typing import Any

import pytest
import trio
from trio.testing import MockClock

from engine import ActionError, ConnectionClosed, NavigationError, ProtocolError, ResolvedNode
from engine._capture import _REASK, BETWEEN_DOCUMENTS_BUDGET, NO_DOCUMENT_GRACE, NOT_ACTIVE
from engine._input import LOST_INPUT_GRACE, input_across_commit
from engine.testing import FakePeer, open_fake_browser
from tests.unit.engine.test_evaluate_units import fake_page

PNG = base64.b64encode(b"a png").decode()


async def next_command(peer: FakePeer) -> dict[str, Any]:
    """The tab's next command, after answering the look at its main thread that comes before a navigation
    (``Runtime.evaluate`` of ``0``: a free thread)."""
    while True:
        command = await peer.next_command()
        if command["method"] != "Runtime.evaluate" or command["params"] != {"expression": "0"}:
            return command
        peer.reply(command, {"result": {"type": "number", "value": 0, "description": "0"}})


def commit(peer: FakePeer, frame_id: str = "F1", kind: str = "Navigation") -> None:
    """A new document in frame ``frame_id``: the main frame F1, or an iframe of it; ``kind``
    BackForwardCacheRestore for a page the back-forward cache restores."""
    frame: dict[str, Any] = {"id": frame_id, "url": "http://x/", "loaderId": "L"}
    if frame_id != "F1":
        frame["parentId"] = "F1"
    peer.event("Page.frameNavigated", {"frame": frame, "type": kind}, session_id="PAGE")


def parsed(peer: FakePeer) -> None:
    """The main frame's new document is parsed (a history move waits for it; fake_page's frame is T1)."""
    peer.event("Page.lifecycleEvent", {"frameId": "T1", "name": "DOMContentLoaded"}, session_id="PAGE")


async def test_a_capture_lost_to_a_commit_is_asked_again() -> None:
    async with open_fake_browser() as (browser, peer):
        page = await fake_page(browser, peer)
        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:

                async def tab() -> None:
                    lost = await next_command(peer)
                    assert lost["method"] == "Page.captureScreenshot"
                    commit(peer, "F2")  # an iframe's commit: the capture still stands
                    commit(peer)  # the main frame's: it is lost
                    again = await next_command(peer)
                    assert again["method"] == "Page.captureScreenshot"
                    assert again["params"] == lost["params"]
                    peer.reply(again, {"data": PNG})

                nursery.start_soon(tab)
                assert await page.screenshot() == b"a png"
            assert browser.connection.pending_count() == 0


async def test_a_refused_capture_is_asked_again_until_the_budget_runs_out(mock_clock: MockClock) -> None:
    mock_clock.autojump_threshold = 0
    async with open_fake_browser() as (browser, peer):
        page = await fake_page(browser, peer)
        asked = 0

        async def tab() -> None:
            nonlocal asked
            while True:
                command = await next_command(peer)
                asked += 1
                peer.send({"id": command["id"], "error": {"code": -32000, "message": NOT_ACTIVE}})

        async with trio.open_nursery() as nursery:
            nursery.start_soon(tab)
            start = trio.current_time()
            with trio.fail_after(10), pytest.raises(ActionError, match="between two documents") as info:
                await page.screenshot()
            nursery.cancel_scope.cancel()
        assert info.value.check == "attached"
        assert (
            BETWEEN_DOCUMENTS_BUDGET <= trio.current_time() - start <= BETWEEN_DOCUMENTS_BUDGET + 2 * _REASK
        )
        assert asked == pytest.approx(BETWEEN_DOCUMENTS_BUDGET / _REASK, abs=2)


async def test_the_link_lost_with_two_captures_pending_raises_one_error() -> None:
    async with open_fake_browser() as (browser, peer):
        page = await fake_page(browser, peer)

        async def tab() -> None:
            await next_command(peer)
            commit(peer)
            await next_command(peer)  # two captures pending: each ends with the link
            peer.close()

        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(tab)
                with pytest.raises(ConnectionClosed):  # one error, not a group of two
                    await page.screenshot()


@pytest.mark.parametrize("frame", ["F1", "F3"], ids=["main-frame", "its-iframe"])
async def test_an_input_lost_to_a_commit_is_given_up_after_the_grace(
    mock_clock: MockClock, frame: str
) -> None:
    mock_clock.autojump_threshold = 0
    async with open_fake_browser() as (browser, peer):
        page = await fake_page(browser, peer)
        node = ResolvedNode(
            ref="e1", backend_node_id=7, session=page.session, frame_id=frame, role="textbox", name="Name"
        )

        async def tab() -> None:
            answered = await next_command(peer)
            commit(peer, frame)  # the reply still comes, within the grace
            await trio.sleep(LOST_INPUT_GRACE / 2)
            peer.reply(answered)
            await next_command(peer)  # this one is lost
            commit(peer, "F2")  # another iframe's commit: the input still stands
            await trio.sleep(5)
            commit(peer, frame)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(tab)
            with trio.fail_after(1):
                await input_across_commit(page, "Input.insertText", {"text": "a"}, "fill e1", node)
            start = trio.current_time()
            with trio.fail_after(10), pytest.raises(ActionError, match="navigated while the input") as info:
                await input_across_commit(page, "Input.insertText", {"text": "a"}, "fill e1", node)
        assert trio.current_time() - start == pytest.approx(5 + LOST_INPUT_GRACE)
        assert (info.value.ref, info.value.check) == ("e1", "attached")
        assert browser.connection.pending_count() == 0
        assert len(page.session._subscriptions) == 0  # the hooks are gone


async def answer_history(peer: FakePeer) -> None:
    """Answer the history move's look at the history: two entries, the second current (back is the first)."""
    history = await next_command(peer)
    assert history["method"] == "Page.getNavigationHistory"
    entries = [{"id": 5, "url": "http://x/a"}, {"id": 6, "url": "http://x/b"}]
    peer.reply(history, {"currentIndex": 1, "entries": entries})


def refuse(peer: FakePeer, command: dict[str, Any], message: str = NOT_ACTIVE) -> None:
    peer.send({"id": command["id"], "error": {"code": -32000, "message": message}})


async def test_a_history_move_refused_between_documents_is_asked_again() -> None:
    async with open_fake_browser() as (browser, peer):
        page = await fake_page(browser, peer)

        async def tab() -> None:
            for _ in range(2):
                history = await next_command(peer)
                assert history["method"] == "Page.getNavigationHistory"
                refuse(peer, history)
            await answer_history(peer)
            move = await next_command(peer)
            assert move["method"] == "Page.navigateToHistoryEntry"
            refuse(peer, move)
            again = await next_command(peer)
            assert again == {**move, "id": again["id"]}
            peer.reply(again)
            commit(peer)
            parsed(peer)

        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(tab)
                assert await page.back() is True
        assert browser.connection.pending_count() == 0


async def test_a_commit_seen_while_a_history_move_was_refused_is_not_taken_for_its_own() -> None:
    async with open_fake_browser() as (browser, peer):
        page = await fake_page(browser, peer)
        own_commit_sent = False

        async def tab() -> None:
            nonlocal own_commit_sent
            await answer_history(peer)
            refuse(peer, await next_command(peer))
            commit(peer)  # the navigation that was leaving commits: not the move's
            again = await next_command(peer)
            peer.reply(again)
            await trio.sleep(0.2)
            own_commit_sent = True
            commit(peer)
            parsed(peer)

        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(tab)
                assert await page.back() is True
                assert own_commit_sent


async def test_a_reload_refused_until_the_budget_raises_a_navigation_error(mock_clock: MockClock) -> None:
    mock_clock.autojump_threshold = 0
    async with open_fake_browser() as (browser, peer):
        page = await fake_page(browser, peer)
        asked = 0

        async def tab() -> None:
            nonlocal asked
            while True:
                command = await next_command(peer)
                if command["method"] == "Page.reload":
                    asked += 1
                    refuse(peer, command)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(tab)
            start = trio.current_time()
            with trio.fail_after(10), pytest.raises(NavigationError, match="between two documents"):
                await page.reload()
            assert (
                BETWEEN_DOCUMENTS_BUDGET
                <= trio.current_time() - start
                <= BETWEEN_DOCUMENTS_BUDGET + 2 * _REASK
            )
            assert asked == pytest.approx(BETWEEN_DOCUMENTS_BUDGET / _REASK, abs=2)
            nursery.cancel_scope.cancel()


async def test_another_refusal_of_a_reload_is_raised_at_once() -> None:
    async with open_fake_browser() as (browser, peer):
        page = await fake_page(browser, peer)

        async def tab() -> None:
            refuse(peer, await next_command(peer), "Some other refusal")

        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(tab)
                with pytest.raises(ProtocolError, match="Some other refusal"):
                    await page.reload()


def loading(peer: FakePeer, state: str) -> None:
    """The main frame's loading flag: ``Started`` or ``Stopped``."""
    peer.event(f"Page.frame{state}Loading", {"frameId": "T1"}, session_id="PAGE")  # fake_page's target


@pytest.mark.parametrize("restored", [True, False], ids=["restored-from-cache", "no-content"])
async def test_a_history_move_that_stops_loading_without_a_document(
    mock_clock: MockClock, restored: bool
) -> None:
    # A page restored from the back-forward cache stops loading 1-2 ms before it commits; a response with
    # no content (204) stops loading and never commits.
    mock_clock.autojump_threshold = 0
    async with open_fake_browser() as (browser, peer):
        page = await fake_page(browser, peer)

        async def tab() -> None:
            await answer_history(peer)
            loading(peer, "Stopped")  # the end of an earlier load: no start seen since the command
            peer.reply(await next_command(peer))
            loading(peer, "Started")
            loading(peer, "Stopped")
            if restored:
                await trio.sleep(NO_DOCUMENT_GRACE / 2)
                commit(peer, kind="BackForwardCacheRestore")  # no DOMContentLoaded: parsed long ago

        async with trio.open_nursery() as nursery:
            nursery.start_soon(tab)
            start = trio.current_time()
            with trio.fail_after(5):
                if restored:
                    assert await page.back() is True
                else:
                    with pytest.raises(
                        NavigationError, match=r"^going back did not happen: .*no new document"
                    ):
                        await page.back()
            assert trio.current_time() - start == pytest.approx(
                NO_DOCUMENT_GRACE / 2 if restored else NO_DOCUMENT_GRACE
            )


@pytest.mark.parametrize("end", ["parsed", "stopped"])
async def test_a_history_move_returns_once_its_document_is_parsed_or_stopped(
    mock_clock: MockClock, end: str
) -> None:
    # Its commit is not enough: a snapshot straight after it saw an empty page. A document stopped while
    # it loads (window.stop(), a response cut short) is as parsed as it will be.
    mock_clock.autojump_threshold = 0
    async with open_fake_browser() as (browser, peer):
        page = await fake_page(browser, peer)

        async def tab() -> None:
            await answer_history(peer)
            peer.reply(await next_command(peer))
            loading(peer, "Started")
            commit(peer)
            await trio.sleep(1.0)
            if end == "parsed":
                parsed(peer)
            else:
                loading(peer, "Stopped")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(tab)
            start = trio.current_time()
            with trio.fail_after(5):
                assert await page.back() is True
            assert trio.current_time() - start == pytest.approx(1.0)
