"""Fault injection against the connection and session layers, with a fake browser over memory channels.

Each test is a way the engine once hung, lost a command or let a group escape; each asserts the specific
error that now ends the wait, under a deadline that is never what ends it.
"""

from __future__ import annotations

import json
import math
import re
from functools import partial
from typing import Any

import pytest
import trio

import cdp
from engine import (
    ActionError,
    Browser,
    ConnectionClosed,
    InvalidParams,
    ProtocolError,
    ResponseDecodeError,
    Session,
    SessionDetached,
    TargetCrashed,
)
from engine._browser import _page_setup
from engine._connection import LARGE_MESSAGE
from engine._hooks import add_hook
from engine._navigating import navigating
from engine._page import Page
from engine._popups import watch_page, watch_popups
from engine.lowlevel import Connection
from engine.testing import FakePeer
from tests.unit.faults.server import read_request, serving

Pair = tuple[Connection, FakePeer, Session]


def nested(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


def cycle() -> list[Any]:
    value: list[Any] = []
    value.append(value)
    return value


@pytest.mark.parametrize(
    ("params", "path", "what"),
    [
        ({"x": math.nan}, "params.x", "nan"),
        ({"x": math.inf}, "params.x", "inf"),
        ({"a": [1, {"b": -math.inf}]}, r"params.a\[1\].b", "inf"),
        ({"n": 10**400}, "params.n", "401 digits"),
        # params is level 1: 299 lists inside it hold their number at level 301.
        ({"deep": nested(299)}, r"params.deep(\[0\]){299}", "deeper than the 300"),
        ({"o": object()}, "params.o", "is a object"),
        ({"c": cycle()}, r"params.c(\[0\]){299}", "deeper than the 300"),  # no endless encode
    ],
)
async def test_params_chromium_cannot_parse_are_refused_before_sending(
    pair: Pair, params: dict[str, Any], path: str, what: str
) -> None:
    connection, peer, browser = pair
    with trio.fail_after(5), pytest.raises(InvalidParams, match=what) as info:
        await browser.execute_raw("Runtime.evaluate", {"expression": "1", **params})
    assert re.fullmatch(path, info.value.path)
    assert connection.pending_count() == 0
    assert connection.statistics().messages_sent == 0
    with pytest.raises(trio.WouldBlock):
        peer.transport.outbound_receive.receive_nowait()


async def test_typed_command_with_nan_is_refused_with_its_field(pair: Pair) -> None:
    _, _, browser = pair
    command = cdp.input.dispatch_mouse_event(type_="mouseMoved", x=float("nan"), y=0)
    with trio.fail_after(5), pytest.raises(InvalidParams, match=r"Input.dispatchMouseEvent: params.x is nan"):
        await browser.execute(command)


async def test_params_at_the_limits_are_sent(pair: Pair) -> None:
    _, peer, browser = pair
    limits = {
        "expression": "1",
        "deep": nested(298),
        "n": 10**308,
        "f": 1.7976931348623157e308,
        "s": "é{[1" * 400,
    }
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(browser.execute_raw, "Runtime.evaluate", limits)
            command = await peer.next_command()
            peer.reply(command)
    assert command["params"]["n"] == 10**308


async def test_an_error_reply_without_id_fails_the_commands_in_flight(pair: Pair) -> None:
    connection, peer, browser = pair
    errors: list[ProtocolError] = []

    async def call() -> None:
        try:
            await browser.execute_raw("Runtime.evaluate", {"expression": "1"})
        except ProtocolError as exc:
            errors.append(exc)

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(call)
            nursery.start_soon(call)
            await peer.next_command()
            await peer.next_command()
            peer.send({"error": {"code": -32700, "message": "JSON: invalid number at position 20"}})
    assert [e.code for e in errors] == [-32700, -32700]
    assert all("no id" in e.message and e.method == "Runtime.evaluate" for e in errors)
    assert connection.pending_count() == 0


@pytest.mark.parametrize(
    "bad",
    [
        {"id": [1], "result": {}},
        {"id": {"x": 1}, "result": {}},
        {"id": True, "result": {}},
        {"method": "Page.loadEventFired", "params": {}, "sessionId": [1]},
        {"method": "Page.loadEventFired", "params": {}, "sessionId": {"a": 1}},
    ],
)
async def test_malformed_ids_are_dropped_and_the_reader_lives(pair: Pair, bad: dict[str, Any]) -> None:
    connection, peer, browser = pair
    peer.send(bad)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(browser.execute_raw, "Browser.getVersion")
            peer.reply(await peer.next_command())
    assert connection.closed is None
    assert connection.statistics().malformed_messages == 1


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ({"error": "boom"}, "malformed error: 'boom'"),
        ({"error": {"code": "x", "message": 5}}, "failed with 0: 5"),
        ({"error": None, "result": []}, "not a JSON object"),
        ({"result": 5}, "not a JSON object"),
    ],
)
async def test_odd_replies_raise_a_clear_error_in_the_caller(
    pair: Pair, reply: dict[str, Any], expected: str
) -> None:
    _, peer, browser = pair

    async def answer() -> None:
        command = await peer.next_command()
        peer.send({"id": command["id"], **reply})

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(answer)
            with pytest.raises((ProtocolError, ResponseDecodeError), match=expected):
                await browser.execute_raw("Browser.getVersion")


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        (b'{"id":%d,"result":{"product":"\xff\xfe"}}', "not valid JSON"),  # bytes that are not UTF-8
        (b'{"id":%d.0,"result":{}}', "the id 7.0, not an integer"),
        (b'{"id":"%d","result":{}}', "the id '7', not an integer"),
        # Deeper than orjson's 1,024 levels and the stdlib's recursion limit: a RecursionError, which the
        # reader's safety net dropped, and the command waited for good.
        (b'{"id":%d,"result":{"x":' + b"[" * 1100 + b"]" * 1100 + b"}}", "nested too deeply"),
    ],
)
async def test_a_reply_that_cannot_be_taken_ends_the_command_whose_id_it_shows(
    pair: Pair, template: bytes, expected: str
) -> None:
    """Dropped as before (and counted), but the command it answers is told, not left waiting for good."""
    connection, peer, browser = pair

    async def answer() -> None:
        command = await peer.next_command()
        assert command["id"] == 7
        peer.send_raw(template % command["id"])

    connection._next_id = 6  # the id the templates name: 7
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(answer)
            with pytest.raises(ResponseDecodeError, match=expected):
                await browser.execute_raw("Browser.getVersion")
    assert connection.statistics().malformed_messages == 1
    assert connection.pending_count() == 0


async def test_a_reply_whose_id_only_begins_like_a_commands_does_not_end_it(pair: Pair) -> None:
    connection, peer, browser = pair

    async def answer() -> None:
        command = await peer.next_command()
        peer.send_raw(b'{"id":%d.5,"result":{}}' % command["id"])  # not this command's id
        peer.reply(command, {"product": "Chrome"})

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(answer)
            assert await browser.execute_raw("Browser.getVersion") == {"product": "Chrome"}
    assert connection.statistics().malformed_messages == 1


async def test_a_large_late_reply_to_a_cancelled_command_is_dropped_unparsed(pair: Pair) -> None:
    """Parsing it would hold every task (a 300 MB one: 1.6 s); its id, read first, says nobody waits. The
    reply here is not even valid JSON: parsed, it would count as malformed."""
    connection, peer, browser = pair
    with trio.fail_after(5):
        with trio.move_on_after(0.05):
            await browser.execute_raw("Runtime.evaluate", {"expression": "'x'.repeat(300000)"})
        command = await peer.next_command()
        before = connection.statistics()
        peer.send_raw(b'{"id":%d,"result":{"result":{"value":"' % command["id"] + b"x" * 300_000)

        async def answer() -> None:
            peer.reply(await peer.next_command(), {"product": "Chrome"})

        async with trio.open_nursery() as nursery:
            nursery.start_soon(answer)
            await browser.execute_raw("Browser.getVersion")  # read after the large one
    after = connection.statistics()
    assert after.unknown_id_replies - before.unknown_id_replies == 1
    assert after.malformed_messages == before.malformed_messages


def _large_ax_tree(count: int) -> dict[str, Any]:
    nodes = [
        {"nodeId": str(i), "ignored": False, "name": {"type": "computedString", "value": f"Item {i}"}}
        for i in range(count)
    ]
    return {"nodes": nodes}


async def test_a_large_typed_reply_decodes_and_a_broken_one_keeps_its_whole_payload(pair: Pair) -> None:
    """A reply over LARGE_MESSAGE is decoded by spending the parsed reply; an error still shows all of it."""
    _, peer, browser = pair
    good = _large_ax_tree(5_000)
    bad = _large_ax_tree(5_000)
    del bad["nodes"][4_000]["ignored"]
    assert len(json.dumps(bad)) > LARGE_MESSAGE

    async def answer(result: dict[str, Any]) -> None:
        peer.reply(await peer.next_command(), result)

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(answer, good)
            tree = await browser.execute(cdp.accessibility.get_full_ax_tree())
        assert [node.node_id for node in tree.nodes] == [str(i) for i in range(5_000)]
        assert tree.nodes[4_999].name == cdp.accessibility.AXValue(
            type_=cdp.accessibility.AXValueType.COMPUTED_STRING, value="Item 4999"
        )
        for together in (False, True):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(answer, bad)
                with pytest.raises(ResponseDecodeError, match="'ignored'") as info:
                    if together:
                        await browser.execute_all(cdp.accessibility.get_full_ax_tree())
                    else:
                        await browser.execute(cdp.accessibility.get_full_ax_tree())
            assert info.value.payload == bad  # every node, the decoded ones too


@pytest.mark.parametrize("size", [math.nan, 2.5, 0, -1, True, "10", math.inf])
async def test_listen_rejects_a_buffer_size_that_is_not_a_positive_int(pair: Pair, size: Any) -> None:
    _, _, browser = pair
    with pytest.raises(ValueError, match="buffer_size"):
        async with browser.listen(buffer_size=size):
            pass


async def test_a_crashed_session_fails_new_commands_at_once_until_revived(pair: Pair) -> None:
    connection, peer, browser_session = pair
    page = connection.sessions.create("P", target_id="TP", target_type="page", parent=browser_session)
    peer.event("Inspector.targetCrashed", {}, session_id="P")
    with trio.fail_after(5):
        while not page.crashed:
            await trio.sleep(0.001)
        with pytest.raises(TargetCrashed, match="reload"):
            await page.execute(cdp.runtime.evaluate(expression="1"))
        assert connection.statistics().messages_sent == 0
        async with trio.open_nursery() as nursery:
            nursery.start_soon(page.execute, cdp.page.reload())
            command = await peer.next_command()
            assert command["method"] == "Page.reload"
            peer.reply(command)
        peer.event("Inspector.targetReloadedAfterCrash", {}, session_id="P")
        while page.crashed:
            await trio.sleep(0.001)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(page.execute_raw, "Runtime.evaluate", {"expression": "1"})
            peer.reply(await peer.next_command(), {"result": {"type": "number", "value": 1}})


async def test_a_session_the_browser_no_longer_knows_raises_session_detached(pair: Pair) -> None:
    # A tab closed just now: its session's reply (-32001) can come before its detach event. It was a raw
    # ProtocolError, so evaluate on a closed tab raised that instead of SessionDetached now and then.
    connection, peer, browser_session = pair
    page = connection.sessions.create("P", target_id="TP", target_type="page", parent=browser_session)
    gone = {"error": {"code": -32001, "message": "Session with given id not found."}}

    async def refuse(count: int) -> None:
        for _ in range(count):
            command = await peer.next_command()
            peer.send({"id": command["id"], "sessionId": "P", **gone})

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(refuse, 3)
            with pytest.raises(SessionDetached, match=r"session P is gone .*-32001"):
                await page.execute_raw("Runtime.evaluate", {"expression": "1"})
            with pytest.raises(SessionDetached, match=r"Runtime\.evaluate"):
                await page.execute(cdp.runtime.evaluate(expression="1"))
            with pytest.raises(SessionDetached):
                await page.execute_all(cdp.runtime.evaluate(expression="1"))

        async def odd() -> None:
            peer.send({"id": (await peer.next_command())["id"], **gone})

        async with trio.open_nursery() as nursery:  # a command with no session keeps the plain error
            nursery.start_soon(odd)
            with pytest.raises(ProtocolError, match="-32001"):
                await browser_session.execute_raw("Browser.getVersion")


async def test_target_crashed_from_discovery_marks_the_session(pair: Pair) -> None:
    connection, peer, browser_session = pair
    page = connection.sessions.create("P", target_id="TP", target_type="page", parent=browser_session)
    peer.event("Target.targetCrashed", {"targetId": "TP", "status": "killed", "errorCode": 9})
    with trio.fail_after(5):
        while not page.crashed:
            await trio.sleep(0.001)
    with pytest.raises(TargetCrashed, match="killed"):
        await page.execute_raw("DOM.getDocument")


async def fake_new_page(peer: FakePeer, fault: str) -> None:
    """Answer Browser.new_page's handshake, then break it during the set-up commands."""
    create = await peer.next_command()
    assert create["method"] == "Target.createTarget"
    peer.reply(create, {"targetId": "T1"})
    attach = await peer.next_command()
    peer.reply(attach, {"sessionId": "S1"})
    setup = [await peer.next_command() for _ in _page_setup()]
    assert {c.get("sessionId") for c in setup} == {"S1"}
    if fault == "dies":
        peer.close()
        return
    peer.event("Target.detachedFromTarget", {"sessionId": "S1", "targetId": "T1"})
    close = await peer.next_command()  # the half-made tab is closed again
    assert close["method"] == "Target.closeTarget"
    peer.reply(close, {"success": True})


@pytest.mark.parametrize(("fault", "error"), [("dies", ConnectionClosed), ("detaches", SessionDetached)])
async def test_new_page_raises_one_error_not_a_group(
    fake: tuple[Browser, FakePeer], fault: str, error: type[Exception]
) -> None:
    browser, peer = fake
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(fake_new_page, peer, fault)
            with pytest.raises(error):
                await browser.new_page()
    assert browser.pages == []


async def test_closed_pages_are_forgotten(fake: tuple[Browser, FakePeer]) -> None:
    browser, peer = fake

    async def next_but_closes() -> dict[str, Any]:
        while True:
            command = await peer.next_command()
            if command["method"] != "Target.closeTarget":
                return command
            # page.close() asks again when the detach is not read within CLOSE_CONFIRM[0] (a loaded machine)
            peer.reply(command, {"success": True})

    async def serve(cycles: int) -> None:
        for i in range(cycles):
            create = await next_but_closes()
            peer.reply(create, {"targetId": f"T{i}"})
            peer.reply(await peer.next_command(), {"sessionId": f"S{i}"})
            for _ in _page_setup():
                peer.reply(await peer.next_command())
            close = await peer.next_command()
            assert close["method"] == "Target.closeTarget"
            peer.reply(close, {"success": True})
            peer.event("Target.detachedFromTarget", {"sessionId": f"S{i}", "targetId": f"T{i}"})
            peer.event("Target.targetDestroyed", {"targetId": f"T{i}"})
        await next_but_closes()  # until cancelled

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve, 50)
            for _ in range(50):
                page = await browser.new_page()
                await page.close()
            nursery.cancel_scope.cancel()
    assert browser._pages == {}
    assert browser.pages == []


async def test_closing_a_page_whose_tab_just_went_on_its_own_is_no_error(
    fake: tuple[Browser, FakePeer],
) -> None:
    # A popup that downloads closes itself; page.close() before its end reached us raised ProtocolError.
    browser, peer = fake
    page = Page(browser, browser.connection.sessions.create("S1", target_id="T1", target_type="page"), "T1")
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(page.close)
            command = await peer.next_command()
            assert command["method"] == "Target.closeTarget"
            peer.send(
                {"id": command["id"], "error": {"code": -32602, "message": "No target with given id found"}}
            )
    assert page.closed
    other = Page(browser, browser.connection.sessions.create("S2", target_id="T2", target_type="page"), "T2")

    async def refuse() -> None:
        command = await peer.next_command()
        peer.send({"id": command["id"], "error": {"code": -32000, "message": "Not allowed"}})

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(refuse)
            with pytest.raises(ProtocolError, match="Not allowed"):  # any other refusal still raises
                await other.close()


def opened(peer: FakePeer, target: str, session: str | None) -> None:
    """The browser's news of a tab page T1 opened, and of its attach when ``session`` is given."""
    info = {"targetId": target, "type": "page", "openerId": "T1", "url": "about:blank", "attached": False}
    peer.event("Target.targetCreated", {"targetInfo": info})
    if session is not None:
        peer.event(
            "Target.attachedToTarget", {"sessionId": session, "targetInfo": info, "waitingForDebugger": False}
        )


async def test_a_popup_gone_before_its_attach_fails_its_wait_at_once(
    fake: tuple[Browser, FakePeer],
) -> None:
    # A tab that closed itself before the attach left expect_popup waiting for its whole deadline (4 runs
    # of 90 on Chromium 156).
    browser, peer = fake
    watch_popups(browser, [], auto=False)  # an endpoint that refused auto-attach
    session = browser.connection.sessions.create("S1", target_id="T1", target_type="page")
    page = Page(browser, session, "T1")
    browser._keep(page)
    with trio.fail_after(5):
        with pytest.raises(ActionError, match=r"closed itself before it could be attached") as caught:
            async with page.expect_popup():
                opened(peer, "P1", None)
                peer.event("Target.targetDestroyed", {"targetId": "P1"})
        assert caught.value.check == "popup"
        async with page.expect_popup() as outer, page.expect_popup() as inner:
            opened(peer, "P2", "S2")  # the inner block's click: both blocks end with its tab
    assert outer.page.target_id == inner.page.target_id == "P2"


async def test_auto_attached_tabs_are_resumed_after_set_up_or_let_go(
    fake: tuple[Browser, FakePeer],
) -> None:
    # Attached only after it ran, a popup whose first script called alert() stayed frozen (2 runs of 20).
    browser, peer = fake
    watch_popups(browser, [("Page.enable", {})], auto=True)
    session = browser.connection.sessions.create("S1", target_id="T1", target_type="page")
    page = Page(browser, session, "T1")
    browser._keep(page)

    def attached(target: str, session_id: str, opener: str | None, *, paused: bool) -> None:
        info = {"targetId": target, "type": "page", "openerId": opener, "url": "", "attached": True}
        peer.event(
            "Target.attachedToTarget",
            {"sessionId": session_id, "targetInfo": info, "waitingForDebugger": paused},
        )

    assert not browser._set_up
    peer.event("Target.targetCreated", {"targetInfo": {"targetId": "E1", "type": "page", "url": ""}})
    with trio.fail_after(5):
        attached("E1", "S6", None, paused=False)  # a tab open before us, attached with the rest: let go
        command = await peer.next_command()
        assert (command["method"], command.get("params")) == ("Target.detachFromTarget", {"sessionId": "S6"})
        browser._set_up = True
        attached("E1", "S7", None, paused=False)  # attach_page's own attach to it: kept
        async with page.expect_popup() as popup:
            attached("P1", "S2", "T1", paused=True)
        sent = [await peer.next_command() for _ in range(2)]
        assert [(c["method"], c.get("sessionId")) for c in sent] == [
            ("Page.enable", "S2"),  # set up before it runs
            ("Runtime.runIfWaitingForDebugger", "S2"),
        ]
        assert popup.page.target_id == "P1"
        assert popup.page in browser.pages
        attached("N1", "S3", None, paused=True)  # new_page's own tab, or another client's: let it run, let go
        sent = [await peer.next_command() for _ in range(2)]
        assert [(c["method"], c.get("sessionId"), c.get("params")) for c in sent] == [
            ("Runtime.runIfWaitingForDebugger", "S3", None),
            ("Target.detachFromTarget", None, {"sessionId": "S3"}),
        ]
        attached("N1", "S4", None, paused=False)  # an attach someone asked for: left alone
        attached("P1", "S5", "T1", paused=False)  # a second session to our popup (evaluate's): left alone
        browser.session.execute_nowait(cdp.browser.get_version())
        assert (await peer.next_command())["method"] == "Browser.getVersion"
    assert [p.target_id for p in browser.pages] == ["T1", "P1"]


async def test_a_popups_load_wait_is_not_answered_by_its_initial_empty_document(
    fake: tuple[Browser, FakePeer],
) -> None:
    # Attached from its start, a popup opened with a URL is on about:blank ("complete") until that URL
    # commits: a load wait read that and ended (1 run in 12 on Chromium 156, under load).
    browser, peer = fake
    watch_popups(browser, [], auto=True)
    session = browser.connection.sessions.create("S1", target_id="T1", target_type="page")
    opener = Page(browser, session, "T1")
    browser._keep(opener)
    watch_page(opener)
    info = {"targetId": "P1", "type": "page", "openerId": "T1", "url": "", "attached": True}
    with trio.fail_after(5):
        async with opener.expect_popup() as popup:
            peer.event(
                "Page.windowOpen",
                {"url": "http://x/slow.html", "windowName": "", "windowFeatures": [], "userGesture": True},
                "S1",
            )
            peer.event(
                "Target.attachedToTarget", {"sessionId": "S2", "targetInfo": info, "waitingForDebugger": True}
            )
        assert (await peer.next_command())["method"] == "Runtime.runIfWaitingForDebugger"
        tab = popup.page
        # 0.5 s: a wait keeps a tenth of a deadline under a second for its error (5 ms of 0.05 s is a
        # scheduler hiccup on a loaded machine).
        with pytest.raises(ActionError, match=r"navigating to http://x/slow\.html"), trio.fail_after(0.5):
            await tab.wait_for(load_state="load")  # given up on: it leaves its Event for the next wait
        async with trio.open_nursery() as nursery:
            nursery.start_soon(partial(tab.wait_for, load_state="load"))
            with trio.move_on_after(0.3) as quiet:
                early = await peer.next_command()
            assert quiet.cancelled_caught, f"looked at about:blank: {early}"
            peer.event("Page.frameNavigated", {"frame": {"id": "P1", "url": "http://x/slow.html"}}, "S2")
            command = await peer.next_command()  # only now does it look at the document
            assert (command["method"], command["sessionId"]) == ("Runtime.evaluate", "S2")
            peer.reply(command, {"result": {"type": "string", "value": "complete"}})
        # A tab an out-of-process iframe opens is the page's: its URL comes on the iframe's session.
        frame = {"targetId": "F1", "type": "iframe", "url": "", "attached": True}
        peer.event(
            "Target.attachedToTarget",
            {"sessionId": "S3", "targetInfo": frame, "waitingForDebugger": False},
            "S1",
        )
        async with opener.expect_popup() as second:
            peer.event(
                "Page.windowOpen",
                {"url": "http://y/", "windowName": "", "windowFeatures": [], "userGesture": True},
                "S3",
            )
            info["targetId"] = "P2"
            peer.event(
                "Target.attachedToTarget", {"sessionId": "S4", "targetInfo": info, "waitingForDebugger": True}
            )
        assert navigating(second.page)


# -- connect() against endpoints that misbehave ---------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (None, r"did not answer GET /json/version within 0.5 s"),
        (b"{}", r"webSocketDebuggerUrl"),
        (b'{"webSocketDebuggerUrl": 5}', r"webSocketDebuggerUrl"),
        ("upgrade", r"Target.setDiscoverTargets got no answer within 0.5 s"),
    ],
    ids=["silent-http", "empty-version", "url-not-a-string", "silent-websocket"],
)
async def test_connect_to_a_misbehaving_endpoint_says_what_came(answer: Any, expected: str) -> None:
    from engine import ConnectError, Settings, connect
    from engine._ws_codec import accept_for

    async def handle(stream: trio.SocketStream) -> None:
        request = await read_request(stream)
        if answer == "upgrade":
            key = next(
                line.split(b":", 1)[1].strip().decode()
                for line in request.split(b"\r\n")
                if line.lower().startswith(b"sec-websocket-key:")
            )
            await stream.send_all(
                b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + f"Sec-WebSocket-Accept: {accept_for(key)}\r\n\r\n".encode()
            )
        elif answer is not None:
            head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(answer)}\r\nConnection: close\r\n\r\n"
            await stream.send_all(head.encode() + answer)
        await trio.sleep_forever()

    settings = Settings(connect_timeout=0.5)
    with trio.fail_after(10):
        async with serving(handle) as port:
            url = (
                f"ws://127.0.0.1:{port}/devtools/browser/x"
                if answer == "upgrade"
                else f"http://127.0.0.1:{port}"
            )
            with pytest.raises(ConnectError, match=expected):
                async with connect(url, settings=settings):
                    pass


async def test_a_paused_child_is_resumed_after_its_parent_s_hooks_have_set_it_up(pair: Pair) -> None:
    """The engine's hooks enable what they follow on a new iframe or worker (Network.enable for
    networkidle) as its attach is delivered; sent after the resume, that came too late for its first
    requests (a worker's script request was never seen to end)."""
    connection, peer, _ = pair
    with trio.fail_after(5):
        peer.event("Target.attachedToTarget", _target("P", "page"))
        while (page := connection.sessions.get("P")) is None:
            await trio.sleep(0.001)

        def set_up(method: str, params: dict[str, Any]) -> None:
            child = connection.sessions.get(params["sessionId"])
            assert child is not None
            child.execute_nowait(cdp.network.enable())

        add_hook(page, ("Target.attachedToTarget",), set_up)
        peer.event("Target.attachedToTarget", _target("W", "worker", waiting=True), session_id="P")
        sent = [await peer.next_command() for _ in range(3)]
    assert [(c["method"], c.get("sessionId")) for c in sent] == [
        ("Target.setAutoAttach", "W"),  # its own workers attach under it
        ("Network.enable", "W"),
        ("Runtime.runIfWaitingForDebugger", "W"),
    ]


def _target(session_id: str, kind: str, *, waiting: bool = False) -> dict[str, Any]:
    info = {"targetId": f"T-{session_id}", "type": kind, "title": "", "url": "about:blank", "attached": True}
    return {"sessionId": session_id, "targetInfo": info, "waitingForDebugger": waiting}
