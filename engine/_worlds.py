"""The engine's own JavaScript world in each frame: where its helper scripts look at the DOM.

A page's scripts can replace what its main world offers (``Element.prototype.getBoundingClientRect``,
``Promise``, ``requestAnimationFrame``) and can watch every call made there. The actions' checks, the hit
test, the scroll look, the task turn after a key, the text wait and the identity check of hidden nodes run
in an isolated world of the engine's (``Page.createIsolatedWorld``): the same DOM, with untouched built-ins
and out of the page's sight, as Playwright's utility world. Events they dispatch reach the page's listeners
as any DOM event does. ``evaluate`` stays in the main world: that is the page its caller asked about.

A world is made in a frame when first needed, and a node resolves into the world of its own frame (a frame
of another origin in the same process cannot be reached from its parent's world: the node comes back
null). Where no world can be made, the node resolves in the main world.

A navigation ends a frame's world with its document, and its context id cannot be kept: ids are numbered
per renderer process, so after a navigation to another process (another site, a page back from the
back/forward cache, a reload after a crash) the same number can name a context of the new process, such as
an iframe's main world, where a resolve would succeed. So a hook reads each ``Page.frameNavigated`` as it
arrives (before the reply of any command sent to the new document): the main frame's forgets every id of
the session, a child frame's that frame's id (a frame that moves to another process leaves the session).
The hook needs the Page domain, which every page and out-of-process iframe session has
(``_browser._page_setup``, ``_dialogs``). A resolve that still meets a gone context ("does not belong to
the document") looks at the world: gone, it is made again and the resolve tried once more; alive, the node
is not in that frame's document (its frame was removed, or the node moved), and the main frame's world,
then the main world, are asked. Making a world again piles nothing up: asked twice for one document,
Chromium answers the same context (all measured on Chromium 156).
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from engine._errors import ProtocolError
from engine._hooks import add_hook

if TYPE_CHECKING:
    from engine._session import Session

WORLD_NAME = "cdp-engine"
"""The name of the engine's isolated world (``Runtime.executionContextCreated`` shows it)."""

GONE_FOR_RESOLVE = "does not belong to the document"
"""What ``DOM.resolveNode`` answers for a context that is gone, or a node outside its frame's document."""

_GONE_CONTEXT = "Cannot find context"
"""What ``Runtime.evaluate`` answers for a context that is gone."""


class _Worlds:
    """A session's worlds: the context id of each frame's while its document lasts, and how many times
    each frame navigated (a world made across its frame's navigation is not kept)."""

    __slots__ = ("contexts", "navigations")

    def __init__(self) -> None:
        self.contexts: dict[str, int] = {}
        self.navigations: dict[str, int] = {}  # by frame id; the main frame's under ""


_sessions: weakref.WeakKeyDictionary[Session, _Worlds] = weakref.WeakKeyDictionary()


def _worlds(session: Session) -> _Worlds:
    worlds = _sessions.get(session)
    if worlds is None:
        worlds = _sessions[session] = _Worlds()

        main_frame = session.frame_id

        def navigated(_: str, params: dict[str, Any]) -> None:
            frame_id = (params.get("frame") or {}).get("id")
            if frame_id == main_frame or frame_id is None:
                worlds.contexts.clear()  # maybe another process: every id may name something else now
                worlds.navigations[""] = worlds.navigations.get("", 0) + 1
            else:
                # The same process (a frame that moves to another leaves this session): its other ids
                # stay unique, and a descendant's gone world is found gone when used.
                worlds.contexts.pop(frame_id, None)
                worlds.navigations[frame_id] = worlds.navigations.get(frame_id, 0) + 1

        add_hook(session, ("Page.frameNavigated",), navigated)
    return worlds


async def _context_id(session: Session, frame_id: str | None) -> int | None:
    """The context of the engine's world in ``frame_id`` (the session's main frame if None); None if none
    can be made (a session without a frame, a frame going away)."""
    frame_id = frame_id or session.frame_id
    if frame_id is None:
        return None
    worlds = _worlds(session)
    known = worlds.contexts.get(frame_id)
    if known is not None:
        return known
    for _ in range(2):
        before = (worlds.navigations.get(""), worlds.navigations.get(frame_id))
        try:
            made = await session.execute_raw(
                "Page.createIsolatedWorld", {"frameId": frame_id, "worldName": WORLD_NAME}
            )
        except ProtocolError:
            return None
        context = made.get("executionContextId")
        if type(context) is not int:
            return None
        if (worlds.navigations.get(""), worlds.navigations.get(frame_id)) == before:
            worlds.contexts[frame_id] = context
            return context
        # else made in a document of that frame (or of the tab) that just went: make it again
    return None


def _forget(session: Session, context: int) -> None:
    worlds = _sessions.get(session)
    if worlds is not None:
        for frame_id, known in list(worlds.contexts.items()):
            if known == context:
                del worlds.contexts[frame_id]


async def _alive(session: Session, context: int) -> bool:
    try:
        await session.execute_raw("Runtime.evaluate", {"expression": "0", "contextId": context})
    except ProtocolError:
        return False
    return True


async def world_handle(
    session: Session, backend_node_id: int, group: str | None = None, frame_id: str | None = None
) -> str | None:
    """A JS handle on the node in the engine's world of ``frame_id``, the frame whose document holds it (the
    session's main frame if None; a node of a same-origin child frame resolves there too), in ``group`` if
    given; None: the node is gone."""
    params: dict[str, object] = {"backendNodeId": backend_node_id}
    if group is not None:
        params["objectGroup"] = group
    frames = [frame_id or session.frame_id]
    if frames[0] != session.frame_id:
        frames.append(session.frame_id)  # the node may have moved to another document since
    for frame in frames:
        for _ in range(2):
            context = await _context_id(session, frame)
            if context is None:
                break
            try:
                got = await session.execute_raw("DOM.resolveNode", {**params, "executionContextId": context})
            except ProtocolError as exc:
                if GONE_FOR_RESOLVE not in exc.message:
                    return None  # "No node with given id found": the node is gone
                if await _alive(session, context):
                    break  # the world is there: the node is not in its frame's document
                _forget(session, context)
                continue
            handle = got.get("object", {}).get("objectId")
            if isinstance(handle, str):
                return handle
            break  # a null: the node's frame is of another origin, out of this world's reach
    try:  # no world of ours here: the main world's
        got = await session.execute_raw("DOM.resolveNode", params)
    except ProtocolError:
        return None
    return str(got["object"]["objectId"])


async def evaluate_in_world(session: Session, params: dict[str, Any]) -> dict[str, Any]:
    """``Runtime.evaluate`` of ``params`` in the engine's world of the session's main frame, made again once
    if it is gone; in the main world if none can be made."""
    got = await evaluate_in_frame(session, params, session.frame_id)
    return got if got is not None else await session.execute_raw("Runtime.evaluate", params)


async def evaluate_in_frame(
    session: Session, params: dict[str, Any], frame_id: str | None
) -> dict[str, Any] | None:
    """``Runtime.evaluate`` of ``params`` in the engine's world of ``frame_id``, made again once if it is
    gone; None if the frame has none (it went away)."""
    for _ in range(2):
        context = await _context_id(session, frame_id)
        if context is None:
            return None
        try:
            return await session.execute_raw("Runtime.evaluate", {**params, "contextId": context})
        except ProtocolError as exc:
            if _GONE_CONTEXT not in exc.message:
                raise
            _forget(session, context)
    return None
