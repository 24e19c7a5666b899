"""Chaos on one link: everything the engine's users do at once, against a peer that misbehaves at random.

Six callers run lone commands, groups (``execute_all`` on one session and across sessions), subscriptions
with small buffers under every overflow policy, and fire-and-forget commands, each under a random deadline
(from zero up); then three run lone commands only, so that they take turns reading the link for each other
(the reader task rests while nobody listens). Hooks watch the first sessions. The peer answers late,
never, twice, or with an error; sends garbage, 300 KB replies and a stream of numbered events; crashes,
revives and detaches targets; and at the end hangs up. On the pipe and the websocket it also cuts its
bytes anywhere, fragments messages and pings between fragments, so leaders are cancelled in the middle of
a frame.

Checked, for every seed: a caller gets its own reply, or an error that is its own (no crossed wires);
on the in-memory link, at the virtual instant the peer sent it (no wake-up lost, left to a timer);
nothing outlives its deadline; a subscription's events come in order, and under the "error" policy every
gap is announced by EventOverflow with its exact size; hooks see every event; nothing stays pending; the
hang-up ends the link and every caller. A hang would show as the virtual-time limit (MockClock).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager, suppress
from functools import partial
from typing import Any

import pytest
import trio
from trio.testing import MockClock

import cdp
from engine import (
    Browser,
    CDPError,
    ConnectionClosed,
    EventOverflow,
    ProtocolError,
    Session,
    SessionDetached,
    TargetCrashed,
)
from engine._hooks import add_hook
from engine._session import Overflow
from engine._ws_codec import encode_frame
from engine.lowlevel import Connection, Opcode, Transport, open_connection
from tests.unit.engine.test_transport_conformance import (
    PipePeer,
    WebSocketPeer,
    _engine_websocket,
    pipe_link,
    websocket_link,
)

CLIENTS = 6
ROUNDS = 40
TICK = "Test.tick"  # the peer's numbered events: {"seq": n}, counted per session


class MemoryLink:
    """An in-memory transport that, unlike engine.testing's, writes eagerly at times and hands over
    several messages per read; and its peer's ends."""

    name = "chaos"
    max_outbound_bytes = 1 << 20
    backlog = 0

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._out_send, self.out_receive = trio.open_memory_channel[bytes](math.inf)
        self.in_send, self._in_receive = trio.open_memory_channel[bytes](math.inf)

    def _put(self, messages: Sequence[bytes]) -> None:
        try:
            for message in messages:
                self._out_send.send_nowait(message)
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise ConnectionClosed("the chaos peer is gone") from exc

    async def send(self, messages: Sequence[bytes]) -> None:
        self._put(messages)
        await trio.sleep(self._rng.choice([0, 0, 0, 0.0001, 0.001]))

    def send_nowait(self, messages: Sequence[bytes]) -> bool:
        if self._rng.random() < 0.5:
            return False
        self._put(messages)
        return True

    async def receive_batch(self, *, poll: bool = False) -> list[bytes]:
        try:
            batch = [await self._in_receive.receive()]
        except (trio.EndOfChannel, trio.ClosedResourceError) as exc:
            raise ConnectionClosed("the chaos peer hung up") from exc
        for _ in range(self._rng.randint(0, 5)):
            try:
                batch.append(self._in_receive.receive_nowait())
            except (trio.WouldBlock, trio.EndOfChannel):
                break
        return batch

    async def aclose(self) -> None:
        self._out_send.close()
        self._in_receive.close()


class Cutter:
    """The peer's outbound bytes on a real link: framed as the transport expects, cut at random places."""

    def __init__(self, rng: random.Random, peer: PipePeer | WebSocketPeer) -> None:
        self._rng = rng
        self._peer = peer
        self.in_send, self._queue = trio.open_memory_channel[bytes](math.inf)

    def _frame(self, message: bytes) -> bytes:
        if isinstance(self._peer, PipePeer):
            return message + b"\0"
        rng, out = self._rng, b""
        if rng.random() < 0.1:
            out += encode_frame(Opcode.PING, b"ping", None)
        if rng.random() < 0.2:
            cut = rng.randint(1, len(message) - 1)
            out += encode_frame(Opcode.TEXT, message[:cut], None, fin=False)
            if rng.random() < 0.3:
                out += encode_frame(Opcode.PING, b"between fragments", None)
            return out + encode_frame(Opcode.CONTINUATION, message[cut:], None)
        return out + encode_frame(Opcode.TEXT, message, None)

    async def pump(self) -> None:
        stream = self._peer._writer if isinstance(self._peer, PipePeer) else self._peer._stream
        pending = b""
        async with self._queue:
            while True:
                if not pending:
                    try:
                        pending = self._frame(await self._queue.receive())
                    except trio.EndOfChannel:
                        break
                with suppress(trio.WouldBlock, trio.EndOfChannel):
                    while True:
                        pending += self._frame(self._queue.receive_nowait())
                size = self._rng.choice([1, 2, 3, 7, 50, len(pending), len(pending)])
                try:
                    await stream.send_all(pending[:size])
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    return
                pending = pending[size:]
                if pending and self._rng.random() < 0.3:
                    await trio.sleep(self._rng.choice([0, 0.0001, 0.001]))
        await self._peer.hang_up()


class Chaos:
    """The peer's behaviour and what the callers check against it."""

    def __init__(self, seed: int, inbound: trio.MemorySendChannel[bytes]) -> None:
        self.rng = random.Random(seed)
        self._inbound = inbound
        self.live: set[str] = set()
        self.crashed: set[str] = set()
        self.seq: dict[str | None, int] = {}
        self.ending = False  # the callers' last round, which the hang-up ends
        self.hung_up = False
        self.counts: dict[str, int] = {}
        #: When the answer for each tag was sent; set only where it is also when the engine can read it
        #: (the in-memory link: the real links' bytes trickle out later).
        self.answered_at: dict[str, float] | None = None

    def count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1

    def send(self, message: dict[str, Any] | bytes) -> None:
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        with suppress(trio.ClosedResourceError):
            self._inbound.send_nowait(data)

    def close(self) -> None:
        """Hang up, after what was already sent."""
        self.hung_up = True
        self._inbound.close()

    def attach(self, session_id: str) -> None:
        self.live.add(session_id)
        info = {"targetId": f"T{session_id}", "type": "page", "title": "", "url": "about:blank",
                "attached": True, "canAccessOpener": False}  # fmt: skip
        params = {"sessionId": session_id, "targetInfo": info, "waitingForDebugger": False}
        self.send({"method": "Target.attachedToTarget", "params": params})

    async def answer(self, command: dict[str, Any]) -> None:
        rng = self.rng
        params = command.get("params", {})
        tag = params.get("expression") or params.get("tag")
        fate = rng.random()
        if fate < 0.05:
            self.count("never answered")
            return
        await trio.sleep(rng.choice([0, 0, 0.0001, 0.001, 0.005, 0.03]))
        if command.get("sessionId", "browser") not in {*self.live, "browser"}:
            return  # a detached target answers nothing
        reply: dict[str, Any] = {"id": command["id"]}
        if fate < 0.13:
            reply["error"] = {"code": -32000, "message": f"refused {tag}"}
        elif command["method"] == "Runtime.evaluate":
            value: dict[str, Any] = {"type": "string", "value": tag}
            if rng.random() < 0.02:
                value["description"] = "x" * 300_000  # over the engine's large-message line
            reply["result"] = {"result": value}
        else:
            reply["result"] = {"tag": tag}
        self.send(reply)
        if self.answered_at is not None:
            self.answered_at[tag] = trio.current_time()
        if fate > 0.98:
            self.send({"id": command["id"], "result": {"tag": "a second reply"}})
        elif fate > 0.96:
            self.send(b"{garbage")

    async def serve(self, commands: AsyncIterator[bytes], nursery: trio.Nursery) -> None:
        async for raw in commands:
            nursery.start_soon(self.answer, json.loads(raw))

    async def emit(self) -> None:
        rng = self.rng
        while not self.hung_up:
            await trio.sleep(rng.choice([0, 0.0001, 0.001, 0.003]))
            session_id = rng.choice([None, *sorted(self.live)])
            for _ in range(rng.randint(1, 6)):
                n = self.seq[session_id] = self.seq.get(session_id, 0) + 1
                tick: dict[str, Any] = {"method": TICK, "params": {"seq": n}}
                if session_id is not None:
                    tick["sessionId"] = session_id
                self.send(tick)
            if rng.random() < 0.03 and self.live:
                sick = rng.choice(sorted(self.live))
                self.crashed.add(sick)
                self.send({"method": "Inspector.targetCrashed", "params": {}, "sessionId": sick})
            if rng.random() < 0.05 and self.crashed:
                well = rng.choice(sorted(self.crashed))
                self.crashed.discard(well)
                self.send({"method": "Inspector.targetReloadedAfterCrash", "params": {}, "sessionId": well})
            if rng.random() < 0.04 and self.live:
                gone = rng.choice(sorted(self.live))
                self.live.discard(gone)
                self.send({"method": "Target.detachedFromTarget", "params": {"sessionId": gone}})
                self.attach(f"S{rng.randrange(10**9)}")


class Callers:
    """What the users do, and the checks on what they get."""

    def __init__(self, chaos: Chaos, connection: Connection, browser: Browser) -> None:
        self.chaos = chaos
        self.rng = chaos.rng
        self.connection = connection
        self.browser = browser

    def _session(self) -> Session:
        return self.rng.choice(list(self.connection.sessions))

    def _expected(self, exc: Exception, sessions: Sequence[Session], tags: Sequence[str]) -> None:
        """Raise ``exc`` again unless the peer's doings explain it."""
        if isinstance(exc, TargetCrashed):
            self.chaos.count("crashed")
        elif isinstance(exc, SessionDetached):
            assert any(s.detached for s in sessions), exc
        elif isinstance(exc, ConnectionClosed):
            assert self.chaos.hung_up, exc
        elif isinstance(exc, ProtocolError):
            assert any(f"refused {tag}" in str(exc) for tag in tags), (exc, tags)  # its own error
        else:
            raise exc

    def _prompt(self, *tags: str) -> None:
        """The answers reached their caller at the (virtual) instant the last was sent: no timer held them."""
        answered_at = self.chaos.answered_at
        if answered_at is not None:
            assert trio.current_time() == max(answered_at[tag] for tag in tags), f"{tags} came late"

    async def _bounded(self, body: Callable[[], Awaitable[None]], what: str) -> None:
        # Once the peer hangs up, some wait with no deadline: only the end of the link can end them.
        limit = self.rng.choice([0, 0.0001, 0.002, 0.02, 0.2, *[math.inf] * self.chaos.ending])
        start = trio.current_time()
        with trio.move_on_after(limit) as scope:
            await body()
            self.chaos.count(what)
        assert trio.current_time() - start <= limit + 1e-9, f"{what} outlived its deadline"
        if scope.cancelled_caught:
            self.chaos.count(f"{what} cancelled")

    async def lone(self) -> None:
        session, tag = self._session(), f"t{self.rng.randrange(10**9)}"

        async def body() -> None:
            try:
                if self.rng.random() < 0.5:
                    typed = await session.execute(cdp.runtime.evaluate(expression=tag))
                    assert typed.result.value == tag
                else:
                    assert await session.execute_raw("Test.echo", {"tag": tag}) == {"tag": tag}
                self._prompt(tag)
            except (CDPError, ConnectionClosed) as exc:
                self._expected(exc, [session], [tag])
                if isinstance(exc, ProtocolError):
                    self._prompt(tag)

        await self._bounded(body, "lone")

    async def group(self) -> None:
        sessions = [self._session() for _ in range(self.rng.randint(1, 5))]
        if self.rng.random() < 0.5:
            sessions = [sessions[0]] * len(sessions)  # Session.execute_all
        tags = [f"g{self.rng.randrange(10**9)}" for _ in sessions]

        async def body() -> None:
            commands = [cdp.runtime.evaluate(expression=tag) for tag in tags]
            try:
                if len(set(sessions)) == 1:
                    results = await sessions[0].execute_all(*commands)
                else:
                    results = await self.browser.execute_all(*zip(sessions, commands, strict=True))
                assert [r.result.value for r in results] == tags
                self._prompt(*tags)
            except (CDPError, ConnectionClosed) as exc:
                self._expected(exc, sessions, tags)

        await self._bounded(body, "group")

    async def listener(self) -> None:
        session, size = self._session(), self.rng.choice([1, 2, 4, 64])
        policy: Overflow = self.rng.choice(["error", "drop_oldest", "drop_newest"])

        async def body() -> None:
            last = lost = 0
            try:
                async with session.listen(TICK, buffer_size=size, overflow=policy, strict=False) as events:
                    while True:
                        try:
                            n = (await events.receive()).params["seq"]
                        except EventOverflow as exc:
                            assert policy == "error"
                            lost += int(str(exc).split(" event(s) were lost")[0])
                            continue
                        assert n > last, f"event {n} after {last} ({policy})"
                        if policy == "error" and last:
                            assert n == last + 1 + lost, f"event {n} after {last}, {lost} announced lost"
                        last, lost = n, 0
                        self.chaos.count("events")
                        if self.rng.random() < 0.3:
                            await trio.sleep(self.rng.choice([0, 0.0005, 0.002]))
            except (SessionDetached, ConnectionClosed) as exc:
                self._expected(exc, [session], [])

        await self._bounded(body, "listener")

    async def run(self, *, lone_only: bool = False) -> None:
        """ROUNDS of the whole mix; or of lone commands only, where callers most often read for themselves
        (with nobody listening, the reader task rests) and hand the reading on to each other."""
        for _ in range(ROUNDS):
            draw = 0.0 if lone_only else self.rng.random()
            if draw < 0.45:
                await self.lone()
            elif draw < 0.7:
                await self.group()
            elif draw < 0.85:
                await self.listener()
            elif draw < 0.9:
                session = self._session()
                with suppress(SessionDetached, TargetCrashed):
                    session.execute_nowait(cdp.runtime.evaluate(expression="nobody waits"))
            else:
                await trio.sleep(self.rng.choice([0, 0.001, 0.03]))


def _recorder(seen: list[int]) -> Callable[[str, dict[str, Any]], None]:
    return lambda _method, params: seen.append(params["seq"])


@asynccontextmanager
async def chaos_link(kind: str, seed: int) -> AsyncIterator[tuple[Transport, Chaos, AsyncIterator[bytes]]]:
    """The transport under test, the peer's behaviour, and the commands the peer receives."""
    rng_for_link = random.Random(seed + 1)
    if kind == "fake":
        link = MemoryLink(rng_for_link)
        chaos = Chaos(seed, link.in_send)
        chaos.answered_at = {}
        yield link, chaos, link.out_receive
        return
    opened = pipe_link(1 << 20) if kind == "pipe" else websocket_link(_engine_websocket, 1 << 20)
    async with opened as (transport, peer):
        assert isinstance(peer, PipePeer | WebSocketPeer)
        cutter = Cutter(rng_for_link, peer)

        async def commands() -> AsyncIterator[bytes]:
            with suppress(EOFError, trio.ClosedResourceError, trio.BrokenResourceError):
                while True:
                    yield await peer.receive()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(cutter.pump)
            yield transport, Chaos(seed, cutter.in_send), commands()
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("kind", ["fake", "pipe", "websocket"])
async def test_chaos(kind: str, seed: int, mock_clock: MockClock) -> None:
    mock_clock.autojump_threshold = 0
    async with (
        chaos_link(kind, seed) as (transport, chaos, commands),
        open_connection(transport) as connection,
    ):
        browser = Browser._create(connection, connection.settings, None)
        async with trio.open_nursery() as peer:
            peer.start_soon(chaos.serve, commands, peer)
            peer.start_soon(chaos.emit)
            for n in range(3):
                chaos.attach(f"S{n}")
            with trio.fail_after(60):
                while len(connection.sessions) < 4:
                    await trio.sleep(0.0001)
                hooked = {session: list[int]() for session in connection.sessions}
                for session, seen in hooked.items():
                    add_hook(session, (TICK,), _recorder(seen))
                callers = Callers(chaos, connection, browser)
                for lone_only in (False, True):
                    async with trio.open_nursery() as users:
                        for _ in range(CLIENTS if not lone_only else 3):
                            users.start_soon(partial(callers.run, lone_only=lone_only))
                await trio.sleep(0.1)
                assert connection.pending_count() == 0
                # Fire-and-forget commands to detached targets are forgotten with them (no slow leak).
                assert not [s for s in connection._ignored.values() if s.detached]
                for seen in hooked.values():  # hooks drop nothing
                    assert not seen or seen == list(range(seen[0], seen[0] + len(seen)))

                # The end: the peer hangs up while callers of every kind are at work.
                chaos.ending = True
                kinds = [callers.lone, callers.group, callers.listener]
                async with trio.open_nursery() as users:
                    for _ in range(CLIENTS):
                        users.start_soon(callers.rng.choice(kinds))
                    await trio.sleep(chaos.rng.choice([0, 0.0001, 0.001]))
                    chaos.close()
                while connection.closed is None:  # a resting reader looks every READER_REST_S
                    await trio.sleep(0.02)
            peer.cancel_scope.cancel()
    # Each kind of trouble happened in this run, or the checks above proved little.
    assert {"lone", "group cancelled", "events", "crashed"} <= set(chaos.counts), chaos.counts
