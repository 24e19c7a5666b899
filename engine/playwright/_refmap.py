"""Playwright's role refs (``aria_snapshot(mode="ai")``) mapped to backendNodeIds through our snapshot.

Plain Python. Both sides count look-alikes the same way: ``nth`` counts equal (role, name) pairs in
document order within one frame. A Playwright ref gets the backendNodeId of our ref with the same role,
name and nth in the main frame when both snapshots list the same number of such look-alikes; otherwise
(a count that differs, a child frame) it is ambiguous and left unset, never guessed.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable

import attrs

from engine import Snapshot

_LINE = re.compile(
    r'^\s*- (?P<role>[\w-]+)(?: "(?P<name>(?:[^"\\]|\\.)*)")?.*?\[ref=(?P<ref>(?:f\d+)?e\d+)\]'
)


@attrs.frozen(kw_only=True)
class PlaywrightRef:
    """A ref of Playwright's ai snapshot: ``ref`` (``e3``, ``f1e2``), role, name, nth among equal (role,
    name) in its frame, and the backendNodeId it maps to (None: unmapped or ambiguous)."""

    ref: str
    role: str
    name: str
    nth: int
    frame: str = ""
    backend_node_id: int | None = None


def parse_ai_snapshot(text: str) -> list[PlaywrightRef]:
    """The refs of ``page.aria_snapshot(mode="ai")`` text, in document order, with their nth."""
    out: list[PlaywrightRef] = []
    seen: Counter[tuple[str, str, str]] = Counter()
    for line in text.splitlines():
        match = _LINE.match(line)
        if match is None:
            continue
        ref = match["ref"]
        frame = ref[: ref.index("e")]
        role = match["role"]
        name = json.loads(f'"{match["name"]}"') if match["name"] is not None else ""
        key = (frame, role, name)
        out.append(PlaywrightRef(ref=ref, role=role, name=name, nth=seen[key], frame=frame))
        seen[key] += 1
    return out


def map_refs(refs: Iterable[PlaywrightRef], snapshot: Snapshot) -> list[PlaywrightRef]:
    """``refs`` with ``backend_node_id`` set where our ``snapshot`` names the same element unambiguously."""
    refs = list(refs)
    ours: dict[tuple[str, str], dict[int, int]] = {}
    for mine in snapshot.refs.values():
        if mine.ref.startswith("e"):  # the main frame's refs carry no frame prefix
            ours.setdefault((mine.role, mine.name), {})[mine.nth] = mine.backend_node_id
    theirs = Counter((r.role, r.name) for r in refs if not r.frame)
    out = []
    for ref in refs:
        nodes = ours.get((ref.role, ref.name), {})
        if not ref.frame and len(nodes) == theirs[(ref.role, ref.name)] and ref.nth in nodes:
            out.append(attrs.evolve(ref, backend_node_id=nodes[ref.nth]))
        else:
            out.append(ref)
    return out
