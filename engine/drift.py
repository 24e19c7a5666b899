"""Protocol drift: compare the pinned protocol with a running browser's ``/json/protocol``.

Each side is flattened into ``kind name -> signature`` entries (domain, type, command, event, parameter,
property, enum value); the report lists what was added, removed or changed, grouped by kind.

The pinned side ships inside this package as gzipped copies of ``protocol-json/`` (``_protocol/``, written by
``make protocol-data``), so ``cdp-engine drift`` works from an installed wheel without the generator.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from engine._errors import ConnectError

__all__ = [
    "Raw",
    "Report",
    "compare",
    "compare_with",
    "fetch_live",
    "flatten",
    "format_report",
    "load_pinned",
    "packaged_json",
    "packaged_version",
]

Raw = dict[str, Any]
Report = dict[str, dict[str, list[str]]]

FILES = ("browser_protocol.json", "js_protocol.json")
"""The protocol files, as in ``protocol-json/``; the packaged copies add ``.gz``."""

_DATA = resources.files("engine").joinpath("_protocol")


def _signature(prop: Raw) -> str:
    if "$ref" in prop:
        kind = f"$ref {prop['$ref']}"
    elif prop.get("type") == "array":
        kind = "array of " + _signature(prop.get("items", {}))
    else:
        # The browser says "binary" where the npm package says "string" (both are base64 on the wire).
        kind = str(prop.get("type", "?")).replace("binary", "string")
    return kind + (" (optional)" if prop.get("optional") else "")


def flatten(domains: Iterable[Raw]) -> dict[tuple[str, str], str]:
    """``(kind, qualified name) -> signature`` for every item of the protocol."""
    out: dict[tuple[str, str], str] = {}
    for d in domains:
        dn = d["domain"]
        out[("domain", dn)] = ""
        for t in d.get("types", []):
            name = f"{dn}.{t['id']}"
            out[("type", name)] = _signature(t)
            for p in t.get("properties", []):
                out[("property", f"{name}.{p['name']}")] = _signature(p)
            for v in t.get("enum", []):
                out[("enum value", f"{name}.{v}")] = ""
        for c in d.get("commands", []):
            name = f"{dn}.{c['name']}"
            out[("command", name)] = ""
            for p in c.get("parameters", []):
                out[("parameter", f"{name}.{p['name']}")] = _signature(p)
            for p in c.get("returns", []):
                out[("return", f"{name}.{p['name']}")] = _signature(p)
        for e in d.get("events", []):
            name = f"{dn}.{e['name']}"
            out[("event", name)] = ""
            for p in e.get("parameters", []):
                out[("event parameter", f"{name}.{p['name']}")] = _signature(p)
    return out


def compare(pinned: Iterable[Raw], live: Iterable[Raw]) -> Report:
    """Added / removed / changed entries by kind, going from ``pinned`` to ``live``."""
    a, b = flatten(pinned), flatten(live)
    report: Report = {}

    def add(kind: str, change: str, text: str) -> None:
        report.setdefault(kind, {}).setdefault(change, []).append(text)

    for key in sorted(b.keys() - a.keys()):
        add(key[0], "added", key[1])
    for key in sorted(a.keys() - b.keys()):
        add(key[0], "removed", key[1])
    for key in sorted(a.keys() & b.keys()):
        if a[key] != b[key]:
            add(key[0], "changed", f"{key[1]}: {a[key]} -> {b[key]}")
    return report


def packaged_json(name: str) -> bytes | None:
    """The packaged copy of one protocol file (``browser_protocol.json``, ...), or None if not shipped."""
    data = _DATA.joinpath(name + ".gz")
    if not data.is_file():
        return None
    return gzip.decompress(data.read_bytes())


def packaged_version() -> str:
    """The devtools-protocol revision of the packaged copy (``protocol-json/VERSION``)."""
    return _DATA.joinpath("VERSION").read_text().strip()


def load_pinned(protocol_dir: Path | None = None) -> list[Raw]:
    """The pinned domains: from ``protocol_dir`` (a ``protocol-json/``) or, by default, the packaged copy.

    Raises:
        FileNotFoundError: no ``browser_protocol.json`` there (an empty pinned side would report every item
            of the browser's protocol as added).
    """
    domains: list[Raw] = []
    for name in FILES:
        if protocol_dir is None:
            raw = packaged_json(name)
        else:
            path = protocol_dir / name
            raw = path.read_bytes() if path.exists() else None
        if raw is not None:
            domains.extend(json.loads(raw)["domains"])
        elif name == "browser_protocol.json":  # js_protocol.json is optional, as for the generator
            where = protocol_dir or "the engine package (make protocol-data)"
            raise FileNotFoundError(f"no {name} in {where}")
    return domains


def fetch_live(url: str) -> list[Raw]:
    """GET ``/json/protocol`` from a browser started with --remote-debugging-port (ConnectError if none
    answers it there).

    Args:
        url: its ``http://host:port`` (or that URL's ``/json/protocol``), or a ``ws://host:port/...``
            DevTools URL, whose HTTP endpoint is on the same host and port (no CDP command returns the
            whole schema: Schema.getDomains gives only names and versions).
    """
    import urllib.error  # noqa: PLC0415 - 30 ms of imports (http.client, email, ssl): only drift needs them
    import urllib.request  # noqa: PLC0415

    parts = urlsplit(url)
    if parts.scheme == "ws":
        url = f"http://{parts.netloc}"
    base = url.rstrip("/")
    if not base.endswith("/json/protocol"):
        base += "/json/protocol"
    expected = "expected a browser started with --remote-debugging-port, answering its protocol as JSON"
    try:
        with urllib.request.urlopen(base, timeout=10) as response:
            domains: list[Raw] = json.loads(response.read())["domains"]
    except urllib.error.HTTPError as exc:
        raise ConnectError(f"GET {base} answered HTTP {exc.code} ({expected})") from exc
    except (OSError, ValueError, KeyError, TypeError) as exc:  # refused, timed out, not JSON, not a schema
        raise ConnectError(f"GET {base} failed ({expected}): {type(exc).__name__}: {exc}") from exc
    return domains


def compare_with(url: str, protocol_dir: Path | None = None) -> Report:
    """The pinned protocol (see :func:`load_pinned`) against the browser at ``url``."""
    return compare(load_pinned(protocol_dir), fetch_live(url))


def format_report(report: Report) -> str:
    if not report:
        return "no drift: the browser speaks exactly the pinned protocol"
    lines = []
    for kind in sorted(report):
        counts = ", ".join(f"{len(v)} {k}" for k, v in sorted(report[kind].items()))
        lines.append(f"{kind}: {counts}")
        for change, items in sorted(report[kind].items()):
            for item in items:
                lines.append(f"  {change:8} {item}")
    return "\n".join(lines)
