"""Property tests: every generated class and command survives a trip over the wire and back.

A strategy is derived for each class from its attrs fields and resolved annotations (``typing.get_type_hints``
resolves them without help: another domain's type is named ``cdp.dom.Node``). Enums draw known members and
unknown values (which must be kept); recursion is cut at a small depth.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import types
import typing
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cdp
from cdp import _registry
from cdp._base import COMMAND_DECODERS, HOOKS, CDPEnum, Command

MODULES = {name: importlib.import_module(f"cdp.{name}") for name in cdp.DOMAINS.values()}
CLASSES = sorted(HOOKS, key=lambda cls: (cls.__module__, cls.__qualname__))
COMMANDS = sorted(
    (method, getattr(MODULES[module], function)) for method, (module, function) in _registry.COMMANDS.items()
)
MAX_DEPTH = 2

SETTINGS = settings(
    max_examples=5,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)

FLOATS = st.floats(allow_nan=False, allow_infinity=False, width=64)
TEXT = st.text(max_size=4)
JSON: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | FLOATS | TEXT,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(TEXT, inner, max_size=2),
    max_leaves=4,
)
JSON_OBJECT = st.dictionaries(TEXT, JSON, max_size=2)


@functools.cache
def hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def for_type(tp: Any, depth: int) -> st.SearchStrategy[Any]:
    """A strategy for values of the resolved annotation ``tp``; past ``MAX_DEPTH`` only what is required."""
    deep = depth > MAX_DEPTH
    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        assert len(args) == 1, tp
        return st.none() if deep else st.none() | for_type(args[0], depth)
    if origin is list:
        (item,) = typing.get_args(tp)
        return st.just([]) if deep else st.lists(for_type(item, depth), max_size=2)
    if origin is dict:
        return JSON_OBJECT
    if tp is Any:
        return JSON
    if tp is bool:
        return st.booleans()
    if tp is int:
        return st.integers(-(2**53), 2**53)
    if tp is float:
        return FLOATS | st.integers(-(2**31), 2**31)  # JSON numbers may arrive without a fraction
    if tp is str:
        return TEXT
    if tp is bytes:
        return st.binary(max_size=6)  # base64 on the wire
    if isinstance(tp, type) and issubclass(tp, CDPEnum):
        return enum_values(tp)
    if tp in HOOKS:
        return for_class(tp, min(depth + 1, MAX_DEPTH + 1))
    raise TypeError(f"no strategy for {tp!r}")


@functools.cache
def enum_values(cls: type[CDPEnum]) -> st.SearchStrategy[CDPEnum]:
    return st.sampled_from(list(cls)) | st.sampled_from(["", "brandNew", "x-y"]).map(cls)


@functools.cache
def for_class(cls: type, depth: int = 1) -> st.SearchStrategy[Any]:
    resolved = hints(cls)
    fields = {f.name: for_type(resolved[f.name], depth) for f in attrs.fields(cls)}
    return st.builds(cls, **fields)


def wire(value: Any) -> Any:
    """What the browser would send: the JSON text of ``value``, parsed again."""
    return json.loads(json.dumps(value))


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: f"{cls.__module__[4:]}.{cls.__qualname__}")
@SETTINGS
@given(data=st.data())
def test_class_round_trip(cls: type, data: st.DataObject) -> None:
    value = data.draw(for_class(cls), label=cls.__qualname__)
    structure, unstructure = HOOKS[cls]
    raw = unstructure(value)
    assert structure(raw) == value
    assert structure(wire(raw)) == value
    assert wire(raw) == raw
    assert cdp.converter.unstructure(value) == raw
    assert cdp.converter.structure(wire(raw), cls) == value


def command_kwargs(function: Any) -> dict[str, st.SearchStrategy[Any]]:
    resolved = typing.get_type_hints(function)
    return {name: for_type(resolved[name], 1) for name in inspect.signature(function).parameters}


@pytest.mark.parametrize(("method", "function"), COMMANDS, ids=[method for method, _ in COMMANDS])
@SETTINGS
@given(data=st.data())
def test_command_round_trip(method: str, function: Any, data: st.DataObject) -> None:
    assert function in COMMAND_DECODERS
    kwargs = data.draw(st.fixed_dictionaries(command_kwargs(function)), label=method)
    command: Command[Any] = function(**kwargs)
    assert command.method == method
    assert wire(command.params) == command.params
    decoded = cdp.decode_command(method, wire(command.params))
    assert decoded == command
    assert wire(decoded.params) == wire(command.params)


def test_every_class_and_command_is_covered() -> None:
    assert len(CLASSES) > 800
    assert len(COMMANDS) == len(_registry.COMMANDS) == len(COMMAND_DECODERS)
    kinds = {"event": 0, "result": 0, "type": 0}
    for cls in CLASSES:
        if "method" in vars(cls):
            kinds["event"] += 1
        elif cls.__name__.endswith("Result"):
            kinds["result"] += 1
        else:
            kinds["type"] += 1
    assert min(kinds.values()) > 100, kinds


def test_unknown_enum_values_survive_the_wire() -> None:
    node = cdp.accessibility.AXValue(type_=cdp.accessibility.AXValueType("newKind"), value=1)
    raw = HOOKS[cdp.accessibility.AXValue][1](node)
    assert wire(raw) == {"type": "newKind", "value": 1}
    back = HOOKS[cdp.accessibility.AXValue][0](wire(raw))
    assert isinstance(back.type_, cdp.accessibility.AXValueType)
    assert back == node
