"""Connection faults shown with a fake browser over memory channels (no Chromium needed)."""

from __future__ import annotations

from typing import Any

import pytest
import trio

import cdp
from engine import (
    Browser,
    ConnectionClosed,
    EventOverflow,
    ProtocolError,
    ResponseDecodeError,
    Session,
    SessionDetached,
    TargetCrashed,
)
from engine._hooks import add_hook
from engine.lowlevel import Connection
from engine.testing import FakePeer


async def test_reply_is_typed(pair: tuple[Connection, FakePeer, Session]) -> None:
    connection, peer, browser = pair
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            results = []

            async def call() -> None:
                results.append(await browser.execute(cdp.browser.get_version()))

            nursery.start_soon(call)
            command = await peer.next_command()
            assert command["method"] == "Browser.getVersion"
            assert "sessionId" not in command
            fields = ("protocolVersion", "product", "revision", "userAgent", "jsVersion")
            peer.reply(command, dict.fromkeys(fields, "x") | {"extra": 1})
    assert results[0].product == "x"
    assert connection.pending_count() == 0


async def test_protocol_error_carries_code_and_method(pair: tuple[Connection, FakePeer, Session]) -> None:
    _, peer, browser = pair
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:

            async def answer() -> None:
                command = await peer.next_command()
                peer.send(
                    {"id": command["id"], "error": {"code": -32601, "message": "'Nope.x' wasn't found"}}
                )

            nursery.start_soon(answer)
            with pytest.raises(ProtocolError) as info:
                await browser.execute_raw("Nope.x")
    assert info.value.code == -32601
    assert info.value.method == "Nope.x"


async def test_cancelled_call_removes_pending_and_drops_late_reply(
    pair: tuple[Connection, FakePeer, Session],
) -> None:
    connection, peer, browser = pair
    with trio.move_on_after(0.05) as scope:
        await browser.execute_raw("Runtime.evaluate", {"expression": "1"})
    assert scope.cancelled_caught
    assert connection.pending_count() == 0
    command = await peer.next_command()
    peer.reply(command, {"late": True})
    with trio.fail_after(5):
        while connection.statistics().unknown_id_replies == 0:
            await trio.sleep(0.001)
    # The reader is alive: the next command still works.
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(browser.execute_raw, "Browser.getVersion")
            peer.reply(await peer.next_command())
    assert connection.pending_count() == 0


async def test_garbage_is_counted_and_reader_lives(pair: tuple[Connection, FakePeer, Session]) -> None:
    connection, peer, browser = pair
    peer.send_raw(b"{not json")
    peer.send_raw(b"[1, 2]")
    peer.send({"id": 999_999, "result": {}})
    peer.event("Page.loadEventFired", {"timestamp": 1}, session_id="NO-SUCH-SESSION")
    peer.send({"neither": True})
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(browser.execute_raw, "Browser.getVersion")
            peer.reply(await peer.next_command())
    stats = connection.statistics()
    assert stats.malformed_messages == 3
    assert stats.unknown_id_replies == 1
    assert stats.unknown_session_events == 1


async def test_link_closing_fails_every_pending_command(pair: tuple[Connection, FakePeer, Session]) -> None:
    connection, peer, browser = pair
    page = connection.sessions.create("S1", target_id="T1", target_type="page", parent=browser)
    errors: list[BaseException] = []

    async def call(session: Session) -> None:
        try:
            await session.execute_raw("Runtime.evaluate", {"expression": "1"})
        except ConnectionClosed as exc:
            errors.append(exc)

    with trio.fail_after(1):
        async with trio.open_nursery() as nursery:
            for session in (browser, page, page):
                nursery.start_soon(call, session)
            for _ in range(3):
                await peer.next_command()
            peer.close()
    assert len(errors) == 3
    assert connection.pending_count() == 0
    with pytest.raises(ConnectionClosed):
        await browser.execute_raw("Browser.getVersion")


async def test_detach_fails_only_that_session(
    fake: tuple[Browser, FakePeer], pair: tuple[Connection, FakePeer, Session]
) -> None:
    connection, peer, _ = pair
    real = fake[0]
    a = connection.sessions.create("A", target_id="TA", target_type="page", parent=real.session)
    b = connection.sessions.create("B", target_id="TB", target_type="page", parent=real.session)
    outcome: dict[str, object] = {}

    async def call(name: str, session: Session) -> None:
        try:
            outcome[name] = await session.execute_raw("Runtime.evaluate", {"expression": "1"})
        except SessionDetached as exc:
            outcome[name] = exc

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(call, "a", a)
            nursery.start_soon(call, "b", b)
            first, second = await peer.next_command(), await peer.next_command()
            peer.event("Target.detachedFromTarget", {"sessionId": "A", "targetId": "TA"})
            by_session = {first["sessionId"]: first, second["sessionId"]: second}
            peer.reply(by_session["B"], {"ok": 1})
    assert isinstance(outcome["a"], SessionDetached)
    assert outcome["b"] == {"ok": 1}
    with pytest.raises(SessionDetached):
        await a.execute_raw("Runtime.evaluate")


async def test_a_detached_sessions_fire_and_forget_commands_are_forgotten(
    fake: tuple[Browser, FakePeer], pair: tuple[Connection, FakePeer, Session]
) -> None:
    # Their replies never come; kept, their ids grew by a few per closed page for the life of the link.
    connection, peer, _ = pair
    a = connection.sessions.create("A", target_id="TA", target_type="page", parent=fake[0].session)
    b = connection.sessions.create("B", target_id="TB", target_type="page", parent=fake[0].session)
    for session in (a, a, b):
        session.execute_nowait(cdp.runtime.release_object_group(object_group="g"))
    with trio.fail_after(5):
        sent = [await peer.next_command() for _ in range(3)]
        peer.event("Target.detachedFromTarget", {"sessionId": "A", "targetId": "TA"})
        while not a.detached:
            await trio.sleep(0.001)
    assert list(connection._ignored) == [sent[2]["id"]]  # b's, still awaited
    peer.reply(sent[2])
    peer.reply(sent[0])  # a late reply for the detached session: dropped, counted
    with trio.fail_after(5):
        while connection.statistics().messages_received < 3:
            await trio.sleep(0.001)
    assert not connection._ignored
    assert connection.statistics().unknown_id_replies == 1


async def test_crash_fails_pending_with_target_crashed(
    fake: tuple[Browser, FakePeer], pair: tuple[Connection, FakePeer, Session]
) -> None:
    connection, peer, _ = pair
    browser = fake[0]
    page = connection.sessions.create("P", target_id="TP", target_type="page", parent=browser.session)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:

            async def crash() -> None:
                await peer.next_command()
                peer.event("Inspector.targetCrashed", {}, session_id="P")

            nursery.start_soon(crash)
            with pytest.raises(TargetCrashed):
                await page.execute_raw("Runtime.evaluate", {"expression": "while(1){}"})
    assert connection.pending_count() == 0


@pytest.mark.parametrize("overflow", ["error", "drop_oldest", "drop_newest"])
async def test_overflow_policies(pair: tuple[Connection, FakePeer, Session], overflow: str) -> None:
    _, peer, browser = pair
    async with browser.listen(cdp.page.LoadEventFired, buffer_size=3, overflow=overflow) as events:  # type: ignore[call-overload]
        for i in range(10):
            peer.event("Page.loadEventFired", {"timestamp": i})
        with trio.fail_after(5):
            while events.statistics().buffered + events.statistics().dropped < 10:
                await trio.sleep(0.001)
        stamps = [(await events.receive()).timestamp for _ in range(3)]
        stats = events.statistics()
        assert stats.dropped == 7
        if overflow == "drop_oldest":
            assert stamps == [7, 8, 9]
        else:
            assert stamps == [0, 1, 2]
        if overflow == "error":
            with pytest.raises(EventOverflow, match="7 event"):
                await events.receive()


async def test_overflow_error_is_raised_where_the_events_were_lost(
    pair: tuple[Connection, FakePeer, Session],
) -> None:
    _, peer, browser = pair
    async with browser.listen(cdp.page.LoadEventFired, buffer_size=3) as events:
        with trio.fail_after(5):
            for i in range(10):
                peer.event("Page.loadEventFired", {"timestamp": i})
            while events.statistics().dropped < 7:
                await trio.sleep(0.001)
            assert (await events.receive()).timestamp == 0
            peer.event("Page.loadEventFired", {"timestamp": 10})  # room again: kept, after the gap
            while events.statistics().buffered < 3:
                await trio.sleep(0.001)
            assert [(await events.receive()).timestamp for _ in range(2)] == [1, 2]
            with pytest.raises(EventOverflow, match="7 event"):
                await events.receive()
            assert (await events.receive()).timestamp == 10


async def test_a_full_drop_oldest_buffer_keeps_the_news_of_a_crash(
    fake: tuple[Browser, FakePeer], pair: tuple[Connection, FakePeer, Session]
) -> None:
    connection, peer, _ = pair
    page = connection.sessions.create("P", target_id="TP", target_type="page", parent=fake[0].session)
    async with page.listen(cdp.page.LoadEventFired, buffer_size=2, overflow="drop_oldest") as events:
        with trio.fail_after(5):
            peer.event("Page.loadEventFired", {"timestamp": 0}, session_id="P")
            peer.event("Inspector.targetCrashed", {}, session_id="P")
            while not page.crashed:
                await trio.sleep(0.001)
            page._revived()  # as a reload does; a second crash comes next
            peer.event("Inspector.targetCrashed", {}, session_id="P")
            for i in range(1, 4):
                peer.event("Page.loadEventFired", {"timestamp": i}, session_id="P")
            while events.statistics().dropped < 2:
                await trio.sleep(0.001)
            for _ in range(2):  # a second marker in a row was dropped for an event, and the count went wrong
                with pytest.raises(TargetCrashed, match="crashed"):
                    await events.receive()
            assert [(await events.receive()).timestamp for _ in range(2)] == [2, 3]
            assert events.statistics().buffered == 0


async def test_bad_event_raises_once_and_subscription_goes_on(
    pair: tuple[Connection, FakePeer, Session],
) -> None:
    _, peer, browser = pair
    async with browser.listen(cdp.page.FrameNavigated, "Some.newEvent", strict=False) as events:
        peer.event("Page.frameNavigated", {"type": "Navigation"})  # 'frame' is required
        peer.event("Some.newEvent", {"x": 1})
        with trio.fail_after(5):
            with pytest.raises(ResponseDecodeError) as info:
                await events.receive()
            assert info.value.payload == {"type": "Navigation"}
            unknown = await events.receive()
    assert isinstance(unknown, cdp.UnknownEvent)
    assert unknown.params == {"x": 1}


async def test_closing_ends_subscriptions(pair: tuple[Connection, FakePeer, Session]) -> None:
    _, peer, browser = pair
    async with browser.listen() as events:
        peer.event("Page.loadEventFired", {"timestamp": 1})
        peer.close()
        with trio.fail_after(5):
            first = await events.receive()
            assert first.timestamp == 1
            with pytest.raises(ConnectionClosed):
                await events.receive()


async def test_each_event_reaches_exactly_its_subscriptions_in_order(
    pair: tuple[Connection, FakePeer, Session],
) -> None:
    _, peer, browser = pair
    seen: list[tuple[str, str]] = []

    def hook(method: str, _: dict[str, Any]) -> None:
        seen.append(("hook", method))
        browser.unsubscribe(hooked)  # during delivery: the subscriptions after it still get this event

    hooked = add_hook(browser, ("Page.loadEventFired",), hook)
    loads = browser.subscribe(cdp.page.LoadEventFired)
    every = browser.subscribe()
    both = browser.subscribe("Page.loadEventFired", "Page.domContentEventFired")
    sent = ["Page.loadEventFired", "Page.domContentEventFired", "Some.newEvent", "Page.loadEventFired"]
    for method in sent:
        peer.event(method, {"timestamp": 1})
    with trio.fail_after(5):
        got = {
            name: [(await sub.receive()).method for _ in range(count)]
            for name, sub, count in (("loads", loads, 2), ("every", every, 4), ("both", both, 3))
        }
    assert seen == [("hook", "Page.loadEventFired")]
    assert got == {
        "loads": ["Page.loadEventFired"] * 2,
        "every": sent,
        "both": ["Page.loadEventFired", "Page.domContentEventFired", "Page.loadEventFired"],
    }
    browser.unsubscribe(every)
    peer.event("Some.newEvent", {})
    peer.event("Page.domContentEventFired", {"timestamp": 2})
    with trio.fail_after(5):
        assert (await both.receive()).timestamp == 2  # the unnamed event went to no one
    assert loads.statistics().buffered == 0
    for sub in (loads, both):
        browser.unsubscribe(sub)
    assert browser._routes == {}
    assert browser._catch_all == ()


async def test_an_endpoint_that_refuses_discovery_still_connects(
    fake: tuple[Browser, FakePeer],
    pair: tuple[Connection, FakePeer, Session],
) -> None:
    connection, peer, _ = pair
    browser = fake[0]
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(browser._setup)
            command = await peer.next_command()
            assert command["method"] == "Target.setDiscoverTargets"
            peer.send({"id": command["id"], "error": {"code": -32000, "message": "Not allowed"}})
    assert connection.closed is None
