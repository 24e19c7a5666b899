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

BINARY_NOTE = "(Encoded as a base64 string when passed over JSON)"
"""What the PDL-to-JSON converter appends to the description of a ``binary`` field it writes as a string."""


BYTES_NOTE = "``bytes`` (the bindings base64 it on the wire)."
"""What the docstring of a binary field says instead."""


def binary_fields(domains: list[Raw]) -> None:
    """Give ``binary`` fields back their type, which the published JSON writes as ``string``.

    The protocol's source (PDL) says ``binary`` for screenshots, PDFs, ``Fetch.fulfillRequest`` bodies and
    the like; its JSON rendering says ``string`` and appends :data:`BINARY_NOTE` to the description, but
    only where there is a description. The fields without one are listed in :data:`_BINARY_UNNOTED` (read
    from the PDL of devtools-protocol r1684464: 21 of its 46 binary fields carry no note in the JSON).
    """
    unnoted = {(d, i, f) for d, _, i, f in _BINARY_UNNOTED}
    for domain in domains:
        owners = [(t["id"], t.get("properties", [])) for t in domain.get("types", [])]
        owners += [
            (c["name"], c.get("parameters", []) + c.get("returns", [])) for c in domain.get("commands", [])
        ]
        owners += [(e["name"], e.get("parameters", [])) for e in domain.get("events", [])]
        for owner, props in owners:
            for prop in props:
                noted = BINARY_NOTE in prop.get("description", "")
                if noted or (domain["domain"], owner, prop["name"]) in unnoted:
                    typed = prop["items"] if prop.get("type") == "array" else prop
                    if typed.get("type") == "string":
                        typed["type"] = "binary"
                        text = prop.get("description", "").replace(BINARY_NOTE, "").strip()
                        prop["description"] = f"{text} {BYTES_NOTE}".strip()


# (domain, "types" | "commands" | "events", item, field): binary in the PDL, a bare string in the JSON
_BINARY_UNNOTED: list[tuple[str, str, str, str]] = [
    ("BluetoothEmulation", "commands", "simulateCharacteristicOperationResponse", "data"),
    ("BluetoothEmulation", "commands", "simulateDescriptorOperationResponse", "data"),
    ("BluetoothEmulation", "events", "characteristicOperationReceived", "data"),
    ("BluetoothEmulation", "events", "descriptorOperationReceived", "data"),
    ("Network", "events", "directTCPSocketChunkReceived", "data"),
    ("Network", "events", "directTCPSocketChunkSent", "data"),
    ("Network", "types", "DirectUDPMessage", "data"),
    ("Network", "types", "PostDataEntry", "bytes"),
    ("Page", "commands", "getManifestIcons", "primaryIcon"),
    ("SmartCardEmulation", "commands", "reportDataResult", "data"),
    ("SmartCardEmulation", "commands", "reportStatusResult", "atr"),
    ("SmartCardEmulation", "events", "controlRequested", "data"),
    ("SmartCardEmulation", "events", "setAttribRequested", "data"),
    ("SmartCardEmulation", "events", "transmitRequested", "data"),
    ("SmartCardEmulation", "types", "ReaderStateOut", "atr"),
    ("WebAuthn", "commands", "getCredential", "credentialId"),
    ("WebAuthn", "commands", "removeCredential", "credentialId"),
    ("WebAuthn", "commands", "setCredentialProperties", "credentialId"),
    ("WebAuthn", "events", "credentialDeleted", "credentialId"),
    ("WebAuthn", "types", "Credential", "cmtgKeys"),
    ("WebAuthn", "types", "Credential", "credentialId"),
]

FIXUPS: list[Callable[[list[Raw]], None]] = [
    drop_duplicate_domains,
    optional_fields_chrome_omits,
    binary_fields,
]


def apply(domains: list[Raw]) -> None:
    """Run every fixup, in order."""
    for fixup in FIXUPS:
        fixup(domains)
