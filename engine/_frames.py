"""Every frame of a page, same-process and out-of-process, with the session that drives each.

A page's own session sees only the frames of its renderer: ``Page.getFrameTree`` there leaves out a
cross-site iframe, which runs in another process (site isolation) and is driven through its own child
session (``page.session.children``), whose frame tree starts at that iframe, with the ``parentId`` of its
frame in the page. Measured on Chromium 156 with ``oopif.html`` (a ``localhost`` iframe in a
``127.0.0.1`` page): the page's tree has 1 frame, the child's 1, and the child's root names the page's
main frame as its parent. This module walks both and joins them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

import cdp
from engine._errors import SessionDetached, TargetCrashed
from engine._session import Session

if TYPE_CHECKING:
    from engine._page import Page

_FRAME_TARGETS = ("page", "iframe")


@attrs.frozen(kw_only=True)
class Frame:
    """One frame of a page at the moment it was listed.

    Attributes:
        id: the frame id (``Page.FrameId``); an out-of-process iframe's is also its target id.
        url: the document's URL (with its fragment, if any).
        name: the frame's ``name`` attribute, or "".
        parent_id: the id of the frame that holds it; None for the main frame.
        session: the session that drives the frame: send DOM, Runtime, Input and Page commands about it
            there (the page's own session, or an out-of-process iframe's child session).
        out_of_process: whether the frame runs in another renderer than the page's main frame.
    """

    id: str
    url: str
    name: str
    parent_id: str | None
    session: Session
    out_of_process: bool

    def __repr__(self) -> str:
        where = " (out of process)" if self.out_of_process else ""
        return f"<Frame {self.id} {self.url}{where}>"


def _walk(tree: cdp.page.FrameTree, session: Session, out_of_process: bool, found: list[Frame]) -> None:
    frame = tree.frame
    found.append(
        Frame(
            id=frame.id_,
            url=frame.url + (frame.url_fragment or ""),
            name=frame.name or "",
            parent_id=frame.parent_id,
            session=session,
            out_of_process=out_of_process,
        )
    )
    for child in tree.child_frames or ():
        _walk(child, session, out_of_process, found)


def live_iframes(session: Session) -> list[Session]:
    """The out-of-process iframe sessions attached under ``session`` (one level) that are still live."""
    return [c for c in session.children.values() if c.target_type == "iframe" and not c.detached]


def frame_sessions(page: Page) -> list[Session]:
    """The page's own session, then every live out-of-process iframe session below it (parents first)."""
    return sessions_below(page.session)


def sessions_below(root: Session) -> list[Session]:
    """``root``, then every live out-of-process iframe session below it (parents first).

    No round trip: the session table as it stands. A child session attaches by itself as its iframe
    loads, and a detached one ends its own children with it.
    """
    found = [root]
    for session in found:  # grows as it goes: a breadth-first walk
        found.extend(live_iframes(session))
    return found


def session_for_frame(page: Page, frame_id: str) -> Session | None:
    """The session that drives frame ``frame_id`` of ``page``: "" is the page's own, an out-of-process
    iframe's is its child session (its frame id is its target id); None when no live session does."""
    if not frame_id:
        return page.session
    return next((session for session in frame_sessions(page) if session.frame_id == frame_id), None)


async def frame_tree(session: Session) -> list[dict[str, Any]]:
    """The frames this session renders, parents before children (out-of-process ones are not listed)."""
    tree = (await session.execute_raw("Page.getFrameTree"))["frameTree"]
    out: list[dict[str, Any]] = []
    todo = [tree]
    while todo:
        node = todo.pop(0)
        out.append(node["frame"])
        todo.extend(node.get("childFrames") or ())
    return out


async def list_frames(page: Page) -> list[Frame]:
    """Every frame of ``page``, parents before their children (the main frame first).

    Out-of-process iframes are listed once their child session has attached (they attach by themselves
    as the page loads them); a child session that goes away while it is asked is left out.
    """
    found: list[Frame] = []
    pending: list[tuple[Session, bool]] = [(page.session, False)]
    while pending:
        session, out_of_process = pending.pop(0)
        try:
            tree = (await session.execute(cdp.page.get_frame_tree())).frame_tree
        except (SessionDetached, TargetCrashed):
            if session is page.session:
                raise
            continue
        _walk(tree, session, out_of_process, found)
        children = [c for c in session.children.values() if c.target_type in _FRAME_TARGETS]
        pending.extend((child, True) for child in children)
    # A frame seen by its own process and as a placeholder in its parent's keeps the driving session.
    by_id: dict[str, Frame] = {}
    for frame in found:
        if frame.id not in by_id or frame.out_of_process:
            by_id[frame.id] = frame
    return list(by_id.values())
