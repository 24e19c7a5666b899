"""The intermediate representation: the protocol JSON resolved into what the templates print.

Every reference is resolved here, once: each field knows its Python annotation and the expressions that
turn a wire value into a Python value and back. Templates only print.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

from codegen._names import pascal, safe, snake, unique_members

Raw = dict[str, Any]
IDENTITY = "{v}"


@attrs.frozen
class Conv:
    """How one wire value becomes a Python value and back; ``{v}`` stands for the value."""

    ann: str
    structure: str = IDENTITY
    unstructure: str = IDENTITY


@attrs.frozen
class Field:
    """A property of a type, a parameter of a command or event, or a return value."""

    wire: str
    py: str
    description: str
    optional: bool
    experimental: bool
    deprecated: bool
    conv: Conv
    values: tuple[str, ...] = ()
    """The allowed values of an inline enum (kept as ``str`` on the class, listed in the docs)."""

    @property
    def null_is_a_value(self) -> bool:
        """An optional ``any`` field: JSON ``null`` is a value there, so absence needs its own marker."""
        return self.optional and self.conv.ann == "Any"

    @property
    def absent(self) -> str:
        """What an absent optional field holds: ``UNSET`` where ``None`` is JSON null, else ``None``."""
        return "UNSET" if self.null_is_a_value else "None"

    @property
    def ann(self) -> str:
        if not self.optional or self.null_is_a_value:
            return self.conv.ann
        return f"{self.conv.ann} | None"

    def structure_from(self, source: str) -> str:
        """The expression that reads this field out of the wire dict ``source``."""
        if not self.optional:
            return self.conv.structure.replace("{v}", f'{source}["{self.wire}"]')
        if self.null_is_a_value:
            return f'{source}.get("{self.wire}", UNSET)'
        if self.conv.structure == IDENTITY:
            return f'{source}.get("{self.wire}")'
        inner = self.conv.structure.replace("{v}", "v")
        return f'None if (v := {source}.get("{self.wire}")) is None else {inner}'

    def unstructure_from(self, expr: str) -> str:
        return self.conv.unstructure.replace("{v}", expr)


@attrs.frozen
class TypeDef:
    """A named protocol type: an attrs class, a string enum or an alias."""

    name: str
    kind: str  # "class" | "enum" | "alias"
    description: str
    experimental: bool
    deprecated: bool
    fields: tuple[Field, ...] = ()
    members: tuple[tuple[str, str], ...] = ()
    alias: str = ""
    alias_is_runtime: bool = False
    alias_value: str = ""


@attrs.frozen
class CommandDef:
    name: str
    py: str
    description: str
    experimental: bool
    deprecated: bool
    params: tuple[Field, ...]
    returns: tuple[Field, ...]

    @property
    def result(self) -> str | None:
        return pascal(self.name) + "Result" if self.returns else None


@attrs.frozen
class EventDef:
    name: str
    cls: str
    description: str
    experimental: bool
    deprecated: bool
    fields: tuple[Field, ...]


@attrs.frozen
class DomainDef:
    name: str
    module: str
    description: str
    experimental: bool
    deprecated: bool
    dependencies: tuple[str, ...]
    types: tuple[TypeDef, ...]
    commands: tuple[CommandDef, ...]
    events: tuple[EventDef, ...]
    imports: tuple[str, ...]

    def flags(self) -> list[tuple[str, bool, bool]]:
        """Every flagged item (``Domain``, ``Domain.item``, ``Domain.item.field``) with its flags."""
        out: list[tuple[str, bool, bool]] = []

        def add(name: str, experimental: bool, deprecated: bool) -> None:
            if experimental or deprecated:
                out.append((name, experimental, deprecated))

        add(self.name, self.experimental, self.deprecated)
        for t in self.types:
            add(f"{self.name}.{t.name}", t.experimental, t.deprecated)
            for f in t.fields:
                add(f"{self.name}.{t.name}.{f.wire}", f.experimental, f.deprecated)
        for c in self.commands:
            add(f"{self.name}.{c.name}", c.experimental, c.deprecated)
            for f in (*c.params, *c.returns):
                add(f"{self.name}.{c.name}.{f.wire}", f.experimental, f.deprecated)
        for e in self.events:
            add(f"{self.name}.{e.name}", e.experimental, e.deprecated)
            for f in e.fields:
                add(f"{self.name}.{e.name}.{f.wire}", f.experimental, f.deprecated)
        return out


@attrs.frozen
class Protocol:
    version: str
    domains: tuple[DomainDef, ...]


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_RUNTIME_NAMES = frozenset({"list", "dict", "str", "int", "float", "bool", "Any"})
_PRIMITIVES = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "any": "Any",
    "binary": "str",
    "object": "dict[str, Any]",
}


class _Resolver:
    """Resolves ``$ref`` and ``items`` into :class:`Conv` values for one protocol."""

    def __init__(self, domains: list[Raw]) -> None:
        self.types: dict[tuple[str, str], Raw] = {}
        self.modules = {d["domain"]: snake(d["domain"]) for d in domains}
        for d in domains:
            for t in d.get("types", []):
                self.types[(d["domain"], t["id"])] = t
        self.imports: set[str] = set()

    def kind(self, raw: Raw) -> str:
        if raw.get("type") == "object" and raw.get("properties"):
            return "class"
        if raw.get("type") == "string" and raw.get("enum"):
            return "enum"
        return "alias"

    def conv(self, prop: Raw, domain: str, depth: int = 0, current: str | None = None) -> Conv:
        """Resolve ``prop``; unqualified refs are looked up in ``domain``, code is written for ``current``."""
        current = current or domain
        if "$ref" in prop:
            return self._ref(prop["$ref"], domain, current, depth)
        kind = prop.get("type", "any")
        if kind == "array":
            item = self.conv(prop["items"], domain, depth + 1, current)
            var = f"x{depth}"
            s = IDENTITY
            u = IDENTITY
            if item.structure != IDENTITY:
                s = f"[{item.structure.replace('{v}', var)} for {var} in {{v}}]"
            if item.unstructure != IDENTITY:
                u = f"[{item.unstructure.replace('{v}', var)} for {var} in {{v}}]"
            return Conv(f"list[{item.ann}]", s, u)
        if kind not in _PRIMITIVES:
            raise ValueError(f"unknown protocol type {kind!r} in {domain}")
        return Conv(_PRIMITIVES[kind])

    def _ref(self, ref: str, domain: str, current: str, depth: int) -> Conv:
        target_domain, _, name = ref.rpartition(".")
        target_domain = target_domain or domain
        raw = self.types[(target_domain, name)]
        local = target_domain == current
        module = self.modules[target_domain]
        if not local:
            self.imports.add(module)
        ann = name if local else f"_{module}.{name}"
        runtime = "" if local else f"cdp.{module}."
        kind = self.kind(raw)
        if kind == "class":
            return Conv(ann, f"{runtime}_s_{name}({{v}})", f"{runtime}_u_{name}({{v}})")
        if kind == "enum":
            target = name if local else f"cdp.{module}.{name}"
            return Conv(ann, f"_enum({target}, {{v}})")
        inner = self.conv(raw, target_domain, depth, current)
        return Conv(ann, inner.structure, inner.unstructure)


def _field(resolver: _Resolver, raw: Raw, domain: str) -> Field:
    return Field(
        wire=raw["name"],
        py=safe(snake(raw["name"])),
        description=raw.get("description", ""),
        optional=bool(raw.get("optional", False)),
        experimental=bool(raw.get("experimental", False)),
        deprecated=bool(raw.get("deprecated", False)),
        conv=resolver.conv(raw, domain),
        values=tuple(raw.get("enum", ())) if "$ref" not in raw else (),
    )


def _runtime_alias(ann: str, module: str) -> str:
    """An alias annotation as a run-time value: in ``dom``, ``list[Node]`` -> ``list["cdp.dom.Node"]``.

    Builtins and ``Any`` stay as they are. Protocol names become fully qualified strings: they may be defined
    later in the module or only imported under ``TYPE_CHECKING``, and a forward reference is resolved in the
    module that uses the alias, not the one defining it. A whole-string alias (``X: TypeAlias = "list[Y]"``)
    breaks ``typing.get_type_hints`` on every ``X | None`` annotation (``str | None`` is a TypeError).
    """

    def qualify(match: re.Match[str]) -> str:
        name = match[0]
        if name in _RUNTIME_NAMES:
            return name
        if name.startswith("_"):  # ``_dom.Node``, imported as ``from cdp import dom as _dom``
            return f'"cdp.{name[1:]}"'
        return f'"cdp.{module}.{name}"'

    return _NAME.sub(qualify, ann)


def _event_field(resolver: _Resolver, raw: Raw, domain: str) -> Field:
    """An event parameter; ``method`` is taken by the event's class variable, so it becomes ``method_``."""
    field = _field(resolver, raw, domain)
    return attrs.evolve(field, py="method_") if field.py == "method" else field


def _flags(raw: Raw) -> tuple[bool, bool]:
    return bool(raw.get("experimental", False)), bool(raw.get("deprecated", False))


def _typedef(resolver: _Resolver, raw: Raw, domain: str) -> TypeDef:
    experimental, deprecated = _flags(raw)
    common: dict[str, Any] = {
        "name": raw["id"],
        "description": raw.get("description", ""),
        "experimental": experimental,
        "deprecated": deprecated,
    }
    kind = resolver.kind(raw)
    if kind == "class":
        fields = tuple(_field(resolver, p, domain) for p in raw["properties"])
        return TypeDef(kind="class", fields=fields, **common)
    if kind == "enum":
        return TypeDef(kind="enum", members=tuple(unique_members(raw["enum"])), **common)
    conv = resolver.conv(raw, domain)
    runtime = conv.ann in _PRIMITIVES.values() and conv.ann != "Any"
    value = _runtime_alias(conv.ann, resolver.modules[domain])
    return TypeDef(kind="alias", alias=conv.ann, alias_is_runtime=runtime, alias_value=value, **common)


def build(version: str, raw_domains: list[Raw]) -> Protocol:
    """Resolve the (already fixed-up) raw domains into the IR, sorted by domain name."""
    raw_domains = sorted(raw_domains, key=lambda d: d["domain"])
    resolver = _Resolver(raw_domains)
    domains = []
    for raw in raw_domains:
        name = raw["domain"]
        resolver.imports = set()
        types = tuple(_typedef(resolver, t, name) for t in raw.get("types", []))
        commands = tuple(
            CommandDef(
                name=c["name"],
                py=safe(snake(c["name"])),
                description=c.get("description", ""),
                experimental=_flags(c)[0],
                deprecated=_flags(c)[1],
                params=tuple(_field(resolver, p, name) for p in c.get("parameters", [])),
                returns=tuple(_field(resolver, p, name) for p in c.get("returns", [])),
            )
            for c in raw.get("commands", [])
        )
        events = tuple(
            EventDef(
                name=e["name"],
                cls=pascal(e["name"]),
                description=e.get("description", ""),
                experimental=_flags(e)[0],
                deprecated=_flags(e)[1],
                fields=tuple(_event_field(resolver, p, name) for p in e.get("parameters", [])),
            )
            for e in raw.get("events", [])
        )
        experimental, deprecated = _flags(raw)
        domains.append(
            DomainDef(
                name=name,
                module=snake(name),
                description=raw.get("description", ""),
                experimental=experimental,
                deprecated=deprecated,
                dependencies=tuple(raw.get("dependencies", [])),
                types=types,
                commands=commands,
                events=events,
                imports=tuple(sorted(resolver.imports)),
            )
        )
    return Protocol(version=version, domains=tuple(domains))
