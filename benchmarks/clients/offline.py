"""Decode-only references for the decode scenarios: the response bytes are captured once, then decoded.

* "json.loads": ``json.loads`` of the captured reply, the cost no Python client can avoid.
* "json.loads.nogc": the same with the cyclic GC paused during the parse. A large reply allocates
  hundreds of thousands of containers that all survive, which triggers repeated full collections;
  pausing them is a choice any client (and the engine's reader) can make.
* "orjson.loads.nogc": orjson's parse, the GC paused: the parser the engine's reader uses (it falls back to
  ``json.loads`` only for what orjson refuses), so the typed decode's own share shows beside the floor.
* "cdp.decode": the engine's parse (the GC paused for a large reply), then the generated bindings' typed
  decode as ``Session.execute`` does it (``get_full_ax_tree().decode(result, consume=True)`` for a reply
  of LARGE_MESSAGE or more, whose parsed lists it spends): bytes to typed result, no I/O.

The capture goes over the raw websocket floor to the shared browser, on the same generated page, once per
scenario; every decode-only client decodes the same bytes.
"""

from __future__ import annotations

import gc
import importlib
import json
import time
from typing import Any, ClassVar

import orjson

from benchmarks.clients.base import Env, Sample, SkipClient
from benchmarks.clients.blocking import LARGE_MESSAGE, Message, parse, run_blocking
from benchmarks.clients.engine import typed_command
from benchmarks.clients.floor_ws import FloorWebSocket
from benchmarks.scenarios import Kind, Scenario

_CAPTURED: dict[str, bytes] = {}
"""One capture per scenario and run, shared by every decode-only client."""


class _Offline(FloorWebSocket):
    transport: ClassVar[str] = "offline"

    def __init__(self) -> None:
        super().__init__()
        self._captured: Message = b""

    def unsupported(self, scenario: Scenario) -> str | None:
        return None if scenario.kind is Kind.DECODE else "decode-only reference"

    def setup(self, scenario: Scenario) -> None:
        captured = _CAPTURED.get(scenario.name)
        if captured is None:
            super().setup(scenario)
            _, raw = run_blocking(self.call_raw(scenario.method, scenario.params_dict, self._sessions[0]))
            _CAPTURED[scenario.name] = captured = bytes(raw)
        self._captured = captured

    def decode(self, scenario: Scenario, raw: Message) -> object:
        raise NotImplementedError

    def run(self, scenario: Scenario, size: int) -> Sample:
        clock = time.perf_counter_ns
        raw = self._captured
        lat: list[float] = []
        for _ in range(size):
            t0 = clock()
            result = self.decode(scenario, raw)
            t1 = clock()
            lat.append((t1 - t0) / 1000)
            del result  # freeing a large result is not part of the decode
        return Sample(lat, size, int(sum(lat) * 1000), len(raw))


class JsonLoads(_Offline):
    name: ClassVar[str] = "json.loads"

    def decode(self, scenario: Scenario, raw: Message) -> object:
        return json.loads(raw)


class JsonLoadsNoGC(_Offline):
    name: ClassVar[str] = "json.loads.nogc"

    def decode(self, scenario: Scenario, raw: Message) -> object:
        gc.disable()
        try:
            return self.parse(raw)
        finally:
            gc.enable()

    def parse(self, raw: Message) -> object:
        return json.loads(raw)


class OrjsonLoadsNoGC(JsonLoadsNoGC):
    name: ClassVar[str] = "orjson.loads.nogc"

    def parse(self, raw: Message) -> object:
        return orjson.loads(raw)


class TypedDecode(_Offline):
    name: ClassVar[str] = "cdp.decode"

    def __init__(self) -> None:
        super().__init__()
        self._factories: dict[str, Any] = {}
        self._cdp: Any = None

    def start(self, env: Env) -> None:
        try:
            cdp = importlib.import_module("cdp")
            self._cdp = cdp
            self._factories = {
                "Accessibility.getFullAXTree": cdp.accessibility.get_full_ax_tree,
                "DOM.getDocument": cdp.dom.get_document,
            }
        except (ImportError, AttributeError) as exc:
            raise SkipClient(f"cdp bindings not importable yet ({type(exc).__name__}: {exc})") from exc
        super().start(env)

    def decode(self, scenario: Scenario, raw: Message) -> object:
        factory = self._factories.get(scenario.method)
        if factory is not None:
            command = factory(**scenario.params_dict)
        else:
            command = typed_command(self._cdp, scenario.method, scenario.params_dict)
        return command.decode(parse(raw)["result"], consume=len(raw) >= LARGE_MESSAGE)
