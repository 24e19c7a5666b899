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

# One item of the YAML Playwright prints: `- role "name" [attr] [ref=e2]`, the name a JSON string. When YAML
# would misread the key (": ", " #", a leading quote or dash...), the whole key is single-quoted, '' for '.
_ITEM = re.compile(r" *- ")
_QUOTED = re.compile(r"'((?:[^']|'')*)'")
_ROLE = re.compile(r"[a-zA-Z]+")
_ATTR = re.compile(r" \[(?P<key>[a-z]+)(?:=(?P<value>[^\]\s]*))?\]")
_REF = re.compile(r"(?:f\d+)?e\d+")
_JSON = json.JSONDecoder()


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


def _key(line: str) -> str | None:
    """The key of an item line (after a bare key come ``:`` and its value), unquoted."""
    item = _ITEM.match(line)
    if item is None:
        return None
    rest = line[item.end() :]
    if not rest.startswith("'"):
        return rest
    quoted = _QUOTED.match(rest)
    return quoted[1].replace("''", "'") if quoted else None


def _role_name_ref(key: str) -> tuple[str, str, str] | None:
    role = _ROLE.match(key)
    if role is None:
        return None
    name, pos = "", role.end()
    if key.startswith(' "', pos):
        try:
            name, pos = _JSON.raw_decode(key, pos + 1)
        except json.JSONDecodeError:
            return None
    ref = None
    while (attr := _ATTR.match(key, pos)) is not None:
        if attr["key"] == "ref":
            ref = attr["value"]
        pos = attr.end()
    if ref is None or not _REF.fullmatch(ref):
        return None
    return role[0], name, ref


def parse_ai_snapshot(text: str) -> list[PlaywrightRef]:
    """The refs of ``page.aria_snapshot(mode="ai")`` text, in document order, with their nth."""
    out: list[PlaywrightRef] = []
    seen: Counter[tuple[str, str, str]] = Counter()
    # Only "\n" ends a line: a name keeps a U+0085 raw (JSON.stringify leaves it), splitlines() splits there.
    for line in text.split("\n"):
        key = _key(line)
        found = _role_name_ref(key) if key is not None else None
        if found is None:
            continue
        role, name, ref = found
        frame = ref[: ref.index("e")]
        out.append(PlaywrightRef(ref=ref, role=role, name=name, nth=seen[frame, role, name], frame=frame))
        seen[frame, role, name] += 1
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
