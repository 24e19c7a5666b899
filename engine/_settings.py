"""Internal limits for the engine's own handshakes.

The core takes no ``timeout=`` arguments: callers bound their own waits with ``trio.fail_after``. Only the
engine's handshakes (launch, connect, attach, close) need limits of their own; they are all here.
"""

from __future__ import annotations

import attrs


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
    max_outbound_bytes: int = 256 * 1024 * 1024
    """Largest message we send; Chromium drops the connection on larger ones."""
    stderr_tail_lines: int = 40
    """How many of the browser's last stderr lines a BrowserLaunchError carries."""


DEFAULT_SETTINGS = Settings()
