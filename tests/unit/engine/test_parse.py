"""The reader's JSON parse: ``json.loads`` of every message, with a shortcut only where it gives the same."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine._connection import _parse

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(JSON, st.sampled_from(["", " ", "\n", "\t "]), st.sampled_from(["", " ", "\r\n"]))
def test_parse_is_json_loads(value: object, before: str, after: str) -> None:
    raw = (before + json.dumps(value, ensure_ascii=False) + after).encode("utf-8", "surrogatepass")
    assert _parse(raw) == json.loads(raw)


@pytest.mark.parametrize(
    ("raw", "says"),
    [(b'{"id":1} {"id":2}', "Extra data"), (b'{"id":', "Expecting value"), (b"", "Expecting value")],
)
def test_what_json_loads_refuses_raises_its_error(raw: bytes, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        _parse(raw)
