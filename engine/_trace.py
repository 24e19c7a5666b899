"""The protocol trace: every message in and out, truncated, to the ``engine.protocol`` logger.

Off by default (``Settings(protocol_trace=True)`` turns it on). The connection holds ``None`` when it is
off, so the hot path pays one attribute check per message and nothing else.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from engine._settings import Settings

log = logging.getLogger("engine.protocol")

Tracer = Callable[[str, bytes], None]


def protocol_tracer(settings: Settings) -> Tracer | None:
    """A function ``(direction, raw message)`` that logs it, or None when the trace is off."""
    if not settings.protocol_trace:
        return None
    limit = max(0, settings.protocol_trace_chars)

    def trace(direction: str, data: bytes) -> None:
        if not log.isEnabledFor(logging.DEBUG):
            return
        text = data[:limit].decode("utf-8", "replace")
        more = len(data) - limit
        log.debug("%s %s%s", direction, text, f" ... (+{more} bytes)" if more > 0 else "")

    return trace
