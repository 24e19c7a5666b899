"""Compare the pinned protocol with a running browser's ``/json/protocol``.

Each side is flattened into ``kind name -> signature`` entries (domain, type, command, event, parameter,
property, enum value); the report lists what was added, removed or changed, grouped by kind.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from codegen._render import FILES

Raw = dict[str, Any]
Report = dict[str, dict[str, list[str]]]


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


def load_pinned(protocol_dir: Path) -> list[Raw]:
    domains: list[Raw] = []
    for name in FILES:
        path = protocol_dir / name
        if path.exists():  # js_protocol.json is optional, as for the generator
            domains.extend(json.loads(path.read_text())["domains"])
    return domains


def fetch_live(url: str) -> list[Raw]:
    """GET ``<url>/json/protocol`` from a browser started with --remote-debugging-port."""
    base = url.rstrip("/")
    if not base.endswith("/json/protocol"):
        base += "/json/protocol"
    with urllib.request.urlopen(base, timeout=10) as response:
        domains: list[Raw] = json.loads(response.read())["domains"]
    return domains


def compare_with(url: str, protocol_dir: Path) -> Report:
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
