"""Internal limits for the engine's own handshakes, and the few switches of the rooms above.

The core takes no ``timeout=`` arguments: callers bound their own waits with ``trio.fail_after``. Only the
engine's handshakes (launch, connect, attach, close) need limits of their own; they are all here.
"""

from __future__ import annotations

import attrs

MAX_BUSY_POLL = 1.0
"""The longest ``Settings.busy_poll`` accepted, in seconds (a poll spins a core while it lasts)."""


@attrs.frozen(kw_only=True)
class Settings:
    """Limits for the engine's own handshakes, in seconds unless named otherwise."""

    launch_timeout: float = 30.0
    """From spawning Chromium to its first answer."""
    connect_timeout: float = 10.0
    """From opening the socket to a finished websocket handshake (and /json/version)."""
    attach_timeout: float = 10.0
    """For Target.createTarget / attachToTarget / per-session set-up commands."""
    close_timeout: float = 5.0
    """For Browser.close to make the process exit, before it is terminated."""
    kill_timeout: float = 5.0
    """After SIGTERM, before SIGKILL."""
    navigation_timeout: float = 30.0
    """For ``Page.goto`` when the caller set no deadline of their own (with one, the caller's applies)."""
    max_outbound_bytes: int = 256 * 1024 * 1024
    """Largest message we send; Chromium drops the connection on larger ones."""
    max_inbound_bytes: int = 1024 * 1024 * 1024
    """Largest message we accept; a longer one closes the link (ConnectionClosed says why). V8's longest
    string is 2**29 - 24 UTF-16 units, so a reply carrying one by value can pass 512 MiB; 1 GiB is above
    any real reply and still bounds what a broken or hostile peer can make us buffer."""
    stderr_tail_lines: int = 40
    """How many of the browser's last stderr lines a BrowserLaunchError carries."""
    evaluate_enabled: bool = True
    """``False`` turns ``page.evaluate`` off: it raises EvaluateDisabled before anything is sent."""
    evaluate_timeout: float = 30.0
    """``page.evaluate``'s budget when the caller set no deadline of their own: no script is unbounded."""
    busy_poll: float = attrs.field(default=0.0005)
    """How long a lone command's caller polls the link for its reply before it sleeps (0: never). On a VM
    a sleep and wake-up cost more than Chromium takes to answer a small command; see ``FdIO.read``."""

    @busy_poll.validator
    def _check_busy_poll(self, _: attrs.Attribute[float], value: float) -> None:
        # Checked here: a wrong value would otherwise fail inside the first command's read.
        # At most a second: a poll spins a core for as long as it lasts (an infinite one, forever, for a
        # reply that never comes), and one longer than a round trip only burns it.
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= MAX_BUSY_POLL:
            raise ValueError(
                f"Settings.busy_poll is a number of seconds from 0 (never poll) to {MAX_BUSY_POLL:g}, "
                f"not {value!r}"
            )

    protocol_trace: bool = False
    """Log every message in and out (truncated) to the ``engine.protocol`` logger at DEBUG, for debugging."""
    protocol_trace_chars: int = 400
    """How much of each message the protocol trace shows."""


DEFAULT_SETTINGS = Settings()
