"""``page.run_steps``: the steps macro's runner (the schema, budget rule and result are in engine/steps.py).

Why one call: an agent's click / wait / read loop done as three calls with a snapshot after each costs three
snapshots; here the steps run back to back on the same tab and only the page output the caller asked for
comes back (``return_mode``). The figures are in the README's "Steps" section.

The rules, in order:

- Nothing runs until the whole call validates (``engine.steps.validate``).
- Each step runs under ``engine.steps.step_budget``: ``min(per_step_timeout_ms, its timeout_ms, what is
  left of the caller's deadline)``; a step that runs out is reported as ``TimeoutError`` on that step.
- Targets are refs; every action resolves its ref first (``page.resolve``: the identity check), so a ref
  whose element changed, or whose document navigated away, fails closed with ``StaleRefError`` on the step
  that used it. A ``node:<backendNodeId>`` target carries no document to check, so once the main frame
  has committed a new document in this call, it fails closed the same way. A ref already found stale in
  this call is not sent again: later steps that use it fail with ``StaleRefError`` at once.
- ``fail_fast=True`` (the default): after the first failure the rest are ``Skipped``.
  ``fail_fast=False``: later steps still run, except (a) a step whose target is stale (it fails, as above)
  and (b) every step after a failed ``navigate``, which depends on the page that did not load (``Skipped``).
- A step that fails on time (its budget, or an action the page did not handle) is followed by a look at
  the thread of the step's frame (an out-of-process iframe's own); if it does not answer in
  ``FREE_PROBE_S``, what runs there (a handler in an endless loop) is terminated, as ``page.evaluate``
  does on its deadline: a steps-only caller has no other way to get the tab back. When the caller's
  deadline leaves no time for that, it runs in the background (started at once, beside the rest of the
  call and what the caller does next), and the result goes back in time. A ``wait_for time_ms`` step
  only sleeps: running out of time frees nothing.
- The closing read gets one step's budget; if it fails, the steps' outcomes still come back, without it.
"""

from __future__ import annotations

import contextlib
import logging
import math
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import trio

from engine._errors import ActionError, CDPError, StaleRefError
from engine._evaluate import STOP_LIMIT, evaluating, free_main_thread, free_on_the_way_out
from engine._navigating import documents_committed, navigating_note
from engine._refs import Shape
from engine._snapshot import _state, ref_session
from engine.steps import (
    DEFAULT_MAX_STEPS,
    DEFAULT_PER_STEP_TIMEOUT_MS,
    RESULT_MARGIN_S,
    ReturnMode,
    StepOutcome,
    StepsResult,
    step_budget,
    validate,
)

if TYPE_CHECKING:
    from engine._page import Page
    from engine._session import Session


async def _run_one(page: Page, step: dict[str, Any]) -> str | None:
    """Do one validated step; return the page text for read_page."""
    kind = step["type"]
    if kind == "navigate":
        await page.goto(step["url"])
    elif kind == "click":
        await page.click(step["target"])
    elif kind == "fill":
        await page.fill(step["target"], step["value"])
    elif kind == "press":
        await page.press(step["key"], ref=step.get("target"))
    elif kind == "hover":
        await page.hover(step["target"])
    elif kind == "select":
        await page.select_option(step["target"], step["values"])
    elif kind == "wait_for":
        if "time_ms" in step:
            await trio.sleep(step["time_ms"] / 1000)
        elif "text" in step:
            await page.wait_for(text=step["text"])
        elif "gone_text" in step:
            await page.wait_for(gone_text=step["gone_text"])
        else:
            await page.wait_for(load_state=step["load"])
    elif kind == "read_page":
        snap = await page.snapshot(
            interactive_only=step.get("interactive_only", False),
            delta=step.get("delta", False),
            max_chars=step.get("max_chars"),
        )
        return snap.text
    else:  # validate() lets nothing else through
        raise AssertionError(f"unvalidated step type {kind!r}")
    return None


log = logging.getLogger(__name__)

FREE_PROBE_S = 1.0
"""Seconds the page's main thread gets to answer after a step failed on time, before what runs there is
terminated (see the module's rules): a handler that is only slow finishes, one in an endless loop does
not hold the tab for good."""

_HELD_THREAD_CHECKS = frozenset({"time", "input handled", "verdict"})
"""The checks an ActionError names when the page may have held its main thread (see _stuck, unanswered,
and the actionability retries' "the checks did not finish in time")."""

FREE_LIMIT_S = 1.0
"""Seconds the termination gets after that look, when a step's own time allows them."""


async def _free_main_thread(page: Page, by: float, target: str | None) -> None:
    """After a step that failed on time: terminate what holds the main thread of the step's frame (its
    target's: an out-of-process iframe's has its own), if something does.

    Here when the look and the termination fit before ``by``, so the steps after it and the closing read
    find the page free; else in the background (:func:`_free_later`): a look cut to the time left
    terminated a page that was only busy, and no look left the tab hung."""
    now = trio.current_time()
    if by - now < FREE_PROBE_S + STOP_LIMIT:
        _free_later(page, target)
        return
    session = _frame_session(page, target)
    await free_main_thread(
        page, session, by=min(by, now + FREE_PROBE_S + FREE_LIMIT_S), probe_for=FREE_PROBE_S
    )


def _frame_session(page: Page, target: str | None) -> Session:
    return (ref_session(page, target) if target is not None else None) or page.session


_FREEING: weakref.WeakSet[Session] = weakref.WeakSet()
"""The sessions a background freeing looks at now: an agent retrying a held page starts no second one."""


def _free_later(page: Page, target: str | None) -> None:
    """The look and the termination in the background of the page's browser (``Browser._chore``), started
    at once beside what the caller does next; an evaluate of ours in flight is left to free the thread by
    its own deadline. The termination gets STOP_LIMIT: the browser's block, left meanwhile, waits for it.
    Left then, a tab that stays open (attached, not opened here) gets a short look and termination."""
    session = _frame_session(page, target)
    if session in _FREEING:
        return

    async def spare() -> bool:
        return evaluating(page)

    async def free() -> None:
        try:
            by = trio.current_time() + FREE_PROBE_S + STOP_LIMIT
            await free_main_thread(page, session, by=by, probe_for=FREE_PROBE_S, spare=spare)
        except trio.Cancelled:
            if page.target_id in page.browser._adopted:
                await free_on_the_way_out(page, session)
            raise
        finally:
            _FREEING.discard(session)

    _FREEING.add(session)
    if not page.browser._chore("freeing of a main thread a step left held", free):
        _FREEING.discard(session)
        log.debug("no freeing of %s: the browser's block is being left", session.session_id)


def _sleeps(step: dict[str, Any]) -> bool:
    """A ``wait_for time_ms`` step: it only sleeps, so running out of time says nothing of the page."""
    return step["type"] == "wait_for" and "time_ms" in step


def _error(exc: BaseException) -> dict[str, str]:
    return {"kind": type(exc).__name__, "message": str(exc)}


async def run_steps(
    page: Page,
    steps: Sequence[dict[str, Any]],
    *,
    fail_fast: bool = True,
    return_mode: ReturnMode = "final",
    max_steps: int = DEFAULT_MAX_STEPS,
    per_step_timeout_ms: int | None = DEFAULT_PER_STEP_TIMEOUT_MS,
) -> StepsResult:
    plan = validate(
        steps,
        max_steps=max_steps,
        return_mode=return_mode,
        per_step_timeout_ms=per_step_timeout_ms,
        fail_fast=fail_fast,
    )
    deadline = trio.current_effective_deadline()
    baseline: dict[str, str] | None = None
    if return_mode == "delta":
        baseline = _whole_lines(page)
        if not baseline:  # the page was never read: the state before the first step is the baseline
            with trio.move_on_at(deadline - RESULT_MARGIN_S):
                await page.snapshot()
            baseline = _whole_lines(page)

    outcomes: list[StepOutcome] = []
    pages: list[dict[str, Any]] = []
    failed: int | None = None
    skip: str | None = None  # why the remaining steps are not run
    stale: dict[str, int] = {}  # ref -> the step that found it stale
    documents = documents_committed(page)  # node:<id> targets name nodes of this document only
    last_read: dict[str, Any] | None = None
    for index, step in enumerate(plan):
        kind = step["type"]
        target = step.get("target")
        if skip is not None:
            outcomes.append(
                StepOutcome(
                    index=index,
                    type=kind,
                    ok=False,
                    duration_ms=0.0,
                    error={"kind": "Skipped", "message": skip},
                )
            )
            continue
        now = trio.current_time()
        limit = step_budget(
            now=now,
            deadline=deadline,
            per_step_timeout_ms=per_step_timeout_ms,
            timeout_ms=step.get("timeout_ms"),
        )
        error: dict[str, str] | None = None
        text: str | None = None
        on_time = False  # the step failed for lack of time: the page may hold its main thread
        if target is not None and target in stale:
            error = {
                "kind": "StaleRefError",
                "message": f"ref {target} was found stale at step {stale[target]}; not sent again. "
                "Take a new snapshot and use its refs",
            }
        elif target is not None and target.startswith("node:") and documents_committed(page) != documents:
            # A new document may live in a new renderer process, whose backendNodeIds start over: the
            # number can name another element there (a cross-site navigation: the wrong button clicked).
            error = {
                "kind": "StaleRefError",
                "message": f"{target} names a node of the document the steps began on, and the tab has "
                "loaded another since: the number may name another element now. Use a ref from a "
                "read_page step after the navigation",
            }
            stale[target] = index
        elif limit <= now:
            error = {"kind": "Skipped", "message": "no time was left of the caller's deadline"}
            skip = f"no time was left of the caller's deadline at step {index}"
        else:
            try:
                with trio.move_on_at(limit) as scope:
                    try:
                        text = await _run_one(page, step)
                    except (CDPError, ValueError, trio.TooSlowError) as exc:
                        error = _error(exc)
                        # The page may hold its main thread: the input was not handled, or the checks
                        # ran out of time (not: the element is of the wrong kind, or was not visible).
                        on_time = isinstance(exc, trio.TooSlowError) or (
                            isinstance(exc, ActionError) and exc.check in _HELD_THREAD_CHECKS
                        )
                        if isinstance(exc, StaleRefError) and target is not None:
                            stale[target] = index
            except trio.Cancelled:
                # Woken after the caller's deadline as well as the step's (a loaded machine), the caller's
                # scope takes the Cancelled and no result goes back; the thread is freed all the same (the
                # tab stayed hung).
                if trio.current_time() >= limit and not _sleeps(step):
                    _free_later(page, target)
                raise
            if scope.cancelled_caught:
                budget_ms = round((limit - now) * 1000)
                error = {
                    "kind": "TimeoutError",
                    "message": f"the step did not finish within its budget of {budget_ms} ms "
                    "(min of per_step_timeout_ms, its timeout_ms, and what was left of the deadline)."
                    + navigating_note(page),  # what held it, when Chromium held the tab mid-navigation
                }
            on_time = on_time or (scope.cancelled_caught and not _sleeps(step))
        outcomes.append(
            StepOutcome(
                index=index,
                type=kind,
                ok=error is None,
                duration_ms=(trio.current_time() - now) * 1000,
                error=error,
                output=text,
            )
        )
        if on_time:
            await _free_main_thread(page, deadline - RESULT_MARGIN_S, target)
        if error is None and kind == "read_page":
            last_read = {"step": index, "text": text}
            if return_mode == "all":
                pages.append(last_read)
        if error is not None:
            if failed is None:
                failed = index
            if kind == "navigate" and skip is None:
                skip = f"step {index} (navigate) failed; the steps after it depend on the page it was to load"
            elif fail_fast and skip is None:
                skip = f"step {index} failed and fail_fast=True"

    end = deadline - RESULT_MARGIN_S / 2 if deadline != math.inf else math.inf
    delta: dict[str, dict[str, str]] | None = None
    # The closing read is part of the result, not a step: a tab gone meanwhile (closed, crashed) or one
    # that does not answer in a step's budget leaves it out, and the steps' own outcomes still come back.
    read_by = step_budget(  # (before ``end``: a step's budget leaves all of RESULT_MARGIN_S)
        now=trio.current_time(), deadline=deadline, per_step_timeout_ms=per_step_timeout_ms, timeout_ms=None
    )
    if return_mode == "final":
        if last_read is None:
            with trio.move_on_at(read_by), contextlib.suppress(CDPError):
                pages.append({"step": None, "text": (await page.snapshot()).text})
        else:
            pages.append(last_read)
    elif return_mode == "delta":
        with trio.move_on_at(read_by), contextlib.suppress(CDPError):
            await page.snapshot()
            delta = _diff(baseline or {}, _whole_lines(page))
    url, title = page.session.url, ""
    with trio.move_on_at(end):
        try:
            info = await page.browser.session.execute_raw(
                "Target.getTargetInfo", {"targetId": page.target_id}
            )
            url, title = info["targetInfo"]["url"], info["targetInfo"]["title"]
        except CDPError:
            pass  # the tab is gone: the last URL the session saw stands
    return StepsResult(
        ok=failed is None,
        failed_step=failed,
        steps=outcomes,
        url=url,
        title=title,
        return_mode=return_mode,
        pages=pages,
        delta=delta,
    )


def _whole_lines(page: Page) -> dict[str, str]:
    """Ref -> line of the page's last whole snapshot (default options, not cut)."""
    whole = _state(page).baseline(Shape())
    return dict(whole.lines) if whole is not None else {}


def _diff(before: dict[str, str], after: dict[str, str]) -> dict[str, dict[str, str]]:
    """Ref-keyed changes between two ``ref -> snapshot line`` maps."""
    return {
        "added": {ref: line.strip() for ref, line in after.items() if ref not in before},
        "changed": {
            ref: line.strip() for ref, line in after.items() if ref in before and before[ref] != line
        },
        "removed": {ref: line.strip() for ref, line in before.items() if ref not in after},
    }
