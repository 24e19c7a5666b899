"""Protocol quirks, each fixed in one documented function.

Each fixup takes the merged raw domain list (as loaded from ``protocol-json/``) and changes it in place
before the IR is built. Add a function here, list it in ``FIXUPS``, and say which message or name showed
the quirk; never patch generated code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Raw = dict[str, Any]


def _find(domains: list[Raw], domain: str) -> Raw:
    for d in domains:
        if d["domain"] == domain:
            return d
    raise KeyError(domain)


def _items(domain: Raw, kind: str, name: str) -> Raw:
    key = "id" if kind == "types" else "name"
    items: list[Raw] = domain.get(kind, [])
    for item in items:
        if item[key] == name:
            return item
    raise KeyError(f"{domain['domain']}.{name}")


def drop_duplicate_domains(domains: list[Raw]) -> None:
    """A domain listed in both JSON files keeps its first definition (browser_protocol wins).

    Both files are published separately and have, in the past, carried the same domain while it moved.
    """
    seen: set[str] = set()
    kept = []
    for d in domains:
        if d["domain"] not in seen:
            seen.add(d["domain"])
            kept.append(d)
    domains[:] = kept


def optional_fields_chrome_omits(domains: list[Raw]) -> None:
    """Fields the protocol calls required but that Chromium leaves out of real messages.

    Found by decoding real traffic (tests/integration/test_real_traffic.py): a decode of these would fail on
    every such message. They become optional, which is what the browser actually does.
    """
    for domain, kind, item, field in _CHROME_OMITS:
        try:
            target = _items(_find(domains, domain), kind, item)
        except KeyError:
            continue
        key = "properties" if kind == "types" else "parameters"
        for prop in target.get(key, []) + target.get("returns", []):
            if prop["name"] == field:
                prop["optional"] = True


# (domain, "types" | "commands" | "events", item, field)
_CHROME_OMITS: list[tuple[str, str, str, str]] = []

FIXUPS: list[Callable[[list[Raw]], None]] = [
    drop_duplicate_domains,
    optional_fields_chrome_omits,
]


def apply(domains: list[Raw]) -> None:
    """Run every fixup, in order."""
    for fixup in FIXUPS:
        fixup(domains)
