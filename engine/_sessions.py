"""The session table: every session of one connection, and what the browser says happens to them.

The table creates sessions (the browser's own, attached pages, auto-attached iframes and workers), finds
them by session id or target, and follows the lifecycle events the reader hands it: attach, detach,
target destroyed, crash, revival, and URL changes. It is plain Python with no I/O: a fire-and-forget
send is the only thing it asks of the connection, so it is unit-tested without trio or a browser.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import attrs

import cdp
from engine._session import Session

if TYPE_CHECKING:
    from engine._connection import Connection

log = logging.getLogger("engine.sessions")

AUTO_ATTACH = cdp.target.set_auto_attach(auto_attach=True, wait_for_debugger_on_start=True, flatten=True)
"""Iframes (OOPIFs) and workers attach paused, as flattened child sessions, until the table resumes them."""

_FRAME_TARGETS = ("page", "iframe")
"""Target types whose main frame id is the target id (so a session knows its frame)."""

_AUTO_ATTACHING = (*_FRAME_TARGETS, "worker")
"""Children that get AUTO_ATTACH in turn: a dedicated worker's own workers attach under it (unattached,
the script request of one began on its parent's session and was never seen to end)."""


@attrs.frozen(kw_only=True)
class SessionTableStatistics:
    """A snapshot of the session table's counters."""

    open: int
    attached: int
    detached: int
    crashed: int
    revived: int


class SessionTable:
    """The sessions of one connection by id, with the browser-level session under ``None``.

    Created by the connection; the reader calls :meth:`follow` for every lifecycle event before it is
    delivered, and :meth:`resume_attached` after: a child that attached paused is resumed once the
    parent's hooks have seen its attach too (the engine's own set-up of the child goes out first).
    """

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._by_id: dict[str | None, Session] = {}
        #: Called with every auto-attached child (iframe, worker) before it is resumed (Browser.on_attach).
        self.on_attach: Callable[[Session], None] | None = None
        self._paused: list[Session] = []  # attached waiting for the debugger: resume_attached resumes them
        self._attached = 0
        self._detached = 0
        self._crashed = 0
        self._revived = 0
        self.browser = self.create(None, target_type="browser")

    # -- lookups -------------------------------------------------------------------------------------

    def get(self, session_id: str | None) -> Session | None:
        """The open session with this id (``None``: the browser's), or None."""
        return self._by_id.get(session_id)

    def by_target(self, target_id: Any) -> list[Session]:
        """The open sessions attached to ``target_id`` (none for anything but a string: the browser's own
        session has no target, and an event that names none must not reach it)."""
        if not isinstance(target_id, str):
            return []
        return [session for session in self._by_id.values() if session.target_id == target_id]

    def __iter__(self) -> Iterator[Session]:
        return iter(list(self._by_id.values()))

    def __len__(self) -> int:
        return len(self._by_id)

    def statistics(self) -> SessionTableStatistics:
        return SessionTableStatistics(
            open=len(self._by_id),
            attached=self._attached,
            detached=self._detached,
            crashed=self._crashed,
            revived=self._revived,
        )

    # -- creation ------------------------------------------------------------------------------------

    def create(
        self,
        session_id: str | None,
        *,
        target_id: str | None = None,
        target_type: str = "other",
        url: str = "",
        parent: Session | None = None,
    ) -> Session:
        """A new session, registered here and under its parent (or the existing one with this id)."""
        existing = self._by_id.get(session_id)
        if existing is not None:
            return existing
        frame_id = target_id if target_type in _FRAME_TARGETS else None
        session = Session._create(
            self._connection,
            session_id,
            target_id=target_id,
            target_type=target_type,
            url=url,
            frame_id=frame_id,
            parent=parent,
        )
        self._by_id[session_id] = session
        if parent is not None and session_id is not None:
            parent.children[session_id] = session
        if session_id is not None:
            self._attached += 1
        return session

    # -- what the browser says -------------------------------------------------------------------------

    def follow(self, session: Session, method: str, params: dict[str, Any]) -> None:
        """Act on a lifecycle event that arrived on ``session`` (any other event is ignored)."""
        # An id that is missing or not a string names no session: the browser's own has None for both.
        if method == "Target.attachedToTarget":
            self._attached_to_target(session, params)
        elif method == "Target.detachedFromTarget":
            session_id = params.get("sessionId")
            child = self._by_id.get(session_id) if isinstance(session_id, str) else None
            if child is not None:
                self.detach(child, "Target.detachedFromTarget")
        elif method == "Target.targetDestroyed":
            for gone in self.by_target(params.get("targetId")):
                self.detach(gone, "the target was destroyed")
        elif method == "Target.targetCrashed":
            for crashed in self.by_target(params.get("targetId")):
                self.crash(crashed, f"status {params.get('status')}, error code {params.get('errorCode')}")
        elif method == "Target.targetInfoChanged":
            info = params.get("targetInfo") or {}
            url = info.get("url")
            if isinstance(url, str):
                for same in self.by_target(info.get("targetId")):
                    same.url = url
        elif method == "Inspector.targetCrashed":
            self.crash(session, "Inspector.targetCrashed")
        elif method == "Inspector.targetReloadedAfterCrash":
            self.revive(session)
        elif method == "Inspector.detached":
            self.detach(session, f"Inspector.detached: {params.get('reason')}")

    def detach(self, session: Session, reason: str) -> None:
        """The session is gone: end it (and its children) and forget it."""
        if session.detached:
            return
        self._by_id.pop(session.session_id, None)
        if session.parent is not None and session.session_id is not None:
            session.parent.children.pop(session.session_id, None)
        self._detached += 1
        session._end_detached(reason)
        for child in list(session.children.values()):
            self.detach(child, f"its parent session {session.session_id} was detached")

    def crash(self, session: Session, reason: str) -> None:
        """The target's renderer crashed: the session (and its children) fail commands until revived.

        Chromium reports one crash twice (Inspector.targetCrashed, Target.targetCrashed); the second is
        ignored, so it cannot fail the Page.reload sent after the first.
        """
        if session.crashed or session.detached:
            return
        self._crashed += 1
        session._end_crashed(reason)
        for child in list(session.children.values()):
            self.crash(child, reason)

    def revive(self, session: Session) -> None:
        """A navigation or reload started a new renderer for the target: commands work again."""
        if session.crashed:
            self._revived += 1
            session._revived()

    def _attached_to_target(self, parent: Session, params: dict[str, Any]) -> None:
        session_id = params.get("sessionId")
        info = params.get("targetInfo") or {}
        if not isinstance(session_id, str) or session_id in self._by_id:
            return
        url = info.get("url")
        child = self.create(
            session_id,
            target_id=info.get("targetId"),
            target_type=info.get("type", "other"),
            url=url if isinstance(url, str) else "",
            parent=parent,
        )
        if parent.session_id is None:
            return  # attached at browser level (Browser.new_page, or the user): set up by whoever asked
        if child.target_type in _AUTO_ATTACHING:
            # Nested out-of-process iframes, and a worker's own workers, attach to this child in turn.
            child.execute_nowait(AUTO_ATTACH)
        if self.on_attach is not None:
            try:
                self.on_attach(child)
            except Exception:
                log.exception("Browser.on_attach failed for %r; the session is resumed anyway", child)
        if params.get("waitingForDebugger"):
            self._paused.append(child)

    def resume_attached(self) -> None:
        """Resume the children that attached paused, once everything that sets them up has been sent."""
        paused, self._paused = self._paused, []
        for child in paused:
            if not (child.detached or child.crashed):
                child.execute_nowait(cdp.runtime.run_if_waiting_for_debugger())


LIFECYCLE_EVENTS = frozenset(
    {
        "Target.attachedToTarget",
        "Target.detachedFromTarget",
        "Target.targetDestroyed",
        "Target.targetCrashed",
        "Target.targetInfoChanged",
        "Inspector.targetCrashed",
        "Inspector.targetReloadedAfterCrash",
        "Inspector.detached",
    }
)
"""The events :meth:`SessionTable.follow` acts on."""
