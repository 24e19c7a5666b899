"""The intermediate representation: the protocol JSON resolved into what the templates print.

Every decision is made here, once: each field knows its annotation, its default and the expressions that
turn a wire value into a Python value and back; each item knows its docstring; each domain knows its
imports. The templates (``codegen/templates/``) only print.

Names of another domain's types are always written ``cdp.<module>.<Name>``: in annotations, in codec
expressions and (quoted) in type aliases. A module that writes one does ``import cdp``, and ``cdp`` loads a
domain on first attribute access, so none of these names imports anything until it is used.
"""

from __future__ import annotations

from typing import Any

import attrs

from codegen import _docs
from codegen._names import pascal, safe, snake, unique_members

Raw = dict[str, Any]
IDENTITY = "{v}"


@attrs.frozen
class Conv:
    """How one wire value becomes a Python value and back; ``{v}`` stands for the value."""

    ann: str
    """The annotation: ``Node`` in its own domain, ``cdp.dom.Node`` elsewhere, ``list[int]``, ``Any``."""
    hint: str
    """The same type as a run-time value, for a type alias: ``list["cdp.dom.Node"]``."""
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
    def default(self) -> str:
        """What an absent optional field holds: ``None``, or ``UNSET`` where ``None`` is JSON null."""
        if not self.optional:
            return ""
        return "UNSET" if self.null_is_a_value else "None"

    @property
    def ann(self) -> str:
        if not self.optional or self.null_is_a_value:
            return self.conv.ann
        return f"{self.conv.ann} | None"

    @property
    def plain(self) -> bool:
        """The wire value is the Python value: a decoder copies it as it is."""
        return self.conv.structure == IDENTITY

    @property
    def decode_value(self) -> str:
        """The Python value of the wire value ``v`` (``v`` is not ``None``)."""
        return self.conv.structure.replace("{v}", "v")

    @property
    def encode_attribute(self) -> str:
        """The wire value of this field of the object ``o``."""
        return self.conv.unstructure.replace("{v}", f"o.{self.py}")

    @property
    def encode_argument(self) -> str:
        """The wire value of this command argument."""
        return self.conv.unstructure.replace("{v}", self.py)

    @property
    def decode_param(self) -> str:
        """The Python value of this parameter in the wire params ``d`` (absent: the default)."""
        if not self.optional:
            return self.conv.structure.replace("{v}", f'd["{self.wire}"]')
        if self.null_is_a_value:
            return f'd.get("{self.wire}", UNSET)'
        if self.plain:
            return f'd.get("{self.wire}")'
        return f'None if (v := d.get("{self.wire}")) is None else {self.decode_value}'


@attrs.frozen
class Record:
    """A generated attrs class (a type, a command result or an event) and what its codec needs."""

    name: str
    doc: str
    fields: tuple[Field, ...]
    method: str = ""
    """An event's method (its ``method`` class variable); empty for types and results."""

    @property
    def plain(self) -> tuple[Field, ...]:
        return tuple(f for f in self.fields if f.plain)

    @property
    def branches(self) -> tuple[tuple[str, Field], ...]:
        """The fields a decoder converts, each with the keyword of its branch (``if`` or ``elif``)."""
        converted = [f for f in self.fields if not f.plain]
        first = "elif" if self.plain else "if"
        return tuple(("elif" if i else first, f) for i, f in enumerate(converted))

    @property
    def required(self) -> tuple[Field, ...]:
        return tuple(f for f in self.fields if not f.optional)

    @property
    def optional(self) -> tuple[Field, ...]:
        return tuple(f for f in self.fields if f.optional)

    @property
    def direct(self) -> bool:
        """Whether the decoder looks each field up by name (else it walks the wire dict's items).

        A lookup per declared field beats a walk over the present keys with a branch per key unless most
        fields are absent: see :data:`DIRECT_MAX_FIELDS`.
        """
        return len(self.fields) <= DIRECT_MAX_FIELDS


DIRECT_MAX_FIELDS = 16
"""The widest class decoded by a lookup per field. Measured (thread CPU time, medians, the 5k-element page
of ``benchmarks/pages.py``): its AX tree (13k AXNode of 13 fields, 62k AXValue of 4, 24k AXValueSource
of 9) decodes in 54 ms by lookups, 65 ms by the walk (75 ms by the walk with ``_enum`` calls); its DOM
(``Node``: 35 fields, about 9 present) parses and decodes in 26 ms when looked up, 22.5 ms walked."""


@attrs.frozen
class TypeDef:
    """A named protocol type: an attrs class, a string enum or an alias."""

    name: str
    kind: str  # "class" | "enum" | "alias"
    doc: str
    experimental: bool
    deprecated: bool
    record: Record | None = None
    members: tuple[tuple[str, str], ...] = ()
    alias: str = ""
    """An alias's value: a plain type (``str``) or, with ``alias_is_runtime`` false, a ``TypeAlias``."""
    alias_is_runtime: bool = False

    @property
    def fields(self) -> tuple[Field, ...]:
        return self.record.fields if self.record else ()


@attrs.frozen
class CommandDef:
    name: str
    py: str
    method: str
    doc: str
    experimental: bool
    deprecated: bool
    params: tuple[Field, ...]
    """In protocol order; the signature lists the required ones first."""
    returns: tuple[Field, ...]
    result: Record | None

    @property
    def signature(self) -> tuple[Field, ...]:
        return self.required + self.optional

    @property
    def required(self) -> tuple[Field, ...]:
        return tuple(f for f in self.params if not f.optional)

    @property
    def optional(self) -> tuple[Field, ...]:
        return tuple(f for f in self.params if f.optional)

    @property
    def result_name(self) -> str:
        return self.result.name if self.result else "None"

    @property
    def wire_params(self) -> str:
        """The wire params in the function's body: a call of its ``_p_`` encoder, or ``{}``."""
        if not self.params:
            return "{}"
        return f"_p_{self.py}({', '.join(f.py for f in self.signature)})"


@attrs.frozen
class EventDef:
    name: str
    experimental: bool
    deprecated: bool
    record: Record

    @property
    def fields(self) -> tuple[Field, ...]:
        return self.record.fields


@attrs.frozen
class DomainDef:
    name: str
    module: str
    doc: str
    experimental: bool
    deprecated: bool
    dependencies: tuple[str, ...]
    types: tuple[TypeDef, ...]
    commands: tuple[CommandDef, ...]
    events: tuple[EventDef, ...]

    @property
    def records(self) -> tuple[Record, ...]:
        """Every generated class, in the order of the module."""
        types = [t.record for t in self.types if t.record]
        results = [c.result for c in self.commands if c.result]
        return (*types, *results, *(e.record for e in self.events))

    @property
    def drainable(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """Command results with lists that decode item by item, and those lists' wire keys: what
        ``Command.decode(consume=True)`` may empty as it goes (``cdp._base.DRAINABLE``)."""
        out = []
        for c in self.commands:
            if c.result is not None:
                keys = tuple(f.wire for f in c.result.fields if _iterates(f.conv))
                if keys:
                    out.append((c.result.name, keys))
        return tuple(out)

    def _all_fields(self) -> list[Field]:
        fields = [f for r in self.records for f in r.fields]
        return fields + [f for c in self.commands for f in c.params]

    @property
    def typing_imports(self) -> tuple[str, ...]:
        names = {"Any"}
        if self.events:
            names.add("ClassVar")
        if any(t.kind == "alias" and not t.alias_is_runtime for t in self.types):
            names.add("TypeAlias")
        return tuple(sorted(names))

    @property
    def base_imports(self) -> tuple[str, ...]:
        """What the module takes from ``cdp._base``, in isort's order (constants, classes, functions)."""
        names = ["register"]
        if self.commands:
            names.insert(0, "Command")
        if any(t.kind == "enum" for t in self.types):
            names.insert(0, "CDPEnum")
        if any(f.null_is_a_value for f in self._all_fields()):
            names.insert(0, "UNSET")
        return tuple(names)

    @property
    def uses_attrs(self) -> bool:
        return bool(self.records)

    @property
    def uses_cdp(self) -> bool:
        """Whether the module names another domain's types, or has an alias that does (``list["cdp.x.Y"]``).

        An alias's forward reference is resolved in the globals of the module that uses it.
        """
        convs = [f.conv for f in self._all_fields()]
        texts = [*(c.ann + c.structure + c.unstructure for c in convs), *(t.alias for t in self.types)]
        return any("cdp." in text for text in texts)

    @property
    def uses_binary(self) -> bool:
        return any(f.conv.structure.count("_b64d(") for f in self._all_fields())

    @property
    def enum_getters(self) -> tuple[str, ...]:
        """The domain's enums that its decoders look up through ``_e_<Enum>`` (their value -> member map)."""
        texts = [f.conv.structure for f in self._all_fields()]
        names = [t.name for t in self.types if t.kind == "enum"]
        return tuple(n for n in names if any(f"_e_{n}(" in text for text in texts))

    @property
    def uses_enum_value(self) -> bool:
        return any("_enum(" in f.conv.structure for f in self._all_fields())

    @property
    def flags(self) -> tuple[tuple[str, bool, bool], ...]:
        """Every flagged item (``Domain``, ``Domain.item``, ``Domain.item.field``) with its flags."""
        out: list[tuple[str, bool, bool]] = []

        def add(name: str, experimental: bool, deprecated: bool) -> None:
            if experimental or deprecated:
                out.append((name, experimental, deprecated))

        add(self.name, self.experimental, self.deprecated)
        items: list[tuple[str, bool, bool, tuple[Field, ...]]] = [
            *((t.name, t.experimental, t.deprecated, t.fields) for t in self.types),
            *((c.name, c.experimental, c.deprecated, c.params + c.returns) for c in self.commands),
            *((e.name, e.experimental, e.deprecated, e.fields) for e in self.events),
        ]
        for name, experimental, deprecated, fields in items:
            add(f"{self.name}.{name}", experimental, deprecated)
            for f in fields:
                add(f"{self.name}.{name}.{f.wire}", f.experimental, f.deprecated)
        return tuple(out)


@attrs.frozen
class Protocol:
    version: str
    domains: tuple[DomainDef, ...]


_PRIMITIVES = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "any": "Any",
    "object": "dict[str, Any]",
}


BINARY = Conv("bytes", "bytes", "_b64d({v})", "_b64e({v})")
"""A ``binary`` field (see ``fixups.binary_fields``): ``bytes`` in Python, a base64 string on the wire."""


UNSET_NOTE = "Reads ``cdp.UNSET`` (falsy) when absent: ``None`` here is JSON ``null``, a value."
"""Said in the docstring of every optional ``any`` field, where a user meets ``UNSET``."""


def _kind(raw: Raw) -> str:
    if raw.get("type") == "object" and raw.get("properties"):
        return "class"
    if raw.get("type") == "string" and raw.get("enum"):
        return "enum"
    return "alias"


def _iterates(conv: Conv) -> bool:
    """Whether the decoder of a value walks it once, item by item (a comprehension over a list)."""
    return conv.structure.startswith("[") and conv.structure.endswith(" in {v}]")


def _flags(raw: Raw) -> tuple[bool, bool]:
    return bool(raw.get("experimental", False)), bool(raw.get("deprecated", False))


class _Resolver:
    """Resolves ``$ref`` and ``items`` into :class:`Conv` values for one protocol."""

    def __init__(self, domains: list[Raw]) -> None:
        self.types: dict[tuple[str, str], Raw] = {}
        self.modules = {d["domain"]: snake(d["domain"]) for d in domains}
        for d in domains:
            for t in d.get("types", []):
                self.types[(d["domain"], t["id"])] = t

    def conv(self, prop: Raw, domain: str, depth: int = 0, current: str = "") -> Conv:
        """Resolve ``prop``: unqualified refs name ``domain``'s types, code is written for ``current``."""
        current = current or domain
        if "$ref" in prop:
            return self._ref(prop["$ref"], domain, current, depth)
        kind = prop.get("type", "any")
        if kind == "array":
            item = self.conv(prop["items"], domain, depth + 1, current)
            var = f"x{depth}"
            s = u = IDENTITY
            if item.structure != IDENTITY:
                s = f"[{item.structure.replace('{v}', var)} for {var} in {{v}}]"
            if item.unstructure != IDENTITY:
                u = f"[{item.unstructure.replace('{v}', var)} for {var} in {{v}}]"
            return Conv(f"list[{item.ann}]", f"list[{item.hint}]", s, u)
        if kind == "binary":
            return BINARY
        if kind not in _PRIMITIVES:
            raise ValueError(f"unknown protocol type {kind!r} in {domain}")
        return Conv(_PRIMITIVES[kind], _PRIMITIVES[kind])

    def _ref(self, ref: str, domain: str, current: str, depth: int) -> Conv:
        target, _, name = ref.rpartition(".")
        target = target or domain
        raw = self.types[(target, name)]
        qualified = f"cdp.{self.modules[target]}.{name}"
        local = target == current
        ann = name if local else qualified
        # A forward reference in an alias is resolved where the alias is used: always fully qualified.
        hint = f'"{qualified}"'
        kind = _kind(raw)
        if kind == "class":
            codec = "" if local else f"cdp.{self.modules[target]}."
            return Conv(ann, hint, f"{codec}_s_{name}({{v}})", f"{codec}_u_{name}({{v}})")
        if kind == "enum":
            if local:
                # A dict lookup first (the module's `_e_<Enum>`, its value -> member map); `_enum` only for a
                # value this build does not know (or a falsy member). Saves a call per value: 102k values in
                # the 5k-element page's AX tree, about 10 ms of its 75 ms decode.
                return Conv(ann, hint, f"(_e_{name}({{v}}) or _enum({ann}, {{v}}))")
            return Conv(ann, hint, f"_enum({ann}, {{v}})")
        inner = self.conv(raw, target, depth, current)
        return Conv(ann, hint, inner.structure, inner.unstructure)

    def field(self, raw: Raw, domain: str) -> Field:
        experimental, deprecated = _flags(raw)
        conv = self.conv(raw, domain)
        optional = bool(raw.get("optional", False))
        description = raw.get("description", "")
        if optional and conv.ann == "Any":
            description = f"{description} {UNSET_NOTE}".strip()
        return Field(
            wire=raw["name"],
            py=safe(snake(raw["name"])),
            description=description,
            optional=optional,
            experimental=experimental,
            deprecated=deprecated,
            conv=conv,
            values=tuple(raw.get("enum", ())) if "$ref" not in raw else (),
        )


def _typedef(resolver: _Resolver, raw: Raw, domain: str) -> TypeDef:
    name = raw["id"]
    experimental, deprecated = _flags(raw)
    text = _docs.summary(raw.get("description", ""), name, experimental, deprecated)
    see = _docs.link(domain, "type", name)
    common: dict[str, Any] = {"name": name, "experimental": experimental, "deprecated": deprecated}
    kind = _kind(raw)
    if kind == "class":
        fields = tuple(resolver.field(p, domain) for p in raw["properties"])
        doc = _docs.docstring(text, see, [("Attributes", fields)])
        return TypeDef(kind=kind, doc=doc, record=Record(name, doc, fields), **common)
    if kind == "enum":
        members = tuple(unique_members(raw["enum"]))
        return TypeDef(kind=kind, doc=_docs.docstring(text, see), members=members, **common)
    conv = resolver.conv(raw, domain)
    # A builtin (``FrameId = str``) is a plain assignment; anything else is a TypeAlias of run-time value
    # ``conv.hint``, so ``X | None`` works in ``typing.get_type_hints`` (a whole-string alias does not).
    runtime = conv.ann in _PRIMITIVES.values() and conv.ann != "Any"
    doc = _docs.docstring(text, see, indent="")
    return TypeDef(kind=kind, doc=doc, alias=conv.hint, alias_is_runtime=runtime, **common)


def _command(resolver: _Resolver, raw: Raw, domain: str) -> CommandDef:
    name = raw["name"]
    py = safe(snake(name))
    experimental, deprecated = _flags(raw)
    params = tuple(resolver.field(p, domain) for p in raw.get("parameters", []))
    returns = tuple(resolver.field(p, domain) for p in raw.get("returns", []))
    see = _docs.link(domain, "method", name)
    text = _docs.summary(raw.get("description", ""), name, experimental, deprecated)
    signature = [f for f in params if not f.optional] + [f for f in params if f.optional]
    result = None
    if returns:
        result_doc = _docs.docstring(f"Result of :func:`{py}`.", see, [("Attributes", returns)])
        result = Record(pascal(name) + "Result", result_doc, returns)
    return CommandDef(
        name=name,
        py=py,
        method=f"{domain}.{name}",
        doc=_docs.docstring(text, see, [("Args", signature)]),
        experimental=experimental,
        deprecated=deprecated,
        params=params,
        returns=returns,
        result=result,
    )


def _event(resolver: _Resolver, raw: Raw, domain: str) -> EventDef:
    name = raw["name"]
    experimental, deprecated = _flags(raw)
    fields = []
    for p in raw.get("parameters", []):
        field = resolver.field(p, domain)
        # ``method`` is taken by the event's class variable.
        fields.append(attrs.evolve(field, py="method_") if field.py == "method" else field)
    text = _docs.summary(raw.get("description", ""), name, experimental, deprecated)
    doc = _docs.docstring(text, _docs.link(domain, "event", name), [("Attributes", fields)])
    record = Record(pascal(name), doc, tuple(fields), method=f"{domain}.{name}")
    return EventDef(name=name, experimental=experimental, deprecated=deprecated, record=record)


def build(version: str, raw_domains: list[Raw]) -> Protocol:
    """Resolve the (already fixed-up) raw domains into the IR, sorted by domain name."""
    raw_domains = sorted(raw_domains, key=lambda d: d["domain"])
    resolver = _Resolver(raw_domains)
    domains = []
    for raw in raw_domains:
        name = raw["domain"]
        experimental, deprecated = _flags(raw)
        domains.append(
            DomainDef(
                name=name,
                module=snake(name),
                doc=_docs.module_docstring(name, raw.get("description", ""), experimental, deprecated),
                experimental=experimental,
                deprecated=deprecated,
                dependencies=tuple(raw.get("dependencies", [])),
                types=tuple(_typedef(resolver, t, name) for t in raw.get("types", [])),
                commands=tuple(_command(resolver, c, name) for c in raw.get("commands", [])),
                events=tuple(_event(resolver, e, name) for e in raw.get("events", [])),
            )
        )
    return Protocol(version=version, domains=tuple(domains))
