"""Bounded evaluate: the caller's deadline is the budget, pushed into the page.

A call reads ``trio.current_effective_deadline()`` (or ``Settings.evaluate_timeout`` when there is none)
and gives the page that much time less a margin (see :func:`page_budget`): ``Runtime.evaluate``'s own
``timeout`` for synchronous code, and an in-page race (``setTimeout``) for promises and for
``Runtime.callFunctionOn``, which has no timeout of its own. If the reply has not come shortly before the
deadline, the engine sends ``Runtime.terminateExecution`` and then evaluates ``0`` until it runs, so no
termination stays armed for the next script; the caller then sees its own scope's outcome.

Every call runs on a session of its own to the target (a second flattened ``Target.attachToTarget``, made
on first use), so it never queues behind or in front of the page's other commands; its object group is
released after the call.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import json
import logging
import math
import re
import secrets
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import trio

from engine._actionability import release
from engine._errors import (
    CDPError,
    ConnectionClosed,
    ContextDestroyed,
    EvaluateDisabled,
    EvaluateTimeout,
    InvalidParams,
    JavaScriptError,
    ProtocolError,
    SessionDetached,
    StaleRefError,
)
from engine._frames import session_for_frame
from engine._metrics import EvaluateMetrics, MetricsRecorder
from engine._navigating import navigating, navigating_note
from engine._params import json_nodes
from engine._refs import ResolvedNode
from engine._session import Session
from engine._snapshot import HOW_TO_REFRESH, ref_session
from engine._worlds import GONE_FOR_RESOLVE

if TYPE_CHECKING:
    from engine._browser import Browser
    from engine._page import Page

log = logging.getLogger("engine.evaluate")

MARGIN = 0.05
"""Seconds the page's budget keeps clear of the caller's deadline (at most 10% of the time left): a
script that runs out of budget is stopped in the page, and its reply reaches us before the deadline.
Measured on Chromium 156: ``Runtime.evaluate(timeout=300)`` of ``while(true){}`` answered after 311 ms."""

STOP_LIMIT = 0.08
"""Seconds for terminating a script and checking that no termination stays armed (shielded), counted from
the deadline (or from a cancellation that came before it, or from a late wake-up): what follows the stop
fits in the rest of the 100 ms the caller is promised."""

_NOT_STOPPED = (
    "the tab did not answer Runtime.terminateExecution in time: either its main thread is still busy (a "
    "synchronous XMLHttpRequest or a large result being serialized cannot be terminated; a loaded machine "
    "can delay the answer), or a navigation of the tab is waiting for its response (Chromium holds the "
    "tab's commands until it commits); its commands wait until then"
)

DISARM_PROBES = 3
"""Evaluates of ``0`` after a Runtime.terminateExecution: the first that runs proves nothing is armed.
Measured on Chromium 156: a terminateExecution sent while no script runs does not stay armed (the next 3
evaluates ran), and in the random-budget test none of 200 probes was ever killed; the probe costs one round
trip, only on the timeout path, and turns that measurement into a guarantee."""

_BUDGET_MARK = f"cdp-engine: evaluate budget ran out ({secrets.token_hex(8)})"
"""The in-page race's rejection. Its number is this process's own: a script that rejected with the plain
text was taken for a spent budget (the caller waited out the deadline for an empty TooSlowError)."""
_VALUE_MARK = "cdp-engine: cannot return by value: "
_EVAL_TOKEN = f"__cdpEngineDirect{secrets.token_hex(4)}"
_NOT_EVAL_MARK = f"cdp-engine: the page replaced eval ({secrets.token_hex(8)})"
# Statements run in a direct eval (see _run_expression) only while ``eval`` is the language's own: a page
# that replaced window.eval got the statements instead, and its value came back as theirs (found by attack:
# ``window.eval = () => 'hacked'`` turned every statements evaluate into 'hacked', and nothing ran). A direct
# eval sees the function's own constant; what a page put there does not.
_DIRECT_EVAL_CHECK = (
    f"const {_EVAL_TOKEN} = 1; if (eval('typeof {_EVAL_TOKEN}') !== 'number') "
    f"throw new Error({json.dumps(_NOT_EVAL_MARK)});"
)
_SPECIAL_MARK = "cdp-engine: numbers JSON cannot hold"
"""Nested NaN, Infinity and -0 come back as null and 0 by value: the runner lists where they were."""
NOT_A_FUNCTION = "the source must be a function"
"""What the runner's TypeError says when it was given arguments or an element and the source is not a
function (the CLI tells that bad input from a page's error by it)."""
_TERMINATED = "Execution was terminated"
_AWAIT_OUTSIDE = "await is only valid in async functions"

# The in-page runner. It calls ``f`` when it is a function (by Reflect.apply, not a spread: a page that
# replaced the array iterator made a spread pass no arguments, and (a, b) => a + b returned NaN; a spread
# where the page removed Reflect), races a promise against the budget (with the Promise of the language,
# which an async function returns: a page may have replaced window.Promise; not by Promise.race, which
# iterates its array), and checks
# that the value survives being returned by value (Chromium silently turns a DOM node, a Map or a Date
# into {}). It tells -0 by 1 / v, not by Object.is: a page's Object.is = () => true made [1, 2] [-0, -0].
# An array's keys that are not indices are skipped: by value, an array keeps its items only.
# Joined into one line so that the caller's source keeps its line numbers (so: no // comments in it).
_RUNNER_JS = """
((f, ms, args, isFn) => {
  if (typeof f !== 'function') {
    if (isFn) throw new TypeError('evaluate was given arguments or an element, so @NOT_A_FUNCTION@, ' +
      'like (el, n) => el.textContent.slice(0, n)');
  } else if (typeof Reflect === 'object' && Reflect && typeof Reflect.apply === 'function') {
    f = Reflect.apply(f, undefined, args);
  } else { f = f(...args); }
  const bad = (path, what, instead) => new TypeError('@VALUE@' + path + ' is ' + what + '; ' + instead);
  const check = (root) => {
    const up = [], keys = [], specials = [];
    const walk = (v, path) => {
      const t = typeof v;
      const negZero = t === 'number' && v === 0 && 1 / v < 0;
      if (t === 'number' && up.length && (v !== v || v === Infinity || v === -Infinity || negZero)) {
        specials.push([keys.slice(), negZero ? '-0' : String(v)]);
        return;
      }
      if (v === null || v === undefined || t === 'string' || t === 'number' || t === 'boolean') return;
      if (t === 'bigint') {
        if (up.length) throw bad(path, 'a BigInt', 'return String(n) or Number(n)');
        return;
      }
      if (t === 'function') throw bad(path, 'a function', 'call it and return its result, or its name');
      if (t === 'symbol') throw bad(path, 'a symbol', 'return its description');
      if (v === globalThis) throw bad(path, 'the window', 'return the fields you need (location.href)');
      if (up.includes(v)) throw bad(path, 'a cycle (it contains itself)', 'return a copy without it');
      if (up.length > 200) throw bad(path, 'nested over 200 levels deep', 'return a flatter value');
      if (!Array.isArray(v)) {
        const proto = Object.getPrototypeOf(v);
        if (proto !== Object.prototype && proto !== null) {
          if (typeof v.nodeType === 'number' && typeof v.nodeName === 'string') {
            throw bad(path, 'a DOM node (' + v.nodeName + ')',
              'return what you need from it: el.textContent, el.outerHTML, el.getAttribute(name)');
          }
          const name = (v.constructor && v.constructor.name) || 'object';
          const hint = v instanceof Date ? 'return d.toISOString()'
            : v instanceof Map ? 'return Object.fromEntries(map)'
            : v instanceof Set ? 'return [...set]'
            : v instanceof Error ? 'return e.message'
            : 'return a plain object or array with the fields you need';
          throw bad(path, (/^[AEIOU]/.test(name) ? 'an ' : 'a ') + name, hint);
        }
      }
      up.push(v);
      for (const k of Object.keys(v)) {
        if (Array.isArray(v) && !/^[0-9]+$/.test(k)) continue;
        keys.push(Array.isArray(v) ? Number(k) : k);
        walk(v[k], Array.isArray(v) ? path + '[' + k + ']' : path + '.' + k);
        keys.pop();
      }
      up.pop();
    };
    walk(root, 'the result');
    return specials.length ? {'@SPECIAL@': specials, value: root} : root;
  };
  if (f && typeof f.then === 'function') {
    const P = (async () => {})().constructor;
    return new P((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('@BUDGET@')), ms);
      f.then(
        (v) => { clearTimeout(timer); try { resolve(check(v)); } catch (e) { reject(e); } },
        (e) => { clearTimeout(timer); reject(e); });
    });
  }
  return check(f);
})
"""
_RUNNER = " ".join(line.strip() for line in _RUNNER_JS.strip().splitlines())
_RUNNER = (
    _RUNNER.replace("@VALUE@", _VALUE_MARK)
    .replace("@BUDGET@", _BUDGET_MARK)
    .replace("@SPECIAL@", _SPECIAL_MARK)
    .replace("@NOT_A_FUNCTION@", NOT_A_FUNCTION)
)


# Runs ``source`` with the element (``this``) as its first argument; the source sits in an argument
# position so that it sees none of the runner's names.
def _on_element(source: str) -> str:
    return (
        "function (__cdpMs, __cdpArgs) { return "
        + _RUNNER
        + "(("
        + source
        + "\n), __cdpMs, [this].concat(__cdpArgs), true) }"
        + _NAMED
    )


_groups = itertools.count(1)


def page_budget(deadline: float, now: float) -> float:
    """Seconds the page gets: the time left, less ``MARGIN`` (or 10% of the time left when that is less)."""
    left = deadline - now
    return max(0.001, left - min(MARGIN, 0.1 * left))


class _BudgetSpent(Exception):
    """The script ran out of budget (stopped by the page itself, or terminated by us); ``stopped`` is False
    when the tab did not answer the termination (see :func:`stop_script`); ``queued``: nothing was
    terminated, as an earlier evaluate of ours may hold the thread (see :func:`_queued`)."""

    def __init__(self, *, stopped: bool = True, queued: bool = False) -> None:
        super().__init__()
        self.stopped = stopped
        self.queued = queued


_IN_FLIGHT: weakref.WeakKeyDictionary[Session, list[object]] = weakref.WeakKeyDictionary()
"""The evaluates in flight on each evaluate session, in the order they were sent."""


def evaluating(page: Page) -> bool:
    """Whether an evaluate of ours is in flight on ``page`` (on any of its targets): it frees the thread by
    its own deadline, and a termination sent from elsewhere could stop its script instead."""
    return any(_IN_FLIGHT.get(session) for session in _state(page).sessions.values())


def _queued(session: Session, mine: object) -> bool:
    """Whether an evaluate of ours sent before ``mine`` on ``session`` is still in flight.

    The page runs them one after the other, so ours may not have started: Runtime.terminateExecution would
    stop the earlier one (found by attack: a 0.3 s evaluate queued behind a 1.5 s one killed it, 3 of 3).
    So nothing is terminated: ours is left queued, as Runtime.evaluate's own ``timeout`` bounds it once it
    runs (an evaluate on an element, a Runtime.callFunctionOn, has no such bound and is still terminated).
    """
    flight = _IN_FLIGHT.get(session)
    return flight is not None and flight.index(mine) > 0


def _followed(session: Session, mine: object) -> bool:
    """Whether an evaluate of ours sent after ``mine`` on ``session`` is in flight: it runs as soon as
    ``mine`` ends, which Runtime.evaluate's own ``timeout`` does, so a Runtime.terminateExecution sent
    then for ``mine`` stops it instead (found by attack: a task's ``(n) => n + 1`` under a 5 s deadline
    raised "terminated from elsewhere" beside a task whose 1 s loops ran out of 0.2 s deadlines)."""
    flight = _IN_FLIGHT.get(session)
    return flight is not None and flight.index(mine) < len(flight) - 1


async def _thread_free(session: Session) -> bool:
    """Whether ``session``'s main thread answers a probe within FOLLOWED_PROBE (shielded): then nothing
    runs there to terminate, and the later evaluates of ours sent before the probe have run. Without an
    answer, what runs may be a hung part of the script whose budget ran out (a ``.then`` callback that
    loops: its own ``timeout`` covers only the script's first run) or a later evaluate's long script."""
    with (
        trio.CancelScope(shield=True),
        trio.move_on_after(FOLLOWED_PROBE) as probe,
        contextlib.suppress(CDPError),
    ):
        await session.execute_raw("Runtime.evaluate", {"expression": "0"})
    return not probe.cancelled_caught


FOLLOWED_PROBE = 0.03
"""Seconds the probe of :func:`_thread_free` gets: a free main thread answers in under a millisecond, and
the probe and a termination after it fit in STOP_LIMIT."""


class _PageState:
    """The evaluate sessions of one page (one per target: the page's, and each OOPIF's) and its counters."""

    def __init__(self, page: Page) -> None:
        self.sessions: dict[str, Session] = {}
        self.attaching: dict[str, trio.Event] = {}
        self.metrics = MetricsRecorder(_browser_recorder(page.browser))


_pages: weakref.WeakKeyDictionary[Page, _PageState] = weakref.WeakKeyDictionary()
_browsers: weakref.WeakKeyDictionary[Browser, MetricsRecorder] = weakref.WeakKeyDictionary()


def _browser_recorder(browser: Browser) -> MetricsRecorder:
    recorder = _browsers.get(browser)
    if recorder is None:
        recorder = _browsers[browser] = MetricsRecorder()
    return recorder


def _state(page: Page) -> _PageState:
    state = _pages.get(page)
    if state is None:
        state = _pages[page] = _PageState(page)
    return state


def page_metrics(page: Page) -> EvaluateMetrics:
    """``page.metrics()``."""
    return _state(page).metrics.snapshot()


def browser_metrics(browser: Browser) -> EvaluateMetrics:
    """``browser.metrics()``: every page of this browser together."""
    return _browser_recorder(browser).snapshot()


def recorder(page: Page) -> MetricsRecorder:
    """The page's recorder, for the Playwright adapter's fallbacks."""
    return _state(page).metrics


_PRIMARY: weakref.WeakKeyDictionary[Session, weakref.ref[Session]] = weakref.WeakKeyDictionary()
"""Each evaluate session's target's own established session (the page's, or its OOPIF's child session).

Held weakly both ways: the page's session holds the page (its dialog hooks do), and the page holds its
evaluate sessions (``_pages``), so a strong value here kept every closed page alive for good."""


async def evaluation_session(page: Page, target_id: str) -> Session:
    """The page's evaluate session to ``target_id`` (the page, or one of its OOPIFs), attached on first use.

    Concurrent first calls share one attach. The session ends with its target (closing the page detaches it).

    Raises:
        SessionDetached: the tab is closed, or ``target_id`` is gone (an OOPIF removed): no attach is tried.
    """
    state = _state(page)
    if page.closed:
        raise _gone(page, target_id)
    primary = session_for_frame(page, "" if target_id == page.target_id else target_id)
    if primary is not None:
        # A crashed renderer: a session attached after the crash hears nothing of it, and its evaluate
        # was never answered (it waited out the whole deadline).
        primary.raise_if_unusable("Runtime.evaluate")
    while True:
        session = state.sessions.get(target_id)
        if session is not None and not session.detached:
            return session
        pending = state.attaching.get(target_id)
        if pending is None:
            break
        await pending.wait()
    done = state.attaching[target_id] = trio.Event()
    try:
        browser = page.browser
        try:
            with trio.fail_after(browser.settings.attach_timeout):
                attached = await browser.session.execute_raw(
                    "Target.attachToTarget", {"targetId": target_id, "flatten": True}
                )
        except ProtocolError as exc:  # the target went before its detach event reached us
            if page.closed or _NO_TARGET in exc.message:
                raise _gone(page, target_id) from exc
            raise
        session = browser.connection.sessions.create(
            attached["sessionId"], target_id=target_id, target_type="page", parent=browser.session
        )
        state.sessions[target_id] = session
        if primary is not None:
            _PRIMARY[session] = weakref.ref(primary)
        log.debug("evaluate session %s attached to %s", session.session_id, target_id)
        return session
    finally:
        del state.attaching[target_id]
        done.set()


_NO_TARGET = "No target with given id found"
_NODE_GONE = (
    (
        "No node with given id found",
        "names no node of this page now (it was removed, or never was)",
        "removed",
    ),
    # Asked with no context, Chromium says so only of a node whose document is in no frame now: the page
    # navigated since the ref was checked (the check can still pass while the old document is taken down,
    # so _stale_if_gone's second look may not catch it).
    (GONE_FOR_RESOLVE, "names a node of a document the page has left (it navigated)", "navigated"),
)
"""What DOM.resolveNode answers for a node no evaluate can run on, what that means, and its stale reason."""


def _gone(page: Page, target_id: str, cause: CDPError | None = None) -> CDPError:
    """The error for an evaluate whose tab is closed (or whose OOPIF's target is gone); ``cause`` is the
    evaluate session's own SessionDetached, which can come before the page's session hears of it. When
    the whole link is gone, that is the news (its tabs went with the browser)."""
    if (closed := page.session.connection.closed) is not None:
        return ConnectionClosed(f"evaluate: {closed}")
    if target_id != page.target_id and not page.closed:
        return SessionDetached(
            f"evaluate: target {target_id} is gone (its out-of-process iframe was removed or navigated "
            "away); take a new snapshot"
        )
    if cause is None:
        try:
            page.session.raise_if_unusable("Runtime.evaluate")
        except CDPError as exc:
            cause = exc
    if cause is None:
        return SessionDetached("evaluate: the tab was closed by this client (page.close())")
    detail = str(cause).removeprefix("cannot send Runtime.evaluate: ")
    return SessionDetached(f"evaluate: the tab was closed ({detail})")


MAX_SAFE_INTEGER = 2**53 - 1
"""JavaScript's ``Number.MAX_SAFE_INTEGER``: a larger integer argument reaches the page rounded (2**53 + 1
arrives as 2**53; 10**400, beyond a double's range, as Infinity), so it is refused."""


def _encode_args(args: tuple[Any, ...]) -> str:
    for i, arg in enumerate(args):
        try:
            json.dumps(arg, allow_nan=False)
        except (TypeError, ValueError) as exc:
            # A value, not a type, JSON cannot carry: InvalidParams, as in a command's params.
            if isinstance(exc, ValueError) and "Out of range float" in str(exc):
                raise InvalidParams(
                    f"evaluate's argument {i} holds NaN or Infinity, which JSON cannot carry; nothing was "
                    "sent. Pass them as strings ('NaN', 'Infinity') and convert them in the page",
                    path=f"args[{i}]",
                ) from None
            raise TypeError(
                f"evaluate's argument {i} cannot be sent to the page ({exc}): pass JSON values only "
                "(str, int, float without NaN/Infinity, bool, None, and lists and dicts of them)"
            ) from None
        path = _unsafe_integer(arg, f"args[{i}]")
        if path is not None:
            raise InvalidParams(
                f"evaluate's {path} is an integer beyond JavaScript's exact range (±(2**53 - 1)), so the "
                "page would get it rounded; nothing was sent. Pass str(n) and use BigInt(s) in the page",
                path=path,
            )
    return json.dumps(list(args), allow_nan=False, ensure_ascii=False)


def _unsafe_integer(value: Any, path: str) -> str | None:
    """The path of the first integer in ``value`` (a JSON value) that a JavaScript number cannot hold."""
    for where, item, _ in json_nodes(value, path):
        if type(item) is int and abs(item) > MAX_SAFE_INTEGER:
            return where
    return None


_SYNTAX_AT_COMPILE = re.compile(r"^SyntaxError: [^\n]*$")


def _is_compile_error(reply: dict[str, Any]) -> bool:
    """A SyntaxError with no stack frame: the wrapped source did not parse, so nothing of it ran.

    Measured on Chromium 156: a parse error's description is the message alone; a SyntaxError thrown at run
    time (``JSON.parse('x')``) carries ``at ...`` lines. (A page that sets ``Error.stackTraceLimit = 0``
    makes a thrown SyntaxError look like a parse error: the source would then run again, as statements.)
    """
    details = reply.get("exceptionDetails")
    if not details:
        return False
    exception = details.get("exception") or {}
    return exception.get("className") == "SyntaxError" and bool(
        _SYNTAX_AT_COMPILE.match(exception.get("description") or "")
    )


def _runner_value(remote: dict[str, Any]) -> Any:
    """The value the runner returned, with the nested NaN, Infinity and -0 that JSON lost put back."""
    value = _value_of(remote)
    if type(value) is not dict or len(value) != 2 or _SPECIAL_MARK not in value:
        return value
    root = value["value"]
    for path, number in value[_SPECIAL_MARK]:
        *parents, last = path
        holder = root
        for key in parents:
            holder = holder[key]
        holder[last] = -0.0 if number == "-0" else float(number)
    return root


def _value_of(remote: dict[str, Any]) -> Any:
    if "value" in remote:
        return remote["value"]
    special = remote.get("unserializableValue")
    if special is not None:
        if special.endswith("n"):
            return int(special[:-1])
        return float(special)
    return None  # undefined


_SOURCE_URL = "cdp-engine-evaluate"
"""The name the wrapped script goes by in stack traces, so its frames are told from the page's (a script
the page inserted has no URL either: ``<anonymous>``, as ours had)."""
_NAMED = f"\n//# sourceURL={_SOURCE_URL}\n"
# The eval that runs statements: V8 names the script that called it by its name, not its sourceURL (empty).
_EVAL_AT = re.compile(rf"eval at <anonymous> \((?:{_SOURCE_URL})?:1:\d+\), ")
_AT_OURS = re.compile(rf"{_SOURCE_URL}:(\d+):(\d+)(\)?)$")
_IN_EVAL = re.compile(r"<anonymous>:(\d+):\d+\)?$")


def _user_stack(stack: str, offset: int | None) -> str:
    """``stack`` as it reads in the caller's source: the engine's wrapper is one line with the source
    placed ``offset`` characters into it (None: the source runs in an eval of its own, whose frames say
    where in it they are). The wrapper's own frames go, and columns on the first line count from the
    source (they counted from the wrapper's start: ``<anonymous>:1:2833`` for a throw at column 10)."""
    kept = []
    for frame in stack.splitlines():
        if _EVAL_AT.search(frame):
            kept.append(_EVAL_AT.sub("", frame))
            continue
        at = _AT_OURS.search(frame)
        if at is None:
            kept.append(frame)
            continue
        where = _in_source(at, offset)
        if where is None:
            continue  # the wrapper's own frame
        line, column = where
        kept.append(f"{frame[: at.start()]}<anonymous>:{line}:{column}{at.group(3)}")
    return "\n".join(kept)


def _in_source(at: re.Match[str], offset: int | None) -> tuple[int, int] | None:
    """Line and column in the caller's source of a frame of ours (``_AT_OURS``'s match), a first line's
    column counted from the source; None for a frame of the wrapper itself (see :func:`_user_stack`)."""
    line, column = int(at.group(1)), int(at.group(2))
    if line > 1:
        return line, column
    if offset is None or column <= offset:
        return None
    return line, column - offset


def _raise_for(reply: dict[str, Any], offset: int | None = None, *, takes_args: bool = False) -> None:
    """Raise what the reply's ``exceptionDetails`` says (budget, by-value problem, or a page error);
    ``offset``: where the source begins in the wrapper's one line (see :func:`_user_stack`); ``takes_args``:
    the script was given arguments or an element, so a ReferenceError thrown as its source was evaluated
    (``el.textContent``), not in a function it made, says the source had to be a function."""
    details = reply.get("exceptionDetails")
    if not details:
        return
    exception = details.get("exception") or {}
    description = exception.get("description") or ""
    if _BUDGET_MARK in description:
        raise _BudgetSpent
    if _NOT_EVAL_MARK in description:
        raise JavaScriptError(
            "this page replaced window.eval, so statements (let q = 3; q * 2) cannot run in a scope of "
            "their own, and nothing ran. Pass an expression, or a function: "
            "() => { let q = 3; return q * 2 }",
            details=details,
        )
    if not description:  # a thrown primitive, said as JavaScript says it (it read "threw None")
        if "value" in exception:
            description = json.dumps(exception["value"], ensure_ascii=False)
        elif exception.get("type") == "undefined":
            description = "undefined"
    elif (exception.get("type"), exception.get("subtype")) == ("object", None) and "\n" not in description:
        description = f"{description} (an object, not an Error: it has no stack)"
    message, _, stack = (description or details.get("text") or "the script threw").partition("\n")
    if _VALUE_MARK in message:
        message = message.split(_VALUE_MARK, 1)[1]
        raise JavaScriptError(f"the script's result cannot be returned by value: {message}", details=details)
    line = details.get("lineNumber")
    top = stack.split("\n", 1)[0].strip()
    at = _AT_OURS.search(top)
    if at is not None and (thrown := _in_source(at, offset)) is not None:
        # Where the source threw (an async function's rejection points its details at the wrapper: line 1)
        line = thrown[0] - 1
    elif _EVAL_AT.search(top) and (in_eval := _IN_EVAL.search(top)) is not None:
        line = int(in_eval.group(1)) - 1  # statements: the frame's line in their eval (a rejection's too)
    where = f" (line {line + 1})" if isinstance(line, int) else ""
    if isinstance(line, int) and top and not (_SOURCE_URL in top or _EVAL_AT.search(top)):  # the page's
        where, line = f" ({top[:200]})", None
    hint = ""
    frames = [frame for frame in stack.splitlines() if frame.lstrip().startswith("at ")]
    synchronous = "(in promise)" not in str(details.get("text") or "")  # (an async function's rejects)
    alone = len(frames) == 1 and _SOURCE_URL in frames[0]
    if takes_args and message.startswith("ReferenceError") and synchronous and alone:
        # ``el.textContent`` with ref= named an el nothing defined: the usage was wrong, not the page. (One
        # frame, the wrapper's: thrown in a function of the source, the stack has the function's and the
        # runner's too. A test of the source's text took commented and parenthesized functions for misuse.)
        hint = (
            f"; given arguments or an element, {NOT_A_FUNCTION}, like (el, n) => el.textContent.slice(0, n)"
        )
    raise JavaScriptError(
        f"the script threw {message}{where}{hint}",
        details=details,
        stack=_user_stack(stack, offset),
        line=line + 1 if isinstance(line, int) else None,
    )


async def stop_script(session: Session, metrics: MetricsRecorder, *, by: float | None = None) -> bool:
    """Terminate what runs on the target, then evaluate ``0`` until it runs: nothing stays armed.

    Returns False if the tab did not answer by ``by`` (or STOP_LIMIT from now, if later: a task woken
    after ``by`` on a loaded machine gave up at the send's first checkpoint, and the script ran on): its
    main thread is
    held by something Runtime.terminateExecution cannot stop. Seen on Chromium 156: a synchronous
    XMLHttpRequest to a server that does not answer (no CDP command frees the tab short of closing it:
    Page.stopLoading and offline network emulation were tried), and a 200 MB result being serialized.

    The termination goes through the target's own session when there is one: an evaluate session
    attached while the page's main thread was busy (a page handler in a loop) is not set up in the
    renderer until that thread is free, so a termination sent on it waited for the very script it was
    to stop, and the tab stayed hung.
    """
    probes = 0
    held = _PRIMARY.get(session)
    primary = held() if held is not None else None
    via = primary if primary is not None and not primary.detached else session
    now = trio.current_time()
    give_up = max(by, now + STOP_LIMIT) if by is not None else now + STOP_LIMIT
    with trio.CancelScope(shield=True), trio.move_on_at(give_up) as scope:
        try:
            await via.execute_raw("Runtime.terminateExecution")
            for _ in range(DISARM_PROBES):
                probes += 1
                try:
                    await session.execute_raw("Runtime.evaluate", {"expression": "0"})
                    break
                except ProtocolError as exc:
                    if _TERMINATED not in exc.message:
                        break
                    log.info("a termination was still armed; the probe took it (%s)", session.session_id)
        except CDPError as exc:  # the tab or the link is gone: nothing left to stop
            log.debug("could not terminate on %s: %s", session.session_id, exc)
    metrics.terminated(probes)
    if scope.cancelled_caught:
        log.warning("%s: %s", session.session_id, _NOT_STOPPED)
        if (stops := _STOPS.get()) is not None:
            stops.failed = True
        return False
    return True


async def free_main_thread(
    page: Page,
    session: Session,
    *,
    by: float,
    probe_for: float,
    spare: Callable[[], Awaitable[bool]] | None = None,
) -> bool:
    """Terminate what holds ``session``'s main thread, if something does: a look (an evaluate of ``0``)
    that gets no answer in ``probe_for`` seconds is followed by :func:`stop_script` (until ``by``), unless
    ``spare`` then says to leave it. True when a termination was sent. Nothing while the tab navigates:
    Chromium holds its commands until the commit, so the look and a termination would only wait.

    The look ends STOP_LIMIT before ``by`` at the latest, so the termination has its time; a look delayed
    past ``by`` (a loaded machine) still ends in a termination, which gets STOP_LIMIT from then.
    """
    if session.detached or navigating(page):
        return False
    with trio.move_on_at(min(by - STOP_LIMIT, trio.current_time() + probe_for)) as probe:
        with contextlib.suppress(CDPError):
            await session.execute_raw("Runtime.evaluate", {"expression": "0"})
    if not probe.cancelled_caught or navigating(page):  # one started meanwhile: its commit needs the thread
        return False
    if spare is not None and await spare():
        return False
    log.info("the main thread of %s does not answer; terminating what runs there", session.session_id)
    await stop_script(session, _state(page).metrics, by=by)
    return True


async def free_on_the_way_out(page: Page, session: Session) -> None:
    """:func:`free_main_thread` for a task being cancelled: a short look (FOLLOWED_PROBE) and the
    termination, shielded, so it ends within FOLLOWED_PROBE + STOP_LIMIT."""
    with trio.CancelScope(shield=True):
        by = trio.current_time() + FOLLOWED_PROBE + STOP_LIMIT
        await free_main_thread(page, session, by=by, probe_for=FOLLOWED_PROBE)


class _Stops:
    """What this task's evaluate got to (see ``_on_evaluate_session``): whether a script was sent at all
    (``sent``; the attach of the evaluate session can take the whole budget), and whether a termination
    went unanswered (``failed``)."""

    sent = False
    failed = False
    queued = False


_STOPS: contextvars.ContextVar[_Stops | None] = contextvars.ContextVar("_STOPS", default=None)


def _was_terminated(exc: ProtocolError) -> bool:
    """The script was terminated. Measured on Chromium 156: ``Runtime.evaluate`` stopped by its own
    ``timeout`` answers "Execution was terminated" (-32000), but with ``awaitPromise`` "Internal error"
    (-32603)."""
    return _TERMINATED in exc.message or (exc.code == -32603 and exc.message == "Internal error")


Build = Callable[[int], dict[str, Any]]
"""Makes a command's params for a page budget in milliseconds."""


async def _bounded(
    session: Session, method: str, build: Build, deadline: float, metrics: MetricsRecorder
) -> dict[str, Any]:
    """Send one evaluate command; terminate it if the deadline (or an outer cancellation) comes first."""
    now = trio.current_time()
    budget = page_budget(deadline, now)
    page_end = now + budget
    # Runtime.terminateExecution stops whatever script the tab runs: sent after ours has ended, it stops the
    # next one, whoever runs it (seen: a Playwright click queued behind our loop never finished). So when
    # the page stops the script itself (Runtime.evaluate's ``timeout``), its answer gets most of the margin;
    # when it cannot (a loop in callFunctionOn), the termination goes soon after the page's end, leaving
    # most of the margin for the termination and the probe before the deadline.
    # Runtime.evaluate's ``timeout`` bounds the script once it runs: one that may still be queued behind
    # an earlier evaluate of ours is left to it (see _queued), and so is one that a later evaluate of ours
    # follows while the main thread is free (_followed). Runtime.callFunctionOn has no such bound.
    bounded = method == "Runtime.evaluate"
    if bounded:
        watch = deadline - (deadline - page_end) / 4
    else:
        watch = page_end + min(0.01, (deadline - page_end) / 4)
    if (stops := _STOPS.get()) is not None:
        stops.sent = True
    mine = object()
    _IN_FLIGHT.setdefault(session, []).append(mine)
    try:
        with trio.move_on_at(watch):
            try:
                return await session.execute_raw(method, build(math.ceil(budget * 1000)))
            except ProtocolError as exc:
                if not _was_terminated(exc):
                    raise
                if trio.current_time() >= page_end - 0.01:
                    raise _BudgetSpent from None  # the page's own timeout stopped it
                raise JavaScriptError(
                    "the script was terminated by Runtime.terminateExecution from elsewhere (another "
                    "evaluate's budget ran out while this one ran, or a debugger stopped it)"
                ) from None
        if bounded and _queued(session, mine):
            if stops is not None:
                stops.queued = True
            raise _BudgetSpent(queued=True)
        if bounded and _followed(session, mine) and await _thread_free(session):
            raise _BudgetSpent  # nothing of it runs: its own timeout stopped it, or it awaits a promise
        raise _BudgetSpent(stopped=await stop_script(session, metrics, by=deadline + STOP_LIMIT))
    except trio.Cancelled:
        if bounded and _queued(session, mine):
            if stops is not None:
                stops.queued = True
        else:
            by = trio.current_time() + STOP_LIMIT
            if not (bounded and _followed(session, mine) and await _thread_free(session)):
                await stop_script(session, metrics, by=by)
        raise
    finally:
        _IN_FLIGHT[session].remove(mine)


async def _run_expression(
    session: Session,
    *,
    source: str,
    args: str,
    is_fn: bool,
    deadline: float,
    group: str,
    metrics: MetricsRecorder,
) -> Any:
    flag = "true" if is_fn else "false"

    def wrapped(ms: int) -> dict[str, Any]:
        return {
            "expression": f"{_RUNNER}(({source}\n), {ms}, {args}, {flag}){_NAMED}",
            "returnByValue": True,
            "awaitPromise": True,
            "userGesture": True,
            "timeout": ms,
            "objectGroup": group,
        }

    reply = await _bounded(session, "Runtime.evaluate", wrapped, deadline, metrics)
    offset: int | None = len(_RUNNER) + 2
    if not is_fn and _is_compile_error(reply):
        # Statements (``let a = 1; a``, ``while (true) {}``): not an expression, so the runner could not wrap
        # it and nothing ran. Run as a script, their let/const/class would stay in the page's global scope
        # (the same snippet run twice threw "already declared", and clashed with the page's own names).
        # A direct eval in a function of their own keeps every declaration local and returns the completion
        # value. Runtime.evaluate allows eval on a page whose CSP forbids it (allowUnsafeEvalBlockedByCSP).
        code = json.dumps(source, ensure_ascii=False)

        def statements(ms: int) -> dict[str, Any]:
            params = wrapped(ms)
            params["expression"] = (
                f"{_RUNNER}((function () {{ {_DIRECT_EVAL_CHECK} return eval({code}) }})(), {ms}, [], false)"
                f"{_NAMED}"
            )
            return params

        reply = await _bounded(session, "Runtime.evaluate", statements, deadline, metrics)
        offset = None
        details = reply.get("exceptionDetails") or {}
        if _AWAIT_OUTSIDE in ((details.get("exception") or {}).get("description") or ""):
            raise JavaScriptError(
                "the script threw SyntaxError: statements cannot await at the top level; pass an async "
                "function instead: async () => { const r = await fetch(url); return r.status }",
                details=details,
            )
    _raise_for(reply, offset, takes_args=is_fn)
    return _runner_value(reply["result"])


async def _run_on_node(
    session: Session,
    *,
    ref: str,
    backend_node_id: int,
    source: str,
    args: tuple[Any, ...],
    deadline: float,
    group: str,
    metrics: MetricsRecorder,
) -> Any:
    try:
        resolved = await session.execute_raw(
            "DOM.resolveNode", {"backendNodeId": backend_node_id, "objectGroup": group}
        )
    except ProtocolError as exc:
        for answer, meaning, reason in _NODE_GONE:
            if answer in exc.message:
                raise StaleRefError(
                    f"{ref} {meaning}; nothing ran. {HOW_TO_REFRESH[0].upper()}{HOW_TO_REFRESH[1:]}",
                    ref=ref,
                    reason=reason,
                ) from exc
        raise
    declaration = _on_element(source)

    def call(ms: int) -> dict[str, Any]:
        return {
            "functionDeclaration": declaration,
            "objectId": resolved["object"]["objectId"],
            "arguments": [{"value": ms}, {"value": list(args)}],
            "returnByValue": True,
            "awaitPromise": True,
            "userGesture": True,
            "objectGroup": group,
        }

    reply = await _bounded(session, "Runtime.callFunctionOn", call, deadline, metrics)
    _raise_for(reply, declaration.index(source) + 1, takes_args=True)  # Chromium compiles "(" + it + ")"
    return _runner_value(reply["result"])


async def evaluate(
    page: Page,
    source: str,
    args: tuple[Any, ...],
    *,
    ref: str | None = None,
    backend_node_id: int | None = None,
) -> Any:
    """``page.evaluate``: see its docstring."""
    if not page.browser.settings.evaluate_enabled:
        raise EvaluateDisabled(
            "evaluate is turned off for this browser (Settings(evaluate_enabled=False)); nothing was sent"
        )
    if not isinstance(source, str) or not source.strip():
        raise TypeError(f"evaluate takes JavaScript source as a non-empty string, not {source!r}")
    if ref is not None and not isinstance(ref, str):
        raise TypeError(f"ref must be a snapshot ref, a str like 'e3', not {ref!r}")
    if ref is not None and backend_node_id is not None:
        raise ValueError("give ref= or backend_node_id=, not both")
    if backend_node_id is not None and (type(backend_node_id) is not int or backend_node_id < 1):
        raise ValueError(
            f"backend_node_id must be a positive int (a DOM backendNodeId), not {backend_node_id!r}"
        )
    encoded = _encode_args(args)
    await trio.lowlevel.checkpoint_if_cancelled()
    deadline = trio.current_effective_deadline()
    own = deadline == math.inf
    if own:
        deadline = trio.current_time() + page.browser.settings.evaluate_timeout
    if ref is not None:
        now = trio.current_time()
        # The identity check needs its frame's main thread: a handler looping there (a click's) holds it.
        # It gets the budget a script would, and what holds the thread is then terminated, as a script of
        # ours would be: a tab whose out-of-process iframe looped stayed hung after every evaluate.
        checked_by = now + page_budget(deadline, now)
        try:
            with trio.move_on_at(checked_by) as scope:
                node = await page.resolve(ref)  # a stale ref raises StaleRefError
        except trio.Cancelled:
            # Woken after the check's budget and the caller's deadline both (a loaded machine), the task
            # gets the Cancelled of the caller's scope, not of ours: the thread is freed all the same
            # (found under CPU load: the loop ran on, and the next snapshot of the tab timed out), after a
            # short look, as the check's answer may only have waited for this process.
            if trio.current_time() >= checked_by and (held := ref_session(page, ref)) is not None:
                await free_on_the_way_out(page, held)
            raise
        if scope.cancelled_caught:
            held = ref_session(page, ref)
            stopped = held is not None and await stop_script(held, _state(page).metrics, by=deadline)
            if not own:
                await trio.sleep_until(deadline)  # the caller's own scope fires here, with its own outcome
            raise _timeout(page, unstarted="the ref's identity check", stopped=stopped)
        return await evaluate_on(page, node, source, *args, _deadline=(deadline, own))
    if backend_node_id is not None:
        node = ResolvedNode(
            ref=f"node:{backend_node_id}",
            backend_node_id=backend_node_id,
            session=page.session,
            frame_id=page.target_id,
            role="",
            name="",
        )
        return await evaluate_on(page, node, source, *args, _deadline=(deadline, own))
    return await _evaluate_page(page, source, encoded, is_fn=bool(args), deadline=deadline, own=own)


def _timeout(
    page: Page, *, stopped: bool = True, unstarted: str | None = None, queued: bool = False
) -> EvaluateTimeout:
    """The error for a spent default budget; ``unstarted`` says what took it when no script was sent."""
    limit = page.browser.settings.evaluate_timeout
    advice = "Set your own deadline with trio.fail_after, or raise the setting"
    side_effects = "; it may have had side effects, so it is not safe to replay blindly"
    if queued:
        what = (
            "may not have started: an evaluate of yours sent before it still held the page's main thread, "
            "and was left to run (nothing was terminated). This one may still run after it, within its "
            "own budget, so it is not safe to replay blindly"
        )
        advice = "Give the earlier evaluate a shorter deadline, or wait for it"
    elif unstarted is not None:
        what = f"never started ({unstarted} did not finish), so nothing ran" + (
            "; what held the frame's main thread was terminated" if stopped else ""
        )
    elif stopped:
        what = "was terminated" + side_effects
    elif note := navigating_note(page):  # it and its termination were held, not a busy main thread
        what = (
            "could not be stopped; it may still run in the new document, so it is not safe to replay blindly"
        )
        advice = note.strip()
    else:
        what = f"could not be stopped ({_NOT_STOPPED})" + side_effects
        advice = "Close the tab, or wait and try again"
    return EvaluateTimeout(
        f"evaluate ran past {limit} s (Settings.evaluate_timeout; no deadline of your own was set) and "
        f"{what}. {advice}"
    )


_CONTEXT_GONE = (
    "Inspected target navigated or closed",
    "Execution context was destroyed",
    "Cannot find context with specified id",
)
"""Chromium's answers to a script whose JavaScript context went away while it ran (a navigation)."""


async def _finish(page: Page, started: float, own: bool, deadline: float, run: Any) -> Any:
    """Await ``run``, record it, and turn a spent budget into what the caller's scope asks for."""
    metrics = _state(page).metrics
    try:
        value = await run
    except _BudgetSpent as spent:
        metrics.call(trio.current_time() - started, timeout=True)
        log.info(
            "an evaluate on %r ran out of its budget and %s; it may have had side effects (not safe to "
            "replay)",
            page,
            "was left queued" if spent.queued else "was stopped" if spent.stopped else "could not be stopped",
        )
        if own:
            raise _timeout(page, stopped=spent.stopped, queued=spent.queued) from None
        await trio.sleep_until(deadline)  # the caller's own scope fires here, with its own outcome
        # The deadline was moved later meanwhile:
        raise _timeout(page, stopped=spent.stopped, queued=spent.queued) from None
    except JavaScriptError:
        metrics.call(trio.current_time() - started, error=True)
        raise
    except ProtocolError as exc:
        metrics.call(trio.current_time() - started, error=True)
        if not any(gone in exc.message for gone in _CONTEXT_GONE):
            raise
        raise ContextDestroyed(
            "the page navigated (or the script's frame went away) before the script returned "
            f"(Chromium: {exc.message}): its result is lost, and it may have run in part (not safe to "
            "replay blindly). Wait for the new document (page.wait_for(load_state='load')) and run it again"
        ) from exc
    except trio.Cancelled:
        metrics.call(trio.current_time() - started, timeout=True)
        log.info(
            "an evaluate on %r was cancelled while it ran; it may have had side effects (not safe to replay)",
            page,
        )
        raise
    metrics.call(trio.current_time() - started)
    return value


async def _evaluate_page(
    page: Page, source: str, encoded: str, *, is_fn: bool, deadline: float, own: bool
) -> Any:
    started = trio.current_time()
    state = _state(page)

    async def run(session: Session, group: str) -> Any:
        return await _run_expression(
            session,
            source=source,
            args=encoded,
            is_fn=is_fn,
            deadline=deadline,
            group=group,
            metrics=state.metrics,
        )

    return await _on_evaluate_session(page, page.target_id, run, started=started, own=own, deadline=deadline)


async def _on_evaluate_session(
    page: Page,
    target_id: str,
    run: Callable[[Session, str], Awaitable[Any]],
    *,
    started: float,
    own: bool,
    deadline: float,
) -> Any:
    """``run`` on the target's evaluate session with an object group of its own, released after; under our
    own scope when the budget is the default one (``own``), else under the caller's."""

    async def in_group() -> Any:
        session = await evaluation_session(page, target_id)
        group = f"cdp-engine-evaluate-{next(_groups)}"
        try:
            return await run(session, group)
        except SessionDetached as exc:
            if target_id != page.target_id and not page.closed:
                raise  # an OOPIF gone: page.evaluate makes it its ref's StaleRefError
            raise _gone(page, target_id, exc) from exc
        finally:
            release(session, group)

    if own:
        # Our deadline can fire with the script's own watch (a loaded machine wakes this task after both):
        # then the termination ran on the way out, and what it achieved reaches the error through _STOPS.
        stops = _Stops()
        token = _STOPS.set(stops)
        try:
            with trio.move_on_at(deadline) as scope:
                return await _finish(page, started, own, deadline, in_group())
        finally:
            _STOPS.reset(token)
        if scope.cancelled_caught:
            if not stops.sent:
                raise _timeout(
                    page,
                    unstarted="what comes before the script, attaching its session or finding its element,",
                )
            raise _timeout(page, stopped=not stops.failed, queued=stops.queued)
    return await _finish(page, started, own, deadline, in_group())


async def evaluate_on(
    page: Page,
    node: ResolvedNode,
    source: str,
    *args: Any,
    _deadline: tuple[float, bool] | None = None,
) -> Any:
    """Run function ``source`` with the element of ``node`` as its first argument, on the evaluate session of
    the target that owns the node (the page's, or an out-of-process iframe's). Budget as ``page.evaluate``."""
    if not page.browser.settings.evaluate_enabled:
        raise EvaluateDisabled(
            "evaluate is turned off for this browser (Settings(evaluate_enabled=False)); nothing was sent"
        )
    _encode_args(args)
    if _deadline is None:
        deadline = trio.current_effective_deadline()
        own = deadline == math.inf
        if own:
            deadline = trio.current_time() + page.browser.settings.evaluate_timeout
    else:
        deadline, own = _deadline
    started = trio.current_time()
    state = _state(page)
    target_id = node.session.target_id or page.target_id

    async def run(session: Session, group: str) -> Any:
        return await _run_on_node(
            session,
            ref=node.ref,
            backend_node_id=node.backend_node_id,
            source=source,
            args=args,
            deadline=deadline,
            group=group,
            metrics=state.metrics,
        )

    return await _on_evaluate_session(page, target_id, run, started=started, own=own, deadline=deadline)
