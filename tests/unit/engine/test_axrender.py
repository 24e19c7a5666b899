"""The snapshot renderer and the ref state, on hand-built accessibility trees (no browser)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from engine._axrender import DELTA_FALLBACK_RATIO, NAME_LIMIT, FrameAX, Options, render
from engine._refs import MAX_TARGETS, RefCache, RefState


def node(
    node_id: int,
    role: str,
    name: str = "",
    children: tuple[int, ...] = (),
    *,
    backend: int | None = None,
    ignored: bool = False,
    props: dict[str, Any] | None = None,
    value: str | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "nodeId": str(node_id),
        "ignored": ignored,
        "role": {"type": "role", "value": role},
        "name": {"type": "computedString", "value": name},
        "childIds": [str(c) for c in children],
        "properties": [{"name": k, "value": {"type": "x", "value": v}} for k, v in (props or {}).items()],
    }
    if backend is not None:
        out["backendDOMNodeId"] = backend
    if value is not None:
        out["value"] = {"type": "string", "value": value}
    return out


def frame(nodes: list[dict[str, Any]], *, frame_id: str = "MAIN", loader: str = "L1", **kw: Any) -> FrameAX:
    return FrameAX(
        frame_id=frame_id,
        loader_id=loader,
        url=kw.pop("url", "http://127.0.0.1:8000/page.html"),
        parent_frame_id=kw.pop("parent", None),
        owner_backend_id=kw.pop("owner", None),
        nodes=nodes,
        main=kw.pop("main", frame_id == "MAIN"),
        **kw,
    )


def shop() -> list[dict[str, Any]]:
    return [
        node(1, "RootWebArea", "Shop", (2,), backend=1),
        node(2, "generic", "", (3, 4, 5, 6, 9, 11), backend=2),
        node(3, "heading", "Cart", (20,), backend=3, props={"level": 2}),
        node(20, "StaticText", "Cart", (21,), backend=20),
        node(21, "InlineTextBox", "Cart"),
        node(4, "button", "Save", (22,), backend=4),
        node(22, "StaticText", "Save", backend=22),
        node(5, "button", "Save", backend=5, props={"disabled": True}),
        node(6, "checkbox", "Gift", backend=6, props={"checked": "true"}),
        node(9, "none", "", (10,), backend=9, ignored=True),
        node(10, "link", "Docs", backend=10, props={"url": "http://127.0.0.1:8000/docs"}),
        node(11, "paragraph", "", (12,), backend=11),
        node(12, "StaticText", "Plain words", backend=12),
    ]


def test_lines_show_role_name_states_and_refs_with_wrappers_pruned_and_children_hoisted() -> None:
    out = render([frame(shop())], RefState(), Options())
    assert out.text == (
        '- heading "Cart" [level=2] [ref=e1]\n'
        '- button "Save" [ref=e2]\n'
        '- button "Save" [disabled] [ref=e3]\n'
        '- checkbox "Gift" [checked] [ref=e4]\n'
        '- link "Docs" [url=/docs] [ref=e5]\n'
        "- paragraph: Plain words\n"
    )
    assert out.nodes_seen == 13
    assert [(r.role, r.name, r.nth) for r in out.refs.values()][:3] == [
        ("heading", "Cart", 0),
        ("button", "Save", 0),
        ("button", "Save", 1),
    ]


def test_the_same_tree_renders_the_same_text_and_keeps_every_ref() -> None:
    state = RefState()
    first = render([frame(shop())], state, Options())
    second = render([frame(shop())], state, Options())
    assert first.text == second.text
    assert first.refs.keys() == second.refs.keys()


def test_a_sibling_inserted_above_does_not_renumber_and_a_new_node_gets_a_new_ref() -> None:
    state = RefState()
    before = render([frame(shop())], state, Options())
    nodes = shop()
    nodes[1]["childIds"].insert(0, "30")
    nodes.append(node(30, "button", "Save", backend=30))
    after = render([frame(nodes)], state, Options())
    assert after.refs["e2"].backend_node_id == before.refs["e2"].backend_node_id == 4
    assert after.refs["e2"].nth == 1  # now the second "Save" in document order
    assert after.refs["e6"].backend_node_id == 30


def test_a_renamed_node_gets_a_new_ref_and_its_old_ref_is_retired_as_renamed() -> None:
    state = RefState()
    render([frame(shop())], state, Options())
    nodes = shop()
    nodes[5]["name"]["value"] = "Saved"
    out = render([frame(nodes)], state, Options())
    assert "e2" not in out.refs
    assert state.retired["e2"] == "renamed"
    assert any(r.name == "Saved" for r in out.refs.values())


def test_a_new_document_in_a_frame_retires_its_refs_as_navigated_and_never_reuses_them() -> None:
    state = RefState()
    first = render([frame(shop())], state, Options())
    second = render([frame(shop(), loader="L2")], state, Options())
    assert all(state.retired[ref] == "navigated" for ref in first.refs)
    assert not set(first.refs) & set(second.refs)


def test_names_are_cut_with_an_ellipsis_and_refs_keep_the_full_name() -> None:
    long = "word " * 60
    nodes = [node(1, "RootWebArea", "", (2,), backend=1), node(2, "button", long, backend=2)]
    out = render([frame(nodes)], RefState(), Options())
    shown = out.text.split('"')[1]
    assert len(shown) == NAME_LIMIT
    assert shown.endswith("…")
    assert out.refs["e1"].name == long


def test_options_interactive_only_max_depth_root_and_max_chars() -> None:
    state = RefState()
    full = render([frame(shop())], state, Options())
    interactive = render([frame(shop())], state, Options(interactive_only=True))
    assert "heading" not in interactive.text
    assert "paragraph" not in interactive.text
    assert interactive.text.count("[ref=") == 4
    nested = [
        node(1, "RootWebArea", "", (2,), backend=1),
        node(2, "navigation", "Main", (3,), backend=2),
        node(3, "list", "", (4,), backend=3),
        node(4, "link", "Deep", backend=4),
    ]
    shallow = render([frame(nested, frame_id="MAIN")], RefState(), Options(max_depth=1))
    assert shallow.text == '- navigation "Main" [ref=e1]:\n  - list: …\n'  # its link is below max_depth
    sub = render([frame(shop())], state, Options(root=full.refs["e1"]))
    assert sub.text == '- heading "Cart" [level=2] [ref=e1]\n'
    cut = render([frame(shop())], state, Options(max_chars=70))
    assert cut.truncated
    assert cut.text.endswith("# cut at 70 characters (max_chars): 4 more lines not shown\n")
    assert set(cut.refs) == {"e1", "e2"}


def test_child_frames_hang_under_their_iframe_with_a_frame_prefix() -> None:
    main = [
        node(1, "RootWebArea", "", (2, 3), backend=1),
        node(2, "Iframe", "Ads", backend=50),
        node(3, "button", "After", backend=3),
    ]
    child = [node(1, "RootWebArea", "", (2,), backend=1), node(2, "button", "Inside", backend=2)]
    frames = [
        frame(child, frame_id="CHILD", parent="MAIN", owner=50, target="CHILD"),
        frame(main),
    ]
    state = RefState()
    out = render(frames, state, Options())
    assert out.text == (
        '- iframe "Ads" [ref=e1]:\n  - button "Inside" [ref=f1e2]\n- button "After" [ref=e3]\n'
    )
    assert state.frame_target["CHILD"] == "CHILD"
    assert render(frames, RefState(), Options(frames=False)).text == (
        '- iframe "Ads" [ref=e1]\n- button "After" [ref=e2]\n'
    )
    # A crashed child's <iframe> (owner 50 in the page's own session, target "") says so; another
    # session's element with the same backend id does not.
    for crashed, marked in (({("", 50)}, True), ({("OTHER", 50)}, False)):
        out = render([frame(main)], RefState(), Options(), crashed=crashed)
        assert ('- iframe "Ads" [crashed] [ref=e1]' in out.text) is marked, out.text
    webarena = render([frame(main)], RefState(), Options(format="webarena"), crashed={("", 50)})
    assert "iframe 'Ads' crashed: true" in webarena.text


def test_webarena_format_uses_tab_indented_ax_ids_kept_mapped_to_backend_nodes() -> None:
    state = RefState()
    out = render([frame(shop())], state, Options(format="webarena"))
    lines = out.text.splitlines()
    assert lines[0] == "[3] heading 'Cart' level: 2"
    assert "[6] checkbox 'Gift' checked: true" in lines
    assert out.refs["10"].backend_node_id == 10
    assert state.webarena["10"].role == "link"


def test_delta_lists_added_changed_and_removed_refs_and_falls_back_above_the_ratio() -> None:
    state = RefState()
    render([frame(shop())], state, Options())
    nodes = shop()
    nodes[8]["properties"] = []  # unchecked
    nodes[1]["childIds"].append("40")
    nodes.append(node(40, "button", "New", backend=40))
    out = render([frame(nodes)], state, Options(), delta=True)
    assert out.is_delta
    assert out.text.splitlines() == [
        "# delta since snapshot 1: 1 added, 1 changed, 0 removed",
        '+ button "New" [ref=e6]',
        '~ checkbox "Gift" [ref=e4]',
    ]
    everything_new = [node(1, "RootWebArea", "", (2, 3, 4), backend=1)] + [
        node(i, "button", f"B{i}", backend=100 + i) for i in (2, 3, 4)
    ]
    full = render([frame(everything_new)], state, Options(), delta=True)
    assert not full.is_delta
    assert full.text.startswith('- button "B2"')
    assert DELTA_FALLBACK_RATIO == 0.5


def test_ref_cache_keeps_the_last_targets_and_forgets_the_oldest() -> None:
    cache = RefCache()
    first = cache.get("t0")
    for i in range(1, MAX_TARGETS):
        cache.get(f"t{i}")
    assert cache.get("t0") is first  # used again: now the most recent
    cache.get("new")
    assert len(cache) == MAX_TARGETS
    assert cache.peek("t1") is None
    assert cache.peek("t0") is first


def test_a_target_pushed_out_of_the_cache_and_used_again_never_reuses_a_ref() -> None:
    cache = RefCache(size=1)
    first = render([frame(shop())], cache.get("t0"), Options())
    cache.get("t1")  # pushes t0 out
    again = render([frame(shop())], cache.get("t0"), Options())
    assert not set(first.refs) & set(again.refs)


@pytest.mark.parametrize("count", [3])
def test_retired_refs_are_never_handed_out_again(count: int) -> None:
    state = RefState()
    seen: set[str] = set()
    for i in range(count):
        out = render([frame(shop(), loader=f"L{i}")], state, Options())
        assert not seen & set(out.refs)
        seen |= set(out.refs)


def buttons(count: int, first: int = 100) -> list[dict[str, Any]]:
    ids = tuple(range(first, first + count))
    return [node(1, "RootWebArea", "Many", ids, backend=1)] + [
        node(i, "button", f"B{i}", backend=i) for i in ids
    ]


def test_a_page_over_the_ref_limit_keeps_its_refs_and_older_ones_are_forgotten_with_a_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Trimmed while rendering, each new ref of a page over the limit pushed out one the same walk was about
    # to reuse: every snapshot of such a page renumbered all its refs, and the last one's were unknown.
    import engine._refs

    monkeypatch.setattr(engine._refs, "MAX_REFS_PER_TARGET", 5)
    state = RefState()
    first = render([frame(buttons(8))], state, Options())
    second = render([frame(buttons(8))], state, Options())
    assert len(first.refs) == 8
    assert first.refs == second.refs
    assert all(ref in state.refs for ref in first.refs)
    third = render([frame(buttons(3, first=500))], state, Options())  # another 3: 11 known, 6 go
    assert third.refs.keys() <= state.refs.keys()
    assert len(state.refs) == 5
    assert list(state.retired.values()) == ["forgotten"] * 6


def test_delta_shows_text_without_a_ref_that_appeared_and_went() -> None:
    # A click that turned "Ready" into "Clicked" in a paragraph gave "0 added, 0 changed, 0 removed".
    state = RefState()
    render([frame(shop())], state, Options())
    nodes = shop()
    nodes[-1]["name"]["value"] = "Other words"
    out = render([frame(nodes)], state, Options(), delta=True)
    assert out.is_delta
    assert out.text.splitlines() == [
        "# delta since snapshot 1: 0 added, 0 changed, 0 removed; text without a ref: 1 appeared, 1 went",
        "+ paragraph: Other words",
        "- paragraph: Plain words",
    ]
    again = render([frame(nodes)], state, Options(), delta=True)
    assert again.text == "# delta since snapshot 2: 0 added, 0 changed, 0 removed\n"


def test_a_new_paragraph_shows_once_in_the_delta_with_no_blank_line() -> None:
    state = RefState()
    render([frame(shop())], state, Options())
    nodes = shop()
    nodes[1]["childIds"].append("50")
    nodes += [node(50, "paragraph", "", (51,), backend=50), node(51, "StaticText", "Done", backend=51)]
    out = render([frame(nodes)], state, Options(), delta=True)
    assert out.text.splitlines() == [
        "# delta since snapshot 1: 0 added, 0 changed, 0 removed; text without a ref: 1 appeared, 0 went",
        "+ paragraph: Done",
    ]


def nested() -> list[dict[str, Any]]:
    return [
        node(1, "RootWebArea", "", (2, 5), backend=1),
        node(2, "list", "", (3,), backend=2),
        node(3, "listitem", "One", (4,), backend=3),
        node(4, "link", "Go", backend=4),
        node(5, "button", "After", backend=5),
    ]


@pytest.mark.parametrize(
    ("options", "nodes"),
    [(Options(interactive_only=True), shop), (Options(max_depth=0), nested), (Options(max_depth=1), nested)],
)
def test_refs_are_numbered_alike_whatever_the_options_leave_out(
    options: Options, nodes: Callable[[], list[dict[str, Any]]]
) -> None:
    # The CLI resolves a ref from a fresh whole snapshot: one numbered by what was shown named another node.
    whole = render([frame(nodes())], RefState(), Options())
    shaped = render([frame(nodes())], RefState(), options)
    assert shaped.refs
    for ref, got in shaped.refs.items():
        assert (whole.refs[ref].role, whole.refs[ref].name, whole.refs[ref].nth) == (
            got.role,
            got.name,
            got.nth,
        )
