"""A flattened target session: typed ``execute``, raw ``execute_raw``, bounded ``listen``.

Sessions are created by the session table (``Browser.session``, ``Page.session``, auto-attached iframes
and workers in ``Session.children``); they have no public constructor.
"""

from __future__ import annotations

import functools
import logging
from collections import deque
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, overload

import attrs
import trio

import cdp
from engine import _names
from engine._errors import (
    CDPError,
    ConnectionClosed,
    EventOverflow,
    ResponseDecodeError,
    SessionDetached,
    TargetCrashed,
    fresh_copy,
)
from engine._util import NoPublicConstructor

if TYPE_CHECKING:
    from engine._connection import Connection

log = logging.getLogger("engine.session")

T = TypeVar("T")
T2 = TypeVar("T2")
T3 = TypeVar("T3")
T4 = TypeVar("T4")
E = TypeVar("E")
E1 = TypeVar("E1")
E2 = TypeVar("E2")
E3 = TypeVar("E3")
E4 = TypeVar("E4")
Ev_co = TypeVar("Ev_co", covariant=True)
Overflow = Literal["error", "drop_oldest", "drop_newest"]
OVERFLOW_POLICIES: tuple[Overflow, ...] = ("error", "drop_oldest", "drop_newest")
YIELD_EVERY = 64
"""A subscription's receive() that finds events buffered lets other tasks run once per this many: as many
as the reader hands over per turn (CONSUMER_TURN). At 32 it took a second pass of the scheduler per turn.
Together with ``__anext__`` handing back ``_next``'s coroutine and the reader's lifecycle check: 6.22 ->
5.94 us of client CPU per console event (in-process, 10,000-event floods, medians of 6 alternated
processes)."""
CONSUMER_TURN = 64
"""The reader gives a subscription's consumer a turn once its buffer holds this many events (half the
buffer if less). Events parsed far ahead of their consumer outlive the GC's young collections and are
walked again by the older ones: over 8 console floods of 10,000 events into a 20,000-event buffer (mark
at half), 204-384 young and 2-4 full collections (a full one took 20-36 ms); at 64, 8-24 young and 0-1
full. In-process, 0.66x the client CPU per event (the parsed event is still in the cache when consumed)."""


@attrs.frozen(kw_only=True)
class SubscriptionStatistics:
    """A snapshot of one subscription's buffer and counters."""

    buffer_size: int
    overflow: Overflow
    buffered: int
    delivered: int
    dropped: int
    decode_errors: int


class _Gap:
    """Where events were lost under the "error" policy, in stream order; ``receive`` raises there."""

    __slots__ = ("lost",)

    def __init__(self) -> None:
        self.lost = 1


class _Crash:
    """Where the target's renderer crashed, in stream order; ``receive`` raises ``error`` there."""

    __slots__ = ("error",)

    def __init__(self, error: TargetCrashed) -> None:
        self.error = error


def _leave(waiters: deque[trio.lowlevel.Task], task: trio.lowlevel.Task, _: object) -> trio.lowlevel.Abort:
    """A waiting consumer's abort: cancelled, it leaves the queue at once, before a later event comes."""
    waiters.remove(task)
    return trio.lowlevel.Abort.SUCCEEDED


class Subscription(Generic[Ev_co], metaclass=NoPublicConstructor):
    """A bounded buffer of events for one consumer; iterate it, or ``await receive()``.

    Typed by the event classes it was made for: ``listen(cdp.page.LoadEventFired)`` gives a
    ``Subscription[cdp.page.LoadEventFired]``, so ``(await sub.receive()).timestamp`` type-checks; with two
    to four classes, their union (``wait_for(cls)`` narrows it); with more, method names or none, ``Any``.

    The reader never waits on it: when the buffer is full, ``overflow`` decides what happens —
    ``"error"`` (default: ``receive`` raises EventOverflow at the point of the stream where events were
    lost, then goes on with the later ones),
    ``"drop_oldest"`` or ``"drop_newest"`` (counted in ``statistics().dropped``).
    """

    def __init__(
        self,
        session: Session,
        methods: frozenset[str] | None,
        buffer_size: int,
        overflow: Overflow,
        typed: bool,
    ) -> None:
        self._session = session
        self.methods = methods
        self._buffer: deque[tuple[str, dict[str, Any]] | _Gap | _Crash] = deque()
        self._size = buffer_size
        self._turn = max(1, min(buffer_size // 2, CONSUMER_TURN))
        self._overflow = overflow
        self._typed = typed
        # The consumers waiting for an event, first come first woken. A deque, not a trio ParkingLot: _push
        # asks whether anyone waits once per event, and a lot's truth test is a Python call. A waiter
        # leaves it when woken (_wake) or, at once, when cancelled (its abort function).
        self._waiters: deque[trio.lowlevel.Task] = deque()
        self._end: CDPError | None = None
        self._ended = False
        self._delivered = 0
        self._delivered_at_turn = 0  # _delivered when the reader last gave the consumer a turn
        self._dropped = 0
        self._gaps = 0
        self._decode_errors = 0
        self._unyielded = 0  # events returned since receive() last let other tasks run
        self._counted = False  # made by subscribe() and counted in connection.listeners until it ends

    def _push(self, method: str, params: dict[str, Any]) -> None:
        """Called by the reader: buffer the event or apply the overflow policy. Never blocks."""
        if self._ended:
            return
        connection = self._session.connection
        if len(self._buffer) - self._gaps >= self._size:
            self._dropped += 1
            connection.events_dropped += 1
            if self._overflow == "drop_newest":
                return
            if self._overflow == "drop_oldest":
                if isinstance(self._buffer[0], tuple):
                    self._buffer.popleft()
                else:  # news of a crash is kept (the only marker under this policy): the oldest event goes
                    del self._buffer[
                        next(i for i, item in enumerate(self._buffer) if isinstance(item, tuple))
                    ]
            else:
                # A marker at the tail counts the run of lost events; markers sit between events, so the
                # buffer holds at most 2 * buffer_size items.
                tail = self._buffer[-1]
                if isinstance(tail, _Gap):
                    tail.lost += 1
                else:
                    self._buffer.append(_Gap())
                    self._gaps += 1
                    self._wake()
                return
        self._buffer.append((method, params))
        connection.events_delivered += 1
        if self._waiters:
            trio.lowlevel.reschedule(self._waiters.popleft())
        elif (held := len(self._buffer) - self._gaps) >= self._turn and (
            self._delivered != self._delivered_at_turn or not held % self._turn
        ):
            # The reader gives the consumer a turn (Connection._reader): after each event while the
            # consumer took some in its last turn, else every CONSUMER_TURN events (it may be awaiting
            # the command that makes them: a turn per event would cost a scheduler pass each).
            self._delivered_at_turn = self._delivered
            connection.filling = True

    def _crashed(self, error: TargetCrashed) -> None:
        """Called by the session: its renderer crashed. No event comes until it is revived (a reload or
        a navigation), so the consumer is told at this point of the stream, and may go on reading."""
        if self._ended:
            return
        self._buffer.append(_Crash(error))
        self._gaps += 1  # a marker, not an event (see _push)
        self._wake()

    def _wake(self) -> None:
        """Wake one waiting consumer, if any."""
        if self._waiters:
            trio.lowlevel.reschedule(self._waiters.popleft())

    def _forget_buffered(self) -> None:
        """Drop the events waiting here (the engine's own: events known to predate what is awaited)."""
        self._buffer.clear()
        self._gaps = 0

    def _close(self, error: CDPError | None = None) -> None:
        """End the subscription: a consumer gets the buffered events, then ``error`` (or the end)."""
        if self._ended:
            return
        self._ended = True
        self._end = error
        waiters, self._waiters = self._waiters, deque()
        for task in waiters:
            trio.lowlevel.reschedule(task)
        if self._counted:
            self._session.connection.listeners -= 1

    def receive(self) -> Coroutine[Any, Any, Ev_co]:
        """The next event (typed; ``UnknownEvent`` for events the bindings do not know).

        Always a cancel point. It lets other tasks run when it waits, and at least every
        ``YIELD_EVERY`` events of a full buffer: a scheduler pass per event (what a trio memory channel
        costs) took about a third of the client's CPU time per event in a console flood.

        Raises:
            EventOverflow: under the "error" policy, events were lost because the buffer was full.
            TargetCrashed: the renderer crashed here; read on for the events of the page once revived.
            ResponseDecodeError: this one event did not fit its binding; the subscription goes on.
            ConnectionClosed, SessionDetached: the link or session ended; buffered events come first.
            trio.EndOfChannel: the subscription was closed normally.
        """
        return self._next(trio.EndOfChannel)

    async def _next(self, end: type[Exception] = StopAsyncIteration) -> Ev_co:
        """``receive``, raising ``end`` once the subscription was closed normally. (``receive`` hands back
        this coroutine, so ``async for`` resumes one frame per event, not two; it is ``__anext__`` itself.)"""
        while True:
            if self._buffer:
                try:
                    await trio.lowlevel.checkpoint_if_cancelled()
                except BaseException:
                    self._wake()  # woken for this event but cancelled: it is another waiter's
                    raise
                item = self._buffer.popleft()
                self._unyielded += 1
                if self._unyielded >= YIELD_EVERY:
                    self._unyielded = 0
                    await trio.lowlevel.cancel_shielded_checkpoint()
                if isinstance(item, _Crash):
                    self._gaps -= 1
                    raise fresh_copy(item.error)
                if isinstance(item, _Gap):
                    self._gaps -= 1
                    raise EventOverflow(
                        f"{item.lost} event(s) were lost here: the subscription's buffer of {self._size} was "
                        "full. Read faster, raise buffer_size, or choose overflow='drop_oldest'/'drop_newest'"
                    )
                self._delivered += 1
                event: Ev_co = self._decode(*item)
                return event
            if self._ended:
                if self._end is not None:
                    raise fresh_copy(self._end) from self._end
                raise end
            self._unyielded = 0
            task = trio.lowlevel.current_task()
            self._waiters.append(task)
            await trio.lowlevel.wait_task_rescheduled(functools.partial(_leave, self._waiters, task))

    def _decode(self, method: str, params: dict[str, Any]) -> Any:
        if not self._typed:
            return cdp.UnknownEvent(method=method, params=params)
        try:
            return cdp.decode_event(method, params)
        except cdp.DecodeError as exc:
            self._decode_errors += 1
            raise ResponseDecodeError(exc.method, exc.payload, exc.reason) from exc

    @overload
    async def wait_for(self, predicate: Callable[[Ev_co], bool] | None = None, /) -> Ev_co: ...
    @overload
    async def wait_for(self, kind: type[T], predicate: Callable[[T], bool] | None = None, /) -> T: ...
    async def wait_for(self, first: Any = None, predicate: Any = None, /) -> Any:
        """Receive until an event matches; return it. Events before it are consumed.

        ``wait_for()`` takes the next event; ``wait_for(pred)`` the next for which ``pred(event)`` is true;
        ``wait_for(cdp.page.FrameNavigated[, pred])`` the next of that class, typed as that class (where a
        subscription to several classes is typed by their union).
        """
        kind: type[Any] | None = None
        if isinstance(first, type):
            kind = first
        elif predicate is None:
            first, predicate = None, first
        while True:
            event = await self.receive()
            if kind is not None and not isinstance(event, kind):
                continue
            if predicate is None or predicate(event):
                return event

    def __aiter__(self) -> Subscription[Ev_co]:
        return self

    # The coroutine function itself, with its default end: one Python call less per event than a method
    # that makes the coroutine.
    __anext__ = _next

    def statistics(self) -> SubscriptionStatistics:
        return SubscriptionStatistics(
            buffer_size=self._size,
            overflow=self._overflow,
            buffered=len(self._buffer) - self._gaps,
            delivered=self._delivered,
            dropped=self._dropped,
            decode_errors=self._decode_errors,
        )


class Session(metaclass=NoPublicConstructor):
    """One flattened CDP session (the browser's, a page's, an iframe's or a worker's).

    Attributes:
        session_id: the CDP session id (None for the browser-level session).
        target_id: the target it is attached to (None for the browser-level session).
        target_type: "browser", "page", "iframe" (an out-of-process iframe), "worker",
            "service_worker", "shared_worker", ...
        url: the target's URL, kept current from ``Target.targetInfoChanged``.
        frame_id: the frame it drives, for pages and iframes (the same as ``target_id``); None for workers.
        parent: the session it was auto-attached under (a page's for its iframes and workers), or None.
        children: the sessions auto-attached under this one, by session id: a page's out-of-process
            iframes and its workers (nested iframes under their iframe). They attach by themselves as the
            page creates them; ``Browser.on_attach`` sees each one before it runs, so a
            ``child.subscribe(...)`` made there misses none of its events. A detached child leaves the dict.
    """

    def __init__(
        self,
        connection: Connection,
        session_id: str | None,
        *,
        target_id: str | None,
        target_type: str,
        url: str,
        frame_id: str | None,
        parent: Session | None,
    ) -> None:
        self.connection = connection
        self.session_id = session_id
        #: The target this session is attached to (None for the browser-level session).
        self.target_id = target_id
        #: "browser", "page", "iframe", "worker", "service_worker", ...
        self.target_type = target_type
        #: The target's URL, kept current from Target.targetInfoChanged.
        self.url = url
        #: The target's main frame (pages and iframes: the frame id is the target id), else None.
        self.frame_id = frame_id
        self.parent = parent
        self.children: dict[str, Session] = {}
        self._subscriptions: list[Subscription[Any]] = []
        # Who gets each method, in subscription order, rebuilt as subscriptions come and go (rarely), so an
        # event costs one dict lookup however many subscriptions the session has (a page has its dialog
        # hooks besides its listeners). A method no listed subscription names goes to the catch-alls.
        self._routes: dict[str, tuple[Subscription[Any], ...]] = {}
        self._catch_all: tuple[Subscription[Any], ...] = ()
        self._detached: SessionDetached | None = None
        self._crashed: TargetCrashed | None = None
        self._closed_by_client: str | None = None

    def __repr__(self) -> str:
        where = f" {self.url}" if self.url else ""
        return f"<Session {self.session_id or 'browser'} {self.target_type} {self.target_id or ''}{where}>"

    @property
    def detached(self) -> bool:
        return self._detached is not None

    @property
    def crashed(self) -> bool:
        """The target's renderer crashed and no navigation or reload has revived it yet."""
        return self._crashed is not None

    def raise_if_unusable(self, method: str) -> None:
        if self._detached is not None:
            if self.connection.closed is not None:  # the browser went, and its sessions with it
                raise ConnectionClosed(f"cannot send {method}: {self.connection.closed}")
            raise SessionDetached(f"cannot send {method}: {self._detached}")
        if self._crashed is not None and method not in WORKS_AFTER_CRASH:
            raise TargetCrashed(
                f"cannot send {method}: {self._crashed} Chromium would never answer it; navigate or reload "
                "the page (Page.navigate, Page.reload) to start a new renderer"
            )

    @overload
    def execute(self, command: cdp.Command[T]) -> Coroutine[Any, Any, T]: ...
    @overload
    def execute(self, command: cdp.Command[None]) -> Coroutine[Any, Any, None]: ...
    def execute(self, command: cdp.Command[Any]) -> Coroutine[Any, Any, Any]:
        """Send a typed command and return its typed result (``None`` for commands without one).

        Bound it with the caller's own cancel scope: ``with trio.fail_after(2): await s.execute(...)``.
        (Not ``async def``: it hands back the connection's coroutine, one frame less to resume at every
        wait of a round trip.)
        """
        return self.connection.execute(self, command)

    @overload
    async def execute_all(self, c1: cdp.Command[T], /) -> tuple[T]: ...
    @overload
    async def execute_all(self, c1: cdp.Command[T], c2: cdp.Command[T2], /) -> tuple[T, T2]: ...
    @overload
    async def execute_all(
        self, c1: cdp.Command[T], c2: cdp.Command[T2], c3: cdp.Command[T3], /
    ) -> tuple[T, T2, T3]: ...
    @overload
    async def execute_all(
        self, c1: cdp.Command[T], c2: cdp.Command[T2], c3: cdp.Command[T3], c4: cdp.Command[T4], /
    ) -> tuple[T, T2, T3, T4]: ...
    @overload
    async def execute_all(self, *commands: cdp.Command[T]) -> tuple[T, ...]: ...
    async def execute_all(self, *commands: cdp.Command[Any]) -> tuple[Any, ...]:
        """Send ``commands`` together and return their typed results, in order, once all have answered.

        One write and one task for all of them: ``await s.execute_all(*(cdp.dom.get_box_model(...) ...))``
        costs less than a nursery with a task per ``execute``. If any fails, the error of the first one
        (in order) that failed is raised after every one has answered; cancelling drops the late replies.
        """
        return tuple(await self.connection.execute_all([(self, c) for c in commands]))

    def execute_nowait(self, command: cdp.Command[Any]) -> None:
        """Send ``command`` without waiting for its reply (an error reply is only logged).

        For set-up that must be sent in order before something else, from code that cannot await
        (``Browser.on_attach``): e.g. ``child.execute_nowait(cdp.runtime.enable())``.
        """
        self.raise_if_unusable(command.method)
        self.connection.call_nowait(self, command.method, command.params)

    async def execute_raw(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send ``method`` with wire ``params`` and return the raw ``result`` dict (for direct scripting).

        ``params`` must be a dict with str keys; for a method the bindings know, its required params are
        checked first: a missing one raises :class:`InvalidParams` naming it, and nothing is sent. Other
        methods go to the browser as they are.
        """
        self.raise_if_unusable(method)  # a dead session says so before a missing param does
        _names.check_params(method, params)
        return await self.connection.call(self, method, params)

    # -- listen: overloads give the Subscription the type of its events ------------------------------

    @overload
    def listen(
        self,
        event: type[E1],
        /,
        *,
        buffer_size: int = ...,
        overflow: Overflow = ...,
        typed: Literal[True] = ...,
        strict: bool = ...,
    ) -> AbstractAsyncContextManager[Subscription[E1]]: ...
    @overload
    def listen(
        self,
        e1: type[E1],
        e2: type[E2],
        /,
        *,
        buffer_size: int = ...,
        overflow: Overflow = ...,
        typed: Literal[True] = ...,
        strict: bool = ...,
    ) -> AbstractAsyncContextManager[Subscription[E1 | E2]]: ...
    @overload
    def listen(
        self,
        e1: type[E1],
        e2: type[E2],
        e3: type[E3],
        /,
        *,
        buffer_size: int = ...,
        overflow: Overflow = ...,
        typed: Literal[True] = ...,
        strict: bool = ...,
    ) -> AbstractAsyncContextManager[Subscription[E1 | E2 | E3]]: ...
    @overload
    def listen(
        self,
        e1: type[E1],
        e2: type[E2],
        e3: type[E3],
        e4: type[E4],
        /,
        *,
        buffer_size: int = ...,
        overflow: Overflow = ...,
        typed: Literal[True] = ...,
        strict: bool = ...,
    ) -> AbstractAsyncContextManager[Subscription[E1 | E2 | E3 | E4]]: ...
    @overload
    def listen(
        self,
        *events: type[Any] | str,
        buffer_size: int = ...,
        overflow: Overflow = ...,
        typed: Literal[False],
        strict: bool = ...,
    ) -> AbstractAsyncContextManager[Subscription[cdp.UnknownEvent]]: ...
    @overload
    def listen(
        self,
        *events: type[Any] | str,
        buffer_size: int = ...,
        overflow: Overflow = ...,
        typed: bool = ...,
        strict: bool = ...,
    ) -> AbstractAsyncContextManager[Subscription[Any]]: ...
    def listen(
        self,
        *events: type[Any] | str,
        buffer_size: int = 1024,
        overflow: Overflow = "error",
        typed: bool = True,
        strict: bool = True,
    ) -> AbstractAsyncContextManager[Subscription[Any]]:
        """Subscribe to events of this session for the duration of the block.

        Args:
            *events: event classes (``cdp.page.LoadEventFired``) or method names; none means every event.
            buffer_size: how many events may wait for the consumer.
            overflow: what happens when the buffer is full ("error", "drop_oldest", "drop_newest").
            typed: decode into generated classes (``False`` yields ``UnknownEvent`` with raw params).
            strict: a method name the bindings do not know raises :class:`engine.UnknownName` naming the
                closest known one; ``False`` accepts it (an event newer than the pinned protocol).

        Subscribe before you send the command that triggers the event, then wait inside the block:
        nothing is missed in between. The subscription is typed by its event classes:
        ``async with s.listen(cdp.page.LoadEventFired) as sub: (await sub.receive()).timestamp``.
        """
        return self._listen(events, buffer_size, overflow, typed, strict)

    @asynccontextmanager
    async def _listen(
        self,
        events: tuple[type[Any] | str, ...],
        buffer_size: int,
        overflow: Overflow,
        typed: bool,
        strict: bool,
    ) -> AsyncIterator[Subscription[Any]]:
        subscription = self.subscribe(
            *events, buffer_size=buffer_size, overflow=overflow, typed=typed, strict=strict
        )
        try:
            yield subscription
        finally:
            self.unsubscribe(subscription)

    @overload
    def subscribe(
        self,
        event: type[E1],
        /,
        *,
        buffer_size: int = ...,
        overflow: Overflow = ...,
        typed: Literal[True] = ...,
        strict: bool = ...,
    ) -> Subscription[E1]: ...
    @overload
    def subscribe(
        self,
        e1: type[E1],
        e2: type[E2],
        /,
        *,
        buffer_size: int = ...,
        overflow: Overflow = ...,
        typed: Literal[True] = ...,
        strict: bool = ...,
    ) -> Subscription[E1 | E2]: ...
    @overload
    def subscribe(
        self,
        *events: type[Any] | str,
        buffer_size: int = ...,
        overflow: Overflow = ...,
        typed: Literal[False],
        strict: bool = ...,
    ) -> Subscription[cdp.UnknownEvent]: ...
    @overload
    def subscribe(
        self,
        *events: type[Any] | str,
        buffer_size: int = ...,
        overflow: Overflow = ...,
        typed: bool = ...,
        strict: bool = ...,
    ) -> Subscription[Any]: ...
    def subscribe(
        self,
        *events: type[Any] | str,
        buffer_size: int = 1024,
        overflow: Overflow = "error",
        typed: bool = True,
        strict: bool = True,
    ) -> Subscription[Any]:
        """The synchronous twin of :meth:`listen`: the caller must :meth:`unsubscribe` it.

        For code that cannot await, such as ``Browser.on_attach`` hooks, which run before a new child
        session is resumed so that its first events are not missed.
        """
        if type(buffer_size) is not int or buffer_size < 1:
            raise ValueError(f"buffer_size must be a whole number of events, at least 1, not {buffer_size!r}")
        if overflow not in OVERFLOW_POLICIES:
            raise ValueError(f"overflow must be one of {OVERFLOW_POLICIES}, not {overflow!r}")
        methods = frozenset(_method_of(e, strict) for e in events) if events else None
        # The link first: a browser that closed detached its sessions on its way out, and the news is that
        # the browser is gone, not that one tab is.
        if self.connection.closed is not None:
            raise ConnectionClosed(f"cannot listen: {self.connection.closed}")
        if self._detached is not None:  # a crashed session may still be listened to: it can be revived
            raise SessionDetached(f"cannot listen: {self._detached}")
        subscription: Subscription[Any] = Subscription._create(self, methods, buffer_size, overflow, typed)
        self._add_subscription(subscription)
        subscription._counted = True
        self.connection.listeners += 1
        self.connection.wake_reader()  # a resting reader reads again: someone listens now
        return subscription

    def unsubscribe(self, subscription: Subscription[Any]) -> None:
        """End a subscription made with :meth:`subscribe` (idempotent)."""
        subscription._close()
        if subscription in self._subscriptions:
            self._subscriptions.remove(subscription)
            self._reroute()

    async def wait_for(self, event: type[E], predicate: Callable[[E], bool] | None = None) -> E:
        """Wait for the next ``event`` (matching ``predicate``) that arrives from now on.

        To catch an event that a command triggers, use :meth:`listen` before sending the command.
        """
        async with self.listen(event, buffer_size=256, overflow="drop_oldest") as subscription:
            matched: E = await subscription.wait_for(predicate)
            return matched

    # -- called by the reader and the session table ---------------------------------------------------

    def _add_subscription(self, subscription: Subscription[Any]) -> None:
        self._subscriptions.append(subscription)
        self._reroute()

    def _reroute(self) -> None:
        subscriptions = self._subscriptions
        named = {method for s in subscriptions if s.methods is not None for method in s.methods}
        self._routes = {
            method: tuple(s for s in subscriptions if s.methods is None or method in s.methods)
            for method in named
        }
        self._catch_all = tuple(s for s in subscriptions if s.methods is None)

    def _deliver(self, method: str, params: dict[str, Any]) -> None:
        # A tuple made before this event: a hook that unsubscribes during delivery changes the next one's.
        for subscription in self._routes.get(method, self._catch_all):
            subscription._push(method, params)

    def _close_subscriptions(self, error: CDPError | None) -> None:
        for subscription in self._subscriptions:
            subscription._close(error)

    def _will_close(self, how: str) -> None:
        """This client is closing the target (``how``): say so when the session ends, not "crashed"."""
        self._closed_by_client = how

    def _end_detached(self, reason: str) -> None:
        """The target session is gone: fail its pending commands, forget its fire-and-forget ones, and end
        its subscriptions."""
        if self._closed_by_client is not None:
            reason = f"{self._closed_by_client} (the browser said: {reason})"
        elif (closing := self.connection.closing) is not None:  # the tabs go first as the browser exits
            reason = f"{closing} (the browser said: {reason})"
        error = SessionDetached(f"session {self.session_id} ({self.target_type}) was detached: {reason}")
        self._detached = error
        self.connection.fail_pending(self, error)
        self.connection.forget_session(self)
        self._close_subscriptions(error)

    def _end_crashed(self, reason: str) -> None:
        """The renderer crashed: its in-flight commands, and the ones sent until it is revived, fail."""
        error = TargetCrashed(f"target {self.target_id} ({self.target_type}) crashed ({reason}).")
        self._crashed = error
        self.connection.fail_pending(self, error)
        told = TargetCrashed(
            f"{error} Reload or navigate the page to revive it (a subscription goes on with its events)."
        )
        for subscription in self._subscriptions:
            subscription._crashed(told)

    def _revived(self) -> None:
        self._crashed = None


WORKS_AFTER_CRASH = frozenset(
    {
        "Emulation.setDeviceMetricsOverride",
        "Page.bringToFront",
        "Page.captureScreenshot",  # answered, with an error
        "Page.getNavigationHistory",
        "Page.navigate",  # revives the page
        "Page.reload",  # revives the page
        "Page.stopLoading",
    }
)
"""Commands a crashed page session still answers, measured on Chromium 156. Others tried there
(Runtime.evaluate, DOM.getDocument, Page.getFrameTree, Page.enable, Network.enable, Runtime.enable, ...)
are held without a reply until a navigation revives the page; untried ones are refused too."""


def _method_of(event: type[Any] | str, strict: bool = True) -> str:
    if isinstance(event, str):
        if strict:
            _names.check(event, "event")
        return event
    method = getattr(event, "method", None)
    if not isinstance(method, str):
        raise TypeError(
            f"{event!r} is not an event class (it has no 'method'); pass e.g. cdp.page.LoadEventFired"
        )
    return method
