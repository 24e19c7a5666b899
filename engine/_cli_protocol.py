"""The CLI's protocol half: ``protocol QUERY`` (a search with docs), name checks before a browser starts,
and the ``drift`` report that says on which side each difference is.

Everything is read from the pinned protocol packaged with the engine (``engine.drift.load_pinned``: the
JSON with descriptions and parameters) and the generated registry (``engine._names``), so a name is known
here exactly when the bindings know it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

import cdp
from engine import _names
from engine import drift as _drift


class UsageError(Exception):
    """The command line is wrong (an unknown name, bad JSON, a bad value); nothing was started."""


class CommandFailed(Exception):
    """The command failed in a way its message says in full (no exception name is needed to read it)."""


_SHELL_TERMS = (
    ("(await page.snapshot())", "(cdp-engine snapshot URL)"),
    ("a ref from page.snapshot()", "a ref from cdp-engine snapshot"),
    ("failed and fail_fast=True", "failed (--keep-going runs the rest)"),
)
"""An engine message's advice for Python callers, as said on the command line."""


def in_shell_terms(text: str) -> str:
    """``text`` with its Python advice (``await page.snapshot()``, ``fail_fast=True``) said for the CLI."""
    for python, shell in _SHELL_TERMS:
        text = text.replace(python, shell)
    return text


@attrs.frozen(kw_only=True)
class Item:
    """One domain, command, event or type of the pinned protocol."""

    kind: str  # "domain", "command", "event", "type"
    name: str  # Domain or Domain.item
    description: str
    raw: Mapping[str, Any]

    @property
    def flags(self) -> list[str]:
        return [flag for flag in ("experimental", "deprecated") if self.raw.get(flag)]


@functools.cache
def items() -> tuple[Item, ...]:
    out: list[Item] = []
    for domain in _drift.load_pinned():
        dn = domain["domain"]
        out.append(Item(kind="domain", name=dn, description=domain.get("description", ""), raw=domain))
        for kind, key, field in (("command", "commands", "name"), ("event", "events", "name")):
            for entry in domain.get(key, []):
                name = f"{dn}.{entry[field]}"
                out.append(Item(kind=kind, name=name, description=entry.get("description", ""), raw=entry))
        for entry in domain.get("types", []):
            name = f"{dn}.{entry['id']}"
            out.append(Item(kind="type", name=name, description=entry.get("description", ""), raw=entry))
    return tuple(out)


def _by_name() -> dict[str, Item]:
    return {item.name.lower(): item for item in items()}


def _squash(text: str) -> str:
    """A name as the search compares it: any case, and a Python name's underscores dropped
    (``capture_screenshot`` finds ``captureScreenshot``)."""
    return text.lower().replace("_", "")


def _query(query: str) -> str:
    """A search as typed, the way names are compared: a Python name's ``cdp.`` prefix dropped."""
    return query.strip().lower().removeprefix("cdp.")


def search(query: str) -> list[Item]:
    """Items named ``query`` exactly (any case; ``cdp.page.navigate`` too; ``navigate`` within its domain)
    first, then names holding each of
    its words, then names and descriptions holding them all (``print pdf`` finds ``Page.printToPDF``)."""
    q = _query(query)
    words = [_squash(word) for word in q.split()]
    whole = _squash(q)
    # Exact: the whole name, or the name within its domain (RemoteObject before RemoteObjectId).
    exact = [i for i in items() if whole in (_squash(i.name), _squash(i.name.partition(".")[2]))]
    named = [i for i in items() if i not in exact and all(w in _squash(i.name) for w in words)]
    described = [
        i
        for i in items()
        if i not in exact
        and i not in named
        and all(w in f"{_squash(i.name)} {i.description.lower()}" for w in words)
    ]
    return exact + named + described


def _type_of(prop: Mapping[str, Any]) -> str:
    if "$ref" in prop:
        return str(prop["$ref"])
    if prop.get("type") == "array":
        return f"array of {_type_of(prop.get('items', {}))}"
    text = str(prop.get("type", "any"))
    if "enum" in prop:
        text += " (" + " | ".join(json.dumps(v) for v in prop["enum"]) + ")"
    return text


def _summary(text: str, limit: int = 100) -> str:
    """A description on one line: the protocol wraps its text at about 100 columns, so its first line can
    end mid-sentence; this one is cut at a word, and says so with "..."."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    return flat[: limit - 3].rsplit(" ", 1)[0].rstrip(",;:") + "..."


def describe(item: Item) -> Iterator[str]:
    """The docs of one item: its description, then its parameters / returns / properties."""
    flags = f" ({', '.join(item.flags)})" if item.flags else ""
    yield f"{item.kind} {item.name}{flags}"
    if item.description:
        for line in item.description.strip().splitlines():
            yield f"  {line}"
    sections = {
        "command": (("parameters", "params"), ("returns", "returns")),
        "event": (("parameters", "params"),),
        "type": (("properties", "properties"),),
    }.get(item.kind, ())
    if item.kind == "type" and "properties" not in item.raw:
        yield f"  is {_type_of(item.raw)}"
    for key, title in sections:
        entries = item.raw.get(key, [])
        if not entries:
            continue
        yield f"  {title}:"
        for p in entries:
            optional = " (optional)" if p.get("optional") else ""
            doc = f": {_summary(p['description'])}" if p.get("description") else ""
            yield f"    {p['name']}: {_type_of(p)}{optional}{doc}"
    if item.kind == "domain":
        for sub in items():
            if sub.kind != "domain" and sub.name.split(".")[0] == item.name:
                mark = f" ({', '.join(sub.flags)})" if sub.flags else ""
                yield f"{sub.kind:8} {sub.name}{mark}"


def to_json(item: Item) -> dict[str, Any]:
    return {"kind": item.kind, "name": item.name, "description": item.description, **_spec(item)}


def _spec(item: Item) -> dict[str, Any]:
    keep = ("parameters", "returns", "properties", "experimental", "deprecated", "type", "enum", "items")
    return {k: v for k, v in item.raw.items() if k in keep}


def protocol_lines(query: str | None, *, as_json: bool) -> list[str]:
    """What ``cdp-engine protocol [QUERY]`` prints.

    Raises:
        UsageError: nothing matches ``query``; the message names the closest known names.
    """
    every = items()
    if not query:
        counts = {k: sum(1 for i in every if i.kind == k) for k in ("domain", "command", "event", "type")}
        if as_json:
            return [json.dumps({"version": cdp.PROTOCOL_VERSION, **counts})]
        head = f"devtools-protocol {cdp.PROTOCOL_VERSION}: {counts['domain']} domains, "
        head += f"{counts['command']} commands, {counts['event']} events, {counts['type']} types"
        return [head] + [f"  {i.name}" for i in every if i.kind == "domain"]
    found = search(query)
    if not found:
        hint = _names.closest(query, [i.name for i in every])
        more = f"; did you mean {hint!r}?" if hint else ""
        raise UsageError(f"nothing in the protocol is named or described {query!r}{more}")
    exact = [i for i in found if _squash(i.name) == _squash(_query(query))]
    if as_json:
        return [json.dumps([to_json(i) for i in (exact or found)], indent=2)]
    if exact or len(found) == 1:
        return list(describe((exact or found)[0]))
    lines = [f"{len(found)} matches for {query!r} (name first, then description):"]
    for i in found:
        doc = f"  {_summary(i.description)}" if i.description else ""
        lines.append(f"{i.kind:8} {i.name}{doc}")
    return lines


# --- name checks, before a browser starts -------------------------------------------------------------


def check_method(method: str) -> None:
    """A command the bindings know, or a UsageError with the closest known name."""
    if _names.known(method, "command"):
        return
    hint = _names.suggest(method, "command")
    more = f"; did you mean {hint!r}?" if hint else " (methods read Domain.method, e.g. Page.navigate)"
    raise UsageError(
        f"unknown method {method!r}{more} (pinned protocol {cdp.PROTOCOL_VERSION}; "
        "--no-check sends it anyway)"
    )


def check_event(event: str) -> None:
    """An event the bindings know, or a UsageError with the closest known name."""
    if _names.known(event, "event"):
        return
    hint = _names.suggest(event, "event")
    more = f"; did you mean {hint!r}?" if hint else " (events read Domain.event, e.g. Page.loadEventFired)"
    raise UsageError(
        f"unknown event {event!r}{more} (pinned protocol {cdp.PROTOCOL_VERSION}; --no-check listens anyway)"
    )


def check_params(method: str, params: Mapping[str, Any]) -> None:
    """Every param of ``params`` is one ``method`` takes, and none it needs is missing."""
    item = _by_name().get(method.lower())
    if item is None or item.kind != "command":
        return
    known = [p["name"] for p in item.raw.get("parameters", [])]
    for key in params:
        if key not in known:
            hint = _names.closest(key, known)
            more = f"; did you mean {hint!r}?" if hint else ""
            takes = ", ".join(known) if known else "no params"
            raise UsageError(f"{method} has no param {key!r}{more} (it takes {takes})")
    required = [p["name"] for p in item.raw.get("parameters", []) if not p.get("optional")]
    missing = [name for name in required if name not in params]
    if missing:
        raise UsageError(
            f"{method} needs the param(s) {', '.join(missing)} (required: {', '.join(required)})"
        )


# --- drift, with sides ------------------------------------------------------------------------------------

_SIDES = {
    "added": "only in the browser",
    "removed": "only in the pinned protocol",
    "changed": "in both, different",
}


def drift_lines(report: _drift.Report, *, browser: str, as_json: bool) -> list[str]:
    """The drift report with the side of each difference spelled out."""
    pinned = f"pinned {_drift.packaged_version()}"
    if as_json:
        out: dict[str, Any] = {"pinned": _drift.packaged_version(), "browser": browser, "differences": []}
        for kind in sorted(report):
            for change, entries in sorted(report[kind].items()):
                for entry in entries:
                    out["differences"].append({"kind": kind, "side": _side_key(change), "item": entry})
        return [json.dumps(out, indent=2)]
    if not report:
        return [f"no drift: {browser} speaks exactly the {pinned} protocol"]
    lines = [f"{pinned} (left) against {browser} (right)"]
    for kind in sorted(report):
        counts = ", ".join(f"{len(v)} {_SIDES[k]}" for k, v in sorted(report[kind].items()))
        lines.append(f"{kind}: {counts}")
        for change, entries in sorted(report[kind].items()):
            for entry in entries:
                if change == "changed":
                    name, _, sides = entry.partition(": ")
                    left, _, right = sides.partition(" -> ")
                    lines.append(f"  both     {name}: pinned {left}, browser {right}")
                else:
                    side = "browser" if change == "added" else "pinned"
                    lines.append(f"  {side:8} {entry}")
    return lines


def _side_key(change: str) -> str:
    return {"added": "browser only", "removed": "pinned only"}.get(change, "both, different")
