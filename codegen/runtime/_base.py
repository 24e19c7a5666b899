"""What every domain module shares: commands, forward-compatible enums, decoding and the converter.

The domain modules hold the protocol; this module holds the machinery, and three tables that the domains
fill as they load: :data:`HOOKS` (class -> wire codec) and :data:`COMMAND_DECODERS` (command function ->
wire params decoder), through :func:`register`. Where each event and command lives is ``cdp._registry``.
"""

from __future__ import annotations

import base64
import enum
import gc
import importlib
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import attrs

if TYPE_CHECKING:
    import cattrs

T = TypeVar("T")
Wire = dict[str, Any]
Hooks = tuple[Callable[[Wire], Any], Callable[[Any], Wire]]
CommandDecoder = Callable[[Wire], "Command[Any]"]

HOOKS: dict[type, Hooks] = {}
"""Every generated class -> its (structure, unstructure) functions; each domain module adds its own."""

COMMAND_DECODERS: dict[Callable[..., Command[Any]], CommandDecoder] = {}
"""Every command function -> the function that builds its command from wire params."""

DRAINABLE: dict[type, tuple[str, ...]] = {}
"""Command result classes -> the wire keys of their lists that decode item by item (lists of objects):
what ``Command.decode(result, consume=True)`` empties as it goes."""

_DECODE_ERRORS = (KeyError, TypeError, ValueError, AttributeError)
"""What a generated decoder raises on a payload that does not fit; each becomes a :class:`DecodeError`."""


def register(
    classes: dict[type, Hooks],
    commands: dict[Callable[..., Command[Any]], CommandDecoder],
    drainable: dict[type, tuple[str, ...]] | None = None,
) -> None:
    """Record a domain module's generated codec, and give its classes their class-level defaults.

    Generated classes are frozen attrs classes backed by an instance dict (``slots=False``): a decoder fills
    ``__dict__`` in one pass with only the fields present on the wire, and an absent optional field reads
    its default (``None``, or ``UNSET``) from the class. attrs removes those class attributes, so they are
    put back here from the fields' own defaults. Slotted frozen classes cost 4-5x more to decode (one
    ``object.__setattr__`` per field). Measured on the 5k-element page of ``benchmarks/pages.py``: the
    engine's parse plus ``Command.decode`` of its 13k-node AX tree takes 2.6x the GC-paused ``json.loads``
    of the same bytes (thread CPU time; 3.1x with the former decoders, see codegen ``DIRECT_MAX_FIELDS``),
    its DOM 2.4x. ``drainable`` lists the result classes' lists that ``decode(consume=True)`` may empty.
    """
    for cls in classes:
        for field in attrs.fields(cls):
            if field.default is not attrs.NOTHING:
                setattr(cls, field.name, field.default)
        setattr(cls, "__repr__", short_repr)  # noqa: B010 - a method put on a class mypy sees as `type`
    HOOKS.update(classes)
    COMMAND_DECODERS.update(commands)
    if drainable:
        DRAINABLE.update(drainable)


class _Unset:
    """The type of :data:`UNSET`."""

    _instance: _Unset | None = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()
"""An absent optional ``any`` field (``RemoteObject.value``): there ``None`` is JSON null, a value."""


def decode_binary(value: str) -> bytes:
    """A ``binary`` field's wire value (base64) as ``bytes``."""
    return base64.b64decode(value)


def encode_binary(value: bytes | bytearray | memoryview) -> str:
    """``bytes`` for a ``binary`` field, as the wire wants them (base64)."""
    if isinstance(value, str):
        raise TypeError(
            "this protocol field is binary: pass bytes (the bindings base64 them), e.g. text.encode() "
            "or, for a string that is already base64, base64.b64decode(text)"
        )
    return base64.b64encode(value).decode("ascii")


REPR_CHARS = 80
"""A string longer than this shows its start and its length in the repr of a generated object."""
REPR_ITEMS = 8
"""A list or dict longer than this shows its first items and how many more there are."""
REPR_DEPTH = 4
"""Objects nested deeper than this show as ``Name(...)``."""


def _short(value: Any, depth: int) -> str:
    """A repr of ``value`` that stays short whatever its size (screenshots, DOM trees, response bodies)."""
    if isinstance(value, bytes | bytearray):
        return repr(value) if len(value) <= REPR_CHARS // 2 else f"<{len(value):,} bytes>"
    if isinstance(value, CDPEnum):
        return repr(value.value)
    if isinstance(value, str):
        if len(value) <= REPR_CHARS:
            return repr(value)
        return f"{value[: REPR_CHARS - 20]!r}...<{len(value):,} chars>"
    if isinstance(value, list | tuple):
        shown = [_short(v, depth + 1) for v in value[:REPR_ITEMS]]
        if len(value) > REPR_ITEMS:
            shown.append(f"...<{len(value) - REPR_ITEMS:,} more>")
        return "[" + ", ".join(shown) + "]"
    if isinstance(value, dict):
        pairs = [f"{k!r}: {_short(v, depth + 1)}" for k, v in list(value.items())[:REPR_ITEMS]]
        if len(value) > REPR_ITEMS:
            pairs.append(f"...<{len(value) - REPR_ITEMS:,} more>")
        return "{" + ", ".join(pairs) + "}"
    if type(value) in HOOKS:
        return _record_repr(value, depth)
    return repr(value)


def _record_repr(obj: Any, depth: int) -> str:
    name = type(obj).__name__
    if depth >= REPR_DEPTH:
        return f"{name}(...)"
    parts = []
    for field in attrs.fields(type(obj)):
        value = getattr(obj, field.name)
        if field.default is not attrs.NOTHING and value is field.default:
            continue  # an absent optional field (None, or UNSET)
        parts.append(f"{field.name}={_short(value, depth + 1)}")
    return f"{name}({', '.join(parts)})"


def short_repr(obj: Any) -> str:
    """The repr of a generated object: absent optional fields left out, long values cut to their size.

    A screenshot result reads ``CaptureScreenshotResult(data=<48,213 bytes>)``; the whole value is still
    on the attribute.
    """
    return _record_repr(obj, 0)


class DecodeError(ValueError):
    """A message did not fit its typed binding; ``method`` and the raw ``payload`` are attached."""

    def __init__(self, method: str, payload: Any, reason: str) -> None:
        self.method = method
        self.payload = payload
        self.reason = reason
        super().__init__(f"cannot decode {method}: {reason} (the raw payload is on .payload)")


def _reason(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"required field {exc.args[0]!r} is missing"
    return f"{type(exc).__name__}: {exc}"


class CDPEnum(enum.StrEnum):
    """A protocol string enum that keeps values it does not know (a newer browser never breaks a decode)."""

    @classmethod
    def _missing_(cls, value: object) -> Any:
        if not isinstance(value, str):
            return None
        member = str.__new__(cls, value)
        member._name_ = value
        member._value_ = value
        return member


E = TypeVar("E", bound=CDPEnum)


def enum_value(cls: type[E], value: str) -> E:
    """The member for ``value``; an unknown value becomes a pseudo-member that keeps it."""
    try:
        return cls._value2member_map_[value]  # type: ignore[return-value]
    except KeyError:
        return cls(value)


class Command(Generic[T]):
    """A protocol command: its method, its wire params, and the class its result decodes into."""

    __slots__ = ("_result", "method", "params")

    method: str
    params: Wire
    _result: type[T] | None

    def __init__(self, method: str, params: Wire, result: type[T] | None) -> None:
        # The slots' own setters: 0.29 against 0.44 us a command with object.__setattr__ (which looks
        # each name up first), on the path of every typed call.
        _set_method(self, method)
        _set_params(self, params)
        _set_result(self, result)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def decode(self, result: Wire, *, consume: bool = False, pause_gc: bool = True) -> T:
        """The typed result of the ``result`` object of the browser's reply (``None`` if it has none).

        With ``consume``, the lists of objects in ``result`` (an AX tree's ``nodes``) are emptied as they
        decode, so each wire object is freed as soon as its typed one exists: the typed objects reuse that
        memory, which makes a large decode cheaper and lowers its peak. If decoding fails, those lists hold
        what was not decoded yet, in order. Leave it False unless ``result`` is yours to spend.

        ``pause_gc`` pauses the cyclic GC for the decode (see below); a caller that knows the result is
        small (the engine, from the reply's size) passes False, as the pause then costs more than it saves.
        """
        cls = self._result
        if cls is None:
            return None  # type: ignore[return-value]
        decoder = HOOKS[cls][0]
        if not (consume or pause_gc):
            try:
                return decoder(result)  # type: ignore[no-any-return]
            except _DECODE_ERRORS as exc:
                raise DecodeError(self.method, result, _reason(exc)) from exc
        drained = DRAINABLE.get(cls) if consume else None
        # A large result allocates tens of thousands of objects that all survive: pausing the cyclic GC
        # for the (synchronous) decode avoids repeated full collections over them (about 40% of an AX tree).
        paused = gc.isenabled()
        if paused:
            gc.disable()
        try:
            value: T = decoder(_draining(result, drained) if drained else result)
        except _DECODE_ERRORS as exc:
            if drained:
                _undrain(result, drained)
            raise DecodeError(self.method, result, _reason(exc)) from exc
        finally:
            if paused:
                gc.enable()
        return value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Command):
            return NotImplemented
        return self.method == other.method and self.params == other.params

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Command({self.method!r}, {_short(self.params, 0)})"


_set_method: Callable[[Command[Any], str], None] = Command.__dict__["method"].__set__
_set_params: Callable[[Command[Any], Wire], None] = Command.__dict__["params"].__set__
_set_result: Callable[[Command[Any], Any], None] = Command.__dict__["_result"].__set__


def _draining(result: Wire, keys: tuple[str, ...]) -> Wire:
    """A copy of ``result`` whose lists under ``keys`` are iterators that empty them, front to back."""
    out = result
    for key in keys:
        items = result.get(key)
        if type(items) is list and items:
            if out is result:
                out = dict(result)
            items.reverse()  # then each step is a pop() from the end
            out[key] = _drain(items)
    return out


def _drain(items: list[Any]) -> Iterator[Any]:
    """Yield the last item, then drop it when the next one is asked for (a failing one stays in the list)."""
    pop = items.pop
    while items:
        yield items[-1]
        pop()


def _undrain(result: Wire, keys: tuple[str, ...]) -> None:
    """After a failed decode: the drained lists hold what was not decoded yet, in their order again."""
    for key in keys:
        items = result.get(key)
        if type(items) is list:
            items.reverse()


@attrs.frozen(kw_only=True, repr=False)
class UnknownEvent:
    """An event these bindings do not know (a newer browser); its raw params are kept."""

    method: str
    params: Wire

    def __repr__(self) -> str:
        return f"UnknownEvent(method={self.method!r}, params={_short(self.params, 0)})"


@attrs.frozen(kw_only=True)
class Flags:
    """Whether a protocol item is experimental or deprecated."""

    experimental: bool
    deprecated: bool


def _domain_module(name: str) -> ModuleType | None:
    """The module of the domain that ``"Domain"`` or ``"Domain.item[.field]"`` names, loaded on first use."""
    import cdp  # noqa: PLC0415 - the package imports this module first; it is complete by the first call

    module = cdp.DOMAINS.get(name.partition(".")[0])
    return None if module is None else importlib.import_module(f"cdp.{module}")


def _registered(table: dict[str, tuple[str, str]], method: str) -> Any:
    """What ``cdp._registry`` names for ``method`` (a class or a function), or ``None``."""
    entry = table.get(method)
    return None if entry is None else getattr(importlib.import_module(f"cdp.{entry[0]}"), entry[1])


def event_class(method: str) -> type | None:
    """The generated class of an event method, or ``None`` if the bindings do not know it."""
    from cdp import _registry  # noqa: PLC0415 - loaded on first use: `import cdp` stays cheap

    cls: type | None = _registered(_registry.EVENTS, method)
    return cls


_EVENT_DECODERS: dict[str, Callable[[Wire], Any]] = {}
"""A cache: event method -> its class's structure function (saves two lookups per event)."""


def decode_event(method: str, params: Wire) -> Any:
    """Decode an event into its typed class, or :class:`UnknownEvent` if the bindings do not know it.

    Raises:
        DecodeError: the event is known but its params do not fit (e.g. a required field is missing).
    """
    decoder = _EVENT_DECODERS.get(method)
    if decoder is None:
        cls = event_class(method)
        if cls is None:
            return UnknownEvent(method=method, params=params)
        decoder = _EVENT_DECODERS[method] = HOOKS[cls][0]
    try:
        return decoder(params)
    except _DECODE_ERRORS as exc:
        raise DecodeError(method, params, _reason(exc)) from exc


def decode_command(method: str, params: Wire) -> Command[Any]:
    """Build the typed command for a wire ``(method, params)`` pair (for proxies, recorders and tests).

    Raises:
        DecodeError: the method is unknown to the bindings, or its params do not fit.
    """
    from cdp import _registry  # noqa: PLC0415 - loaded on first use: `import cdp` stays cheap

    function = _registered(_registry.COMMANDS, method)
    decoder = None if function is None else COMMAND_DECODERS.get(function)
    if decoder is None:
        raise DecodeError(method, params, "no such command in the bindings")
    try:
        return decoder(params)
    except _DECODE_ERRORS as exc:
        raise DecodeError(method, params, _reason(exc)) from exc


def flags(name: str) -> Flags:
    """Flags of ``"Domain"``, ``"Domain.item"`` or ``"Domain.item.field"``; unknown names are neither."""
    module = _domain_module(name)
    table: dict[str, tuple[bool, bool]] = {} if module is None else module._FLAGS
    experimental, deprecated = table.get(name, (False, False))
    return Flags(experimental=experimental, deprecated=deprecated)


def make_converter() -> cattrs.Converter:
    """A cattrs converter that (un)structures every generated class through its generated hooks."""
    import cattrs  # noqa: PLC0415 - only users of `cdp.converter` pay for importing cattrs

    converter = cattrs.Converter()

    def known(cls: Any) -> bool:
        try:
            return cls in HOOKS
        except TypeError:
            return False

    converter.register_structure_hook_func(known, lambda data, cls: HOOKS[cls][0](data))
    converter.register_unstructure_hook_func(known, lambda obj: HOOKS[type(obj)][1](obj))
    return converter
