"""Outbound encoding: orjson's bytes when it can write the message, ``json``'s encoder otherwise, and the
same refusals (InvalidParams naming the field) either way."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import math
import uuid
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import InvalidParams, _params
from engine._params import encode_message

INT64 = st.integers(min_value=-(2**63), max_value=2**64 - 1)
JSON = st.recursive(
    st.none() | st.booleans() | INT64 | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def message(params: dict[str, Any]) -> dict[str, Any]:
    return {"id": 7, "method": "Runtime.evaluate", "params": params, "sessionId": "S"}


def typed(raw: bytes) -> str:
    """The value ``raw`` holds, written out with its types (1 and 1.0 differ)."""
    return repr(json.loads(raw.decode("utf-8", "surrogatepass")))


def json_only(msg: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> bytes:
    with monkeypatch.context() as patch:
        patch.setattr(_params, "_orjson_dumps", None)
        return encode_message(msg, "Runtime.evaluate")


@settings(suppress_health_check=[HealthCheck.too_slow])  # a stall of this loaded process is not slowness
@given(st.dictionaries(st.text(), JSON, max_size=4))
def test_the_bytes_carry_what_json_would_send(params: dict[str, Any]) -> None:
    msg = message(params)
    data = encode_message(msg, "Runtime.evaluate")
    with pytest.MonkeyPatch.context() as patch:
        assert typed(data) == typed(json_only(msg, patch))
    try:
        fast = orjson.dumps(msg)
    except orjson.JSONEncodeError:  # a lone surrogate: json's encoder wrote it
        return
    assert data == fast


def test_orjson_encodes_when_installed() -> None:
    # A dependency: if its import broke, every command would silently take the slower encoder.
    assert _params._orjson_dumps is orjson.dumps


class Color(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int


@pytest.mark.parametrize(
    "params",
    [
        {"n": 10**30},  # beyond 64 bits
        {"s": "x\ud800"},  # a lone surrogate, sent as an escape
        {"map": {1: "a", 2.5: "b", False: "c", None: "d"}},  # keys json turns into strings
        {"nested": json.loads("[" * 280 + "]" * 280)},  # past orjson's 254 levels, within Chromium's 300
    ],
)
def test_what_orjson_refuses_goes_out_as_json_writes_it(
    params: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    msg = message(params)
    with pytest.raises(orjson.JSONEncodeError):
        orjson.dumps(msg)
    assert encode_message(msg, "Runtime.evaluate") == json_only(msg, monkeypatch)


@pytest.mark.parametrize(
    "value", [datetime.datetime(2026, 1, 1), datetime.date(2026, 1, 1), Point(1), b"bytes", object()]
)
def test_what_json_refuses_is_refused_with_orjson_too(value: object) -> None:
    with pytest.raises(InvalidParams, match=r"params.v is a|cannot be encoded"):
        encode_message(message({"v": value}), "Runtime.evaluate")


@pytest.mark.parametrize(
    ("params", "path"),
    [
        ({"x": math.nan}, "params.x"),
        ({"a": [1, math.inf]}, r"params.a[1]"),
        ({"a": [-math.inf]}, r"params.a[0]"),
        ({"a": {"b": None, "c": math.nan}}, "params.a.c"),
    ],
)
def test_nan_and_infinity_are_refused_although_orjson_writes_them_as_null(
    params: dict[str, Any], path: str
) -> None:
    assert b"null" in orjson.dumps(params)  # what would be sent without the check
    with pytest.raises(InvalidParams) as info:
        encode_message(message(params), "Runtime.evaluate")
    assert info.value.path == path


def test_a_real_null_and_the_word_null_go_out_as_written() -> None:
    params = {"expression": "x === null ? [null] : {a:null}", "v": None, "list": [None, 1]}
    data = encode_message(message(params), "Runtime.evaluate")
    assert data == orjson.dumps(message(params))


def test_an_enum_and_a_uuid_go_out_as_their_values() -> None:
    """The one difference from json's encoder, which refuses them: orjson writes their values."""
    token = uuid.UUID(int=1)
    data = encode_message(message({"c": Color.RED, "u": token}), "Runtime.evaluate")
    assert json.loads(data)["params"] == {"c": "red", "u": str(token)}


def count_walks(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    walked: list[object] = []
    find_problem = _params.find_problem

    def counting(params: Any) -> Any:
        walked.append(params)
        return find_problem(params)

    monkeypatch.setattr(_params, "find_problem", counting)
    return walked


def test_what_orjson_writes_is_not_walked_for_its_digits_and_brackets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """orjson refuses what the digit and bracket counts look for (an integer beyond 64 bits, nesting past 254
    levels), so a large message full of digits and brackets goes out without the 7 ms walk."""
    walked = count_walks(monkeypatch)
    cookies = [{"name": f"c{i}[{{", "value": str(10**40), "url": "http://127.0.0.1/"} for i in range(5000)]
    msg = message({"cookies": cookies})
    assert encode_message(msg, "Network.setCookies") == orjson.dumps(msg)
    assert walked == []
    with_null = message({"cookies": [*cookies, {"name": "n", "value": None}]})
    encode_message(with_null, "Network.setCookies")
    assert len(walked) == 1  # once, for the null


def test_orjson_refuses_the_integers_and_nesting_the_counts_look_for() -> None:
    # The reason the counts can be skipped on orjson's path: if orjson ever wrote these, they must come back.
    for value in (2**64, -(2**63) - 1, json.loads("[" * 254 + "]" * 254)):
        with pytest.raises(orjson.JSONEncodeError):
            orjson.dumps({"params": {"v": value}})
