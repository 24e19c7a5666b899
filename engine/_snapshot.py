"""``page.snapshot()`` and ``page.resolve(ref)``: the I/O half of the refs room (the text is in _axrender).

A snapshot reads ``Accessibility.getFullAXTree`` per frame: same-process frames through the page's session
by ``frameId``, out-of-process iframes through their own child sessions, recursively; no script runs in the
page. The calls of one level go out together, so a snapshot costs about two round trips per level of
out-of-process nesting plus Chromium's time to build the trees.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Literal

import attrs
import trio

from engine._axrender import _ROLE_NAMES, FrameAX, Options, render
from engine._errors import ProtocolError, SessionDetached, StaleRefError, TargetCrashed
from engine._frames import frame_tree, live_iframes, session_for_frame
from engine._refs import Ref, RefState, ResolvedNode, Snapshot, SnapshotStats
from engine._util import first_error, gc_paused
from engine._worlds import world_handle

if TYPE_CHECKING:
    from engine._page import Page
    from engine._session import Session

log = logging.getLogger("engine.refs")


async def _collect(
    session: Session,
    target: str,
    found: list[FrameAX],
    main: bool,
    frames: bool,
    *,
    gone: list[str],
    crashed: set[tuple[str, int]],
) -> None:
    """Fill ``found`` with the AX trees of every frame ``session`` renders, and of its OOPIF children; the
    frame ids of children that went away meanwhile go to ``gone``, and the ``<iframe>`` elements of children
    whose renderer crashed to ``crashed`` (as ``(target, backend node id)``: the render marks them)."""
    trees: dict[str, list[dict[str, Any]]] = {}
    owners: dict[str, int | None] = {}

    async def tree_of(frame_id: str | None, key: str) -> None:
        if frame_id is None:  # the session's own document: a failure here is the snapshot's failure
            trees[key] = (await session.execute_raw("Accessibility.getFullAXTree"))["nodes"]
            return
        try:
            trees[key] = (await session.execute_raw("Accessibility.getFullAXTree", {"frameId": frame_id}))[
                "nodes"
            ]
        except ProtocolError as exc:  # the frame went away between the frame tree and this call
            log.debug("no AX tree for frame %s: %s", key, exc)

    async def owner_of(frame_id: str) -> None:
        try:
            owners[frame_id] = (await session.execute_raw("DOM.getFrameOwner", {"frameId": frame_id}))[
                "backendNodeId"
            ]
        except ProtocolError as exc:
            log.debug("no owner for frame %s: %s", frame_id, exc)

    listed: list[dict[str, Any]] = []

    async def list_frames() -> None:
        listed.extend(await frame_tree(session))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(list_frames)
        nursery.start_soon(tree_of, None, "")
    root = listed[0]
    trees[root["id"]] = trees.pop("", [])
    children = live_iframes(session)
    if frames:
        async with trio.open_nursery() as nursery:
            for frame in listed[1:]:
                nursery.start_soon(tree_of, frame["id"], frame["id"])
                nursery.start_soon(owner_of, frame["id"])
            for child in children:
                if child.frame_id:
                    nursery.start_soon(owner_of, child.frame_id)
                    nursery.start_soon(_collect_child, child, found, frames, gone, crashed)
    for frame in listed if frames else listed[:1]:
        nodes = trees.get(frame["id"])
        if nodes is None:
            continue
        found.append(
            FrameAX(
                frame_id=frame["id"],
                loader_id=frame.get("loaderId", ""),
                url=frame.get("url", ""),
                parent_frame_id=frame.get("parentId"),
                owner_backend_id=owners.get(frame["id"]),
                nodes=nodes,
                target=target,
                main=main and frame is root,
            )
        )
    oopifs = {child.frame_id for child in children}
    for child in children:
        owner = owners.get(child.frame_id or "")
        if frames and child.crashed and owner is not None:
            crashed.add((target, owner))
    for i, got in enumerate(found):  # an OOPIF's <iframe> element lives in this session's document
        if got.frame_id in oopifs and got.owner_backend_id is None:
            found[i] = attrs.evolve(got, owner_backend_id=owners.get(got.frame_id))


async def _collect_child(
    child: Session, found: list[FrameAX], frames: bool, gone: list[str], crashed: set[tuple[str, int]]
) -> None:
    if child.crashed:  # its renderer is gone until the page reloads: the parent marks its <iframe>
        return
    try:
        with first_error():  # its calls run in nurseries: what ended them comes out as a group
            await _collect(child, child.frame_id or "", found, False, frames, gone=gone, crashed=crashed)
    except (SessionDetached, ProtocolError) as exc:  # the iframe went away mid-snapshot
        log.debug("skipped out-of-process frame %s: %s", child.frame_id, exc)
        gone.append(child.frame_id or "")
    except TargetCrashed as exc:  # it crashed mid-snapshot (a crash elsewhere ends the page's own calls)
        log.debug("out-of-process frame %s crashed during a snapshot: %s", child.frame_id, exc)


FRAME_GONE_RETRIES = 2
"""Times a snapshot is read again when an out-of-process iframe went away during the read; after that it
is rendered without the frames that went (an ad reloading itself every few ms never settles)."""


def _state(page: Page) -> RefState:
    return page.browser._ref_cache.get(page.target_id)


async def take_snapshot(
    page: Page,
    *,
    interactive_only: bool = False,
    max_depth: int | None = None,
    root: str | None = None,
    max_chars: int | None = None,
    frames: bool = True,
    format: Literal["yaml", "webarena"] = "yaml",
    delta: bool = False,
) -> Snapshot:
    _check_options(
        interactive_only=interactive_only,
        max_depth=max_depth,
        root=root,
        max_chars=max_chars,
        frames=frames,
        format=format,
        delta=delta,
    )
    started = time.perf_counter()
    state = _state(page)
    root_ref = _known(state, root) if root is not None else None
    options = Options(
        interactive_only=interactive_only,
        max_depth=max_depth,
        root=root_ref,
        max_chars=max_chars,
        frames=frames,
        format=format,
    )
    # The trees are hundreds of thousands of containers, alive from their parse to the end of the render,
    # that die by reference count; with the cyclic GC on, each allocation burst walks them again. Measured
    # on the 13k-node tree of the 5,000-element page: one 40 ms collection after the parse, and the render
    # took 98 ms with the GC against 52 ms without.
    with gc_paused():
        found: list[FrameAX]
        for attempt in range(1 + FRAME_GONE_RETRIES):
            found = []
            gone: list[str] = []
            crashed: set[tuple[str, int]] = set()
            with first_error():
                await _collect(page.session, "", found, True, frames, gone=gone, crashed=crashed)
            if not gone:
                break
            # Removed, or navigated into another process (which ends its session): the page's frame tree
            # has changed since it was read, so the read starts again.
            log.debug("out-of-process frames %s went during a snapshot (attempt %d)", gone, attempt + 1)
        if root_ref is not None and not _holds(found, root_ref):
            await resolve_ref(page, root_ref.ref)  # raises StaleRefError when the element is gone
        out = render(found, state, options, delta=delta, crashed=crashed)
        frame_count = len(found)
        del found
    return Snapshot(
        text=out.text,
        refs=out.refs,
        stats=SnapshotStats(
            nodes_seen=out.nodes_seen,
            nodes_rendered=out.nodes_rendered,
            refs=len(out.refs),
            bytes=len(out.text.encode()),
            frames=frame_count,
            duration_ms=(time.perf_counter() - started) * 1000,
            truncated=out.truncated,
        ),
        generation=state.generation,
        is_delta=out.is_delta,
    )


def _check_options(
    *,
    interactive_only: object,
    max_depth: object,
    root: object,
    max_chars: object,
    frames: object,
    format: object,
    delta: object,
) -> None:
    for name, flag in (("interactive_only", interactive_only), ("frames", frames), ("delta", delta)):
        if not isinstance(flag, bool):
            raise TypeError(f"{name}={flag!r}: give True or False")
    if root is not None and not isinstance(root, str):
        raise TypeError(f"root={root!r}: give a ref string from a snapshot, e.g. 'e12', or None")
    if format not in ("yaml", "webarena"):
        raise ValueError(f"format={format!r}: use 'yaml' (the default) or 'webarena'")
    for name, number in (("max_chars", max_chars), ("max_depth", max_depth)):
        if number is not None and (not isinstance(number, int) or isinstance(number, bool)):
            raise TypeError(f"{name}={number!r}: give a whole number (int), or None for no limit")
    if isinstance(max_chars, int) and max_chars < 1:
        raise ValueError(f"max_chars={max_chars}: give a positive number of characters, or None for no limit")
    if isinstance(max_depth, int) and max_depth < 0:
        raise ValueError(f"max_depth={max_depth}: give a depth of 0 (the top level only) or more, or None")


def _holds(found: list[FrameAX], ref: Ref) -> bool:
    """Whether the trees read have ``ref``'s node (else it is gone, or hidden out of the tree)."""
    for frame in found:
        if frame.frame_id == ref.frame_id:
            return any(node.get("backendDOMNodeId") == ref.backend_node_id for node in frame.nodes)
    return False


HOW_TO_REFRESH = "take a new snapshot (await page.snapshot()) and use its refs"

_WHY = {
    "removed": "its element was removed from the page",
    "navigated": "its frame has navigated to a new document since the snapshot",
    "renamed": "its element has another accessible name now",
    "role changed": "its element has another role now",
    "forgotten": "the engine let it go: the snapshots since handed out more refs than it keeps per page",
}


def _stale(ref: str, reason: str, detail: str = "") -> StaleRefError:
    why = _WHY.get(reason, reason)
    return StaleRefError(f"ref {ref} is stale: {why}{detail}; {HOW_TO_REFRESH}", ref=ref, reason=reason)


def _known(state: RefState, ref: str) -> Ref:
    known = state.refs.get(ref) or state.webarena.get(ref)
    if known is not None:
        return known
    if ref in state.retired:
        raise _stale(ref, state.retired[ref])
    raise StaleRefError(
        f"unknown ref {ref!r}: no snapshot of this page handed it out. Refs look like e3, or f1e3 in a "
        f"child frame; WebArena ids are digits; node:<backendNodeId> names a DOM node directly. "
        f"{HOW_TO_REFRESH[0].upper()}{HOW_TO_REFRESH[1:]}",
        ref=ref,
        reason="unknown",
    )


async def _is_connected(session: Session, backend_node_id: int) -> bool:
    return await _hidden_check(session, backend_node_id, "") == ""


_HIDDEN_IDENTITY = """function (name, role) {
  if (!this.isConnected) return "removed";
  const el = this;
  const norm = (text) => typeof text === "string" ? text.replace(/\\s+/g, " ").trim() : "";
  if (el.nodeType === 1 && role) {
    // The role, where the markup says it plainly: an explicit role, or the tag's own (an aria-hidden
    // button turned checkbox was still clicked as the button).
    const tag = el.localName, type = (el.getAttribute("type") || "text").toLowerCase();
    const inputs = {checkbox: "checkbox", radio: "radio", button: "button", submit: "button", reset: "button",
      image: "button", range: "slider", number: "spinbutton", search: "searchbox", text: "textbox",
      email: "textbox", tel: "textbox", url: "textbox", password: "textbox"};
    const tags = {button: "button", textarea: "textbox", h1: "heading", h2: "heading", h3: "heading",
      h4: "heading", h5: "heading", h6: "heading", img: "image"};
    const aria = {img: "image", presentation: "none"};
    const explicit = (el.getAttribute("role") || "").trim().split(/\\s+/)[0].toLowerCase();
    const now = explicit ? (aria[explicit] || explicit)
      : tag === "input" ? inputs[type]
      : tag === "a" && el.hasAttribute("href") ? "link"
      : tag === "select" ? (el.multiple || el.size > 1 ? "listbox" : "combobox")
      : tags[tag];
    const plain = new Set(["button", "link", "checkbox", "radio", "textbox", "searchbox", "combobox",
      "listbox", "slider", "spinbutton", "heading", "switch", "tab", "menuitem", "option", "image"]);
    if (now && plain.has(now) && plain.has(role) && now !== role) return "role:" + now;
  }
  if (!name) return "";
  const wanted = norm(name).toLowerCase();
  if (el.nodeType === 1) {
    // Where the name comes from one place, it must still be that name: "Go" renamed "Go delete
    // everything" still held every word of it.
    const label = norm(el.getAttribute("aria-label"));
    if (label) return label.toLowerCase() === wanted ? "" : "renamed";
    const fromContent = ["button", "a", "summary", "h1", "h2", "h3", "h4", "h5", "h6", "option"];
    const plainContent = !el.hasAttribute("aria-labelledby") && !el.querySelector("[alt], [aria-label]")
      && !(el.labels && el.labels.length) && fromContent.includes(el.localName)
      && ["::before", "::after"].every((p) => !(getComputedStyle(el, p).content || "").startsWith('"'));
    // Without the white space: blocks in a button ("<div>Save</div><div>draft</div>") are spaced in the
    // name, not in textContent.
    const bare = (text) => text.replace(/\\s+/g, "").toLowerCase();
    if (plainContent) return bare(el.textContent) === bare(wanted) ? "" : "renamed";
  }
  const texts = [el.textContent];
  if (el.nodeType === 1) {
    for (const attr of ["aria-label", "title", "alt", "placeholder"]) texts.push(el.getAttribute(attr));
    texts.push(el.value);
    const ids = (el.getAttribute("aria-labelledby") || "").split(/\\s+/).filter(Boolean);
    const root = el.getRootNode();  // a shadow root's ids are its own
    for (const id of ids) {
      const by = (root.getElementById && root.getElementById(id)) || el.ownerDocument.getElementById(id);
      if (by) texts.push(by.getAttribute("aria-label"), by.textContent);
    }
    for (const label of el.labels || []) texts.push(label.textContent);
    for (const pseudo of ["::before", "::after"]) {  // CSS content: "Menu" (quoted) or none
      const content = getComputedStyle(el, pseudo).content;
      if (content && content.startsWith('"')) texts.push(content.slice(1, -1));
    }
    for (const inner of el.querySelectorAll("[alt], [aria-label]")) {
      texts.push(inner.getAttribute("alt"), inner.getAttribute("aria-label"));
    }
    const defaults = {submit: "Submit", image: "Submit", reset: "Reset"};  // an unlabelled button's own name
    if (el.localName === "input" && !el.value) texts.push(defaults[el.type]);
  }
  // Word by word, in all of it: a name is often joined from parts (an image's alt and a text, two blocks).
  const all = texts.map(norm).join(" ").toLowerCase();
  return wanted.split(" ").every((word) => all.includes(word)) ? "" : "renamed";
}"""
"""An ignored node (display:none, aria-hidden) has no accessible name in the AX tree to check; here the
name must still be found in what names it (its text, labels, label attributes). Lenient by design: a
false "renamed" would stop a wait for an element that is only hidden for a moment."""


async def _hidden_check(
    session: Session, backend_node_id: int, name: str, frame_id: str | None = None, role: str = ""
) -> str:
    """Empty if the node is in its document and (given ``name``) still holds that name and (given ``role``)
    has no other role its markup states; else "removed", "renamed" or "role:<the role now>"."""
    object_id = await world_handle(session, backend_node_id, frame_id=frame_id)  # the page cannot fake it
    if object_id is None:
        return "removed"
    try:
        got = await session.execute_raw(
            "Runtime.callFunctionOn",
            {
                "objectId": object_id,
                "functionDeclaration": _HIDDEN_IDENTITY,
                "arguments": [{"value": name}, {"value": role}],
                "returnByValue": True,
            },
        )
        verdict = got.get("result", {}).get("value")
        if isinstance(verdict, str) and (
            verdict in ("", "removed", "renamed") or verdict.startswith("role:")
        ):
            return verdict
        return "removed"
    finally:
        await session.execute_raw("Runtime.releaseObject", {"objectId": object_id})


def _role_and_name(node: dict[str, Any]) -> tuple[str, str]:
    role = (node.get("role") or {}).get("value") or ""
    return _ROLE_NAMES.get(role, role), (node.get("name") or {}).get("value") or ""


def ref_session(page: Page, ref: str) -> Session | None:
    """The session of the frame ``ref`` lives in, where its identity check runs (no round trip); None for
    a ref no snapshot handed out, or whose out-of-process frame is gone."""
    if ref.startswith("node:"):
        return page.session
    state = _state(page)
    known = state.refs.get(ref) or state.webarena.get(ref)
    if known is None:
        return None
    return session_for_frame(page, state.frame_target.get(known.frame_id, ""))


async def resolve_ref(page: Page, ref: str) -> ResolvedNode:
    """The node ``ref`` names, after one identity check round trip (see ``Page.resolve``)."""
    if ref.startswith("node:"):
        return await _resolve_node(page, ref)
    state = _state(page)
    known = _known(state, ref)
    session = session_for_frame(page, state.frame_target.get(known.frame_id, ""))
    if session is None:
        state.retire(ref, "removed")
        raise _stale(ref, "removed", " (its out-of-process frame is gone)")
    partial: dict[str, Any] = {}
    frames: list[dict[str, Any]] = []
    failure: list[ProtocolError] = []

    async def node() -> None:
        try:
            got = await session.execute_raw(
                "Accessibility.getPartialAXTree",
                {"backendNodeId": known.backend_node_id, "fetchRelatives": False},
            )
            partial.update(got)
        except ProtocolError as exc:  # "No node with given id found"
            failure.append(exc)

    async def documents() -> None:
        frames.extend(await frame_tree(session))

    with first_error():
        async with trio.open_nursery() as nursery:  # both go out at once: one round trip
            nursery.start_soon(node)
            nursery.start_soon(documents)
    frame = next((f for f in frames if f["id"] == known.frame_id), None)
    if frame is None:
        state.retire(ref, "removed")
        raise _stale(ref, "removed", " (its frame is gone)")
    if known.loader_id and frame.get("loaderId") != known.loader_id:
        state.retire(ref, "navigated")
        raise _stale(ref, "navigated", f" ({frame.get('url', '')})")
    nodes = [n for n in partial.get("nodes", ()) if n.get("backendDOMNodeId") == known.backend_node_id]
    if failure or not nodes:
        state.retire(ref, "removed")
        raise _stale(ref, "removed")
    found = nodes[0]
    if found.get("ignored"):
        # Hidden (display:none, aria-hidden) or detached: the same node is fine to wait on while it is
        # still in the document and still holds its name; a detached one is gone for good.
        verdict = await _hidden_check(session, known.backend_node_id, known.name, known.frame_id, known.role)
        if verdict == "removed":
            state.retire(ref, "removed")
            raise _stale(ref, "removed")
        if verdict.startswith("role:"):
            state.retire(ref, "role changed")
            raise _stale(ref, "role changed", f" (hidden now; {known.role} -> {verdict[5:]})")
        if verdict == "renamed":
            state.retire(ref, "renamed")
            raise _stale(ref, "renamed", f" (hidden now, and its name is no longer {known.name!r})")
    else:
        role, name = _role_and_name(found)
        if role != known.role:
            state.retire(ref, "role changed")
            raise _stale(ref, "role changed", f" ({known.role} -> {role})")
        if name != known.name:
            state.retire(ref, "renamed")
            raise _stale(ref, "renamed", f" ({known.name!r} -> {name!r})")
    return ResolvedNode(
        ref=ref,
        backend_node_id=known.backend_node_id,
        session=session,
        frame_id=known.frame_id,
        role=known.role,
        name=known.name,
    )


async def _resolve_node(page: Page, ref: str) -> ResolvedNode:
    """``node:<backendNodeId>``: a DOM node of the page's own process, checked to exist."""
    try:
        backend = int(ref[5:])
    except ValueError:
        raise StaleRefError(
            f"{ref!r} is not a node ref: write node:<backendNodeId> with the number, e.g. node:42",
            ref=ref,
            reason="unknown",
        ) from None
    session = page.session
    try:
        described = await session.execute_raw("DOM.describeNode", {"backendNodeId": backend})
        got = await session.execute_raw(
            "Accessibility.getPartialAXTree", {"backendNodeId": backend, "fetchRelatives": False}
        )
    except ProtocolError:
        raise _stale(ref, "removed", " (no node with that backendNodeId in the page's process)") from None
    nodes = [n for n in got.get("nodes", ()) if n.get("backendDOMNodeId") == backend]
    role, name = _role_and_name(nodes[0]) if nodes else ("", "")
    if not await _is_connected(session, backend):
        raise _stale(ref, "removed")
    frame_id = described.get("node", {}).get("frameId") or page.target_id
    return ResolvedNode(
        ref=ref, backend_node_id=backend, session=session, frame_id=frame_id, role=role, name=name
    )
