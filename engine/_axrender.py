"""Accessibility trees of a page's frames -> the snapshot text and its refs. Pure: no I/O.

Reads the raw dicts of ``Accessibility.getFullAXTree`` (one list per frame); the typed decode of a large
tree costs several times its parse (see the benchmark's decode rows) and a snapshot needs a few fields.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Set as AbstractSet
from typing import Any, Literal
from urllib.parse import urlsplit

import attrs

from engine._refs import Baseline, Ref, RefState, Shape

NAME_LIMIT = 100
"""Characters of an element's name shown in the text; longer names end in "…" (refs keep the full name)."""

TEXT_LIMIT = 300
"""Characters of a run of text shown; longer runs end in "…"."""

DELTA_FALLBACK_RATIO = 0.5
"""A delta snapshot whose changes pass this share of the previous snapshot's refs returns the full text."""

INTERACTIVE_ROLES = frozenset(
    [
        "button",
        "link",
        "textbox",
        "searchbox",
        "combobox",
        "checkbox",
        "radio",
        "switch",
        "slider",
        "spinbutton",
        "tab",
        "menuitem",
        "menuitemcheckbox",
        "menuitemradio",
        "option",
        "treeitem",
        "listbox",
        "scrollbar",
        "textfield",
    ]
)
"""Roles that always get a ref."""

NAMED_CONTENT_ROLES = frozenset(
    [
        "heading",
        "img",
        "cell",
        "gridcell",
        "columnheader",
        "rowheader",
        "listitem",
        "article",
        "region",
        "dialog",
        "alertdialog",
        "alert",
        "figure",
        "table",
        "form",
        "navigation",
        "tabpanel",
        "tree",
        "grid",
        "progressbar",
        "meter",
        "status",
        "menu",
        "menubar",
        "tablist",
        "toolbar",
        "radiogroup",
        "list",
        "row",
    ]
)
"""Roles that get a ref when they have a name."""

_SKIPPED = frozenset({"InlineTextBox", "LineBreak", "ListMarker"})  # never rendered, nor their children
_ALWAYS_HOISTED = frozenset({"RootWebArea", "WebArea"})  # a frame's document: its title is not a line
_HOISTED_WHEN_NAMELESS = frozenset(
    {
        "generic", "none", "presentation", "group", "rowgroup", "Section", "LabelText", "Legend",
        "MenuListPopup", "LayoutTable", "LayoutTableRow", "LayoutTableCell",
    }
)  # fmt: skip
_ROLE_NAMES = {
    "StaticText": "text",
    "Iframe": "iframe",
    "IframePresentational": "iframe",
    "image": "img",
    "DisclosureTriangle": "generic",  # <summary>: what Playwright calls it too; it gets a ref (focusable)
}
_SPACE = re.compile(r"\s+")


@attrs.frozen(kw_only=True)
class FrameAX:
    """One frame's accessibility nodes and where the frame hangs in the page."""

    frame_id: str
    loader_id: str
    url: str
    parent_frame_id: str | None
    owner_backend_id: int | None  # the <iframe> element in the parent frame
    nodes: list[dict[str, Any]]
    target: str = ""  # the frame id of the out-of-process iframe target that renders it; "" for the page's
    main: bool = False


@attrs.frozen(kw_only=True)
class Options:
    interactive_only: bool = False
    max_depth: int | None = None
    root: Ref | None = None
    max_chars: int | None = None
    frames: bool = True
    format: Literal["yaml", "webarena"] = "yaml"

    @property
    def shape(self) -> Shape:
        return Shape(
            interactive_only=self.interactive_only,
            max_depth=self.max_depth,
            root=None if self.root is None else self.root.ref,
            frames=self.frames,
        )


@attrs.define
class _Line:
    depth: int
    role: str
    name: str
    props: list[tuple[str, str]]
    ref: Ref | None
    ax_id: str = ""
    text: str = ""  # "- role ..." without indentation, filled by _format
    has_children: bool = False
    inline: str | None = None
    cut: bool = False  # it has children deeper than max_depth


@attrs.frozen(kw_only=True)
class Rendered:
    text: str
    refs: dict[str, Ref]
    nodes_seen: int
    nodes_rendered: int
    truncated: bool
    is_delta: bool
    lines_by_ref: dict[str, str]


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _value(field: Any) -> Any:
    return field.get("value") if isinstance(field, dict) else None


def _props(node: dict[str, Any], role: str, origin: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for prop in node.get("properties") or ():
        key = prop.get("name")
        value = _value(prop.get("value"))
        if key in ("checked", "pressed"):
            if value in ("true", True):
                out.append((key, ""))
            elif value == "mixed":
                out.append((key, "mixed"))
        elif key in ("disabled", "selected", "required"):
            if value is True:
                out.append((key, ""))
        elif key == "expanded":
            out.append((key, "" if value else "false"))
        elif key == "level" and value is not None and role == "heading":
            out.append((key, str(value)))
        elif key == "url" and role == "link" and isinstance(value, str):
            if origin and value.startswith(origin):
                value = value[len(origin) :] or "/"
            out.append((key, _clip(value, NAME_LIMIT)))
    value = _value(node.get("value"))
    if value not in (None, "") and role not in ("link", "text"):
        out.append(("value", _quote(_clip(str(value), NAME_LIMIT))))
    return out


def _focusable(node: dict[str, Any]) -> bool:
    props = node.get("properties") or ()
    return any(prop.get("name") == "focusable" and _value(prop.get("value")) is True for prop in props)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme in ("http", "https") else ""


class _Walk:
    def __init__(
        self, frames: list[FrameAX], state: RefState, options: Options, crashed: AbstractSet[tuple[str, int]]
    ) -> None:
        self.state = state
        self.options = options
        self.crashed = crashed
        self.children_of = {(f.parent_frame_id, f.owner_backend_id): f for f in frames if not f.main}
        self.lines: list[_Line] = []
        self.nodes_seen = 0
        self.refs_seen = 0

    def frame(self, frame: FrameAX, depth: int, emitting: bool) -> None:
        nodes = {node["nodeId"]: node for node in frame.nodes}
        self.nodes_seen += len(nodes)
        self.state.prefix(frame.frame_id, main=frame.main)  # numbered in document order
        if not frame.nodes:
            return
        root = frame.nodes[0]
        origin = _origin(frame.url)
        nth_seen: dict[tuple[str, str], int] = {}
        options = self.options
        # (node id, depth, emitting, name of the nearest rendered ancestor); preorder by an explicit stack
        stack: list[tuple[str, int, bool, str]] = [(root["nodeId"], depth, emitting, "")]
        while stack:
            node_id, level, emit, parent_name = stack.pop()
            node = nodes.get(node_id)
            if node is None:
                continue
            field = node.get("role")
            raw_role = (field.get("value") if field else None) or ""
            if raw_role in _SKIPPED:
                continue
            role = _ROLE_NAMES.get(raw_role, raw_role)
            field = node.get("name")
            name = (field.get("value") if field else None) or ""
            backend = node.get("backendDOMNodeId")
            start = emit
            top = options.root
            if top is not None and backend == top.backend_node_id and frame.frame_id == top.frame_id:
                start, level = True, 0
            rendered = not node.get("ignored") and role not in _ALWAYS_HOISTED
            rendered = rendered and not (role in _HOISTED_WHEN_NAMELESS and not name.strip())
            if rendered and role == "text":
                clean = " ".join(name.split())
                rendered = bool(clean) and clean not in parent_name
            ref_worthy = (
                rendered
                and backend is not None
                and (
                    role in INTERACTIVE_ROLES
                    or role == "iframe"
                    or (role in NAMED_CONTENT_ROLES and bool(name))
                    or (role != "text" and _focusable(node))  # custom widgets: <div tabindex=0 onclick=...>
                )
            )
            nth = 0
            ref = None
            if ref_worthy:
                key = (role, name)
                nth = nth_seen.get(key, 0)
                nth_seen[key] = nth + 1
                # Handed out whether or not the options show the line: refs are numbered alike in every
                # shape of snapshot, so the CLI's next command (a fresh whole snapshot) finds the same ones.
                ref = self.state.ref_for(
                    frame_id=frame.frame_id,
                    backend_node_id=int(backend or 0),
                    role=role,
                    name=name,
                    nth=nth,
                    main=frame.main,
                )
                self.refs_seen += 1
            if rendered and options.interactive_only and role not in INTERACTIVE_ROLES and role != "iframe":
                rendered = False
            child_level = level
            shown: _Line | None = None
            if rendered and start and (options.max_depth is None or level <= options.max_depth):
                limit = TEXT_LIMIT if role == "text" else NAME_LIMIT
                line = _Line(level, role, _clip(name, limit), _props(node, role, origin), ref)
                if options.format == "webarena":
                    line.ax_id = self._webarena_id(frame, node, role, name, nth)
                self.lines.append(line)
                shown = line
                child_level = level + 1
            elif rendered and start:
                child_level = level + 1  # deeper than max_depth: nothing below is shown either
                start = False
                if self.lines:  # the last line shown is this node's ancestor at max_depth (preorder)
                    self.lines[-1].cut = True
            if rendered and role != "text":  # what a text child may only repeat: this node's name and value
                field = node.get("value")
                inner = " ".join(f"{name} {field.get('value', '') if field else ''}".split())
            else:
                inner = parent_name
            if role == "iframe" and backend is not None and options.frames:
                child = self.children_of.get((frame.frame_id, int(backend)))
                if child is not None:
                    self.frame(child, child_level, start)
                elif shown is not None and (frame.target, int(backend)) in self.crashed:
                    shown.props.append(("crashed", ""))  # its content is gone until the page reloads
            for child_id in reversed(node.get("childIds") or ()):
                stack.append((child_id, child_level, start, inner))

    def _webarena_id(self, frame: FrameAX, node: dict[str, Any], role: str, name: str, nth: int) -> str:
        """The AX node id; ids of child frames are offset by 10^8 per frame so that none repeats."""
        index = self.state.frame_index.get(frame.frame_id, 0)
        ax_id = str(int(node["nodeId"]) + index * 100_000_000)
        backend = node.get("backendDOMNodeId")
        if backend is not None:
            self.state.webarena[ax_id] = Ref(
                ref=ax_id,
                role=role,
                name=name,
                nth=nth,
                backend_node_id=int(backend or 0),
                frame_id=frame.frame_id,
                loader_id=frame.loader_id,
                generation=self.state.generation,
            )
        return ax_id


def _props_text(line: _Line, webarena: bool) -> str:
    if webarena:
        return "".join(f" {key}: {value or 'true'}" for key, value in line.props)
    return "".join(f" [{key}={value}]" if value else f" [{key}]" for key, value in line.props)


def _format(lines: list[_Line], webarena: bool) -> tuple[list[str], list[str | None]]:
    """Each line's text, and the ref each output line shows; a nameless, refless container with one text
    child takes the text inline."""
    for i, line in enumerate(lines):
        line.has_children = i + 1 < len(lines) and lines[i + 1].depth > line.depth
    out: list[str] = []
    shows: list[str | None] = []
    skip = -1
    for i, line in enumerate(lines):
        if i == skip:
            continue
        if webarena:
            name = "'" + line.name.replace("'", "\\'") + "'" if line.name else "''"
            text = f"[{line.ax_id}] {line.role} {name}{_props_text(line, True)}"
            out.append("\t" * line.depth + text)
            shows.append(None)  # (its ids are state.webarena)
            line.text = text
            continue
        text = f"- {line.role}"
        if (line.name and line.role != "text") or line.role == "text":
            text += " " + _quote(line.name)
        text += _props_text(line, False)
        if line.ref is not None:
            text += f" [ref={line.ref.ref}]"
        nxt = lines[i + 1] if i + 1 < len(lines) else None
        only_text_child = (
            nxt is not None
            and nxt.role == "text"
            and nxt.depth == line.depth + 1
            and (i + 2 >= len(lines) or lines[i + 2].depth <= line.depth)
        )
        if only_text_child and nxt is not None and not line.name and line.ref is None:
            text += ": " + nxt.name
            skip = i + 1
        elif line.has_children:
            text += ":"
        elif line.cut:
            text += ": …"  # more below max_depth: root= this line's ref shows it
        line.text = text
        out.append("  " * line.depth + text)
        shows.append(line.ref.ref if line.ref is not None else None)
    return out, shows


def _cut(
    out: list[str], shows: list[str | None], max_chars: int | None
) -> tuple[list[str], list[str | None], bool]:
    if max_chars is None:
        return out, shows, False
    total = 0
    for i, text in enumerate(out):
        total += len(text) + 1
        if total > max_chars:
            left = len(out) - i
            note = f"# cut at {max_chars} characters (max_chars): {left} more lines not shown"
            return [*out[:i], note], [*shows[:i], None], True
    return out, shows, False


def _delta(
    now: dict[str, str], text_now: Counter[str], base: Baseline, shape: Shape
) -> tuple[list[str], list[str | None]] | None:
    """The changes from ``base`` to ``now`` (ref -> line) and ``text_now`` (lines without a ref), and the
    ref each output line shows; None when more than DELTA_FALLBACK_RATIO changed."""
    previous, previous_text = base.lines, base.text
    added = [ref for ref in now if ref not in previous]
    removed = [ref for ref in previous if ref not in now]
    changed = [ref for ref in now if ref in previous and previous[ref] != now[ref]]
    # Lines without a ref (a paragraph's text) have no identity to follow: the ones that appeared and went.
    appeared = list((text_now - previous_text).elements())
    went = list((previous_text - text_now).elements())
    changes = len(added) + len(removed) + len(changed) + len(appeared) + len(went)
    if changes > DELTA_FALLBACK_RATIO * (len(previous) + previous_text.total()):
        return None
    head = f"# delta since snapshot {base.generation}"
    head += f" ({shape})" if str(shape) else ""
    head += f": {len(added)} added, {len(changed)} changed, {len(removed)} removed"
    if appeared or went:
        head += f"; text without a ref: {len(appeared)} appeared, {len(went)} went"
    out = (
        [head]
        + [f"+ {now[ref][2:]}" for ref in added]
        + [f"~ {now[ref][2:]}" for ref in changed]
        + [f"- {previous[ref][2:]}" for ref in removed]
        + [f"+ {text[2:]}" for text in appeared]
        + [f"- {text[2:]}" for text in went]
    )
    shows: list[str | None] = [None, *added, *changed]  # a removed ref is not one to act on
    return out, shows + [None] * (len(out) - len(shows))


def _text_lines(lines: list[_Line]) -> Counter[str]:
    return Counter(line.text for line in lines if line.ref is None and line.text)  # (inlined lines are blank)


def render(
    frames: list[FrameAX],
    state: RefState,
    options: Options,
    *,
    delta: bool = False,
    crashed: AbstractSet[tuple[str, int]] = frozenset(),
) -> Rendered:
    """Walk ``frames`` (the main frame first) into the snapshot text, handing out refs from ``state``;
    an ``<iframe>`` in ``crashed`` (its frame's ``target`` and backend node id) reads ``[crashed]``."""
    state.generation += 1
    if options.format == "webarena":
        state.webarena.clear()
    for frame in frames:
        state.document_seen(frame.frame_id, frame.loader_id)
        state.frame_target[frame.frame_id] = frame.target
    walk = _Walk(frames, state, options, crashed)
    main = next((f for f in frames if f.main), None)
    if main is not None:
        walk.frame(main, 0, options.root is None)
    lines = walk.lines
    webarena = options.format == "webarena"
    out, shows = _format(lines, webarena)  # (it fills each line's text)
    lines_by_ref = {line.ref.ref: line.text for line in lines if line.ref is not None}
    text_lines = _text_lines(lines)
    state.trim(walk.refs_seen)
    shape = options.shape
    base = state.baseline(shape)
    is_delta = False
    if delta and not webarena and base is not None:
        changes = _delta(lines_by_ref, text_lines, base, shape)
        if changes is not None:
            (out, shows), is_delta = changes, True
    out, shows, truncated = _cut(out, shows, options.max_chars)
    if not webarena and not truncated:  # what the reader has now seen whole is the next delta's reference
        state.keep_baseline(shape, Baseline(generation=state.generation, lines=lines_by_ref, text=text_lines))
    shown = set(shows)  # from the render itself: a name or a text may read "[ref=e9]" too
    refs = {line.ref.ref: line.ref for line in lines if line.ref is not None and line.ref.ref in shown}
    if webarena:
        refs = dict(state.webarena)
    return Rendered(
        text="\n".join(out) + ("\n" if out else ""),
        refs=refs,
        nodes_seen=walk.nodes_seen,
        nodes_rendered=len(lines),
        truncated=truncated,
        is_delta=is_delta,
        lines_by_ref=lines_by_ref,
    )
