"""What a snapshot hands out: refs, their table, and the node a ref resolves to.

Pure values; the snapshot itself is taken in ``engine/_snapshot.py``.
"""

from __future__ import annotations

from collections import Counter
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
    truncated: bool = False  # cut at max_chars (the text says so too)


@attrs.frozen(kw_only=True)
class Snapshot:
    """An agent-readable view of a page: ``text`` to read, ``refs`` to act on."""

    text: str
    refs: dict[str, Ref]
    stats: SnapshotStats
    generation: int
    is_delta: bool = False

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


MAX_REFS_PER_TARGET = 20_000
"""Refs kept per target, or as many as the last snapshot showed if more; beyond it the ones unseen longest
are forgotten (they then resolve as stale, "forgotten")."""

MAX_RETIRED_PER_TARGET = 100_000
"""Stale refs whose reason is kept per target (a string each); older ones resolve as unknown."""

MAX_TARGETS = 50
"""Targets whose ref state the browser keeps; the oldest used goes first."""

MAX_BASELINES_PER_TARGET = 4
"""Delta baselines kept per target, one per shape of snapshot; the one stored longest ago goes first."""


@attrs.frozen(kw_only=True)
class Shape:
    """The options that decide which lines a snapshot has. A delta compares only snapshots of one shape:
    against another shape, lines that were only filtered out would read as removed."""

    interactive_only: bool = False
    max_depth: int | None = None
    root: str | None = None
    frames: bool = True

    def __str__(self) -> str:
        """The options that differ from a whole snapshot's, as written in a call: "interactive_only"."""
        parts = ["interactive_only"] if self.interactive_only else []
        parts += [] if self.max_depth is None else [f"max_depth={self.max_depth}"]
        parts += [] if self.root is None else [f"root={self.root}"]
        parts += [] if self.frames else ["frames=False"]
        return ", ".join(parts)


@attrs.frozen(kw_only=True)
class Baseline:
    """What the last snapshot of one shape that was shown whole (not cut by max_chars) had: a delta's
    reference."""

    generation: int
    lines: dict[str, str]  # ref -> its line
    text: Counter[str]  # the lines without a ref


class RefState:
    """Every ref one target has handed out, so a ref keeps naming one node across snapshots and Pages.

    Plain Python: the snapshot fills it, ``resolve`` reads it. A ref string is never handed out twice in
    the target's life; a node keeps its ref while its role and name stay the same.
    """

    def __init__(self) -> None:
        self.generation = 0
        self._counter = 0
        self.frame_index: dict[str, int] = {}  # frame id -> 0 (main) or k for the "fk" prefix
        self.loaders: dict[str, str] = {}  # frame id -> the document (loader) its refs belong to
        self.refs: dict[str, Ref] = {}  # live refs, oldest seen first
        self.by_node: dict[tuple[str, int], str] = {}  # (frame id, backendNodeId) -> ref
        self.retired: dict[str, str] = {}  # ref -> why it is stale ("renamed", "navigated", ...)
        self.webarena: dict[str, Ref] = {}  # the ids of the last webarena-format snapshot
        self.baselines: dict[Shape, Baseline] = {}  # for deltas; stored longest ago first
        self.frame_target: dict[str, str] = {}  # frame id -> frame id of the target (session) that renders it

    def baseline(self, shape: Shape) -> Baseline | None:
        return self.baselines.get(shape)

    def keep_baseline(self, shape: Shape, baseline: Baseline) -> None:
        self.baselines.pop(shape, None)
        self.baselines[shape] = baseline
        while len(self.baselines) > MAX_BASELINES_PER_TARGET:
            del self.baselines[next(iter(self.baselines))]

    def prefix(self, frame_id: str, *, main: bool) -> str:
        if frame_id not in self.frame_index:
            self.frame_index[frame_id] = 0 if main else len([i for i in self.frame_index.values() if i]) + 1
        index = self.frame_index[frame_id]
        return f"f{index}" if index else ""

    def frame_of_prefix(self, prefix: str) -> str | None:
        index = int(prefix[1:]) if prefix else 0
        for frame_id, i in self.frame_index.items():
            if i == index:
                return frame_id
        return None

    def document_seen(self, frame_id: str, loader_id: str) -> None:
        """A snapshot saw ``frame_id`` showing ``loader_id``: refs of an earlier document there go stale."""
        old = self.loaders.get(frame_id)
        self.loaders[frame_id] = loader_id
        if old is not None and old != loader_id:
            for ref in [r for r in self.refs.values() if r.frame_id == frame_id]:
                self._retire(ref, "navigated")

    def ref_for(
        self, *, frame_id: str, backend_node_id: int, role: str, name: str, nth: int, main: bool
    ) -> Ref:
        """The ref of this node: its old one while role and name are unchanged, else a new one."""
        key = (frame_id, backend_node_id)
        known = self.by_node.get(key)
        if known is not None:
            old = self.refs[known]
            if old.role == role and old.name == name:
                if old.nth != nth:
                    old = attrs.evolve(old, nth=nth)
                del self.refs[known]  # re-inserted last: the most recently seen
                self.refs[known] = old
                return old
            self._retire(old, "role changed" if old.role != role else "renamed")
        self._counter += 1
        ref = Ref(
            ref=f"{self.prefix(frame_id, main=main)}e{self._counter}",
            role=role,
            name=name,
            nth=nth,
            backend_node_id=backend_node_id,
            frame_id=frame_id,
            loader_id=self.loaders.get(frame_id, ""),
            generation=self.generation,
        )
        self.refs[ref.ref] = ref
        self.by_node[key] = ref.ref
        return ref

    def trim(self, shown: int) -> None:
        """After a snapshot that saw ``shown`` refs: forget the refs unseen longest beyond
        MAX_REFS_PER_TARGET, never one this snapshot saw. (Trimmed while rendering, each new ref of a page
        over the limit pushed out one the same walk was about to reuse: every snapshot renumbered all.)"""
        for _ in range(len(self.refs) - max(MAX_REFS_PER_TARGET, shown)):
            self._retire(next(iter(self.refs.values())), "forgotten")

    def _retire(self, ref: Ref, reason: str) -> None:
        self.refs.pop(ref.ref, None)
        self.by_node.pop((ref.frame_id, ref.backend_node_id), None)
        self.retired[ref.ref] = reason
        if len(self.retired) > MAX_RETIRED_PER_TARGET:
            del self.retired[next(iter(self.retired))]

    def retire(self, ref: str, reason: str) -> None:
        """``ref`` failed its identity check: it stays stale from now on."""
        known = self.refs.get(ref)
        if known is not None:
            self._retire(known, reason)


class RefCache:
    """The ref state of the last ``MAX_TARGETS`` targets used, so refs outlive a Page object."""

    def __init__(self, size: int = MAX_TARGETS) -> None:
        self._size = size
        self._states: dict[str, RefState] = {}
        # The last ref number of targets pushed out, so a target used again never hands out an old ref
        # string for another element (an int per target; bounded too).
        self._evicted: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._states)

    def get(self, target_id: str) -> RefState:
        state = self._states.pop(target_id, None)
        if state is None:
            state = RefState()
            state._counter = self._evicted.pop(target_id, 0)
        self._states[target_id] = state  # most recent last
        while len(self._states) > self._size:
            oldest = next(iter(self._states))
            self._evicted[oldest] = self._states.pop(oldest)._counter
            if len(self._evicted) > 100 * self._size:
                del self._evicted[next(iter(self._evicted))]
        return state

    def peek(self, target_id: str) -> RefState | None:
        return self._states.get(target_id)
