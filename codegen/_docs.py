"""Docstrings of the generated items: the protocol's descriptions, flags, and a link to the protocol viewer.

The IR calls these while it is built; a template prints the result between triple quotes as it is. A
docstring says only what the protocol says: an item without a description gets its flags and its link, a
field without anything to say is left out of ``Attributes:`` / ``Args:`` (no ``-`` placeholders).
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable, Sequence
from typing import Protocol

VIEWER = "https://chromedevtools.github.io/devtools-protocol/tot"
"""The protocol viewer; its pages are per domain, with ``#method-``, ``#event-`` and ``#type-`` anchors."""


class Documented(Protocol):
    """A field as far as its docstring entry goes."""

    @property
    def wire(self) -> str: ...
    @property
    def py(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def experimental(self) -> bool: ...
    @property
    def deprecated(self) -> bool: ...
    @property
    def values(self) -> tuple[str, ...]: ...


def link(domain: str, kind: str, name: str) -> str:
    """The viewer page of one item: ``kind`` is ``method``, ``event`` or ``type``."""
    return f"{VIEWER}/{domain}/#{kind}-{name}"


def escape(text: str) -> str:
    """``text`` made safe between triple double quotes."""
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    if text.endswith('"'):
        text = text[:-1] + '\\"'
    return text


def _marks(experimental: bool, deprecated: bool) -> list[str]:
    return [word for word, on in (("Experimental.", experimental), ("Deprecated.", deprecated)) if on]


def restates(description: str, name: str) -> bool:
    """Whether a description only repeats its item's name (``Key`` "Key.", ``storageKey`` "Storage key.")."""

    def letters(text: str) -> str:
        return re.sub(r"[^a-z0-9]", "", text.lower())

    return letters(description) == letters(name)


def summary(description: str, name: str, experimental: bool, deprecated: bool) -> str:
    """The flags, then the description (its later lines dedented); empty when there is neither.

    A description that only repeats ``name`` is left out: the name is already on the page.
    """
    text = "" if restates(description, name) else escape(description.strip())
    first, _, rest = " ".join([*_marks(experimental, deprecated), text]).strip().partition("\n")
    return first + ("\n" + textwrap.dedent(rest) if rest else "")


def entry(field: Documented) -> str:
    """One ``name: text`` line of an ``Attributes:`` or ``Args:`` section; empty if the field has no text."""
    description = "" if restates(field.description, field.wire) else " ".join(field.description.split())
    parts = [*_marks(field.experimental, field.deprecated), escape(description)]
    if field.values:
        parts.append("Values: " + ", ".join(escape(repr(v)) for v in field.values) + ".")
    text = " ".join(p for p in parts if p)
    return f"{field.py}: {text}" if text else ""


def docstring(
    text: str, see: str, sections: Iterable[tuple[str, Sequence[Documented]]] = (), indent: str = "    "
) -> str:
    """What goes between the quotes: ``text``, the sections that have entries, and ``See: <see>``.

    Without a ``text``, the link is the summary line. ``indent`` is the indentation of the docstring's own
    lines (``""`` for a module-level alias).
    """
    link_line = f"See: {see}"
    paragraphs = [text or link_line]
    for header, fields in sections:
        entries = [e for e in map(entry, fields) if e]
        if entries:
            paragraphs.append("\n".join([f"{header}:", *(f"    {e}" for e in entries)]))
    if text:
        paragraphs.append(link_line)
    lines = "\n\n".join(paragraphs).split("\n")
    if len(lines) == 1:
        return lines[0]
    body = [lines[0], *(indent + line if line.strip() else "" for line in lines[1:])]
    return "\n".join(body) + "\n" + indent


def module_docstring(name: str, description: str, experimental: bool, deprecated: bool) -> str:
    """``Page domain.`` (with its flags), then the domain's description."""
    marks = " (experimental)" * experimental + " (deprecated)" * deprecated
    first = f"{name} domain{marks}."
    text = escape(description.strip())
    return f"{first}\n\n{text}\n" if text else first
