"""Typed subscriptions: ``listen(cdp.page.LoadEventFired)`` yields a ``Subscription[LoadEventFired]``.

The ``assert_type`` lines are checked by the project's ``mypy --strict`` run (this file is in its
``files``); :func:`test_mypy_rejects_a_field_the_event_does_not_have` runs mypy on a snippet to show the
types have teeth, and the tests also run, against the fake browser.
"""

from __future__ import annotations

import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, assert_type

import pytest
import trio
from mypy import api as mypy_api

import cdp
from engine import Browser, Subscription
from engine.testing import FakePeer, open_fake_browser


@pytest.fixture
async def fake() -> AsyncIterator[tuple[Browser, FakePeer]]:
    async with open_fake_browser() as pair:
        yield pair


async def test_one_class_types_receive_and_iteration(fake: tuple[Browser, FakePeer]) -> None:
    browser, peer = fake
    async with browser.session.listen(cdp.page.LoadEventFired) as events:
        assert_type(events, Subscription[cdp.page.LoadEventFired])
        peer.event("Page.loadEventFired", {"timestamp": 1.5})
        peer.event("Page.loadEventFired", {"timestamp": 2.5})
        with trio.fail_after(5):
            loaded = await events.receive()
            assert_type(loaded, cdp.page.LoadEventFired)
            assert loaded.timestamp == 1.5
            async for again in events:
                assert_type(again, cdp.page.LoadEventFired)
                assert again.timestamp == 2.5
                break


async def test_several_classes_give_their_union_and_wait_for_a_class_narrows(
    fake: tuple[Browser, FakePeer],
) -> None:
    browser, peer = fake
    session = browser.session
    async with session.listen(cdp.page.LoadEventFired, cdp.page.FrameStoppedLoading) as events:
        assert_type(events, Subscription[cdp.page.LoadEventFired | cdp.page.FrameStoppedLoading])
        peer.event("Page.loadEventFired", {"timestamp": 1.0})
        peer.event("Page.frameStoppedLoading", {"frameId": "F1"})
        with trio.fail_after(5):
            stopped = await events.wait_for(cdp.page.FrameStoppedLoading)
        assert_type(stopped, cdp.page.FrameStoppedLoading)
        assert stopped.frame_id == "F1"
    async with session.listen("Page.loadEventFired") as untyped:
        assert_type(untyped, Subscription[Any])
    async with session.listen(cdp.page.LoadEventFired, typed=False) as raw:
        assert_type(raw, Subscription[cdp.UnknownEvent])
        peer.event("Page.loadEventFired", {"timestamp": 3.0})
        with trio.fail_after(5):
            assert (await raw.receive()).params == {"timestamp": 3.0}
    sub = session.subscribe(cdp.runtime.ConsoleAPICalled)
    assert_type(sub, Subscription[cdp.runtime.ConsoleAPICalled])
    session.unsubscribe(sub)


def test_mypy_rejects_a_field_the_event_does_not_have(tmp_path: Path) -> None:
    snippet = tmp_path / "snippet.py"
    snippet.write_text(
        textwrap.dedent(
            """
            import cdp
            from engine import Session

            async def f(session: Session) -> None:
                async with session.listen(cdp.page.LoadEventFired) as events:
                    event = await events.receive()
                    print(event.timestamp)
                    print(event.frame)
            """
        )
    )
    out, _, status = mypy_api.run(["--strict", "--no-incremental", "--follow-imports=silent", str(snippet)])
    assert status == 1, out
    assert '"LoadEventFired" has no attribute "frame"' in out
    assert out.count("error:") == 1, out
