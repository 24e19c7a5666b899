"""Protocol names checked against the pinned bindings, with the closest known name for a typo.

``Session.listen`` checks event names and ``Session.execute_raw`` checks required params here before
anything is sent; the CLI can use the same functions for its arguments. Everything is read from the
generated ``cdp._registry`` (loaded on first use), so a name is known exactly when the bindings know it.
"""

from __future__ import annotations

import difflib
import reprlib
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import cdp
from engine._errors import CDPError, InvalidParams

Kind = Literal["event", "command"]


class UnknownName(CDPError, ValueError):
    """A protocol name the bindings do not know; ``suggestion`` is the closest known one, if any."""

    def __init__(self, message: str, *, name: str, kind: Kind, suggestion: str | None) -> None:
        self.name = name
        self.kind = kind
        self.suggestion = suggestion
        super().__init__(message)


def _table(kind: Kind) -> Mapping[str, Any]:
    from cdp import _registry  # noqa: PLC0415 - loaded on first use: `import cdp` stays cheap

    return _registry.EVENTS if kind == "event" else _registry.COMMANDS


def known(name: str, kind: Kind) -> bool:
    """Whether the pinned bindings have an event (or command) of this exact name."""
    return name in _table(kind)


def closest(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate nearest to ``name``: the same text in another case first, then by similarity."""
    pool = list(candidates)
    folded = {c.lower(): c for c in pool}
    if name.lower() in folded:
        return folded[name.lower()]
    domain = name.rpartition(".")[0]
    # A typo is most often in the item: compare within the domain first, when the domain is right.
    same_domain = [c for c in pool if c.rpartition(".")[0].lower() == domain.lower()]
    for subset, cutoff in ((same_domain, 0.6), (pool, 0.75)):
        match = difflib.get_close_matches(name, subset, n=1, cutoff=cutoff)
        if match:
            return match[0]
    return None


def suggest(name: str, kind: Kind) -> str | None:
    """The closest known event (or command) name to ``name``, or None when nothing is close."""
    return closest(name, _table(kind))


def check(name: str, kind: Kind) -> None:
    """Raise :class:`UnknownName` unless the bindings know ``name``; the message names the closest one.

    Args:
        name: a wire name such as ``"Page.loadEventFired"``.
        kind: ``"event"`` or ``"command"``.
    """
    if known(name, kind):
        return
    hint = suggest(name, kind)
    text = f"unknown {kind} {name!r}"
    text += f": did you mean {hint!r}?" if hint else " (names read Domain.name, e.g. 'Page.loadEventFired')."
    if kind == "event":
        text += (
            f" The bindings are pinned at devtools-protocol {cdp.PROTOCOL_VERSION}; for an event newer than"
            " that, pass strict=False"
        )
    raise UnknownName(text, name=name, kind=kind, suggestion=hint)


_required_params: Mapping[str, tuple[str, ...]] | None = None


def check_params(method: str, params: object) -> None:
    """Raise :class:`InvalidParams` if ``params`` is not a dict with str keys (or None), or if a command
    the bindings know lacks one of its required params.

    Unknown methods pass the second check (the browser answers for them); a missing param is named, with
    the close spelling the caller may have meant.
    """
    given: dict[str, Any] = {}
    if params is not None:
        if not isinstance(params, dict):
            raise InvalidParams(
                f"{method}: params must be a dict of wire names to values (a JSON object) or None, not "
                f"{type(params).__name__} {reprlib.repr(params)}. Nothing was sent",
                method=method,
            )
        for key in params:
            if not isinstance(key, str):  # a StrEnum member is sent as its value
                # json would send 5 as "5": a param no command has, which the browser ignores or refuses
                raise InvalidParams(
                    f"{method}: param names must be str, not {type(key).__name__} {reprlib.repr(key)}. "
                    "Nothing was sent",
                    method=method,
                    path=repr(key),
                )
        given = params
    global _required_params  # noqa: PLW0603 - the registry, read once: this runs on every execute_raw
    if _required_params is None:
        from cdp import _registry  # noqa: PLC0415 - loaded on first use

        _required_params = _registry.REQUIRED_PARAMS
    required = _required_params.get(method)
    if not required:
        return
    for wire in required:
        if wire not in given:
            hint = closest(wire, [k for k in given if k not in required])
            mistyped = f" (you passed {hint!r})" if hint and hint.lower() != wire.lower() else ""
            if hint and hint.lower() == wire.lower():
                mistyped = f" (you passed {hint!r}: names are case-sensitive)"
            raise InvalidParams(
                f"{method} needs the param {wire!r}{mistyped}; its required params are "
                f"{', '.join(required)}. Nothing was sent",
                method=method,
                path=wire,
            )
