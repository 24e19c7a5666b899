"""The engine's parts, for benchmarks and tool builders: transports, connections, the session table.

``engine`` is what scripts call; this is what sits under it, for code that brings its own transport
(``browser_over``), drives a connection without a Browser, or starts Chromium itself.
"""

from engine._browser import browser_over
from engine._connection import Connection, open_connection
from engine._process import BASE_FLAGS, ChromiumProcess, chromium_command, find_chromium, open_chromium
from engine._sessions import SessionTable, SessionTableStatistics
from engine._settings import DEFAULT_SETTINGS
from engine._transport import PipeTransport, Transport, make_pipe_pair

__all__ = [
    "BASE_FLAGS",
    "ChromiumProcess",
    "Connection",
    "DEFAULT_SETTINGS",
    "PipeTransport",
    "SessionTable",
    "SessionTableStatistics",
    "Transport",
    "browser_over",
    "chromium_command",
    "find_chromium",
    "make_pipe_pair",
    "open_chromium",
    "open_connection",
]
