"""What a snapshot hands out: refs, their table, and the node a ref resolves to.

Pure values; the snapshot itself is taken in ``engine/_snapshot.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from engine._session import Session


@attrs.frozen(kw_only=True)
class Ref:
    """One element named in a snapshot: ``snap.refs["e3"]``.

    ``nth`` tells apart elements of equal (role, name) in one frame (0 for the first). ``loader_id`` is the
    document the element lived in; ``generation`` the snapshot that first handed out this ref.
    """

    ref: str
    role: str
    name: str
    nth: int
    backend_node_id: int
    frame_id: str
    loader_id: str
    generation: int


@attrs.frozen(kw_only=True)
class SnapshotStats:
    """How big a snapshot was and what it cost."""

    nodes_seen: int
    nodes_rendered: int
    refs: int
    bytes: int
    frames: int
    duration_ms: float


@attrs.frozen(kw_only=True)
class Snapshot:
    """An agent-readable view of a page: ``text`` to read, ``refs`` to act on."""

    text: str
    refs: dict[str, Ref]
    stats: SnapshotStats
    generation: int
    is_delta: bool = False
    truncated: bool = False

    def __str__(self) -> str:
        return self.text


@attrs.frozen(kw_only=True)
class ResolvedNode:
    """A ref after its identity check: the DOM node to act on and the session that owns it.

    ``session`` is the page's session, or an out-of-process iframe's child session for refs in such a frame;
    commands about ``backend_node_id`` must go to that session.
    """

    ref: str
    backend_node_id: int
    session: Session
    frame_id: str
    role: str
    name: str
