"""``Session.execute_all`` and ``Browser.execute_all``: commands sent together, one task waiting for all.

Each test runs twice: with the reader task resting (the caller then reads the link itself, as a lone
``execute`` does) and with a subscription open (the reader task reads and wakes the caller once).
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import pytest
import trio

import cdp
import engine._connection
from engine import (
    Browser,
    ConnectionClosed,
    InvalidParams,
    ProtocolError,
    ResponseDecodeError,
    Session,
    SessionDetached,
)
from engine.lowlevel import Connection
from engine.testing import FakePeer, open_fake_browser

Pair = tuple[Connection, FakePeer, Session]
Mode = Callable[[Pair], AbstractAsyncContextManager[None]]


@asynccontextmanager
async def _reader_resting(pair: Pair) -> AsyncIterator[None]:
    """The reader rests with no timer once a round trip ends, so the commands under test are led."""
    connection, peer, browser = pair
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine._connection, "READER_REST_S", math.inf)
        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(browser.execute_raw, "Browser.getVersion")
                peer.reply(await peer.next_command())
            while not connection._reader_resting:
                await trio.sleep(0.0005)
        yield


@asynccontextmanager
async def _reader_reading(pair: Pair) -> AsyncIterator[None]:
    async with pair[2].listen("Page.loadEventFired"):
        yield


@pytest.fixture(params=[_reader_resting, _reader_reading], ids=["leading", "parked"])
def mode(request: pytest.FixtureRequest) -> Mode:
    return request.param  # type: ignore[no-any-return]


def _evaluate(n: int) -> cdp.Command[cdp.runtime.EvaluateResult]:
    return cdp.runtime.evaluate(expression=str(n))


def _number(n: int) -> dict[str, Any]:
    return {"result": {"type": "number", "value": n, "description": str(n)}}


async def _commands(peer: FakePeer, count: int) -> list[dict[str, Any]]:
    return [await peer.next_command() for _ in range(count)]


def _attach(peer: FakePeer, session_id: str) -> None:
    """A page target attached as ``session_id`` ("S1" is target "T1")."""
    target_id = f"T{session_id[1:]}"
    peer.event(
        "Target.attachedToTarget",
        {
            "sessionId": session_id,
            "targetInfo": {"targetId": target_id, "type": "page", "title": "", "url": "about:blank",
                           "attached": True, "canAccessOpener": False},
            "waitingForDebugger": False,
        },
    )  # fmt: skip


async def _sessions(connection: Connection, peer: FakePeer, *ids: str) -> list[Session]:
    for session_id in ids:
        _attach(peer, session_id)
    with trio.fail_after(5):
        while not set(ids) <= {s.session_id for s in connection.sessions}:
            await trio.sleep(0.0005)
    found = [connection.sessions.get(session_id) for session_id in ids]
    assert all(session is not None for session in found)
    return found  # type: ignore[return-value]


async def test_results_come_back_in_order_whatever_order_the_replies_take(pair: Pair, mode: Mode) -> None:
    connection, peer, browser = pair
    got: list[Any] = []
    async with mode(pair):
        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:

                async def call() -> None:
                    got.extend(await browser.execute_all(*(_evaluate(n) for n in range(5))))

                nursery.start_soon(call)
                commands = await _commands(peer, 5)
                await trio.sleep(0.001)
                assert connection._leading is (mode is _reader_resting)  # the caller reads, or is woken
                assert [c["params"]["expression"] for c in commands] == ["0", "1", "2", "3", "4"]
                for command in reversed(commands):
                    peer.reply(command, _number(int(command["params"]["expression"])))
    assert [r.result.value for r in got] == [0, 1, 2, 3, 4]
    assert connection.pending_count() == 0


async def test_mixed_commands_give_a_typed_tuple(pair: Pair, mode: Mode) -> None:
    _, peer, browser = pair
    async with mode(pair):
        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:

                async def answer() -> None:
                    version, evaluate = await _commands(peer, 2)
                    peer.reply(version, {"protocolVersion": "1.3", "product": "Fake", "revision": "r",
                                         "userAgent": "u", "jsVersion": "j"})  # fmt: skip
                    peer.reply(evaluate, _number(7))

                nursery.start_soon(answer)
                version, evaluate = await browser.execute_all(cdp.browser.get_version(), _evaluate(7))
    assert version.product == "Fake"
    assert evaluate.result.value == 7


async def test_the_first_error_in_order_is_raised_after_every_reply(pair: Pair, mode: Mode) -> None:
    connection, peer, browser = pair
    async with mode(pair):
        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:

                async def answer() -> None:
                    first, second, third = await _commands(peer, 3)
                    peer.send({"id": third["id"], "error": {"code": -32000, "message": "third failed"}})
                    peer.send({"id": second["id"], "error": {"code": -32000, "message": "second failed"}})
                    await trio.sleep(0.01)
                    assert connection.pending_count() == 1  # still waiting for the first
                    peer.reply(first, _number(0))

                nursery.start_soon(answer)
                with pytest.raises(ProtocolError, match="second failed") as info:
                    await browser.execute_all(_evaluate(0), _evaluate(1), _evaluate(2))
    assert info.value.method == "Runtime.evaluate"
    assert connection.pending_count() == 0


async def test_each_reply_is_decoded_as_it_comes_and_a_bad_one_is_raised_in_order(
    pair: Pair, mode: Mode
) -> None:
    # Decoding while the rest are on their way takes the decodes off the wait for the last reply. A reply
    # that does not decode is kept for the caller, not lost in the reader (its group would wait forever),
    # and raised in order after every reply is in.
    connection, peer, browser = pair
    pending_at_decode: list[int] = []
    decode = engine._connection.decoded

    def watched(*args: Any) -> Any:
        pending_at_decode.append(connection.pending_count())
        return decode(*args)

    async with mode(pair):
        with pytest.MonkeyPatch.context() as patch, trio.fail_after(5):
            patch.setattr(engine._connection, "decoded", watched)
            async with trio.open_nursery() as nursery:

                async def answer() -> None:
                    first, second, third = await _commands(peer, 3)
                    peer.reply(third, _number(2))
                    peer.reply(second, {"result": {"value": 1}})  # no "type": a binding mismatch
                    await trio.sleep(0.01)
                    assert connection.pending_count() == 1  # still waiting for the first
                    peer.reply(first, _number(0))

                nursery.start_soon(answer)
                with pytest.raises(ResponseDecodeError, match=r"Runtime\.evaluate") as info:
                    await browser.execute_all(_evaluate(0), _evaluate(1), _evaluate(2))
    assert pending_at_decode == [2, 1, 0]  # the third and second decoded before the first came
    assert info.value.payload == {"result": {"value": 1}}
    assert connection.pending_count() == 0
    with trio.fail_after(5):  # the link goes on
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: _answer_next(peer, _number(5)))
            (again,) = await browser.execute_all(_evaluate(5))
    assert again.result.value == 5


async def _answer_next(peer: FakePeer, result: dict[str, Any]) -> None:
    peer.reply(await peer.next_command(), result)


async def test_cancelling_drops_the_late_replies_and_the_link_goes_on(pair: Pair, mode: Mode) -> None:
    connection, peer, browser = pair
    async with mode(pair):
        with trio.fail_after(5):
            with trio.move_on_after(0.05) as scope:
                await browser.execute_all(_evaluate(0), _evaluate(1))
            assert scope.cancelled_caught
            assert connection.pending_count() == 0
            for command in await _commands(peer, 2):
                peer.reply(command, _number(0))
            async with trio.open_nursery() as nursery:

                async def answer() -> None:
                    peer.reply(await peer.next_command(), _number(9))

                nursery.start_soon(answer)
                (after,) = await browser.execute_all(_evaluate(9))
    assert after.result.value == 9


async def test_a_closed_link_ends_the_wait(pair: Pair, mode: Mode) -> None:
    connection, peer, browser = pair
    async with mode(pair):
        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:

                async def answer_one_then_close() -> None:
                    first, _ = await _commands(peer, 2)
                    peer.reply(first, _number(0))
                    peer.close()

                nursery.start_soon(answer_one_then_close)
                with pytest.raises(ConnectionClosed):
                    await browser.execute_all(_evaluate(0), _evaluate(1))
            with pytest.raises(ConnectionClosed, match=r"cannot send Runtime\.evaluate"):
                await browser.execute_all(_evaluate(2))
    assert connection.pending_count() == 0


async def test_a_detached_session_ends_the_wait(pair: Pair, mode: Mode) -> None:
    connection, peer, browser = pair
    (page,) = await _sessions(connection, peer, "S1")
    async with mode(pair):
        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:

                async def detach() -> None:
                    await _commands(peer, 2)
                    peer.event("Target.detachedFromTarget", {"sessionId": "S1", "targetId": "T1"})

                nursery.start_soon(detach)
                with pytest.raises(SessionDetached):
                    await page.execute_all(_evaluate(0), _evaluate(1))
    del browser
    assert connection.pending_count() == 0


async def test_nothing_to_send_returns_at_once(pair: Pair) -> None:
    connection, _, browser = pair
    with trio.fail_after(5):
        assert await browser.execute_all() == ()
    assert connection.statistics().messages_sent == 0


async def test_a_command_that_cannot_be_sent_stops_the_lot_before_anything_is_sent(pair: Pair) -> None:
    connection, peer, browser = pair
    with trio.fail_after(5), pytest.raises(InvalidParams, match=r"params\.x is nan"):
        await browser.execute_all(
            _evaluate(1), cdp.input.dispatch_mouse_event(type_="mouseMoved", x=math.nan, y=0), _evaluate(2)
        )
    assert connection.statistics().messages_sent == 0
    assert connection.pending_count() == 0
    with pytest.raises(trio.WouldBlock):
        peer.transport.outbound_receive.receive_nowait()


async def test_browser_execute_all_sends_pairs_to_their_sessions_and_returns_results_in_order(
    fake: tuple[Browser, FakePeer], mode: Mode
) -> None:
    browser, peer = fake
    connection = browser.connection
    one, two = await _sessions(connection, peer, "S1", "S2")
    got: list[Any] = []
    async with mode((connection, peer, browser.session)):
        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:

                async def call() -> None:
                    got.extend(
                        await browser.execute_all(
                            (one, _evaluate(1)), (browser.session, _evaluate(0)), (two, _evaluate(2))
                        )
                    )

                nursery.start_soon(call)
                commands = await _commands(peer, 3)
                assert [c.get("sessionId") for c in commands] == ["S1", None, "S2"]
                for command in reversed(commands):
                    peer.reply(command, _number(int(command["params"]["expression"])))
    assert [r.result.value for r in got] == [1, 0, 2]
    assert connection.pending_count() == 0


async def test_browser_execute_all_names_the_session_of_a_failure(fake: tuple[Browser, FakePeer]) -> None:
    browser, peer = fake
    one, two = await _sessions(browser.connection, peer, "S1", "S2")
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:

            async def answer() -> None:
                first, second = await _commands(peer, 2)
                peer.send({"id": second["id"], "sessionId": "S2",
                           "error": {"code": -32000, "message": "no such node"}})  # fmt: skip
                peer.reply(first, _number(1))

            nursery.start_soon(answer)
            with pytest.raises(ProtocolError, match="no such node") as info:
                await browser.execute_all((one, _evaluate(1)), (two, _evaluate(2)))
    assert info.value.session_id == "S2"
    assert browser.connection.pending_count() == 0


async def test_browser_execute_all_refuses_what_is_not_a_pair_before_sending(
    fake: tuple[Browser, FakePeer],
) -> None:
    browser, peer = fake
    with trio.fail_after(5):
        with pytest.raises(TypeError, match=r"\(session, command\) pairs.*session\.execute_all"):
            await browser.execute_all(_evaluate(1))  # type: ignore[call-overload]
        with pytest.raises(TypeError, match=r"\(session, command\) pairs"):
            await browser.execute_all((browser.session, "Runtime.evaluate"))  # type: ignore[arg-type]
    assert browser.connection.statistics().messages_sent == 0
    with pytest.raises(trio.WouldBlock):
        peer.transport.outbound_receive.receive_nowait()


async def test_browser_execute_all_refuses_a_session_of_another_browser_before_sending(
    fake: tuple[Browser, FakePeer],
) -> None:
    browser, peer = fake
    async with open_fake_browser() as (other, _):
        with trio.fail_after(5), pytest.raises(ValueError, match="belongs to another connection"):
            await browser.execute_all((browser.session, _evaluate(1)), (other.session, _evaluate(2)))
    assert browser.connection.statistics().messages_sent == 0
    assert browser.connection.pending_count() == 0
    with pytest.raises(trio.WouldBlock):
        peer.transport.outbound_receive.receive_nowait()
