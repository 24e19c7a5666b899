"""The engine's own JavaScript world in each page: where its helper scripts look at the DOM.

A page's scripts can replace what its main world offers (``Element.prototype.getBoundingClientRect``,
``Promise``, ``requestAnimationFrame``) and can watch every call made there. The actions' checks, the hit
test, the scroll look and the identity check of hidden nodes run in an isolated world of the engine's
(``Page.createIsolatedWorld``): the same DOM, with untouched built-ins and out of the page's sight, as
Playwright's utility world. Events they dispatch reach the page's listeners as any DOM event does.
``evaluate`` stays in the main world: that is the page its caller asked about.

One world per session, made in its main frame when first needed. A node of a same-process child frame
resolves into it too; one whose frame is of another origin comes back null and resolves in the main world.
A navigation ends the world with its document, and its context id cannot be kept: ids are numbered per
renderer process, so after a navigation to another process (another site, a page back from the
back/forward cache, a reload after a crash) the same number can name a context of the new process, such as
an iframe's main world, and the resolve would succeed there. So the id is forgotten at every
``Page.frameNavigated`` of the session's main frame, read by a hook as the event arrives (before the reply
of any command sent to the new document). Should a resolve still meet a gone context ("does not belong to
the document"), the world is made again and the resolve tried once more; where no world can be made (or the
new one fails too), the node resolves in the main world. Making the world again is cheap and piles nothing
up: asked twice for one document, Chromium answers the same context (all measured on Chromium 156).
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

_STALE_WORLD = "does not belong to the document"
"""What ``DOM.resolveNode`` answers for a context that is gone (its document navigated away)."""

_GONE_CONTEXT = "Cannot find context"
"""What ``Runtime.evaluate`` answers for a context that is gone."""


class _World:
    """A session's world: its context id while its document lasts, and how many main-frame navigations
    the session has had (a world made across one is not kept)."""

    __slots__ = ("context", "navigations")

    def __init__(self) -> None:
        self.context: int | None = None
        self.navigations = 0


_worlds: weakref.WeakKeyDictionary[Session, _World] = weakref.WeakKeyDictionary()


def _world(session: Session) -> _World:
    world = _worlds.get(session)
    if world is None:
        world = _worlds[session] = _World()
        main_frame = session.frame_id

        def navigated(_: str, params: dict[str, Any]) -> None:
            if (params.get("frame") or {}).get("id") == main_frame:
                world.context = None
                world.navigations += 1

        add_hook(session, ("Page.frameNavigated",), navigated)
    return world


async def context_id(session: Session) -> int | None:
    """The execution context of the engine's world in ``session``'s main frame; None if none can be made
    (a session without a frame, a frame going away)."""
    if session.frame_id is None:
        return None
    world = _world(session)
    if world.context is not None:
        return world.context
    for _ in range(2):
        navigations = world.navigations
        try:
            made = await session.execute_raw(
                "Page.createIsolatedWorld", {"frameId": session.frame_id, "worldName": WORLD_NAME}
            )
        except ProtocolError:
            return None
        context = made.get("executionContextId")
        if type(context) is not int:
            return None
        if world.navigations == navigations:  # else made in the document that just went: make it again
            world.context = context
            return context
    return None


def forget(session: Session, context: int) -> None:
    """``context`` is gone (its document navigated): the next :func:`context_id` makes a new world."""
    world = _worlds.get(session)
    if world is not None and world.context == context:
        world.context = None


async def resolve(session: Session, backend_node_id: int, group: str | None = None) -> str | None:
    """A JS handle on the node in the engine's world (in ``group`` if given); None: the node is gone."""
    params: dict[str, object] = {"backendNodeId": backend_node_id}
    if group is not None:
        params["objectGroup"] = group
    for _ in range(2):
        context = await context_id(session)
        if context is None:
            break
        try:
            got = await session.execute_raw("DOM.resolveNode", {**params, "executionContextId": context})
        except ProtocolError as exc:
            if _STALE_WORLD not in exc.message:
                return None  # "No node with given id found": the node is gone
            forget(session, context)
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
    """``Runtime.evaluate`` of ``params`` in the engine's world (its reply), with the same retry and fallback
    as :func:`resolve`."""
    for _ in range(2):
        context = await context_id(session)
        if context is None:
            break
        try:
            return await session.execute_raw("Runtime.evaluate", {**params, "contextId": context})
        except ProtocolError as exc:
            if _GONE_CONTEXT not in exc.message:
                raise
            forget(session, context)
    return await session.execute_raw("Runtime.evaluate", params)
