"""Checked names: listen() refuses an event the bindings do not know and says the closest one;
execute_raw() refuses a known command without a required param before anything is sent."""

from __future__ import annotations

import enum
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio

import cdp
from engine import Browser, InvalidParams, UnknownName
from engine._names import check, closest, suggest
from engine.testing import FakePeer, open_fake_browser


@pytest.fixture
async def fake() -> AsyncIterator[tuple[Browser, FakePeer]]:
    async with open_fake_browser() as pair:
        yield pair


@pytest.mark.parametrize(
    ("typo", "meant"),
    [
        ("Page.loadEventFire", "Page.loadEventFired"),
        ("page.loadEventFired", "Page.loadEventFired"),
        ("Network.requestWillBeSend", "Network.requestWillBeSent"),
        ("Runtime.consoleApiCalled", "Runtime.consoleAPICalled"),
        ("Runtime.exceptionThown", "Runtime.exceptionThrown"),
    ],
)
def test_a_typo_gets_the_closest_known_event(typo: str, meant: str) -> None:
    assert suggest(typo, "event") == meant
    with pytest.raises(UnknownName, match=rf"did you mean '{meant}'\?.*strict=False") as info:
        check(typo, "event")
    assert info.value.suggestion == meant
    assert isinstance(info.value, ValueError)


def test_nothing_close_says_how_names_read() -> None:
    assert closest("Zzz.qqq", ["Page.loadEventFired"]) is None
    with pytest.raises(UnknownName, match=r"names read Domain\.name"):
        check("Zzz.qqq", "event")
    assert suggest("Page.navigat", "command") == "Page.navigate"


async def test_listen_refuses_an_unknown_event_name_and_strict_false_allows_it(
    fake: tuple[Browser, FakePeer],
) -> None:
    browser, peer = fake
    session = browser.session
    with pytest.raises(UnknownName, match=r"Page\.loadEventFired"):
        async with session.listen("Page.loadEventFire"):
            pass
    with pytest.raises(UnknownName):
        session.subscribe(cdp.page.LoadEventFired, "Page.loadEventFire")
    assert session._subscriptions == []  # nothing half-made stays subscribed
    async with session.listen("Page.eventFromTheFuture", strict=False) as events:
        peer.event("Page.eventFromTheFuture", {"x": 1})
        with trio.fail_after(5):
            event = await events.receive()
    assert event == cdp.UnknownEvent(method="Page.eventFromTheFuture", params={"x": 1})


async def test_execute_raw_names_a_missing_required_param_before_sending(
    fake: tuple[Browser, FakePeer],
) -> None:
    browser, peer = fake
    with pytest.raises(
        InvalidParams, match=r"Page.navigate needs the param 'url' \(you passed 'URL': names are case"
    ) as info:
        await browser.session.execute_raw("Page.navigate", {"URL": "http://127.0.0.1/"})
    assert (info.value.method, info.value.path) == ("Page.navigate", "url")
    with pytest.raises(InvalidParams, match=r"'frameId' \(you passed 'frameID'"):
        await browser.session.execute_raw("Page.createIsolatedWorld", {"frameID": "F"})
    with pytest.raises(InvalidParams, match=r"Runtime\.evaluate needs the param 'expression'"):
        await browser.session.execute_raw("Runtime.evaluate")
    assert browser.connection.statistics().messages_sent == 0
    with pytest.raises(trio.WouldBlock):
        peer.transport.outbound_receive.receive_nowait()


@pytest.mark.parametrize(
    ("params", "said"),
    [
        (["6*7"], r"Runtime\.evaluate: params must be a dict .* not list \['6\*7'\]"),
        ("expression", r"params must be a dict .* not str 'expression'"),
        ([("expression", "6*7")], r"params must be a dict .* not list"),
        ({5: "6*7"}, r"Runtime\.evaluate: param names must be str, not int 5"),
        ({"expression": "1", None: 1}, r"param names must be str, not NoneType None"),
        ({("expression",): "x"}, r"param names must be str, not tuple"),
    ],
)
@pytest.mark.parametrize("method", ["Runtime.evaluate", "Brand.newMethod"])
async def test_execute_raw_refuses_params_that_are_not_an_object_with_str_keys(
    fake: tuple[Browser, FakePeer], params: object, said: str, method: str
) -> None:
    # Before: a list passed the required check when it held the name, and a non-str key crashed the
    # check's hint with AttributeError; an unknown method sent either as it was.
    browser, peer = fake
    with pytest.raises(InvalidParams, match=said.replace("Runtime\\.evaluate", re.escape(method))):
        with trio.fail_after(5):  # the old code sent some of these, and no reply comes
            await browser.session.execute_raw(method, params)  # type: ignore[arg-type]
    assert browser.connection.statistics().messages_sent == 0
    with pytest.raises(trio.WouldBlock):
        peer.transport.outbound_receive.receive_nowait()


async def test_execute_raw_sends_unknown_methods_and_complete_params(fake: tuple[Browser, FakePeer]) -> None:
    browser, peer = fake

    class Name(enum.StrEnum):
        url = "url"

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(browser.session.execute_raw, "Brand.newMethod", {"anything": 1})
            nursery.start_soon(browser.session.execute_raw, "Page.navigate", {"url": "about:blank"})
            named: dict[str, Any] = {Name.url: "about:blank"}
            nursery.start_soon(browser.session.execute_raw, "Page.navigate", named)
            sent = []
            for _ in range(3):
                command = await peer.next_command()
                sent.append(command["params"])
                peer.reply(command)
    # The StrEnum key went as its value: a str subclass is a name (the check once refused it).
    assert sorted(sent, key=str) == [{"anything": 1}, {"url": "about:blank"}, {"url": "about:blank"}]
