"""The suite's rule: the floors encode and parse as the engine does, so no ratio credits the engine with a
library choice any client can make (see benchmarks/README.md, "Floors parse and encode like the engine")."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.clients.blocking import FloorScenarios, Message, parse
from engine._connection import LARGE_MESSAGE, _parse
from engine._params import encode_message


class Encoder(FloorScenarios):
    """The floor's protocol with no transport: only ``_encode`` is used."""

    async def _send_many(self, messages: list[bytes]) -> None:
        raise NotImplementedError

    async def _recv(self) -> Message:
        raise NotImplementedError

    async def _sleep(self, seconds: float) -> None:
        raise NotImplementedError


@pytest.mark.parametrize(
    "raw",
    [
        b'{"id":1,"result":{"product":"HeadlessChrome/142"}}',
        b'{"method":"Runtime.consoleAPICalled","params":{"args":[{"value":1.5}]}}',
        b'{"value":"\\ud800"}',  # orjson refuses: json.loads takes it
        '{"value":"\ud800x"}'.encode("utf-8", "surrogatepass"),  # the same as raw bytes
        b'{"value":NaN}',
        b'{"value":18446744073709551616}',  # beyond 64 bits: a float for both
        b'{"nodes":[' + b",".join([b'{"nodeId":"1"}'] * (LARGE_MESSAGE // 14)) + b"]}",  # the GC-paused size
    ],
)
def test_the_floors_parse_as_the_engine_does(raw: bytes) -> None:
    assert repr(parse(raw)) == repr(_parse(raw))


@pytest.mark.parametrize(
    ("method", "params", "session"),
    [
        ("Browser.getVersion", None, None),
        ("Runtime.evaluate", {"expression": "1+1"}, "8A1B2C3D"),
        ("Runtime.evaluate", {"expression": "'é' + x === null", "returnByValue": True}, "S"),
        ("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": 10.5, "y": 2e-7}, "S"),
    ],
)
def test_the_floors_encode_as_the_engine_does(
    method: str, params: dict[str, Any] | None, session: str | None
) -> None:
    command_id, data = Encoder()._encode(method, params, session)
    message: dict[str, Any] = {"id": command_id, "method": method}
    if params:
        message["params"] = params
    if session is not None:
        message["sessionId"] = session
    assert data == encode_message(message, method)
