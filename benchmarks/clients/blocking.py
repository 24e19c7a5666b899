"""The floors: minimal CDP clients, the scenarios written once over send/recv of whole messages.

A floor client does the least a real client must: encode each command and parse every inbound message
as the engine does (with orjson) and match replies by id. No threads, no reader task, no
pending map, no objects. Where the async clients keep commands in flight, the floor pipelines: it writes
them all in one go, then reads.

The protocol and the scenarios (``FloorScenarios``) are written once, as coroutines over three
primitives: ``_send_many``, ``_recv`` and ``_sleep``. Two kinds of client run them:

* ``BlockingCDPClient`` (floor.ws, floor.pipe): the primitives block in the system call and never
  suspend, so each coroutine runs to completion in one ``send(None)`` in the harness thread
  (``run_blocking``), with no loop at all. What that costs over plain calls is one coroutine object per
  ``await`` (about 70 ns measured here): three per round trip, one per message read.
* ``floor_trio.TrioCDPClient`` (floor.trio.ws, floor.trio.pipe): the same coroutines in one trio task,
  whose primitives wait for the fd in trio (``trio.lowlevel.wait_readable`` / ``wait_writable``) when
  the non-blocking call would block. The only difference between the two floors of a transport is that
  wait: the event loop's share of any trio client.
"""

from __future__ import annotations

import abc
import gc
import json
import time
from collections.abc import Coroutine
from typing import Any, ClassVar, TypeVar

import orjson

from benchmarks.clients.base import Client, Env, Sample
from benchmarks.scenarios import (
    BATCH_SIZE,
    EVALUATE,
    Kind,
    Scenario,
    console_flood_expression,
    flood_start_expression,
    flood_stop_expression,
    ready_expression,
    small_page_url,
)

T = TypeVar("T")
Message = bytes | bytearray
CONSOLE = "Runtime.consoleAPICalled"
CONSOLE_PREFIX = b'{"method":"' + CONSOLE.encode() + b'",'
"""How Chromium begins a console event: the method first (and the sessionId last; see ``console_suffix``)."""
READY_TIMEOUT_S = 30.0
READY_POLL_S = 0.02


LARGE_MESSAGE = 256 * 1024
"""From this size on the floors parse with the cyclic GC paused, the rule the engine's reader follows."""


def parse(raw: Message) -> Any:
    """A message parsed exactly as the engine parses it: orjson (``json.loads`` for what orjson refuses),
    with the GC paused for a large message.

    A floor that parsed (or encoded) with a slower library, or let the GC walk a 6 MB reply's containers
    mid-parse, would be a floor the engine beats by a choice any client can make, not by doing less work.
    """
    if len(raw) < LARGE_MESSAGE or not gc.isenabled():
        return _loads(raw)
    gc.disable()
    try:
        return _loads(raw)
    finally:
        gc.enable()


def _loads(raw: Message) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)


def console_suffix(session: str) -> bytes:
    """How Chromium ends an event of ``session``."""
    return b'"sessionId":"' + session.encode() + b'"}'


class ProtocolError(Exception):
    """The browser answered a command with an error."""


def run_blocking(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine whose awaits all end in blocking calls (it never suspends) to completion."""
    try:
        coro.send(None)
    except StopIteration as done:
        result: T = done.value
        return result
    coro.close()
    raise RuntimeError("a blocking floor's coroutine suspended: one of its primitives awaited a loop")


class FloorScenarios(abc.ABC):
    """The floor's protocol and scenarios over three primitives: ``_send_many``, ``_recv``, ``_sleep``.

    Not a ``Client`` by itself: ``BlockingCDPClient`` runs these coroutines in the harness thread, and
    ``floor_trio.TrioCDPClient`` in a trio task.
    """

    parse_events: ClassVar[bool] = True
    """False: in ``events.console`` a console event is told by its first and last bytes and never parsed
    (the unparsed floors). One of the page's console events laid out otherwise raises ProtocolError: such a
    floor would parse, and no longer measure what its name says."""

    def __init__(self) -> None:
        self._id = 0
        self._env: Env | None = None
        self._targets: list[str] = []
        self._sessions: list[str] = []
        self._console_seen = 0  # Runtime.consoleAPICalled events call_raw read past (roundtrip.flood)

    # -- transport -----------------------------------------------------------------------------------

    @abc.abstractmethod
    async def _send_many(self, messages: list[bytes]) -> None:
        """Write whole messages, in order, with as few system calls as the transport allows."""

    @abc.abstractmethod
    async def _recv(self) -> Message:
        """Read one whole inbound message."""

    @abc.abstractmethod
    async def _sleep(self, seconds: float) -> None:
        """Pause between page readiness polls (setup only, never measured)."""

    async def _cold_start(self) -> tuple[int, int]:
        """One cold start on a fresh browser (``coldstart``): (wall ns, this thread's CPU ns) from the
        launch (pipe) or the connect (websocket, the browser launched untimed) to the first
        Browser.getVersion reply. The browser is stopped again, untimed. Every floor has one."""
        raise NotImplementedError(f"{type(self).__name__} has no cold start")

    # -- protocol ------------------------------------------------------------------------------------

    def _encode(self, method: str, params: dict[str, Any] | None, session: str | None) -> tuple[int, bytes]:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method}
        if params:
            msg["params"] = params
        if session is not None:
            msg["sessionId"] = session
        return self._id, orjson.dumps(msg)  # the engine's encoder: see parse

    async def call_raw(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> tuple[dict[str, Any], Message]:
        """Send one command, read until its reply: (the parsed reply, its raw bytes)."""
        cid, data = self._encode(method, params, session)
        await self._send_many([data])
        while True:
            raw = await self._recv()
            msg = parse(raw)
            if msg.get("id") == cid:
                if "error" in msg:
                    raise ProtocolError(f"{method}: {msg['error']}")
                return msg, raw
            if msg.get("method") == CONSOLE:
                self._console_seen += 1

    async def call(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> Any:
        return (await self.call_raw(method, params, session))[0]["result"]

    # -- what the Client methods run ----------------------------------------------------------------

    async def open_page(self, url: str) -> tuple[str, str]:
        """(targetId, sessionId) of a new page attached with flatten=true and loaded."""
        target = (await self.call("Target.createTarget", {"url": url}))["targetId"]
        attached = await self.call("Target.attachToTarget", {"targetId": target, "flatten": True})
        session: str = attached["sessionId"]
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            res = await self.call(
                "Runtime.evaluate", {"expression": ready_expression(url), "returnByValue": True}, session
            )
            if res["result"].get("value") is True:
                return target, session
            if time.monotonic() > deadline:
                raise TimeoutError(f"page did not load: {url}")
            await self._sleep(READY_POLL_S)

    async def setup_pages(self, scenario: Scenario) -> None:
        assert self._env is not None
        url = self._env.big_page_url if scenario.big_page else "about:blank"
        for _ in range(scenario.pages):
            target, session = await self.open_page(url)
            self._targets.append(target)
            self._sessions.append(session)
            if scenario.kind in (Kind.EVENTS, Kind.FLOOD):
                await self.call("Runtime.enable", None, session)
            elif scenario.kind is Kind.NAVIGATE:
                await self.call("Page.enable", None, session)

    async def close_pages(self) -> None:
        for target in self._targets:
            await self.call("Target.closeTarget", {"targetId": target})
        self._targets.clear()
        self._sessions.clear()

    async def run_scenario(self, scenario: Scenario, size: int) -> Sample:
        kind = scenario.kind
        if kind is Kind.BROWSER_ROUNDTRIP:
            return await self._sequential(size, None)
        if kind is Kind.PAGE_ROUNDTRIP:
            return await self._sequential(size, self._sessions[0])
        if kind is Kind.BATCH:
            return await self._batches(size)
        if kind is Kind.DECODE:
            return await self._decode(scenario, size)
        if kind is Kind.EVENTS:
            return await self._events(size)
        if kind is Kind.FANOUT:
            return await self._fanout(size)
        if kind is Kind.COLDSTART:
            return await self._coldstart(size)
        if kind is Kind.NAVIGATE:
            return await self._navigate(size)
        if kind is Kind.ATTACH:
            return await self._attach(size)
        if kind is Kind.FLOOD:
            return await self._flood(size)
        raise ValueError(f"not runnable: {scenario.name}")

    # -- scenarios -----------------------------------------------------------------------------------

    async def _sequential(self, size: int, session: str | None) -> Sample:
        clock = time.perf_counter_ns
        if session is None:
            method, params = "Browser.getVersion", None
        else:
            method, params = "Runtime.evaluate", {"expression": EVALUATE}
        lat: list[float] = []
        begin = clock()
        for _ in range(size):
            t0 = clock()
            await self.call_raw(method, params, session)
            lat.append((clock() - t0) / 1000)
        return Sample(lat, size, clock() - begin)

    async def _batches(self, size: int) -> Sample:
        clock = time.perf_counter_ns
        sessions = self._sessions
        per = BATCH_SIZE // len(sessions)
        lat: list[float] = []
        begin = clock()
        for _ in range(size):
            t0 = clock()
            pending: set[int] = set()
            frames: list[bytes] = []
            for session in sessions:
                for _ in range(per):
                    cid, data = self._encode("Runtime.evaluate", {"expression": EVALUATE}, session)
                    pending.add(cid)
                    frames.append(data)
            await self._send_many(frames)
            while pending:
                msg = parse(await self._recv())
                pending.discard(msg.get("id", -1))
            lat.append((clock() - t0) / 1000)
        return Sample(lat, size * per * len(sessions), clock() - begin)

    async def _decode(self, scenario: Scenario, size: int) -> Sample:
        clock = time.perf_counter_ns
        lat: list[float] = []
        nbytes = 0
        for _ in range(size):
            t0 = clock()
            msg, raw = await self.call_raw(scenario.method, scenario.params_dict, self._sessions[0])
            t1 = clock()
            lat.append((t1 - t0) / 1000)
            nbytes = len(raw)
            del msg, raw  # freeing a large result is not part of the call
        return Sample(lat, size, int(sum(lat) * 1000), nbytes)

    async def _events(self, size: int) -> Sample:
        clock = time.perf_counter_ns
        session = self._sessions[0]
        cid, data = self._encode("Runtime.evaluate", {"expression": console_flood_expression(size)}, session)
        seen = 0
        replied = False
        end = 0
        unparsed, suffix = not self.parse_events, console_suffix(session)
        begin = clock()
        await self._send_many([data])
        while seen < size or not replied:
            raw = await self._recv()
            if not (unparsed and raw.startswith(CONSOLE_PREFIX) and raw.endswith(suffix)):
                msg = parse(raw)
                if msg.get("method") != CONSOLE or msg.get("sessionId") != session:
                    if msg.get("id") == cid:
                        replied = True
                    continue
                if unparsed:
                    raise ProtocolError(
                        f"a console event not laid out as {CONSOLE_PREFIX!r}...{suffix!r}:"
                        f" {bytes(raw[:200])!r} (has Chromium changed its layout? the unparsed floor"
                        " cannot tell its events apart)"
                    )
            seen += 1  # one of the page's console events, told from its bytes or parsed
            if seen == size:
                end = clock()
        return Sample([(end - begin) / 1000], size, end - begin)

    async def _fanout(self, size: int) -> Sample:
        """Every tab runs ``size`` sequential commands; all tabs at once over the one connection."""
        clock = time.perf_counter_ns
        remaining = dict.fromkeys(self._sessions, size)
        inflight: dict[int, tuple[str, int]] = {}
        params = {"expression": EVALUATE}
        lat: list[float] = []
        begin = clock()
        frames: list[bytes] = []
        for session in self._sessions:
            cid, data = self._encode("Runtime.evaluate", params, session)
            inflight[cid] = (session, clock())
            frames.append(data)
        await self._send_many(frames)
        while inflight:
            msg = parse(await self._recv())
            entry = inflight.pop(msg.get("id", -1), None)
            if entry is None:
                continue
            session, t0 = entry
            now = clock()
            lat.append((now - t0) / 1000)
            remaining[session] -= 1
            if remaining[session]:
                cid, data = self._encode("Runtime.evaluate", params, session)
                inflight[cid] = (session, clock())
                await self._send_many([data])
        return Sample(lat, size * len(self._sessions), clock() - begin)

    async def _coldstart(self, size: int) -> Sample:
        lat: list[float] = []
        cpu = 0
        for _ in range(size):
            elapsed, used = await self._cold_start()
            lat.append(elapsed / 1000)
            cpu += used
        return Sample(lat, size, int(sum(lat) * 1000), cpu_ns=cpu)

    async def _navigate(self, size: int) -> Sample:
        """Page.navigate, then read until both its reply and the session's Page.loadEventFired."""
        assert self._env is not None
        clock = time.perf_counter_ns
        session = self._sessions[0]
        params = {"url": small_page_url(self._env.page_server)}
        lat: list[float] = []
        begin = clock()
        for _ in range(size):
            t0 = clock()
            cid, data = self._encode("Page.navigate", params, session)
            await self._send_many([data])
            replied = loaded = False
            while not (replied and loaded):
                msg = parse(await self._recv())
                if msg.get("id") == cid:
                    error = msg.get("error") or msg["result"].get("errorText")
                    if error:
                        raise ProtocolError(f"Page.navigate: {error}")
                    replied = True
                elif msg.get("method") == "Page.loadEventFired" and msg.get("sessionId") == session:
                    loaded = True
            lat.append((clock() - t0) / 1000)
        return Sample(lat, size, clock() - begin)

    async def _attach(self, size: int) -> Sample:
        """``size`` createTarget at once; each reply's target attached (flatten) as soon as it is known.

        Timed until the last attach reply; closing the targets afterwards is not measured.
        """
        clock = time.perf_counter_ns
        cpu0 = time.thread_time_ns()
        begin = clock()
        creating: set[int] = set()
        attaching: set[int] = set()
        targets: list[str] = []
        frames: list[bytes] = []
        for _ in range(size):
            cid, data = self._encode("Target.createTarget", {"url": "about:blank"}, None)
            creating.add(cid)
            frames.append(data)
        await self._send_many(frames)
        while creating or attaching:
            msg = parse(await self._recv())
            mid = msg.get("id", -1)
            if "error" in msg and (mid in creating or mid in attaching):
                raise ProtocolError(f"attach.50: {msg['error']}")
            if mid in creating:
                creating.discard(mid)
                target = msg["result"]["targetId"]
                targets.append(target)
                cid, data = self._encode("Target.attachToTarget", {"targetId": target, "flatten": True}, None)
                attaching.add(cid)
                await self._send_many([data])
            elif mid in attaching:
                attaching.discard(mid)
        elapsed = clock() - begin
        cpu = time.thread_time_ns() - cpu0
        closing: set[int] = set()
        frames = []
        for target in targets:
            cid, data = self._encode("Target.closeTarget", {"targetId": target}, None)
            closing.add(cid)
            frames.append(data)
        await self._send_many(frames)
        while closing:
            closing.discard(parse(await self._recv()).get("id", -1))
        return Sample([elapsed / 1000], size, elapsed, cpu_ns=cpu)

    async def _flood(self, size: int) -> Sample:
        """Sequential evaluates while the page logs ~10,000 events/s, every one read and parsed."""
        session = self._sessions[0]
        await self.call("Runtime.evaluate", {"expression": flood_start_expression()}, session)
        while parse(await self._recv()).get("method") != CONSOLE:
            pass  # the flood is running once its first event is here
        first = self._console_seen
        cpu0 = time.thread_time_ns()
        sample = await self._sequential(size, session)
        cpu = time.thread_time_ns() - cpu0
        sample.events = self._console_seen - first
        sample.cpu_ns = cpu
        await self.call("Runtime.evaluate", {"expression": flood_stop_expression()}, session)
        return sample


class BlockingCDPClient(FloorScenarios, Client):
    """The scenarios in the harness thread over blocking primitives: ``_open``, ``_send_many``, ``_recv``
    (``async def`` that never suspend) and ``_close``."""

    @abc.abstractmethod
    def _open(self, env: Env) -> None: ...

    @abc.abstractmethod
    def _close(self) -> None: ...

    async def _sleep(self, seconds: float) -> None:
        time.sleep(seconds)  # noqa: ASYNC251 -- a blocking floor's primitives block; no loop runs here

    def start(self, env: Env) -> None:
        self._env = env
        self._open(env)

    def stop(self) -> None:
        self._close()

    def setup(self, scenario: Scenario) -> None:
        run_blocking(self.setup_pages(scenario))

    def teardown(self, scenario: Scenario) -> None:
        run_blocking(self.close_pages())

    def run(self, scenario: Scenario, size: int) -> Sample:
        return run_blocking(self.run_scenario(scenario, size))


class Unparsed(BlockingCDPClient):
    """A blocking floor that reads a console flood without parsing its events, run in ``events.console``
    only: the rate at which the browser delivers events to a blocking client that does nothing with them
    (no ceiling: how a client reads moves it by a few percent)."""

    parse_events: ClassVar[bool] = False

    def unsupported(self, scenario: Scenario) -> str | None:
        if scenario.kind is Kind.EVENTS:
            return None
        return "a reader of event floods only: it parses no event"
