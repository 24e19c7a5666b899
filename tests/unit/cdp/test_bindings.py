"""Behaviour of the generated ``cdp`` package, checked against the pinned protocol JSON."""

from __future__ import annotations

import gc
import importlib
import inspect
import json
import re
import subprocess
import sys
import textwrap
import typing
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import attrs
import pytest

import cdp
from cdp import _registry
from cdp._base import COMMAND_DECODERS, DRAINABLE, HOOKS, CDPEnum, Command
from codegen import fixups
from codegen._names import pascal, safe, snake

ROOT = Path(__file__).resolve().parents[3]
PROTOCOL_DIR = ROOT / "protocol-json"
VERSION = (PROTOCOL_DIR / "VERSION").read_text().strip()


def _load_domains() -> list[dict[str, Any]]:
    domains: list[dict[str, Any]] = []
    for name in ("browser_protocol.json", "js_protocol.json"):
        domains.extend(json.loads((PROTOCOL_DIR / name).read_text())["domains"])
    fixups.apply(domains)
    return domains


DOMAINS = _load_domains()
PINNED_DOMAINS = {
    d["domain"]
    for name in ("browser_protocol.json", "js_protocol.json")
    for d in json.loads((PROTOCOL_DIR / name).read_text())["domains"]
}
"""The domain names of the pinned JSON as published (59 in 0.0.1734725), before any fixup."""


def module_of(domain: str) -> ModuleType:
    return importlib.import_module(f"cdp.{snake(domain)}")


def _is_class(raw: dict[str, Any]) -> bool:
    return raw.get("type") == "object" and bool(raw.get("properties"))


def _is_enum(raw: dict[str, Any]) -> bool:
    return raw.get("type") == "string" and bool(raw.get("enum"))


def _check_fields(cls: type, props: list[dict[str, Any]], where: str, event: bool = False) -> None:
    """The attrs fields are the protocol properties, in order; optional ones default to None (or UNSET)."""
    fields = attrs.fields(cls)
    py_names = [safe(snake(p["name"])) for p in props]
    if event:  # ``method`` is the event's class variable
        py_names = ["method_" if n == "method" else n for n in py_names]
    assert [f.name for f in fields] == py_names, where
    for field, prop in zip(fields, props, strict=True):
        if prop.get("optional"):
            # Where JSON null is a value (an ``any`` field), absence is UNSET, not None.
            expected = cdp.UNSET if prop.get("type") == "any" and "$ref" not in prop else None
            assert field.default is expected, f"{where}.{prop['name']}"
        else:
            assert field.default is attrs.NOTHING, f"{where}.{prop['name']}"


# --- the package as a whole --------------------------------------------------------------------------------


def test_one_module_per_pinned_domain() -> None:
    assert len(DOMAINS) == len(PINNED_DOMAINS)
    assert len(cdp.DOMAINS) == len(PINNED_DOMAINS)
    assert cdp.DOMAINS == _registry.DOMAINS == {d["domain"]: snake(d["domain"]) for d in DOMAINS}
    modules = {p.stem for p in (ROOT / "cdp").glob("*.py")} - {"__init__", "_base", "_registry"}
    assert modules == set(cdp.DOMAINS.values())
    assert cdp.PROTOCOL_VERSION == VERSION


def test_every_protocol_item_is_generated() -> None:
    counts = {"types": 0, "commands": 0, "events": 0}
    for d in DOMAINS:
        name = d["domain"]
        module = module_of(name)
        actual = (module.DOMAIN, module.EXPERIMENTAL, module.DEPRECATED, module.DEPENDENCIES)
        assert actual == (
            name,
            bool(d.get("experimental")),
            bool(d.get("deprecated")),
            tuple(d.get("dependencies", [])),
        )
        for t in d.get("types", []):
            counts["types"] += 1
            obj = getattr(module, t["id"])
            where = f"{name}.{t['id']}"
            if _is_class(t):
                assert attrs.has(obj), where
                assert obj in HOOKS, where
                _check_fields(obj, t["properties"], where)
            elif _is_enum(t):
                assert issubclass(obj, CDPEnum), where
                assert [m.value for m in obj] == t["enum"], where
        for c in d.get("commands", []):
            counts["commands"] += 1
            method = f"{name}.{c['name']}"
            function: Any = getattr(module, safe(snake(c["name"])))
            assert _registry.COMMANDS[method] == (module.__name__[4:], function.__name__)
            assert function in COMMAND_DECODERS  # cdp.decode_command can build it from the wire
            signature = inspect.signature(function)
            params = c.get("parameters", [])
            assert list(signature.parameters) == sorted(
                (safe(snake(p["name"])) for p in params), key=lambda n: _optional_last(params, n)
            ), method
            for p in signature.parameters.values():
                assert p.kind is inspect.Parameter.KEYWORD_ONLY, method
            if c.get("returns"):
                result = getattr(module, pascal(c["name"]) + "Result")
                assert attrs.has(result), method
                assert result in HOOKS, method
                _check_fields(result, c["returns"], method)
        for e in d.get("events", []):
            counts["events"] += 1
            method = f"{name}.{e['name']}"
            cls: Any = getattr(module, pascal(e["name"]))
            assert cls.method == method
            assert cls in HOOKS
            assert _registry.EVENTS[method] == (module.__name__[4:], cls.__name__)
            _check_fields(cls, e.get("parameters", []), method, event=True)
            assert cdp.event_class(method) is cls
    assert len(_registry.COMMANDS) == counts["commands"]
    assert len(_registry.EVENTS) == counts["events"]
    assert min(counts.values()) > 100, counts


def _optional_last(params: list[dict[str, Any]], py: str) -> tuple[bool, int]:
    """Generated signatures list required params first, each group in protocol order."""
    names = [safe(snake(p["name"])) for p in params]
    index = names.index(py)
    return bool(params[index].get("optional")), index


def test_every_generated_file_has_the_header() -> None:
    header = f"# Code generated by codegen from protocol-json {VERSION}. DO NOT EDIT.\n"
    files = sorted((ROOT / "cdp").glob("*.py"))
    assert len(files) == len(PINNED_DOMAINS) + 3  # __init__, _base, _registry
    for path in files:
        with path.open() as f:
            assert f.readline() == header, path.name


def _run(code: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_import_cdp_loads_no_domain() -> None:
    out = _run(
        """
        import sys
        import cdp
        print(sorted(m for m in sys.modules if m == "cdp" or m.startswith("cdp.")))
        cdp.page.navigate(url="x")
        print("cdp.page" in sys.modules, "cdp.dom" in sys.modules, "cattrs" in sys.modules)
        """
    )
    assert out.splitlines() == ["['cdp', 'cdp._base']", "True False False"]


def test_cdp_never_imports_trio() -> None:
    out = _run(
        """
        import importlib, sys
        import cdp
        for name in cdp.DOMAINS.values():
            importlib.import_module("cdp." + name)
        cdp.converter
        print(sorted(m for m in sys.modules if m.split(".")[0] in {"trio", "engine", "codegen", "jinja2"}))
        """
    )
    assert out.strip() == "[]"


def test_package_namespace() -> None:
    assert cdp.__all__ == sorted(cdp.__all__)
    assert set(dir(cdp)) >= {*cdp.__all__, *cdp.DOMAINS.values()}
    assert cdp.page is importlib.import_module("cdp.page")
    from cdp import dom_snapshot

    assert dom_snapshot is cdp.dom_snapshot
    with pytest.raises(AttributeError, match="no_such_domain"):
        _ = cdp.no_such_domain


# --- commands ----------------------------------------------------------------------------------------------


def test_navigate_command() -> None:
    command = cdp.page.navigate(url="https://example.com/", transition_type=cdp.page.TransitionType.LINK)
    assert isinstance(command, Command)
    assert command.method == "Page.navigate"
    assert command.params == {"url": "https://example.com/", "transitionType": "link"}
    assert json.loads(json.dumps(command.params)) == command.params
    assert command == cdp.page.navigate(url="https://example.com/", transition_type="link")  # type: ignore[arg-type]
    assert repr(command).startswith("Command('Page.navigate', ")
    with pytest.raises(AttributeError):
        command.method = "Page.reload"
    with pytest.raises(TypeError):
        hash(command)
    with pytest.raises(TypeError):
        cdp.page.navigate("https://example.com/")  # type: ignore[call-arg]

    result = command.decode({"frameId": "F1", "loaderId": "L1", "isDownload": False})
    assert type(result) is cdp.page.NavigateResult
    assert attrs.has(type(result))
    assert not isinstance(result, tuple)
    assert attrs.asdict(result) == {
        "frame_id": "F1",
        "loader_id": "L1",
        "error_text": None,
        "is_download": False,
    }


def test_results_are_classes_not_tuples() -> None:
    checked = 0
    for d in DOMAINS:
        module = module_of(d["domain"])
        for c in d.get("commands", []):
            if c.get("returns"):
                result = getattr(module, pascal(c["name"]) + "Result")
                assert attrs.has(result)
                assert not issubclass(result, tuple)
                checked += 1
    assert checked > 200


def test_command_without_result_decodes_to_none() -> None:
    assert cdp.page.enable().decode({}) is None
    assert cdp.page.navigate_to_history_entry(entry_id=3).decode({"unexpected": 1}) is None
    assert cdp.runtime.run_if_waiting_for_debugger().params == {}


def test_decode_command_round_trip() -> None:
    commands: list[Command[Any]] = [
        cdp.page.navigate(url="u", referrer="r", transition_type=cdp.page.TransitionType.TYPED, frame_id="F"),
        cdp.page.enable(),
        cdp.accessibility.get_full_ax_tree(depth=2),
        cdp.network.set_cookies(
            cookies=[
                cdp.network.CookieParam(
                    name="n",
                    value="v",
                    same_site=cdp.network.CookieSameSite.NONE,
                    priority=cdp.network.CookiePriority("Future"),
                )
            ]
        ),
        cdp.service_worker.dispatch_sync_event(origin="o", registration_id="1", tag="t", last_chance=True),
        cdp.input.dispatch_mouse_event(type_="mouseMoved", x=1.5, y=2, button=cdp.input.MouseButton.NONE),
    ]
    for command in commands:
        wire = json.loads(json.dumps(command.params))
        decoded = cdp.decode_command(command.method, wire)
        assert decoded == command
        assert decoded.params == wire
        assert json.loads(json.dumps(decoded.params)) == wire
    cookie = {"name": "n", "value": "v", "sameSite": "None", "priority": "Future"}
    assert commands[3].params["cookies"] == [cookie]


def test_decode_command_errors() -> None:
    with pytest.raises(cdp.DecodeError) as info:
        cdp.decode_command("Page.noSuchCommand", {"a": 1})
    assert (info.value.method, info.value.payload) == ("Page.noSuchCommand", {"a": 1})
    with pytest.raises(cdp.DecodeError, match="no such command"):
        cdp.decode_command("NoSuchDomain.enable", {})
    with pytest.raises(cdp.DecodeError) as info:
        cdp.decode_command("Page.navigate", {"referrer": "r"})
    assert info.value.method == "Page.navigate"
    assert info.value.payload == {"referrer": "r"}
    assert "'url'" in str(info.value)


# --- decoding ----------------------------------------------------------------------------------------------

NODE: dict[str, Any] = {
    "nodeId": 1,
    "backendNodeId": 2,
    "nodeType": 9,
    "nodeName": "#document",
    "localName": "",
    "nodeValue": "",
    "documentURL": "https://example.com/",
    "baseURL": "https://example.com/",
    "children": [
        {
            "nodeId": 3,
            "backendNodeId": 4,
            "nodeType": 1,
            "nodeName": "HTML",
            "localName": "html",
            "nodeValue": "",
            "attributes": ["lang", "en"],
            "pseudoType": "brand-new-pseudo",
        }
    ],
}


def test_document_url_round_trip() -> None:
    result = cdp.dom.get_document(depth=1).decode({"root": NODE})
    root = result.root
    assert isinstance(root, cdp.dom.Node)
    assert (root.document_url, root.base_url) == ("https://example.com/", "https://example.com/")
    assert root.children is not None
    assert root.children[0].attributes == ["lang", "en"]
    assert root.children[0].children is None
    assert HOOKS[cdp.dom.Node][1](root) == NODE
    assert cdp.converter.unstructure(result) == {"root": NODE}


def test_unknown_enum_value_is_kept() -> None:
    child = cdp.dom.get_document().decode({"root": NODE}).root.children[0]  # type: ignore[index]
    pseudo = child.pseudo_type
    assert isinstance(pseudo, cdp.dom.PseudoType)
    text: str = pseudo
    assert text == "brand-new-pseudo"
    assert str(pseudo) == pseudo.value == pseudo.name == "brand-new-pseudo"
    assert hash(pseudo) == hash("brand-new-pseudo")
    assert {"brand-new-pseudo": 1}[pseudo] == 1
    assert json.dumps(pseudo) == '"brand-new-pseudo"'
    assert pseudo not in list(cdp.dom.PseudoType)

    value = cdp.accessibility.AXValueType("newType")
    assert isinstance(value, CDPEnum)
    assert value.value == "newType"
    assert cdp.accessibility.AXValueType("role") is cdp.accessibility.AXValueType.ROLE
    tree = cdp.accessibility.get_full_ax_tree().decode(
        {"nodes": [{"nodeId": "1", "ignored": False, "role": {"type": "newType", "value": "x"}}]}
    )
    role = tree.nodes[0].role
    assert role is not None
    assert (role.type_, role.value) == ("newType", "x")


def test_known_enum_members() -> None:
    none: str = cdp.network.CookieSameSite.NONE
    assert none == "None"
    assert cdp.network.CookieSameSite("None") is cdp.network.CookieSameSite.NONE
    assert cdp.security.CertificateErrorAction.CONTINUE.value == "continue"
    assert cdp.input.MouseButton.NONE.value == "none"
    assert str(cdp.security.CertificateErrorAction.CONTINUE) == "continue"


def test_unknown_fields_are_ignored() -> None:
    payload = {**NODE, "someFutureField": {"nested": True}, "children": []}
    node = HOOKS[cdp.dom.Node][0](payload)
    assert not hasattr(node, "some_future_field")
    assert "someFutureField" not in vars(node)
    assert HOOKS[cdp.dom.Node][1](node) == {**NODE, "children": []}
    event = cdp.decode_event("Page.loadEventFired", {"timestamp": 1.5, "extra": [1, 2]})
    assert event == cdp.page.LoadEventFired(timestamp=1.5)


def test_null_optional_fields_read_as_absent_in_both_decoder_shapes() -> None:
    # AXNode (13 fields) is decoded by a lookup per field, DOM Node (35) by a walk over the wire keys.
    ax = {"nodeId": "1", "ignored": False, "role": None, "childIds": None, "value": {"type": "string"}}
    node = HOOKS[cdp.accessibility.AXNode][0](ax)
    assert (node.role, node.child_ids, node.name) == (None, None, None)
    assert node.value is not None
    assert node.value.value is cdp.UNSET
    wire = {"nodeId": "1", "ignored": False, "value": {"type": "string"}}
    assert HOOKS[cdp.accessibility.AXNode][1](node) == wire
    dom = HOOKS[cdp.dom.Node][0]({**NODE, "children": None, "pseudoType": None})
    assert (dom.children, dom.pseudo_type, dom.attributes) == (None, None, None)
    assert HOOKS[cdp.dom.Node][1](dom) == {k: v for k, v in NODE.items() if k != "children"}
    for wrong in ({"type": 5}, {"type": ["role"]}):
        with pytest.raises(cdp.DecodeError):
            cdp.accessibility.get_full_ax_tree().decode({"nodes": [{**ax, "role": wrong}]})


def test_missing_required_field_in_event() -> None:
    params = {"frameId": "F", "newInSomeBrowser": 1}
    with pytest.raises(cdp.DecodeError) as info:
        cdp.decode_event("Page.frameStartedLoading", {"unrelated": True})
    assert info.value.method == "Page.frameStartedLoading"
    assert info.value.payload == {"unrelated": True}
    assert "Page.frameStartedLoading: required field 'frameId' is missing" in str(info.value)
    assert isinstance(info.value, ValueError)
    assert cdp.decode_event("Page.frameStartedLoading", params) == cdp.page.FrameStartedLoading(frame_id="F")


def test_missing_required_field_in_nested_result() -> None:
    broken = {"root": {**NODE, "children": [{"nodeId": 3}]}}
    command = cdp.dom.get_document()
    with pytest.raises(cdp.DecodeError) as info:
        command.decode(broken)
    assert info.value.method == "DOM.getDocument"
    assert info.value.payload is broken
    assert "backendNodeId" in info.value.reason
    with pytest.raises(cdp.DecodeError, match="'root'"):
        command.decode({})


def _ax_nodes(count: int) -> list[dict[str, Any]]:
    return [
        {
            "nodeId": str(i),
            "ignored": False,
            "role": {"type": "role", "value": "button"},
            "childIds": [str(i + 1)],
            "newInSomeBrowser": {"kept": "on the wire only"},
        }
        for i in range(count)
    ]


def test_consume_decodes_the_same_and_empties_the_lists_of_objects() -> None:
    command = cdp.accessibility.get_full_ax_tree()
    wire: dict[str, Any] = {"nodes": _ax_nodes(50), "somethingNew": [1, 2]}
    expected = command.decode(json.loads(json.dumps(wire)))
    child_ids = wire["nodes"][7]["childIds"]
    assert command.decode(wire, consume=True) == expected
    assert wire == {"nodes": [], "somethingNew": [1, 2]}  # the nodes were spent, nothing else
    assert child_ids == ["8"]  # a list of strings inside an object is the typed object's own now
    assert command.decode({"nodes": []}, consume=True).nodes == []
    # Without consume (the default) the caller's result is left as it was.
    untouched = {"nodes": _ax_nodes(3)}
    command.decode(untouched)
    assert untouched == {"nodes": _ax_nodes(3)}


def test_a_failed_consuming_decode_leaves_what_was_not_decoded_in_order() -> None:
    nodes = _ax_nodes(10)
    del nodes[6]["ignored"]  # required: node 6 cannot decode
    wire = {"nodes": nodes}
    with pytest.raises(cdp.DecodeError, match="'ignored'") as info:
        cdp.accessibility.get_full_ax_tree().decode(wire, consume=True)
    assert info.value.payload is wire
    assert [node["nodeId"] for node in wire["nodes"]] == ["6", "7", "8", "9"]  # the failing one first
    # A failure on the first item leaves the list whole and in order.
    first: list[Any] = [5]  # not an object
    wire = {"nodes": first + _ax_nodes(2)}
    with pytest.raises(cdp.DecodeError):
        cdp.accessibility.get_full_ax_tree().decode(wire, consume=True)
    assert wire == {"nodes": first + _ax_nodes(2)}


def test_drainable_names_only_lists_whose_decoder_walks_them() -> None:
    """Every listed key is a list field of its result whose items decode one by one (not kept as is)."""
    assert DRAINABLE[cdp.accessibility.GetFullAXTreeResult] == ("nodes",)
    assert cdp.dom.GetDocumentResult not in DRAINABLE  # one root object, no list
    assert cdp.runtime.EvaluateResult not in DRAINABLE
    for cls, keys in DRAINABLE.items():
        assert cls.__name__.endswith("Result")
        encoded = {attrs_field.name for attrs_field in attrs.fields(cls)}
        assert {snake(key) for key in keys} <= {name.rstrip("_") for name in encoded}


def test_decode_pauses_the_gc_unless_told_not_to(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pause is for large results; a caller that knows its result is small skips it, and gets the same
    value and the same DecodeError."""
    command = cdp.runtime.evaluate(expression="1")
    cls = cdp.runtime.EvaluateResult
    decoder, encoder = HOOKS[cls]
    seen: list[bool] = []

    def watched(wire: Any) -> Any:
        seen.append(gc.isenabled())
        return decoder(wire)

    monkeypatch.setitem(HOOKS, cls, (watched, encoder))
    wire = {"result": {"type": "number", "value": 2, "description": "2"}}
    assert gc.isenabled()
    paused = command.decode(wire)
    assert command.decode(wire, pause_gc=False) == paused
    assert paused.result.value == 2
    assert seen == [False, True]
    assert gc.isenabled()
    for pause_gc in (True, False):
        with pytest.raises(cdp.DecodeError, match="'result'") as info:
            command.decode({"nothing": 1}, pause_gc=pause_gc)
        assert info.value.method == "Runtime.evaluate"
        assert gc.isenabled()


def test_wrong_shape_is_a_decode_error() -> None:
    with pytest.raises(cdp.DecodeError) as info:
        cdp.dom.get_document().decode({"root": {**NODE, "children": 5}})
    assert info.value.method == "DOM.getDocument"
    assert info.value.reason.startswith("TypeError")
    with pytest.raises(cdp.DecodeError):
        cdp.decode_event("Page.frameNavigated", {"frame": "not an object", "type": "Navigation"})


def test_unknown_event() -> None:
    event = cdp.decode_event("Page.somethingNew", {"a": 1})
    assert event == cdp.UnknownEvent(method="Page.somethingNew", params={"a": 1})
    unknown_domain = cdp.decode_event("NoSuchDomain.thing", {})
    assert unknown_domain == cdp.UnknownEvent(method="NoSuchDomain.thing", params={})
    assert cdp.event_class("Page.somethingNew") is None
    assert cdp.event_class("Page.loadEventFired") is cdp.page.LoadEventFired


def test_event_classes() -> None:
    event = cdp.decode_event("Page.loadEventFired", {"timestamp": 3})
    assert type(event) is cdp.page.LoadEventFired
    assert event.method == "Page.loadEventFired"
    assert cdp.decode_event("Page.domContentEventFired", {"timestamp": 1}).timestamp == 1
    assert cdp.decode_event("Accessibility.loadComplete", {"root": {"nodeId": "1", "ignored": True}}).root
    empty = cdp.decode_event("Page.interstitialHidden", {})
    assert empty == cdp.page.InterstitialHidden()
    assert HOOKS[type(empty)][1](empty) == {}


# --- names -------------------------------------------------------------------------------------------------


def test_keyword_and_builtin_names() -> None:
    sw = cdp.service_worker
    inner = sw.ServiceWorkerRouterCondition(url_pattern="/a")
    condition = sw.ServiceWorkerRouterCondition(or_=[inner], not_=inner)
    wire = {"or": [{"urlPattern": "/a"}], "not": {"urlPattern": "/a"}}
    assert HOOKS[sw.ServiceWorkerRouterCondition][1](condition) == wire
    assert HOOKS[sw.ServiceWorkerRouterCondition][0](wire) == condition

    entry = cdp.page.NavigationEntry(
        id_=7, url="u", user_typed_url="t", title="x", transition_type=cdp.page.TransitionType.LINK
    )
    assert HOOKS[cdp.page.NavigationEntry][1](entry)["id"] == 7
    assert cdp.page.get_navigation_history().decode({"currentIndex": 0, "entries": [{
        "id": 7, "url": "u", "userTypedURL": "t", "title": "x", "transitionType": "link"
    }]}).entries == [entry]  # fmt: skip

    resource = cdp.page.FrameResource(url="u", type_=cdp.network.ResourceType.SCRIPT, mime_type="m")
    assert HOOKS[cdp.page.FrameResource][1](resource) == {"url": "u", "type": "Script", "mimeType": "m"}
    assert cdp.input.dispatch_key_event(type_="keyDown").params == {"type": "keyDown"}


# --- converter and flags -----------------------------------------------------------------------------------


def test_converter() -> None:
    converter = cdp.converter
    assert converter is cdp.converter
    node = converter.structure(NODE, cdp.dom.Node)
    assert node == HOOKS[cdp.dom.Node][0](NODE)
    assert converter.unstructure(node) == NODE
    nodes = converter.structure([NODE, NODE], list[cdp.dom.Node])
    assert nodes == [node, node]
    assert converter.unstructure(nodes) == [NODE, NODE]
    assert converter.structure("brandNew", cdp.dom.PseudoType) == "brandNew"
    event = converter.structure({"timestamp": 1.0}, cdp.page.LoadEventFired)
    assert converter.unstructure(event) == {"timestamp": 1.0}
    result = converter.structure({"root": NODE}, cdp.dom.GetDocumentResult)
    assert result.root == node


def _flagged_items() -> Iterator[tuple[str, bool, bool]]:
    def flags(raw: dict[str, Any]) -> tuple[bool, bool]:
        return bool(raw.get("experimental")), bool(raw.get("deprecated"))

    for d in DOMAINS:
        dn = d["domain"]
        yield (dn, *flags(d))
        for t in d.get("types", []):
            yield (f"{dn}.{t['id']}", *flags(t))
            for p in t.get("properties", []):
                yield (f"{dn}.{t['id']}.{p['name']}", *flags(p))
        for item in (*d.get("commands", []), *d.get("events", [])):
            yield (f"{dn}.{item['name']}", *flags(item))
            # A parameter and a return value of one command can share a name (and so a key); the protocol
            # flags neither of them today, which this loop would notice.
            for p in (*item.get("parameters", []), *item.get("returns", [])):
                yield (f"{dn}.{item['name']}.{p['name']}", *flags(p))


def test_flags_match_the_protocol() -> None:
    seen = {"experimental": 0, "deprecated": 0}
    for name, experimental, deprecated in _flagged_items():
        assert cdp.flags(name) == cdp.Flags(experimental=experimental, deprecated=deprecated), name
        seen["experimental"] += experimental
        seen["deprecated"] += deprecated
    assert seen["experimental"] > 100, seen
    assert seen["deprecated"] > 10, seen


def test_flags_examples() -> None:
    assert cdp.flags("Accessibility") == cdp.Flags(experimental=True, deprecated=False)
    assert cdp.flags("Page.navigate") == cdp.Flags(experimental=False, deprecated=False)
    assert cdp.flags("Page.navigate.referrerPolicy").experimental
    assert cdp.flags("No.such.thing") == cdp.Flags(experimental=False, deprecated=False)
    assert cdp.accessibility.EXPERIMENTAL
    assert not cdp.page.EXPERIMENTAL


def test_docstrings_carry_descriptions_and_flags() -> None:
    assert cdp.page.navigate.__doc__ is not None
    assert cdp.page.navigate.__doc__.startswith("Navigates current page to the given URL.")
    assert "referrer_policy: Experimental." in cdp.page.navigate.__doc__
    assert cdp.accessibility.__doc__ == "Accessibility domain (experimental)."
    for d in DOMAINS:
        module = module_of(d["domain"])
        for t in d.get("types", []):
            doc = getattr(module, t["id"]).__doc__ if (_is_class(t) or _is_enum(t)) else None
            if doc is None:
                continue
            if t.get("experimental"):
                assert doc.startswith("Experimental."), t["id"]
            if t.get("deprecated"):
                assert "Deprecated." in doc.split("\n")[0], t["id"]


VIEWER = "https://chromedevtools.github.io/devtools-protocol/tot"


def test_docstrings_link_to_the_protocol_viewer() -> None:
    """Every command, event and type names its page; no ``name: -`` entries, no summary that is the name."""
    placeholder = re.compile(r"^\s+\w+: -$", re.MULTILINE)
    checked = 0
    for d in DOMAINS:
        name = d["domain"]
        module = module_of(name)
        source = Path(module.__file__ or "").read_text()
        assert not placeholder.search(source), name
        items = [
            *(("type", t["id"], t["id"]) for t in d.get("types", [])),
            *(("method", c["name"], safe(snake(c["name"]))) for c in d.get("commands", [])),
            *(("event", e["name"], pascal(e["name"])) for e in d.get("events", [])),
        ]
        for kind, item, attribute in items:
            link = f"See: {VIEWER}/{name}/#{kind}-{item}"
            obj = getattr(module, attribute)
            enum = isinstance(obj, type) and issubclass(obj, CDPEnum)
            own_doc = attrs.has(obj) or inspect.isfunction(obj) or enum
            if own_doc:
                assert link in (obj.__doc__ or ""), f"{name}.{item}"
                assert obj.__doc__.splitlines()[0] not in (f"{item}.", f"{attribute}."), f"{name}.{item}"
            else:  # an alias (``FrameId = str``): its docstring follows it in the source
                assert f"{attribute}: TypeAlias = " in source or f"{attribute} = " in source
                assert link in source, f"{name}.{item}"
            checked += 1
    assert checked > 1000


def test_get_type_hints_on_commands_with_optional_aliases() -> None:
    """Regression for the generator fix: ``TargetFilter | None`` resolves at run time."""
    hints = typing.get_type_hints(cdp.target.set_discover_targets)
    assert hints["filter_"] == list[cdp.target.FilterEntry] | None
    hints = typing.get_type_hints(cdp.dom_snapshot.NodeTreeSnapshot)  # names cdp.dom.* types
    assert hints["attributes"] == list[list[int]] | None
