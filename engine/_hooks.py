"""Event hooks: a function the reader calls for an event, for what must happen before anyone awaits.

A dialog blocks its page until it is answered (the click that opened it does not return before), and a
popup must be attached as it appears: neither can wait for a consumer task, and the engine keeps no task
of its own. A hook is a subscription whose delivery calls the function in the reader instead of
buffering; it must be quick and must not block (send with ``execute_nowait``).
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable
from typing import Any

from engine._errors import CDPError, TargetCrashed
from engine._session import Session, Subscription

log = logging.getLogger("engine.hooks")


class _Hook(Subscription[Any]):
    _call: Callable[[str, dict[str, Any]], None]
    _on_end: Callable[[CDPError], None] | None

    def _push(self, method: str, params: dict[str, Any]) -> None:
        if self._ended:
            return
        try:
            self._call(method, params)
        except Exception:
            log.exception("an event hook failed on %s; the connection goes on", method)

    def _crashed(self, error: TargetCrashed) -> None:
        pass  # a hook is called, not read: a crash's news reaches those who wait by their commands

    def _close(self, error: CDPError | None = None) -> None:
        ended = self._ended
        super()._close(error)
        if not ended and error is not None and self._on_end is not None:
            self._on_end(error)


def add_hook(
    session: Session,
    methods: tuple[str, ...],
    call: Callable[[str, dict[str, Any]], None],
    *,
    on_end: Callable[[CDPError], None] | None = None,
) -> Subscription[Any]:
    """Call ``call(method, params)`` in the reader for each of ``methods`` on ``session`` until removed.

    Remove it with ``session.unsubscribe(hook)``; it ends with the session, and then ``on_end`` is called
    with why (the link closed, the session detached), for a hook that someone waits on.
    """
    hook = _Hook._create(session, frozenset(methods), 1, "drop_newest", False)
    hook._call = call
    hook._on_end = on_end
    session._add_subscription(hook)
    return hook


def each_frame_session(session: Session, call: Callable[[Session], object]) -> None:
    """Call ``call`` with ``session`` now, and with each out-of-process iframe's session below it as it
    attaches (in the reader, before a paused one is resumed), at any depth."""
    call(session)

    def attached(method: str, params: dict[str, Any]) -> None:
        child = session.connection.sessions.get(params.get("sessionId"))
        if child is not None and child.target_type == "iframe" and not child.detached:
            each_frame_session(child, call)

    add_hook(session, ("Target.attachedToTarget",), attached)


def is_main_frame(navigated: dict[str, Any]) -> bool:
    """Whether a ``Page.frameNavigated`` is the main frame's: a new document for the whole tab."""
    return not (navigated.get("frame") or {}).get("parentId")


_SENT: weakref.WeakKeyDictionary[Session, set[str]] = weakref.WeakKeyDictionary()


def enable_once(session: Session, method: str) -> None:
    """Send ``method`` (a domain's ``enable``, no params) to ``session`` unless the engine already did.

    Several of a page's hooks set up the same new child (its dialogs and its requests both need its Page
    domain); each asks here, and Chromium gets one command.
    """
    sent = _SENT.setdefault(session, set())
    if method not in sent:
        sent.add(method)
        session.raise_if_unusable(method)
        session.connection.call_nowait(session, method, {})
