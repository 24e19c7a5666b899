"""Outbound messages: JSON encoding, and the check that Chromium will be able to parse them.

Chromium's JSON parser refuses NaN and Infinity, numbers beyond a double's range and nesting deeper
than its stack limit. It answers such a message with an error that carries no id (it could not read
one), so the command would wait forever. Every message is checked here before it is sent, and a bad
one raises :class:`InvalidParams` naming the field.

The check costs next to nothing on the common path: the params are walked in Python only when the
message has a null that could be a NaN or an Infinity (orjson writes them so) or, when orjson could not
write it, more than 300 brackets or 309 digits (a ``translate`` and two byte counts, each skipped for
messages too short to need it; a walk that names paths costs about 7 us for 500 bytes).
"""

from __future__ import annotations

import json
import json.encoder
import math
from collections.abc import Callable, Iterator
from typing import Any

from engine._errors import InvalidParams

_orjson_dumps: Callable[..., bytes] | None
try:
    import orjson

    _orjson_dumps = orjson.dumps
    # Refused like json refuses them, so they reach json's encoder (and its error) as before.
    _ORJSON_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
except ImportError:  # a platform without its wheel: json's encoder alone, slower, the same bytes
    _orjson_dumps = None
    _ORJSON_OPTIONS = 0

MAX_DEPTH = 300
"""The deepest level of a value Chromium parses, params being level 1 (a list inside params is level 2,
a number in that list level 3). Measured on Chromium 156: a value at level 301, container or not, gets
"JSON: stack limit exceeded" with no id."""

_PARAMS_DEPTH = 1
"""The level of the params object inside the message."""

_DOUBLE_DIGITS = 309
"""Digits of the smallest integer beyond a double's range (10**309 rounds to infinity)."""


def _compact_encoder(*, ensure_ascii: bool) -> Callable[[Any], str]:
    """Compact JSON with NaN refused, by the C encoder built once.

    ``JSONEncoder.encode`` builds its C encoder on every call: half of its cost for a small command (0.8
    of 1.6 us). Without a circular-reference check (the built encoder cannot keep one across calls), a
    cycle raises RecursionError, which encode_message handles as any value nested too deep.
    """
    encoder = json.JSONEncoder(ensure_ascii=ensure_ascii, separators=(",", ":"), allow_nan=False)
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # no C accelerator (not CPython)
        return encoder.encode
    escape = json.encoder.encode_basestring_ascii if ensure_ascii else json.encoder.encode_basestring
    core = make(None, encoder.default, escape, None, ":", ",", False, False, False)

    def encode(value: Any) -> str:
        return "".join(core(value, 0))

    return encode


_to_json = _compact_encoder(ensure_ascii=False)
# For text with lone surrogates (valid in a JS string, not in UTF-8): Chromium takes them as \ud800 escapes.
_to_ascii_json = _compact_encoder(ensure_ascii=True)


def encode_message(message: dict[str, Any], method: str) -> bytes:
    """The wire bytes of ``message`` (whose ``params``, if any, are the caller's).

    orjson writes them when it can: 0.12 against 1.1 us for a small command. It writes NaN and Infinity
    as null instead of refusing them, so a null that could be one sends the params through the check.
    It refuses an integer beyond 64 bits and nesting past 254 levels, so what it writes needs no digit or
    bracket count. What it refuses (those, a lone surrogate, a key that is not a str, a datetime or
    dataclass) goes through ``json``'s encoder and the counts, written or refused as before. Of the values
    ``json`` refuses, orjson writes only an Enum (its value) and a UUID (a string).

    Raises:
        InvalidParams: Chromium could not parse the message; the error names the field. Nothing was sent.
    """
    params = message.get("params")
    if _orjson_dumps is not None:
        try:
            data = _orjson_dumps(message, option=_ORJSON_OPTIONS)
        except TypeError:  # orjson.JSONEncodeError
            pass
        else:
            # find, not ``in``: bytes' ``in`` first tries its operand as an int and clears the TypeError,
            # 0.8 us of a round trip's critical path on this machine (measured in the loop, not in timeit).
            if data.find(b"null") != -1 and (b":null" in data or b",null" in data or b"[null" in data):
                _raise_if_unparseable(method, params)  # NaN or Infinity, or a real null (None)
            return data
    data = _json_message(message, method, params)
    size = len(data)
    if (size >= _DOUBLE_DIGITS and size - len(data.translate(None, b"0123456789")) >= _DOUBLE_DIGITS) or (
        size > 2 * MAX_DEPTH and data.count(b"[") + data.count(b"{") > MAX_DEPTH
    ):
        # Brackets or digits enough for a problem (maybe only inside strings): look closer.
        _raise_if_unparseable(method, params)
    return data


def _json_message(message: dict[str, Any], method: str, params: Any) -> bytes:
    try:
        text = _to_json(message)
    except (ValueError, TypeError, RecursionError) as exc:
        _raise_if_unparseable(method, params)
        raise InvalidParams(f"{method}: the params cannot be encoded as JSON: {exc}", method=method) from exc
    try:
        return text.encode()
    except UnicodeEncodeError:
        return _to_ascii_json(message).encode()


def _raise_if_unparseable(method: str, params: Any) -> None:
    problem = find_problem(params)
    if problem is not None:
        path, what = problem
        shown = path if len(path) <= 120 else f"{path[:60]}...{path[-50:]}"
        raise InvalidParams(
            f"{method}: {shown} {what}; nothing was sent (Chromium cannot parse it and would never answer)",
            method=method,
            path=path,
        )


def json_nodes(value: Any, path: str, depth: int = 0) -> Iterator[tuple[str, Any, int]]:
    """Every value in ``value`` (itself first), with its path and depth, in document order. Lazy: what a
    caller stops at, it does not look into."""
    stack: list[tuple[str, Any, int]] = [(path, value, depth)]
    while stack:
        path, value, depth = stack.pop()
        yield path, value, depth
        if isinstance(value, dict | list | tuple):
            if isinstance(value, dict):
                items = [(f"{path}.{key}", item) for key, item in value.items()]
            else:
                items = [(f"{path}[{index}]", item) for index, item in enumerate(value)]
            stack.extend((sub, item, depth + 1) for sub, item in reversed(items))


def find_problem(params: Any) -> tuple[str, str] | None:
    """The first field of ``params`` (in document order) that Chromium cannot parse, and why."""
    for path, value, depth in json_nodes(params, "params", _PARAMS_DEPTH):
        if depth > MAX_DEPTH:
            return path, f"nests deeper than the {MAX_DEPTH} levels Chromium parses"
        if value is None or isinstance(value, bool | str | dict | list | tuple):
            pass
        elif isinstance(value, float):
            if not math.isfinite(value):
                return path, f"is {value!r}, which JSON cannot carry"
        elif isinstance(value, int):
            try:
                float(value)
            except OverflowError:
                return path, f"is an integer of {len(str(value))} digits, beyond a double's range"
        else:
            return path, f"is a {type(value).__name__}, which JSON cannot carry"
    return None
