"""Internal limits for the engine's own handshakes, and the few switches of the rooms above.

The core takes no ``timeout=`` arguments: callers bound their own waits with ``trio.fail_after``. Only the
engine's handshakes (launch, connect, attach, close) need limits of their own; they are all here.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable

import attrs

MAX_BUSY_POLL = 1.0
"""The longest ``Settings.busy_poll`` accepted, in seconds (a poll spins a core while it lasts)."""

MAX_GATHER = 0.1
"""The longest ``Settings.gather`` accepted, in seconds (events wait that long in the kernel)."""


def _as_float(value: object) -> object:
    """A real number (numpy's, a Fraction) as the float the waits compute with; anything else as it is, for
    the check to refuse."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        try:
            return float(value)
        except OverflowError:
            return value
    return value


def _as_int(value: object) -> object:
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    return value


def _seconds(instance: object, attribute: attrs.Attribute[float], value: object) -> None:
    # Checked here: a wrong value would otherwise fail much later, inside the first wait it bounds, as a
    # TypeError from trio or a timeout that fired at once. Any real number (numpy's too); math.inf is no
    # limit, as it was before the check.
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"Settings.{attribute.name} is a number of seconds, not {value!r}")
    # _as_float made it a float; a number it left alone is past float's range, where trio's deadline
    # arithmetic would fail.
    if not isinstance(value, float) or not value > 0:
        raise ValueError(
            f"Settings.{attribute.name} is a number of seconds above 0 (math.inf: no limit), not {value!r}"
        )


def _count(low: int) -> Callable[[object, attrs.Attribute[int], object], None]:
    def check(instance: object, attribute: attrs.Attribute[int], value: object) -> None:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError(f"Settings.{attribute.name} is a whole number, not {value!r}")
        if value < low:
            raise ValueError(f"Settings.{attribute.name} is a whole number of at least {low}, not {value!r}")

    return check


def _switch(instance: object, attribute: attrs.Attribute[bool], value: object) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"Settings.{attribute.name} is True or False, not {value!r}")


def _up_to(most: float, zero: str) -> Callable[[object, attrs.Attribute[float], object], None]:
    def check(instance: object, attribute: attrs.Attribute[float], value: object) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= most:
            raise ValueError(
                f"Settings.{attribute.name} is a number of seconds from 0 ({zero}) to {most:g}, not {value!r}"
            )

    return check


# At most a second: a poll spins a core for as long as it lasts (an infinite one, forever, for a reply that
# never comes), and one longer than a round trip only burns it.
_busy_poll = _up_to(MAX_BUSY_POLL, "never poll")


@attrs.frozen(kw_only=True)
class Settings:
    """Limits for the engine's own handshakes, in seconds unless named otherwise (``math.inf``: no limit);
    each is checked when made (TypeError for a value of the wrong kind, ValueError for one out of range).

    Attributes:
        launch_timeout: from spawning Chromium to its first answer.
        connect_timeout: from opening the socket to a finished websocket handshake (and /json/version).
        attach_timeout: for Target.createTarget / attachToTarget / per-session set-up commands.
        close_timeout: for Browser.close to make the process exit, before it is terminated.
        kill_timeout: after SIGTERM, before SIGKILL.
        navigation_timeout: for ``goto``, ``reload``, ``back`` and ``forward`` when the caller set no
            deadline of their own (with one, the caller's applies).
        max_outbound_bytes: the largest message sent; Chromium drops the connection on larger ones.
        max_inbound_bytes: the largest message accepted; a longer one closes the link (ConnectionClosed
            says why). V8's longest string is 2**29 - 24 UTF-16 units, so a reply carrying one by value
            can pass 512 MiB; 1 GiB is above any real reply and still bounds what a broken or hostile peer
            can make us buffer.
        stderr_tail_lines: how many of the browser's last stderr lines a BrowserLaunchError carries.
        evaluate_enabled: False turns ``page.evaluate`` off: it raises EvaluateDisabled before anything
            is sent.
        evaluate_timeout: ``page.evaluate``'s budget when the caller set no deadline of their own: no
            script is unbounded.
        busy_poll: how long a lone command's caller polls the link for its reply before it sleeps (0:
            never; at most 1 s). On a VM a sleep and wake-up cost more than Chromium takes to answer a
            small command; see ``FdIO.read``.
        gather: while events stream in to a subscription, the reader waits this long before a read
            when nothing is there yet, so one wake-up takes in a dozen events instead of two or three (0:
            never wait; at most 0.1 s). On the 2-core VMs measured, a wake-up costs more CPU than the
            events it brings; see "Choices made by measurement" in the README. A send ends a wait, and
            there is none while a command sent in the last 50 ms is unanswered; see
            ``Connection._reader``.
        protocol_trace: log every message in and out (truncated) to the ``engine.protocol`` logger at
            DEBUG, for debugging.
        protocol_trace_chars: how much of each message the protocol trace shows.
    """

    launch_timeout: float = attrs.field(default=30.0, converter=_as_float, validator=_seconds)
    connect_timeout: float = attrs.field(default=10.0, converter=_as_float, validator=_seconds)
    attach_timeout: float = attrs.field(default=10.0, converter=_as_float, validator=_seconds)
    close_timeout: float = attrs.field(default=5.0, converter=_as_float, validator=_seconds)
    kill_timeout: float = attrs.field(default=5.0, converter=_as_float, validator=_seconds)
    navigation_timeout: float = attrs.field(default=30.0, converter=_as_float, validator=_seconds)
    max_outbound_bytes: int = attrs.field(default=256 * 1024 * 1024, converter=_as_int, validator=_count(1))
    max_inbound_bytes: int = attrs.field(default=1024 * 1024 * 1024, converter=_as_int, validator=_count(1))
    stderr_tail_lines: int = attrs.field(default=40, converter=_as_int, validator=_count(0))
    evaluate_enabled: bool = attrs.field(default=True, validator=_switch)
    evaluate_timeout: float = attrs.field(default=30.0, converter=_as_float, validator=_seconds)
    busy_poll: float = attrs.field(default=0.0005, validator=_busy_poll)
    gather: float = attrs.field(default=0.001, validator=_up_to(MAX_GATHER, "never wait"))
    protocol_trace: bool = attrs.field(default=False, validator=_switch)
    protocol_trace_chars: int = attrs.field(default=400, converter=_as_int, validator=_count(1))


DEFAULT_SETTINGS = Settings()
