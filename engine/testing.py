"""Test helpers: a fake browser over in-memory channels, like ``trio.testing`` is for trio.

For the faults a real Chromium cannot be made to show (garbage on the wire, a reply that never comes, a
detach at just the wrong moment), in your own tests as in ours::

    async with engine.testing.open_fake_browser() as (browser, peer):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(browser.version)
            command = await peer.next_command()        # {"id": 1, "method": "Browser.getVersion"}
            peer.reply(command, {"product": "Fake/1.0", ...})

The peer sees exactly the JSON the engine sends and can send anything back: replies, events (with a
``session_id``), raw bytes, or the end of the link.

For tests against a real browser, ``serve_directory`` and ``serve_handler`` serve pages on 127.0.0.1.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import trio

from engine._browser import Browser, browser_chores
from engine._connection import open_connection
from engine._errors import ConnectionClosed
from engine._serve import serve_directory, serve_handler
from engine._settings import DEFAULT_SETTINGS, Settings

__all__ = ["FakePeer", "FakeTransport", "open_fake_browser", "serve_directory", "serve_handler"]


class FakeTransport:
    """The engine's side of an in-memory link; :class:`FakePeer` is the other side."""

    name = "fake"
    max_outbound_bytes = 1 << 20

    def __init__(self) -> None:
        self.outbound_send, self.outbound_receive = trio.open_memory_channel[bytes](math.inf)
        self.inbound_send, self.inbound_receive = trio.open_memory_channel[bytes](math.inf)

    async def send(self, messages: Sequence[bytes]) -> None:
        try:
            for message in messages:
                self.outbound_send.send_nowait(message)
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise ConnectionClosed("fake peer is gone") from exc
        await trio.lowlevel.checkpoint()

    async def receive_batch(self, *, poll: bool = False) -> list[bytes]:
        try:
            return [await self.inbound_receive.receive()]
        except (trio.EndOfChannel, trio.ClosedResourceError) as exc:
            raise ConnectionClosed("fake peer closed the link") from exc

    backlog = 0

    def bytes_waiting(self) -> bool:
        state = self.inbound_receive.statistics()
        return state.current_buffer_used > 0 or state.open_send_channels == 0

    def send_nowait(self, messages: Sequence[bytes]) -> bool:
        return False  # always through the writer task: the fake peer reads a channel

    async def aclose(self) -> None:
        self.outbound_send.close()
        self.inbound_receive.close()


class FakePeer:
    """The browser's side: read commands, send replies, events and garbage."""

    def __init__(self, transport: FakeTransport) -> None:
        self.transport = transport

    async def next_command(self) -> dict[str, Any]:
        message: dict[str, Any] = json.loads(await self.transport.outbound_receive.receive())
        return message

    def send_raw(self, data: bytes) -> None:
        self.transport.inbound_send.send_nowait(data)

    def send(self, message: dict[str, Any]) -> None:
        self.send_raw(json.dumps(message).encode())

    def reply(self, command: dict[str, Any], result: dict[str, Any] | None = None) -> None:
        self.send({"id": command["id"], "result": result or {}})

    def event(self, method: str, params: dict[str, Any], session_id: str | None = None) -> None:
        message: dict[str, Any] = {"method": method, "params": params}
        if session_id is not None:
            message["sessionId"] = session_id
        self.send(message)

    def close(self) -> None:
        self.transport.inbound_send.close()


@asynccontextmanager
async def open_fake_browser(
    settings: Settings = DEFAULT_SETTINGS,
) -> AsyncIterator[tuple[Browser, FakePeer]]:
    """A Browser on an in-memory link, and the peer that plays the browser's side.

    Unlike ``launch()`` and ``connect()``, nothing is sent on entry (no Target.setDiscoverTargets), so
    the peer's first command is the test's own; leaving closes the link without closing any page.
    """
    transport = FakeTransport()
    async with open_connection(transport, settings) as connection:
        browser = Browser._create(connection, settings, None)
        async with browser_chores(browser):
            yield browser, FakePeer(transport)
