"""Errors raised by the engine.

One root, split by blame: what the browser said, what happened to the link, and what the caller did wrong.

    CDPError
    ├── ProtocolError          the browser answered a command with an error (code, message, data, method)
    ├── ConnectError           no link opened: nothing listening, no answer in time, not a DevTools endpoint
    ├── ConnectionClosed       the pipe or websocket is gone; every pending command on it ends with this
    │   └── TargetCrashed      the target's renderer crashed while the command was pending
    ├── SessionDetached        the target session was detached (tab closed, target gone)
    ├── BrowserLaunchError     Chromium did not start; carries the tail of its stderr
    ├── ResponseDecodeError    a response or event did not fit the typed bindings (also a cdp.DecodeError)
    ├── MessageTooLarge        an outbound message is over the transport's limit; nothing was sent
    ├── InvalidParams          params Chromium cannot parse (NaN, huge integer, deep nesting); not sent
    ├── EventOverflow          a subscription with overflow="error" lost events because its buffer was full
    ├── NavigationError        Page.navigate reported an error (net::ERR_..., or the page failed to load)
    ├── StaleRefError          a snapshot ref no longer names its element (removed, renamed, navigated)
    ├── ActionError            an action could not be done: the element never became actionable in time, or a
    │                          hit test found another element on top (the message names it)
    ├── JavaScriptError        a script threw in the page; carries the exception details
    ├── EvaluateDisabled       evaluate was turned off (Settings(evaluate_enabled=False))
    ├── EvaluateTimeout        evaluate ran past Settings.evaluate_timeout with no deadline of the caller's
    │                          (also a trio.TooSlowError); the script was terminated, may have had effects
    └── StepsValidationError   a steps macro failed validation before anything ran; names the step and field
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import trio

import cdp


class CDPError(Exception):
    """Root of every error the engine raises."""


class ProtocolError(CDPError):
    """The browser answered a command with an error object."""

    def __init__(
        self,
        *,
        code: int,
        message: str,
        data: Any = None,
        method: str = "",
        session_id: str | None = None,
    ) -> None:
        self.code = code
        self.message = message
        self.data = data
        self.method = method
        self.session_id = session_id
        where = f" (session {session_id})" if session_id else ""
        extra = f": {data}" if data else ""
        super().__init__(f"{method}{where} failed with {code}: {message}{extra}")


class ConnectError(CDPError):
    """A link to the browser could not be opened (connect, /json/version, the websocket upgrade).

    Not a ConnectionClosed: a link that never opened did not close, and no command was ever pending on it.
    The message says what was expected and what came (or that nothing did, within which setting).
    """


class ConnectionClosed(CDPError):
    """The connection to the browser is closed; nothing more can be sent on it."""


class TargetCrashed(ConnectionClosed):
    """The target's renderer crashed; its in-flight commands will never be answered."""


class SessionDetached(CDPError):
    """The session was detached from its target (closed tab, navigation to another process, detach)."""


class BrowserLaunchError(CDPError):
    """The browser process could not be started or did not answer in time."""

    def __init__(self, message: str, *, stderr_tail: str = "") -> None:
        self.stderr_tail = stderr_tail
        text = message
        if stderr_tail:
            text += "\n--- last lines of the browser's stderr ---\n" + stderr_tail
        super().__init__(text)


class ResponseDecodeError(CDPError, cdp.DecodeError):
    """A message from the browser did not fit the typed bindings; the raw payload is attached."""


class MessageTooLarge(CDPError):
    """An outbound message is over the limit the transport accepts; it was not sent."""


class InvalidParams(CDPError, ValueError):
    """A command's params cannot be sent as they are; ``path`` names the field. Nothing was sent.

    Chromium cannot parse NaN or Infinity, integers beyond a double's range, or nesting deeper than its
    parser allows; it answers such a message with an error that carries no id, so the command could
    never be told it failed.
    """

    def __init__(self, message: str, *, method: str = "", path: str = "") -> None:
        self.method = method
        self.path = path
        super().__init__(message)


class EventOverflow(CDPError):
    """A subscription's buffer overflowed under the "error" policy; events were lost."""


class NavigationError(CDPError):
    """A navigation failed (the browser's errorText, e.g. net::ERR_CONNECTION_REFUSED)."""


class StaleRefError(CDPError):
    """A ref from an earlier snapshot no longer names the element it was given for.

    ``ref`` is the ref, ``reason`` what changed ("removed", "renamed", "role changed", "navigated"; or
    "forgotten": more refs were handed out since than the engine keeps, "unknown": none was). Take a
    new snapshot and use its refs; the engine never retargets a ref to another element.
    """

    def __init__(self, message: str, *, ref: str = "", reason: str = "") -> None:
        self.ref = ref
        self.reason = reason
        super().__init__(message)


class ActionError(CDPError):
    """An action could not be done on its element (not actionable in time, covered by another element).

    ``ref`` is the element, ``check`` the actionability check that failed last ("visible", "enabled",
    "stable", "hit test", "hit target at input", ...), and ``in_the_way`` what a hit test found on top
    (role, name, selector), or what a click's press landed on.
    """

    def __init__(self, message: str, *, ref: str = "", check: str = "", in_the_way: str = "") -> None:
        self.ref = ref
        self.check = check
        self.in_the_way = in_the_way
        super().__init__(message)


class JavaScriptError(CDPError):
    """A script evaluated in the page threw; ``details`` holds the protocol's exception details.

    ``stack`` is the page's stack text (may be empty) and ``line`` the 1-based line of the source where it
    was thrown, when the page said.
    """

    def __init__(
        self, message: str, *, details: Any = None, stack: str = "", line: int | None = None
    ) -> None:
        self.details = details
        self.stack = stack
        self.line = line
        super().__init__(message)


class ContextDestroyed(JavaScriptError):
    """The script's page navigated, or its frame went away, before the script returned: its result is
    lost, and it may have run in part (not safe to replay blindly)."""


class EvaluateTimeout(CDPError, trio.TooSlowError):
    """An evaluate with no deadline of the caller's ran past ``Settings.evaluate_timeout``.

    The script was terminated, or could not be stopped (the tab's main thread was held), or never started
    (its ref's identity check did not finish); the message says which. Unless it never started, it may
    have had side effects: not safe to replay blindly (``side_effects_possible`` is always True, the
    conservative answer). With a deadline of your own, your scope's own outcome (``TooSlowError`` from
    ``fail_after``, nothing from ``move_on_after``) is what you see instead.
    """

    side_effects_possible = True


class EvaluateDisabled(CDPError):
    """Evaluate is turned off for this browser (``Settings(evaluate_enabled=False)``); nothing ran."""


class StepsValidationError(CDPError, ValueError):
    """A steps macro is invalid; nothing ran. ``index`` and ``field`` name the first bad step and field.

    ``problems`` lists every problem found (``engine.steps.Problem``: index, field, message), so a caller
    fixes them all at once; the message lists them too.
    """

    def __init__(
        self, message: str, *, index: int | None = None, field: str = "", problems: Sequence[Any] = ()
    ) -> None:
        self.index = index
        self.field = field
        self.problems = list(problems)
        super().__init__(message)


def fresh_copy(error: CDPError) -> CDPError:
    """A new exception like ``error`` for each waiter, so different callers' tracebacks do not pile onto one.

    Only for the errors that end many waiters at once (ConnectionClosed, TargetCrashed, SessionDetached),
    whose constructor takes the message alone.
    """
    clone = type(error)(*error.args)
    clone.__cause__ = error.__cause__
    return clone
