"""Python names for protocol names: snake_case, keyword and builtin escapes, enum members."""

from __future__ import annotations

import keyword
import re

# Python 3.11's lowercase builtins, frozen so the output does not depend on the Python that runs codegen.
_BUILTINS = frozenset(
    [
        "abs",
        "aiter",
        "all",
        "anext",
        "any",
        "ascii",
        "bin",
        "bool",
        "breakpoint",
        "bytearray",
        "bytes",
        "callable",
        "chr",
        "classmethod",
        "compile",
        "complex",
        "copyright",
        "credits",
        "delattr",
        "dict",
        "dir",
        "divmod",
        "enumerate",
        "eval",
        "exec",
        "exit",
        "filter",
        "float",
        "format",
        "frozenset",
        "getattr",
        "globals",
        "hasattr",
        "hash",
        "help",
        "hex",
        "id",
        "input",
        "int",
        "isinstance",
        "issubclass",
        "iter",
        "len",
        "license",
        "list",
        "locals",
        "map",
        "max",
        "memoryview",
        "min",
        "next",
        "object",
        "oct",
        "open",
        "ord",
        "pow",
        "print",
        "property",
        "quit",
        "range",
        "repr",
        "reversed",
        "round",
        "set",
        "setattr",
        "slice",
        "sorted",
        "staticmethod",
        "str",
        "sum",
        "super",
        "tuple",
        "type",
        "vars",
        "zip",
    ]
)
_ACRONYM = re.compile(r"([A-Z]+)([A-Z][a-z])")
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")


def snake(name: str) -> str:
    """``getFullAXTree`` -> ``get_full_ax_tree``; ``documentURL`` -> ``document_url``."""
    return _CAMEL.sub(r"\1_\2", _ACRONYM.sub(r"\1_\2", name)).lower()


def pascal(name: str) -> str:
    """``loadEventFired`` -> ``LoadEventFired``."""
    return name[:1].upper() + name[1:]


def safe(name: str) -> str:
    """Append ``_`` to keywords, soft keywords and builtins (``or`` -> ``or_``, ``type`` -> ``type_``)."""
    if keyword.iskeyword(name) or keyword.issoftkeyword(name) or name in _BUILTINS:
        return name + "_"
    return name


def enum_member(value: str) -> str:
    """An UPPER_SNAKE member name for an enum value (``None`` -> ``NONE``, ``-webkit-x`` -> ``WEBKIT_X``)."""
    text = re.sub(r"[^0-9A-Za-z]+", "_", snake(value)).strip("_").upper()
    if not text:
        text = "EMPTY"
    if text[0].isdigit():
        text = "V" + text
    return text


def unique_members(values: list[str]) -> list[tuple[str, str]]:
    """Member names for enum values, made unique by a numeric suffix where two values collide."""
    seen: dict[str, int] = {}
    out: list[tuple[str, str]] = []
    for value in values:
        name = enum_member(value)
        if name in seen:
            seen[name] += 1
            name = f"{name}_{seen[name]}"
        else:
            seen[name] = 1
        out.append((name, value))
    return out
