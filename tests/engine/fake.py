"""A fake browser over in-memory channels, for faults a real Chromium cannot be made to show."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import trio

from engine._errors import ConnectionClosed


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

    async def receive_batch(self) -> list[bytes]:
        try:
            return [await self.inbound_receive.receive()]
        except (trio.EndOfChannel, trio.ClosedResourceError) as exc:
            raise ConnectionClosed("fake peer closed the link") from exc

    backlog = 0

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
