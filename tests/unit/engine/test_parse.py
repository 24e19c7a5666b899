"""The reader's JSON parse: orjson's, the same as ``json.loads``, which takes what orjson refuses."""

from __future__ import annotations

import gc
import json
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine import _connection
from engine._connection import LARGE_MESSAGE, _parse

INT64 = st.integers(min_value=-(2**63), max_value=2**64 - 1)
JSON = st.recursive(
    st.none() | st.booleans() | INT64 | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def typed(value: Any) -> str:
    """``value`` written out with its types (1 and 1.0 differ), to compare two parses exactly."""
    return repr(value)


@given(JSON, st.sampled_from(["", " ", "\n", "\t "]), st.sampled_from(["", " ", "\r\n"]))
def test_parse_is_json_loads(value: object, before: str, after: str) -> None:
    raw = (before + json.dumps(value, ensure_ascii=False) + after).encode("utf-8", "surrogatepass")
    assert typed(_parse(raw)) == typed(json.loads(raw))


def test_orjson_parses_when_installed() -> None:
    # A dependency: if its import broke, every message would silently take the slower path.
    assert _connection._orjson_loads is orjson.loads


@pytest.mark.parametrize(
    "raw",
    [
        b'{"value":"\\ud800"}',  # a lone surrogate, escaped (a JS string cut in half)
        '{"value":"\ud800x"}'.encode("utf-8", "surrogatepass"),  # the same as raw bytes
        b'{"value":NaN}',
        b'{"value":-Infinity}',
        b'{"value":1e400}',
    ],
)
def test_what_orjson_refuses_parses_as_json_loads_does(raw: bytes) -> None:
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(raw)
    expected = json.loads(raw.decode("utf-8", "surrogatepass"))
    assert typed(_parse(raw)) == typed(expected)
    assert typed(_parse(raw + b" " * LARGE_MESSAGE)) == typed(expected)


def test_an_integer_beyond_64_bits_becomes_the_double_the_browser_meant() -> None:
    # V8 writes the double 2**64 as 18446744073709552000: json.loads reads another number, orjson the double.
    assert _parse(b"[18446744073709552000]") == [float(2**64)]
    assert _parse(b"[18446744073709551615, -9223372036854775808]") == [2**64 - 1, -(2**63)]


@pytest.mark.parametrize(
    ("raw", "says"),
    [(b'{"id":1} {"id":2}', "Extra data"), (b'{"id":', "Expecting value"), (b"", "Expecting value")],
)
def test_what_json_loads_refuses_raises_its_error(raw: bytes, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        _parse(raw)


def test_a_large_message_parses_with_the_gc_paused_on_either_path(monkeypatch: pytest.MonkeyPatch) -> None:
    gc_on: dict[str, list[bool]] = {"orjson": [], "json": []}

    def watching(name: str, parse: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def watched(raw: Any) -> Any:
            gc_on[name].append(gc.isenabled())
            return parse(raw)

        return watched

    monkeypatch.setattr(_connection, "_orjson_loads", watching("orjson", orjson.loads))
    monkeypatch.setattr(_connection, "_loads", watching("json", _connection._loads))
    nodes = b",".join(b'{"a":[1,{"b":2}]}' for _ in range(20_000))
    assert _parse(b'{"nodes":[' + nodes + b"]}")["nodes"][-1] == {"a": [1, {"b": 2}]}
    # orjson refuses this one at its very end; json.loads then parses all of it, still with the GC paused
    assert _parse(b'{"nodes":[' + nodes + b',{"a":NaN}]}')["nodes"][-1]["a"] != 0
    assert gc_on == {"orjson": [False, False], "json": [False]}
    _parse(b'{"id":1,"result":{}}')
    assert gc_on["orjson"][-1] is True  # a small message is not worth the pause
    assert gc.isenabled()
