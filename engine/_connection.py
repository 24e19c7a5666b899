"""One link to the browser: the reader and writer tasks, the pending map, and routing by session.

The reader never awaits anything but the transport: replies wake their caller directly, events go into
bounded per-subscriber buffers, and lifecycle events (attach, detach, crash) end the pending commands they
doom. Every pending command ends: with its reply, a ProtocolError, ConnectionClosed, TargetCrashed,
SessionDetached, or its caller's cancellation (which removes its entry; the late reply is dropped).
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
import outcome
import trio

import cdp
from engine._errors import (
    CDPError,
    ConnectionClosed,
    MessageTooLarge,
    ProtocolError,
    ResponseDecodeError,
    SessionDetached,
    fresh_copy,
)
from engine._params import encode_message
from engine._sessions import LIFECYCLE_EVENTS, SessionTable
from engine._settings import DEFAULT_SETTINGS, Settings
from engine._trace import protocol_tracer
from engine._transport import waiting_probe
from engine._util import NoPublicConstructor, collapse_groups, gc_paused

_orjson_loads: Callable[[bytes], Any] | None
try:
    from orjson import loads as _orjson_loads
except ImportError:  # a platform without its wheel: json.loads alone, slower, the same messages
    _orjson_loads = None

if TYPE_CHECKING:
    from engine._session import Session
    from engine._transport import Transport

log = logging.getLogger("engine.connection")

T = TypeVar("T")


@attrs.frozen(kw_only=True)
class ConnectionStatistics:
    """A snapshot of a connection's counters."""

    transport: str
    messages_sent: int
    messages_received: int
    pending: int
    sessions: int
    malformed_messages: int
    unknown_id_replies: int
    unknown_session_events: int
    events_delivered: int
    events_dropped: int
    gathering_waits: int  # waits begun before a read while messages streamed in (Settings.gather)


class _Pending:
    """One command in flight: who waits for it and what ends it.

    A caller parked in the usual way has ``task`` set and is rescheduled with its outcome. A caller that
    leads (reads the link itself, see ``Connection._send_and_wait``) has ``task`` None and finds its
    outcome in ``reply`` or ``error`` when its own read loop returns. ``raw`` keeps the bytes of a large
    reply, so a typed decode may spend the parsed reply (see :func:`decoded`).
    """

    __slots__ = ("error", "group", "method", "raw", "reply", "session", "task")

    def __init__(self, method: str, session: Session) -> None:
        self.method = method
        self.session = session
        self.task: trio.lowlevel.Task | None = None
        self.reply: dict[str, Any] | None = None
        self.error: CDPError | None = None
        self.group: _Group | None = None
        self.raw: bytes | None = None


class _Member(_Pending):
    """A command sent by ``execute_all``: its reply is decoded as it comes, while the others are still on
    their way, so the caller's wait for the last reply is followed by one decode, not one per command.

    ``value`` is the typed result, or ``fault`` what decoding raised (``execute_all`` raises the first, in
    order). A large reply (``raw`` set) is decoded by the caller instead: its decode is long, and must not
    hold up whichever task reads.
    """

    __slots__ = ("command", "fault", "value")

    def __init__(self, method: str, session: Session, command: cdp.Command[Any], group: _Group) -> None:
        super().__init__(method, session)
        self.group = group
        self.command = command
        self.value: Any = None
        self.fault: Exception | None = None

    def decode_reply(self, message: dict[str, Any]) -> None:
        try:
            self.value = decoded(self.command, message, self.session.session_id, self.raw)
        except Exception as exc:  # kept for the caller: a reply lost here would leave its group waiting
            self.fault = exc


_ALL_ANSWERED: dict[str, Any] = {}


class _Group:
    """Commands sent together whose caller waits once for all of them (``Connection.call_all``).

    Its members have no task of their own; ``waiter`` stands for the caller the way a lone command's
    entry does (parked, or leading), and is ended when the last member is.
    """

    __slots__ = ("remaining", "waiter")

    def __init__(self, waiter: _Pending, size: int) -> None:
        self.waiter = waiter
        self.remaining = size

    def settle_one(self) -> None:
        self.remaining -= 1
        if self.remaining == 0:
            _answer(self.waiter, _ALL_ANSWERED)


def _answer(entry: _Pending, message: dict[str, Any]) -> None:
    if entry.task is not None:
        trio.lowlevel.reschedule(entry.task, outcome.Value(message))
        entry.task = None
    else:
        entry.reply = message  # its caller is leading (or is a group's): it looks when its read returns
        if entry.group is not None:
            if type(entry) is _Member and entry.raw is None:
                entry.decode_reply(message)
            entry.group.settle_one()


class Connection(metaclass=NoPublicConstructor):
    """The pending map, the id counter and the session table of one browser link.

    Created by :func:`open_connection`; it has no public constructor.
    """

    def __init__(self, transport: Transport, settings: Settings) -> None:
        self.transport = transport
        self.settings = settings
        self._trace = protocol_tracer(settings)  # None unless Settings.protocol_trace: one check per message
        #: Every session of this link, by id; the browser-level session is ``sessions.browser``.
        self.sessions = SessionTable(self)
        self._pending: dict[int, _Pending] = {}
        self.listeners = 0  # open subscriptions (not hooks): while any, the reader never rests
        #: Set by a subscription whose buffer reached half full (and is not full): see _reader.
        self.filling = False
        self._next_id = 0
        self._outbox: list[bytes] = []
        self._writer_lot = trio.lowlevel.ParkingLot()
        self._closed: ConnectionClosed | None = None
        self._closed_event = trio.Event()
        # Fire-and-forget commands awaiting their reply (to be dropped quietly), with their session: a
        # detached session's never come, and are forgotten with it (forget_session).
        self._ignored: dict[int, Session] = {}
        self._eager = True
        # Leader/follower reading: see _send_and_wait. The reader task rests (parked on _reader_lot, not on
        # the link) while no command is pending and nobody listens; a caller that then finds itself alone
        # reads its own reply, one task and one epoll wait per round trip instead of two.
        self._reader_lot = trio.lowlevel.ParkingLot()
        self._reader_resting = False
        self._leading = False
        # The resting reader's timer: pushed along as leads begin (_send_and_wait), and none (an infinite
        # deadline) for a rest that begins during a lead (the leader reads everything) until that lead ends.
        self._rest_scope: trio.CancelScope | None = None
        # The reader's wait before a read while a flood is gathered (see _reader); a send ends it.
        self._gather_scope: trio.CancelScope | None = None
        self._fresh_low: int | None = None  # the lowest id awaited since the reader last looked
        self._now: Callable[[], float] = trio.current_time  # the clock's own, once the reader runs
        self._close_waiters = 0
        #: Why the link will close, set by whoever asked the browser to exit: the reason it closes with.
        self.closing: str | None = None
        #: False: the reader task reads everything, as before leader/follower (kept to re-measure it).
        self.lead_when_alone = True
        # Checked here, in the caller's task: an oversized message must never reach the writer task.
        self._outbound_limit = min(settings.max_outbound_bytes, transport.max_outbound_bytes)
        self._sent = 0
        self._received = 0
        self._malformed = 0
        self._unknown_id = 0
        self._unknown_session = 0
        self.events_delivered = 0
        self.events_dropped = 0
        self._gathering_waits = 0
        self._answered = 0  # replies dispatched (the reader does not gather right after one: see _reader)

    # -- sending -------------------------------------------------------------------------------------

    def _encode(self, method: str, params: dict[str, Any] | None, session: Session) -> tuple[int, bytes]:
        command_id = self._next_id + 1
        if command_id > MAX_COMMAND_ID:
            command_id = 1
        while command_id in self._pending or command_id in self._ignored:
            command_id += 1
        message: dict[str, Any] = {"id": command_id, "method": method}
        if params:
            message["params"] = params
        if session.session_id is not None:
            message["sessionId"] = session.session_id
        data = encode_message(message, method)
        if self._trace is not None:
            self._trace("->", data)
        limit = self._outbound_limit
        if len(data) > limit:
            raise MessageTooLarge(
                f"{method} is {len(data):,} bytes, over the {limit:,}-byte limit for outbound messages; "
                "nothing was sent (send large data in chunks, e.g. through IO streams or files)"
            )
        self._next_id = command_id
        return command_id, data

    def _enqueue(self, messages: tuple[bytes, ...] | list[bytes]) -> None:
        # Fast path: the first messages since the last read go out at once, in this task, with no
        # hand-off to the writer (one scheduler pass saved per round trip). Messages that follow them
        # before anything is read (a burst of concurrent commands) are gathered by the writer task
        # into one write instead of one syscall each.
        if self._gather_scope is not None:
            self._gather_scope.cancel()  # a reply is read as it comes, not after a gathering wait
        if self._eager and not self._outbox and self.transport.send_nowait(messages):
            self._eager = False
            self._sent += len(messages)
            if self.transport.backlog:
                self._writer_lot.unpark()
            return
        self._outbox.extend(messages)
        self._writer_lot.unpark()

    def _start(
        self, session: Session, method: str, params: dict[str, Any] | None
    ) -> tuple[int, bytes, _Pending]:
        """The id, the bytes and the pending entry of one command (nothing is sent yet)."""
        if self._closed is not None:
            raise ConnectionClosed(f"cannot send {method}: {self._closed}")
        session.raise_if_unusable(method)
        command_id, data = self._encode(method, params, session)
        entry = _Pending(method, session)
        self._pending[command_id] = entry
        return command_id, data, entry

    async def call(self, session: Session, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """Send one command and wait for its reply message; raise the error that ends it otherwise."""
        await trio.lowlevel.checkpoint_if_cancelled()
        command_id, data, entry = self._start(session, method, params)
        reply = await self._send_and_wait((command_id,), (data,), entry, lone=True)
        return _result_of(reply, method, session.session_id)

    async def execute(self, session: Session, command: cdp.Command[T]) -> T:
        """:meth:`call` with a typed command; its typed result."""
        await trio.lowlevel.checkpoint_if_cancelled()
        command_id, data, entry = self._start(session, command.method, command.params)
        reply = await self._send_and_wait((command_id,), (data,), entry, lone=True)
        return decoded(command, reply, session.session_id, entry.raw)

    async def call_all(
        self,
        calls: Sequence[tuple[Session, str, dict[str, Any] | None]],
    ) -> list[dict[str, Any]]:
        """Send ``calls`` (session, method, params) in one write and wait once, in this task, until every
        one has answered; the sessions may differ.

        Returns their results in order, or raises the error of the first one (in order) that failed.
        One task for the lot: a task per command costs more than the rest of the command's client path.
        """
        entries = await self._call_all(calls)
        return [_entry_result(entry) for entry in entries]

    async def execute_all(self, pairs: Sequence[tuple[Session, cdp.Command[Any]]]) -> list[Any]:
        """:meth:`call_all` with typed commands; their typed results, in order."""
        entries = await self._call_all(
            [(session, command.method, command.params) for session, command in pairs],
            [command for _, command in pairs],
        )
        results = []
        for entry in entries:
            assert type(entry) is _Member
            assert entry.reply is not None  # _call_all raised the first error
            if entry.raw is not None:  # a large reply, decoded here (see _Member)
                entry.decode_reply(entry.reply)
            if entry.fault is not None:
                raise entry.fault
            results.append(entry.value)
        return results

    async def _call_all(
        self,
        calls: Sequence[tuple[Session, str, dict[str, Any] | None]],
        commands: Sequence[cdp.Command[Any]] | None = None,
    ) -> list[_Pending]:
        """Send ``calls`` together; their entries, each with its reply, once all have one (see call_all).

        Given their typed ``commands``, the entries are ``_Member``s, each decoded as its reply comes."""
        await trio.lowlevel.checkpoint_if_cancelled()
        if self._closed is not None:
            raise ConnectionClosed(f"cannot send {calls[0][1] if calls else 'commands'}: {self._closed}")
        for session, method, _ in calls:
            if session.connection is not self:
                raise ValueError(f"cannot send {method} on {session!r}: it belongs to another connection")
            session.raise_if_unusable(method)
        if not calls:
            return []
        encoded = [self._encode(method, params, session) for session, method, params in calls]
        waiter = _Pending("the commands sent together", calls[0][0])
        group = _Group(waiter, len(calls))
        entries: list[_Pending] = []
        for index, ((command_id, _), (session, method, _)) in enumerate(zip(encoded, calls, strict=True)):
            if commands is None:
                entry = _Pending(method, session)
                entry.group = group
            else:
                entry = _Member(method, session, commands[index], group)
            entries.append(entry)
            self._pending[command_id] = entry
        ids = tuple(command_id for command_id, _ in encoded)
        await self._send_and_wait(ids, [data for _, data in encoded], waiter)
        for entry in entries:
            if entry.error is not None:
                raise entry.error
        return entries

    async def _send_and_wait(
        self,
        ids: tuple[int, ...],
        messages: tuple[bytes, ...] | list[bytes],
        entry: _Pending,
        *,
        lone: bool = False,
    ) -> dict[str, Any]:
        """Send the messages of the pending commands ``ids``; the reply that ends ``entry``.

        ``entry`` is the one command's (``lone``), or the group's waiter. When the reader task rests
        (nothing else pending, nobody listening), the caller leads: it reads the link itself until its
        reply is in, dispatching whatever else arrives as the reader would. The one-task trio floor waits
        for the socket in the task that sent; a reader task adds a second task step and a second epoll
        pass per round trip, so a lone sequential caller pays what the floor pays. (Inline, not a method
        of its own: a coroutine frame more is resumed at every wait of every round trip.) On the way out
        (reply, error, cancellation) the reader is woken unless it may keep resting. Otherwise the caller
        parks until the reader wakes it.
        """
        if self._fresh_low is None:
            self._fresh_low = ids[0]  # (the lowest of a group) no gathering while it is just sent: _reader
        try:
            self._enqueue(messages)
        except ConnectionClosed as exc:
            self._forget(ids)
            self.close(exc)
            raise
        if not self._reader_resting or self._leading:
            entry.task = trio.lowlevel.current_task()

            def abort(_: Any) -> trio.lowlevel.Abort:
                # The caller's cancel scope fired: forget the entries so the late replies are dropped.
                self._forget(ids)
                return trio.lowlevel.Abort.SUCCEEDED

            reply: dict[str, Any] = await trio.lowlevel.wait_task_rescheduled(abort)
            return reply
        self._leading = True
        # Keep the resting reader's timer between a half and a whole READER_REST_S from now, here, where the
        # browser is at work on the command: after the reply, every step is one the caller waits for. While
        # calls follow each other it never fires (a fire is a Cancelled raised and caught in the reader),
        # and it is moved only every few calls (moving it is a heap push).
        scope = self._rest_scope
        if scope is not None:
            now = self._now()
            if not now + READER_REST_S / 2 <= scope.deadline <= now + READER_REST_S:
                scope.deadline = now + READER_REST_S
        transport = self.transport
        # A lone command's reply read alone is answered here, the rest by _handle, which does the same.
        lone_id = ids[0] if lone and self._trace is None and _orjson_loads is not None else None
        try:
            while entry.reply is None and entry.error is None:
                try:
                    # Alone in flight, the reply is likely soon: the transport may poll for it (FdIO.read).
                    batch = await transport.receive_batch(poll=lone and len(self._pending) == 1)
                except ConnectionClosed as exc:
                    self.close(exc)
                    raise
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                    broken = ConnectionClosed(f"the {transport.name} to the browser broke: {exc}")
                    self.close(broken)
                    raise broken from exc
                if lone_id is not None and len(batch) == 1 and len(batch[0]) < LARGE_MESSAGE:
                    try:
                        message = _orjson_loads(batch[0])  # type: ignore[misc]
                    except ValueError:
                        message = None  # _handle says what is wrong with it
                    if (
                        type(message) is dict
                        and type(command_id := message.get("id")) is int
                        and command_id == lone_id
                        and self._pending.pop(lone_id, None) is entry
                    ):
                        entry.reply = message
                        self._received += 1
                        self._eager = True
                        self.filling = False
                        if transport.backlog:
                            self._writer_lot.unpark()
                        break
                # As the reader does: a subscription opened during this lead (by another task) gets its
                # consumer's turns, or a burst would overflow it while the leader reads on.
                while batch := self._handle(batch, yield_to_consumers=True):
                    await trio.lowlevel.cancel_shielded_checkpoint()
                    await trio.lowlevel.cancel_shielded_checkpoint()
        finally:
            self._leading = False
            if entry.reply is None and entry.error is None:
                self._forget(ids)  # cancelled: the late replies are dropped
            if not self._may_rest():
                self._reader_resting = False
                self._reader_lot.unpark()
            elif self._rest_scope is not None and self._rest_scope.deadline == math.inf:
                # The reader began its rest during this lead, with no timer: it gets one now.
                self._rest_scope.deadline = self._now() + READER_REST_S
        if entry.error is not None:
            raise entry.error
        return entry.reply  # type: ignore[return-value]

    def _forget(self, ids: tuple[int, ...]) -> None:
        for command_id in ids:
            self._pending.pop(command_id, None)

    def call_nowait(self, session: Session, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a command whose reply nobody waits for (an error reply is only logged)."""
        if self._closed is not None:
            return
        command_id, data = self._encode(method, params, session)
        self._ignored[command_id] = session
        try:
            self._enqueue((data,))
        except ConnectionClosed as exc:
            self.close(exc)

    async def _writer(self) -> None:
        while True:
            if not self._outbox and not self.transport.backlog:
                await self._writer_lot.park()
                continue
            batch, self._outbox = self._outbox, []
            self._sent += len(batch)
            await self.transport.send(batch)

    # -- receiving -----------------------------------------------------------------------------------

    async def _reader(self) -> None:
        transport = self.transport
        now = self._now = trio.lowlevel.current_clock().current_time  # trio.current_time minus three calls
        gather = self.settings.gather
        bytes_waiting = waiting_probe(transport)
        if bytes_waiting is None:  # a transport that cannot tell whether bytes wait is never gathered
            bytes_waiting, gather = _always, 0.0
        # Gathering (Settings.gather): while messages stream in to a subscriber (GATHER_AFTER reads in a
        # row, each of which found its bytes within `gather` of being asked), the reader waits `gather`
        # before a read when nothing is there to read yet. A wake-up from epoll costs more than the two or
        # three events it brings (a sleep and a wake on a VM, the caches cold after Chromium ran); after
        # a wait a read brings a dozen. Bytes already waiting are read at once (this process is the slower
        # side then, and each read brings plenty). It stops when a read waits `gather` or more for its
        # bytes, or brings fewer than GATHER_MIN messages. A send ends a wait (_enqueue), and there is none
        # while a command sent in the last FRESH_S is unanswered: a quick reply is read as it comes. (An
        # older command's reply, such as the evaluate that runs the flood, may wait up to `gather`.) Nor
        # right after a read that brought a reply: its caller may send again at once, and a wait that the
        # send ends costs a timer and a cancellation (3-6% on each round trip of a loop of commands).
        quick = 0  # quick reads in a row, up to GATHER_AFTER: then gathering
        last = -math.inf  # when the last read returned
        fresh_low, fresh_until = 0, -math.inf  # commands from id fresh_low on count as just sent until then
        answered = 0  # self._answered when the reader last looked
        while True:
            replied, answered = answered != self._answered, self._answered
            if (
                quick >= GATHER_AFTER
                and not replied
                and self.listeners
                and self._fresh_low is None  # (a command sent since the last read: see below)
                and (last >= fresh_until or not any(sent >= fresh_low for sent in self._pending))
                and not bytes_waiting()
            ):
                self._gathering_waits += 1
                try:
                    with trio.CancelScope(deadline=last + gather) as self._gather_scope:
                        await trio.sleep_forever()
                finally:
                    self._gather_scope = None
            if self._leading or self._may_rest():
                quick = 0
                # Rest: a lone caller reads its own reply (_send_and_wait). The rest is short, so what arrives
                # unasked (an event nobody listens to, a late reply) is still handled within READER_REST_S.
                self._reader_resting = True
                # No timer while a caller leads (it reads everything); the lead's end gives it one.
                deadline = math.inf if self._leading else self._now() + READER_REST_S
                with trio.CancelScope(deadline=deadline) as self._rest_scope:
                    await self._reader_lot.park()
                self._rest_scope = None
                if self._leading:
                    continue
                self._reader_resting = False
            if not gather:
                batch = await transport.receive_batch()
            else:
                asked = now()
                batch = await transport.receive_batch()
                last = now()
                if self._fresh_low is not None:
                    if last >= fresh_until:  # a new window; else the open one goes on
                        fresh_low = self._fresh_low
                    fresh_until = last + FRESH_S
                    self._fresh_low = None
                blocked = last - asked
                if blocked >= gather:  # it waited for its bytes: no stream, or no longer
                    quick = 0
                elif quick < GATHER_AFTER:
                    # Bytes that were there at once under a clock that did not move (a frozen virtual one)
                    # are not counted: no deadline of a wait would ever come.
                    quick += blocked > 0
                elif len(batch) < GATHER_MIN:
                    quick = 0  # the stream thinned out: read as it comes again
            while batch := self._handle(batch, yield_to_consumers=True):
                # A subscriber's buffer reached its mark (CONSUMER_TURN): give its consumer a turn before
                # the rest of this read (one read can hold thousands of events). Yields, never a wait: a
                # consumer that does not read lets its buffer fill and overflow by its policy. Two, as
                # trio may run the reader first in the next pass, before a consumer woken in this one.
                await trio.lowlevel.cancel_shielded_checkpoint()
                await trio.lowlevel.cancel_shielded_checkpoint()

    def _handle(self, batch: list[bytes], *, yield_to_consumers: bool = False) -> list[bytes]:
        """Dispatch ``batch``; with ``yield_to_consumers``, stop after a message that brought a
        subscription's buffer to its mark (CONSUMER_TURN), and return the messages not dispatched yet."""
        self._eager = True
        self.filling = False
        for index, raw in enumerate(batch):
            if self._trace is not None:
                self._trace("<-", raw)
            self._received += 1
            try:
                self._dispatch(raw)
            except Exception:
                # A safety net: one message the checks below did not foresee must not end the link.
                self._malformed += 1
                log.exception("dropped a message the reader could not handle: %.200r", raw)
            if self.filling and yield_to_consumers and index + 1 < len(batch):
                self._owe_backlog()
                return batch[index + 1 :]
        self._owe_backlog()
        return []

    def _owe_backlog(self) -> None:
        if self.transport.backlog:
            # The transport owes the peer bytes (a websocket pong): the writer sends them, never us.
            self._writer_lot.unpark()

    def _may_rest(self) -> bool:
        """Whether nobody needs the link read now: no command pending, no subscriber, nobody waiting for
        the close. Bytes that arrive meanwhile wait in the kernel for the next reader."""
        if self._pending or self._leading or self._closed is not None or not self.lead_when_alone:
            return False
        if self._close_waiters:
            return False
        # Hooks (dialogs, popups) are not counted: they run in whichever task reads, within
        # READER_REST_S of their event even while the reader rests, and no consumer waits on them.
        return not self.listeners

    def wake_reader(self) -> None:
        """Make the reader task read again (a subscription or a close waiter appeared)."""
        if self._reader_resting and not self._leading:
            self._reader_resting = False
            self._reader_lot.unpark()

    def _dispatch(self, raw: bytes) -> None:
        try:
            if _orjson_loads is not None and len(raw) < LARGE_MESSAGE:
                try:  # _parse of a small message, inline: two calls less for every message
                    message = _orjson_loads(raw)
                except ValueError:
                    message = _parse_json(raw)
            else:
                if self._unwanted(raw):
                    return
                message = _parse(raw)
        except ValueError as exc:
            self._malformed += 1
            log.warning("dropped a malformed message from the browser (%s): %.200r", exc, raw)
            self._fail_unreadable(raw, f"the browser's reply is not valid JSON ({exc})")
            return
        if not isinstance(message, dict):
            self._malformed += 1
            log.warning("dropped a message that is not a JSON object: %.200r", raw)
            return
        command_id = message.get("id")
        if command_id is not None:
            if type(command_id) is not int:
                self._malformed += 1
                log.warning("dropped a reply whose id is not an integer: %.200r", raw)
                self._fail_unreadable(raw, f"the browser's reply has the id {command_id!r}, not an integer")
                return
            entry = self._pending.pop(command_id, None)
            if entry is None:
                if self._ignored.pop(command_id, None) is not None:
                    if "error" in message:
                        log.debug("fire-and-forget command %s failed: %s", command_id, message["error"])
                else:
                    self._unknown_id += 1
                    log.debug("dropped a reply to no pending command (id %r)", command_id)
                return
            if len(raw) >= LARGE_MESSAGE:
                entry.raw = raw
            self._answered += 1
            _answer(entry, message)
            return
        method = message.get("method")
        if not isinstance(method, str):
            if "error" in message:
                self._fail_unidentified(message["error"])
                return
            self._malformed += 1
            log.warning("dropped a message with neither id nor method: %.200r", raw)
            return
        session_id = message.get("sessionId")
        if session_id is not None and type(session_id) is not str:
            self._malformed += 1
            log.warning("dropped an event whose sessionId is not a string: %.200r", raw)
            return
        session = self.sessions.get(session_id)
        if session is None:
            self._unknown_session += 1
            log.debug("dropped %s for unknown session %r", method, message.get("sessionId"))
            return
        params = message.get("params")
        if not isinstance(params, dict):
            params = {}
        if method in LIFECYCLE_EVENTS:  # tested here: most events skip these calls
            try:
                self.sessions.follow(session, method, params)
            except Exception:
                log.exception("failed to follow %s; the connection goes on", method)
            session._deliver(method, params)
            # A new child is resumed after the parent's hooks saw its attach: what they send it (the
            # engine's Network.enable, Page.enable) reaches it before it runs, so no request is missed.
            self.sessions.resume_attached()
            return
        session._deliver(method, params)

    def _unwanted(self, raw: bytes) -> bool:
        """Whether a large message is the reply to a command nobody waits for any more (cancelled, or
        forgotten with its session): dropped unparsed, as a 300 MB one held every task for 1.6 s."""
        command_id = _shown_id(raw)
        if command_id is None or command_id in self._pending or command_id in self._ignored:
            return False
        self._unknown_id += 1
        log.debug(
            "dropped a large reply to no pending command (id %d, %d bytes) unparsed", command_id, len(raw)
        )
        return True

    def _fail_unreadable(self, raw: bytes, reason: str) -> None:
        """A reply the reader cannot take ends the command whose id it shows (if one waits), rather than
        leave that command waiting for a reply that has come."""
        command_id = _shown_id(raw)
        entry = self._pending.pop(command_id, None) if command_id is not None else None
        if entry is not None:
            payload = raw[:1000].decode("utf-8", "replace")
            _fail([entry], lambda entry: ResponseDecodeError(entry.method, payload, reason))

    def _fail_unidentified(self, error: Any) -> None:
        """An error reply with no id: the browser could not parse a message, so could not read its id.

        It belongs to one of the commands in flight, and nothing tells which; every one of them ends with
        the error rather than one of them waiting forever. (Outbound params are checked before sending,
        so this is the backstop for what the checks do not know about.)
        """
        self._malformed += 1
        pending, self._pending = self._pending, {}
        log.warning(
            "the browser answered an error with no id (%.200r); failing %d command(s)", error, len(pending)
        )
        _fail(
            pending.values(),
            lambda entry: _protocol_error(
                error, entry.method, entry.session.session_id, unidentified=len(pending)
            ),
        )

    # -- ending --------------------------------------------------------------------------------------

    def fail_pending(self, session: Session, error: CDPError) -> None:
        """End every command pending on ``session`` with ``error`` (detach, crash)."""
        doomed = [cid for cid, entry in self._pending.items() if entry.session is session]
        _fail([self._pending.pop(cid) for cid in doomed], lambda _: fresh_copy(error))

    def forget_session(self, session: Session) -> None:
        """``session`` is gone: the replies to its fire-and-forget commands will never come."""
        for command_id in [cid for cid, owner in self._ignored.items() if owner is session]:
            del self._ignored[command_id]

    def close(self, reason: ConnectionClosed) -> None:
        """Mark the link closed; every pending command and every subscription ends with ``reason``
        (with ``closing``'s, if set: the link's own account cannot tell an asked-for exit from a crash)."""
        if self._closed is not None:
            return
        if self.closing is not None:
            expected = ConnectionClosed(self.closing)
            expected.__cause__ = reason
            reason = expected
        self._closed = reason
        pending, self._pending = self._pending, {}
        _fail(pending.values(), lambda _: fresh_copy(reason))
        for session in self.sessions:
            session._close_subscriptions(reason)
        self._closed_event.set()

    @property
    def closed(self) -> ConnectionClosed | None:
        """Why the link is closed, or ``None`` while it is open."""
        return self._closed

    async def wait_closed(self) -> None:
        self._close_waiters += 1
        self.wake_reader()  # a close must be noticed when it happens, not at the next command
        try:
            await self._closed_event.wait()
        finally:
            self._close_waiters -= 1

    def pending_count(self) -> int:
        return len(self._pending)

    def statistics(self) -> ConnectionStatistics:
        return ConnectionStatistics(
            transport=self.transport.name,
            messages_sent=self._sent,
            messages_received=self._received,
            pending=len(self._pending),
            sessions=len(self.sessions),
            malformed_messages=self._malformed,
            unknown_id_replies=self._unknown_id,
            unknown_session_events=self._unknown_session,
            events_delivered=self.events_delivered,
            events_dropped=self.events_dropped,
            gathering_waits=self._gathering_waits,
        )


def _always() -> bool:
    return True


def _fail(entries: Iterable[_Pending], error_for: Callable[[_Pending], CDPError]) -> None:
    """Wake the caller of each entry (already out of the pending map) with its error."""
    for entry in entries:
        if entry.task is not None:
            trio.lowlevel.reschedule(entry.task, outcome.Error(error_for(entry)))
            entry.task = None
        else:
            entry.error = error_for(entry)  # a leading caller raises it when its read returns
            if entry.group is not None:
                entry.group.settle_one()


def decoded(command: cdp.Command[T], reply: dict[str, Any], session_id: str | None, raw: bytes | None) -> T:
    """The typed result of ``command``'s ``reply``: its error as a ProtocolError (:func:`_result_of`), a
    binding mismatch as ResponseDecodeError.

    Given ``raw``, the bytes of a large reply, the decode spends ``result`` (``Command.decode(consume=True)``:
    each wire object is freed as its typed one is made, about 15% less time for a 13k-node AX tree, and a
    lower peak), and an error re-reads the whole result from the bytes, so its payload lacks nothing. Only
    such a reply decodes with the GC paused, as it was parsed: for a small one the pause costs more than
    it saves.
    """
    result = reply.get("result")
    if type(result) is not dict or "error" in reply:  # the common case checked here: one call less
        result = _result_of(reply, command.method, session_id)
    try:
        return command.decode(result, consume=raw is not None, pause_gc=raw is not None)
    except cdp.DecodeError as exc:
        payload = exc.payload if raw is None else _parse(raw).get("result", exc.payload)
        raise ResponseDecodeError(exc.method, payload, exc.reason) from exc


def _entry_result(entry: _Pending) -> dict[str, Any]:
    """The ``result`` of a command sent with others (its group ended, so it has a reply or an error)."""
    assert entry.reply is not None  # _call_all raised the first error
    return _result_of(entry.reply, entry.method, entry.session.session_id)


def _result_of(reply: dict[str, Any], method: str, session_id: str | None) -> dict[str, Any]:
    """The ``result`` object of a reply; its error as a ProtocolError, or SessionDetached when the browser
    no longer knows the session (a tab closed just now: that reply can come before the detach event)."""
    error = reply.get("error")
    if error is not None:
        failure = _protocol_error(error, method, session_id)
        if failure.code == SESSION_NOT_FOUND and session_id is not None:
            raise SessionDetached(
                f"cannot send {method}: session {session_id} is gone (the browser answered "
                f"{failure.code}: {failure.message}); its target was closed or detached"
            ) from failure
        raise failure
    result = reply.get("result", {})
    if not isinstance(result, dict):
        raise ResponseDecodeError(method, reply, "the reply's 'result' is not a JSON object")
    return result


def _protocol_error(
    error: Any, method: str, session_id: str | None, *, unidentified: int = 0
) -> ProtocolError:
    """The ProtocolError for an error object from the browser, whatever shape it came in."""
    if isinstance(error, dict):
        code, message, data = error.get("code", 0), error.get("message", ""), error.get("data")
        if type(code) is not int:
            code = 0
        if not isinstance(message, str):
            message = repr(message)
    else:
        code, message, data = 0, f"the browser sent a malformed error: {error!r}", None
    if unidentified:
        message += (
            f" (the reply carried no id, so it could belong to any of the {unidentified} command(s) in "
            "flight, this one included: they all end with it. Usually the params held something Chromium "
            "cannot parse)"
        )
    return ProtocolError(code=code, message=message, data=data, method=method, session_id=session_id)


SESSION_NOT_FOUND = -32001
"""Chromium's error code for a command on a session it no longer knows ("Session with given id not found")."""

LARGE_MESSAGE = 256 * 1024

_SHOWN_ID = re.compile(rb'\{\s*"id"\s*:\s*("?)(\d{1,10})(?:\.0*)?\1\s*[,}]')


def _shown_id(raw: bytes) -> int | None:
    """The id at the start of a message, read without parsing it (Chromium writes a reply's id first): for
    a reply that cannot be parsed or has an odd id, and a large one nobody may wait for."""
    match = _SHOWN_ID.match(raw)
    return int(match[2]) if match else None


READER_REST_S = 0.02
"""How long the reader task rests at most when nobody needs the link read (see Connection._reader).

Its timer, kept between a half and a whole of this from now, is the deadline of the caller's epoll waits
too. A wait due within a few milliseconds arms and cancels a kernel timer: measured on this 2-core VM,
7-8 us of CPU per wait at 1 ms, none from about 5 ms (a socket ping-pong with each timeout, interleaved)."""

GATHER_AFTER = 8
"""Reads in a row, each of which found its bytes within Settings.gather of being asked, after which the reader
gathers."""

GATHER_MIN = 3
"""The fewest messages a gathered read must bring for the reader to go on gathering."""

FRESH_S = 0.05
"""For this long after a command is sent, the reader does not gather while it is unanswered: a quick reply
is read as it comes (one older than this may wait up to Settings.gather more). Fire-and-forget commands
(call_nowait) do not count: nobody waits for their replies."""

MAX_COMMAND_ID = 2**31 - 1
"""Chromium reads ids as 32-bit ints: id 2**31 gets "Message must have integer 'id' property", with no id.
After this many commands, ids start again from 1 (skipping any still in flight)."""


_decoder = json.JSONDecoder()
_decode_json = _decoder.decode
_scan_json: Callable[[str, int], tuple[Any, int]] = _decoder.scan_once  # type: ignore[attr-defined]


def _loads(text: str) -> Any:
    """``json.loads`` of a str without its two whitespace regex matches (Chromium sends none): the C
    scanner reads one value from the start, and anything else (whitespace, extra data, an error) goes
    through the full decoder, which says what is wrong."""
    try:
        value, end = _scan_json(text, 0)
    except StopIteration:
        return _decode_json(text)
    if end != len(text):
        return _decode_json(text)
    return value


def _parse(raw: bytes) -> Any:
    """The message ``raw`` holds: orjson's parse, or ``json.loads``' where orjson refuses the bytes.

    orjson is 3-4x faster on a small message (0.5 against 2.0 us for a getVersion reply, 1.7 against 5.9
    for a console event); a DOM document's parse plus typed decode went from 2.3x to 1.8x the GC-paused
    ``json.loads`` (an AX tree's stayed at 2.0x: its typed decode is the larger part). What it refuses
    and ``json.loads`` takes (a lone surrogate, escaped or as bytes; NaN; 1e400) goes the old way, so no
    message is lost to the switch. One difference is kept: an integer beyond 64 bits becomes a float. CDP's
    integers are 32-bit and every other number is a double, so that float is the value the browser meant
    (V8 writes 2**64 as 18446744073709552000, which ``json.loads`` reads as a different integer).

    The cyclic GC is paused for a large message: a multi-megabyte reply (an AX tree, a document) allocates
    hundreds of thousands of containers that all survive the parse, and with the GC running each burst
    triggers collections that walk them again (a 6 MB AX tree: 244 ms with the GC, 62 ms without).
    """
    if len(raw) < LARGE_MESSAGE:
        return _parse_now(raw)
    with gc_paused():
        return _parse_now(raw)


def _parse_now(raw: bytes) -> Any:
    if _orjson_loads is not None:
        try:
            return _orjson_loads(raw)
        except ValueError:
            pass  # what orjson refuses json.loads may take, or say what is wrong in its own words
    return _parse_json(raw)


def _parse_json(raw: bytes) -> Any:
    # CDP is UTF-8: decoding it here skips json.loads' encoding sniffing (a tenth of a small event's parse).
    try:
        return _loads(raw.decode("utf-8", "surrogatepass"))
    except RecursionError:  # a ValueError, as every other unreadable message: its command is told
        raise ValueError("nested too deeply to parse") from None


@asynccontextmanager
async def open_connection(
    transport: Transport, settings: Settings = DEFAULT_SETTINGS
) -> AsyncIterator[Connection]:
    """Run the reader and writer of ``transport`` for the duration of the block."""
    connection = Connection._create(transport, settings)

    # The reader and writer run shielded from the caller's cancel scopes, and are cancelled only when
    # the block has finished leaving: a block left by an outer cancellation still reads the replies to
    # its teardown commands (Browser.close, Target.closeTarget) instead of waiting out their limits.
    # (Made here, not in the tasks: a scope cancelled before its task starts still ends that task.)
    shields = {"reader": trio.CancelScope(shield=True), "writer": trio.CancelScope(shield=True)}

    async def guarded(name: str, body: Callable[[], Any]) -> None:
        with shields[name]:
            try:
                await body()
            except ConnectionClosed as exc:
                connection.close(exc)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                connection.close(ConnectionClosed(f"the {transport.name} to the browser broke: {exc}"))
            except Exception as exc:
                log.exception("the connection's %s task failed", name)
                connection.close(ConnectionClosed(f"the connection's {name} failed: {exc!r}"))

    with collapse_groups():
        async with trio.open_nursery() as nursery:
            nursery.start_soon(guarded, "reader", connection._reader)
            nursery.start_soon(guarded, "writer", connection._writer)
            try:
                yield connection
            finally:
                connection.close(ConnectionClosed("the connection was closed by this client"))
                for shield in shields.values():
                    shield.cancel()
                with trio.CancelScope(shield=True):
                    await transport.aclose()
