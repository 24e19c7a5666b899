"""The engine's parts, for benchmarks and tool builders: transports, connections, the session table.

``engine`` is what scripts call; this is what sits under it, for code that brings its own transport
(``browser_over``; build one from ``LinkState``, ``FdIO`` and ``write_fully`` as the engine's do), drives
a connection without a Browser, speaks the websocket codec, or starts Chromium itself.
"""

from engine._browser import browser_over
from engine._connection import Connection, open_connection
from engine._framing import NulFramer
from engine._http import discover_ws_url, fetch_json_version
from engine._process import (
    BASE_FLAGS,
    ChromiumProcess,
    SpawnedProcess,
    chromium_command,
    find_chromium,
    mark_owner,
    open_chromium,
    session_members,
    sweep_orphans,
)
from engine._sessions import SessionTable, SessionTableStatistics
from engine._settings import DEFAULT_SETTINGS
from engine._transport import (
    CUT_MESSAGE,
    PIPE_MAX_MESSAGE_BYTES,
    READ_SIZE,
    FdIO,
    LinkState,
    PipeTransport,
    Transport,
    make_pipe_pair,
    write_fully,
)
from engine._util import collapse_groups
from engine._websocket import WEBSOCKET_MAX_MESSAGE_BYTES, WebSocketTransport, open_websocket_transport
from engine._ws_codec import LocalProtocolError, Opcode, RemoteProtocolError, WebSocketCodec

__all__ = [
    "BASE_FLAGS",
    "CUT_MESSAGE",
    "ChromiumProcess",
    "Connection",
    "DEFAULT_SETTINGS",
    "FdIO",
    "LinkState",
    "LocalProtocolError",
    "NulFramer",
    "Opcode",
    "PIPE_MAX_MESSAGE_BYTES",
    "PipeTransport",
    "READ_SIZE",
    "RemoteProtocolError",
    "SessionTable",
    "SessionTableStatistics",
    "SpawnedProcess",
    "Transport",
    "WEBSOCKET_MAX_MESSAGE_BYTES",
    "WebSocketCodec",
    "WebSocketTransport",
    "browser_over",
    "chromium_command",
    "collapse_groups",
    "discover_ws_url",
    "fetch_json_version",
    "find_chromium",
    "make_pipe_pair",
    "mark_owner",
    "open_chromium",
    "open_connection",
    "open_websocket_transport",
    "session_members",
    "sweep_orphans",
    "write_fully",
]
