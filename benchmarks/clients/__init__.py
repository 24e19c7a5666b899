"""The clients the suite compares, by name. Modules are imported only when a client is selected.

Adding a client: write a ``Client`` (blocking) or an ``AsyncDriver`` plus a small ``AsyncClient``
subclass (async), give it a ``name``, and add it to ``REGISTRY`` below (and to ``DEFAULT`` if it should
run by default).
"""

from __future__ import annotations

import importlib

from benchmarks.clients.base import Client as Client
from benchmarks.clients.base import Env as Env
from benchmarks.clients.base import Sample as Sample
from benchmarks.clients.base import SkipClient as SkipClient

REGISTRY: dict[str, str] = {
    "floor.ws": "benchmarks.clients.floor_ws:FloorWebSocket",
    "floor.pipe": "benchmarks.clients.floor_pipe:FloorPipe",
    "floor.trio.ws": "benchmarks.clients.floor_trio:FloorTrioWebSocket",
    "floor.trio.pipe": "benchmarks.clients.floor_trio:FloorTrioPipe",
    "floor.ws.unparsed": "benchmarks.clients.floor_ws:FloorWebSocketUnparsed",
    "floor.pipe.unparsed": "benchmarks.clients.floor_pipe:FloorPipeUnparsed",
    "cdp-use": "benchmarks.clients.cdpuse:CdpUse",
    "cdp-use.nocompress": "benchmarks.clients.cdpuse:CdpUseNoCompression",
    "playwright.cdp": "benchmarks.clients.playwright_clients:PlaywrightCdp",
    "playwright.pipe": "benchmarks.clients.playwright_clients:PlaywrightPipe",
    "playwright.page": "benchmarks.clients.playwright_clients:PlaywrightPage",
    "puppeteer.pipe": "benchmarks.clients.node_peers:PuppeteerPipe",
    "puppeteer.ws": "benchmarks.clients.node_peers:PuppeteerWebSocket",
    "chrome-remote-interface": "benchmarks.clients.node_peers:ChromeRemoteInterface",
    "pydoll": "benchmarks.clients.pydoll_client:Pydoll",
    "engine.ws": "benchmarks.clients.engine:EngineWebSocket",
    "engine.ws.defaults": "benchmarks.clients.engine:EngineWebSocketDefaults",
    "engine.ws.tasks": "benchmarks.clients.engine:EngineWebSocketTasks",
    "engine.pipe": "benchmarks.clients.engine:EnginePipe",
    "json.loads": "benchmarks.clients.offline:JsonLoads",
    "json.loads.nogc": "benchmarks.clients.offline:JsonLoadsNoGC",
    "orjson.loads.nogc": "benchmarks.clients.offline:OrjsonLoadsNoGC",
    "cdp.decode": "benchmarks.clients.offline:TypedDecode",
    "floor.ws.websocket-client": "benchmarks.clients.floor_ws:FloorWebSocketClientLib",
    "engine.ws.trio-websocket": "benchmarks.clients.engine:EngineTrioWebSocket",
    "engine.ws.wsproto": "benchmarks.clients.engine:EngineWsproto",
    "engine.ws.reader-only": "benchmarks.clients.engine:EngineWebSocketReaderOnly",
    "engine.pipe.reader-only": "benchmarks.clients.engine:EnginePipeReaderOnly",
    "engine.ws.nogather": "benchmarks.clients.engine:EngineWebSocketNoGather",
    "engine.pipe.nogather": "benchmarks.clients.engine:EnginePipeNoGather",
}
"""Every known client, in table order."""

NOT_DEFAULT: frozenset[str] = frozenset(
    {
        "floor.ws.websocket-client",
        "engine.ws.trio-websocket",
        "engine.ws.wsproto",
        "engine.ws.reader-only",
        "engine.pipe.reader-only",
        "engine.ws.nogather",
        "engine.pipe.nogather",
    }
)
"""Kept so a choice can be re-measured (the floor's socket, the engine's websocket); run on request."""

DEFAULT: tuple[str, ...] = tuple(n for n in REGISTRY if n not in NOT_DEFAULT)

FLOORS: dict[str, str] = {"websocket": "floor.ws", "pipe": "floor.pipe", "offline": "json.loads.nogc"}
"""The floor each transport is compared against (``x_floor``); decode-only rows against the parse with the GC
paused, as the engine parses large replies. Only the blocking floors: the trio floors
(floor.trio.ws, floor.trio.pipe) are peers, so every client also gets an ``x floor.trio.*`` column, which
separates a trio client's own overhead from its event loop's."""

TRIO_FLOORS: dict[str, str] = {"websocket": "floor.trio.ws", "pipe": "floor.trio.pipe"}
"""The one-task trio floor of each transport: what the engine's round trip is held to, and the measure of how
much room a peer leaves (the floor over the peer)."""


def load(name: str) -> Client:
    """An instance of the named client; ImportError, SkipClient and others propagate to the caller."""
    module_name, _, class_name = REGISTRY[name].partition(":")
    cls: type[Client] = getattr(importlib.import_module(module_name), class_name)
    return cls()


__all__ = [
    "DEFAULT",
    "FLOORS",
    "NOT_DEFAULT",
    "REGISTRY",
    "TRIO_FLOORS",
    "Client",
    "Env",
    "Sample",
    "SkipClient",
    "load",
]
