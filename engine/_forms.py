"""Form actions: fill, type, select_option, check / uncheck, set_input_files.

``fill`` replaces the value the way typing would (the field focused, its text selected,
``Input.insertText``), then fires ``change`` (once: the browser's own at the next blur is stopped);
inputs that take no typed text (date, color, range) get their value set and ``input`` + ``change``
fired. ``type`` sends every character as its key presses.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import trio

from engine._actionability import (
    NotYet,
    call_on,
    new_group,
    object_id,
    release,
    retry_until_deadline,
    send_nowait,
)
from engine._errors import ActionError, ProtocolError, SessionDetached, StaleRefError
from engine._hit_target import GUARD_LIFETIME, SET_GUARD_JS, read_verdict
from engine._input import (
    FOCUS_HOLDER,
    click,
    drop_guards,
    focus_moved,
    input_across_commit,
    sessions_to_watch,
    typing_into,
)
from engine._keys import KEYS, key_event
from engine._waiting import navigation_watch

if TYPE_CHECKING:
    from engine._page import Page
    from engine._refs import ResolvedNode
    from engine._session import Session

log = logging.getLogger("engine.actions")

_PREPARE_FILL = """function(text, token, lifetime) {
  const el = this;
  // What goes in from here on must reach the element (see engine._hit_target's typing guard).
  const guarded = (outcome) => { (@SET_GUARD@).call(el, token, lifetime, true); return outcome; };
  // Else the text would go wherever the focus is.
  const focusMissed = () => {
    const holder = (@FOCUS_HOLDER@)(el);
    return holder && 'the element did not take the focus (' + holder + ' has it: the page moved it, or the '
      + 'element is inert or behind a modal dialog)';
  };
  if (!el.isConnected) return 'the element is no longer in the document';
  const r = el.getBoundingClientRect();
  if (!r.width || !r.height) return 'the element is not visible';
  if (el.matches(':disabled') || el.closest('[aria-disabled="true"]')) return 'the element is disabled';
  // A field inside a contenteditable region reads isContentEditable too: it is still a field.
  if (el.isContentEditable && el.localName !== 'input' && el.localName !== 'textarea') {
    el.focus();
    const missed = focusMissed();
    if (missed) return missed;
    const range = document.createRange(); range.selectNodeContents(el);
    const sel = getSelection(); sel.removeAllRanges(); sel.addRange(range);
    return guarded('typed');
  }
  const textual = ['text', 'search', 'url', 'tel', 'password', 'email', 'number'];
  if (el.localName === 'textarea' || (el.localName === 'input' && textual.includes(el.type))) {
    if (el.readOnly) return 'the field is read-only';
    // Typed into, a number input drops what is not a number and keeps an empty value.
    const number = /^-?([0-9]+(\\.[0-9]+)?|\\.[0-9]+)([eE][-+]?[0-9]+)?$/;  // HTML's floating-point number
    if (el.type === 'number' && text !== '' && !(number.test(text) && Number.isFinite(Number(text))))
      return 'the number input does not take the value ' + JSON.stringify(text);
    // The browser would drop an input's line breaks, or cut the text at maxlength, without a word (a
    // user sees it; a script does not).
    if (el.localName === 'input' && /[\\r\\n]/.test(text))
      return 'the field does not take the value ' + JSON.stringify(text) + ': an <input> holds one line '
        + 'and would drop its line breaks (fill a textarea, or give the text without them)';
    if (el.type !== 'number' && el.maxLength >= 0 && text.length > el.maxLength)
      return 'the field does not take the value ' + JSON.stringify(text) + ': it holds at most '
        + el.maxLength + ' characters (maxlength), the text has ' + text.length;
    el.focus();
    const missed = focusMissed();
    if (missed) return missed;
    el.select();
    return guarded('typed');
  }
  const untyped = ['checkbox', 'radio', 'file', 'button', 'submit', 'reset', 'image', 'hidden'];
  if (el.localName === 'input' && !untyped.includes(el.type)) {
    el.focus();
    const before = el.value;
    el.value = text;
    // A color input keeps its hex digits in lower case: "#00FF00" is taken as "#00ff00".
    const taken = el.type === 'color' ? el.value === text.toLowerCase() : el.value === text;
    if (!taken) {
      el.value = before;  // refused: the field keeps what the page put there
      return 'the ' + el.type + ' input does not take the value ' + JSON.stringify(text);
    }
    return 'set';  // its input and change go out under the navigation watch (_SET)
  }
  return 'the element is not a text field, textarea or contenteditable (it is <' + el.localName + '>)';
}""".replace("@FOCUS_HOLDER@", FOCUS_HOLDER).replace("@SET_GUARD@", SET_GUARD_JS)

_SET = """function() {
  this.dispatchEvent(new Event('input', {bubbles: true}));
  this.dispatchEvent(new Event('change', {bubbles: true}));
}"""

_CHANGED = """function() {
  const el = this;
  if (el.isContentEditable) return;
  // The browser still owes a change of its own for the typed text, at the next blur or Enter (or now, if
  // a change listener moves the focus): the same news twice. That one is stopped at the top of its path
  // (the window, or the shadow root it does not leave), before the page's listeners but for capturing
  // ones added there earlier, unless the value changed again since (more typing: then it is news).
  const root = el.getRootNode();
  const top = root instanceof ShadowRoot ? root : el.ownerDocument.defaultView;
  const announced = el.value;
  const done = () => {
    top.removeEventListener('change', skip, true);
    el.removeEventListener('input', done, true);
  };
  const skip = (event) => {
    if (event.target !== el || !event.isTrusted) return;
    done();
    if (el.value === announced) event.stopImmediatePropagation();
  };
  top.addEventListener('change', skip, true);
  el.addEventListener('input', done, true);
  el.dispatchEvent(new Event('change', {bubbles: true}));
}"""


async def _editable(
    page: Page, what: str, ref: str, text: str, group: str, *, armed: list[tuple[Session, str]]
) -> tuple[ResolvedNode, str, str]:
    """Retry until the field is ready (visible, enabled, editable); returns the node, handle and outcome.
    A field made ready to type into has the typing guard (token ``group``), listed in ``armed``."""

    async def attempt() -> tuple[ResolvedNode, str, str] | NotYet:
        node = await page.resolve(ref)
        with contextlib.suppress(ProtocolError):  # no box: the checks below say so
            await node.session.execute_raw(
                "DOM.scrollIntoViewIfNeeded", {"backendNodeId": node.backend_node_id}
            )
        handle = await object_id(node.session, node.backend_node_id, group, node.frame_id)
        if handle is None:
            return NotYet("attached", "the element is no longer in the document")
        armed.append((node.session, handle))  # listed before it is set (see check_actionable)
        outcome = await call_on(node.session, handle, _PREPARE_FILL, text, group, GUARD_LIFETIME * 1000)
        if outcome in ("typed", "set"):
            return node, handle, outcome
        if "does not take" in outcome or "not a text" in outcome:
            # The value, or the kind of element (a button, a select): waiting would not help.
            raise ActionError(f"{what} {ref}: {outcome}", ref=ref, check="editable")
        if "take the focus" in outcome:
            return NotYet("focus", str(outcome))
        check = "editable" if "read-only" in outcome else outcome.split()[-1]
        return NotYet(check, str(outcome))

    return await retry_until_deadline(what, ref, attempt, page=page)


async def fill(page: Page, ref: str, text: str) -> None:
    """Clear the field and put ``text`` in it, firing ``input`` and ``change``."""
    if not isinstance(text, str):
        raise TypeError(f"fill takes the text as a str, not {type(text).__name__}")
    group = new_group()
    armed: list[tuple[Session, str]] = []  # typing guards set and not read yet
    sessions = {page.session}
    try:
        node, handle, outcome = await _editable(page, "fill", ref, text, group, armed=armed)
        session = node.session
        sessions.add(session)
        # Watched from the field's first event on, not during the checks: a change handler that navigates
        # (a form's submit()) gets its new document parsed before this returns, and a navigation of the
        # page's own while the field was not ready yet is neither waited for nor stopped.
        async with navigation_watch([page.session], ref):
            if outcome == "set":
                await call_on(session, handle, _SET)
            elif text:
                await input_across_commit(page, "Input.insertText", {"text": text}, f"fill {ref}", node)
            else:
                await trio.lowlevel.checkpoint_if_cancelled()  # no key down without its up (mouse_click)
                send_nowait(page.session, "Input.dispatchKeyEvent", key_event("down", KEYS["Delete"], 0))
                await page.session.execute_raw("Input.dispatchKeyEvent", key_event("up", KEYS["Delete"], 0))
            if outcome == "typed":
                missed = await read_verdict(session, handle, group, typing=True)
                armed.clear()
                if missed is not None:
                    raise focus_moved(f"fill {ref}", ref, missed, "nothing was typed")
                await call_on(session, handle, _CHANGED)
    finally:
        await drop_guards(page, armed, group, typing=True)
        for where in sessions:
            release(where, group)


async def type_text(page: Page, ref: str, text: str, *, delay_ms: float) -> None:
    """Focus ``ref`` and type ``text`` key by key (characters off the key table go in as text)."""
    node = await page.resolve(ref)
    session = page.session
    typed = False
    try:
        async with (
            typing_into(page, node, f"type {ref}", typing=True) as sent,
            navigation_watch([session], node.ref),
        ):
            for index, char in enumerate(text, 1):
                key = KEYS.get("Enter" if char == "\n" else char)
                if key is None:
                    await input_across_commit(page, "Input.insertText", {"text": char}, f"type {ref}", node)
                else:
                    mask = 8 if len(char) == 1 and char != char.lower() else 0
                    sent.count += 1
                    # An Enter that ends the text, sent while the tab lived (a key before it that closed
                    # the tab can leave the rest sent unseen: "x\ny" returned OK without the y).
                    typed = index == len(text) and char == "\n" and not session.detached
                    # No key down without its up, and none after the deadline (see mouse_click).
                    await trio.lowlevel.checkpoint_if_cancelled()
                    send_nowait(session, "Input.dispatchKeyEvent", key_event("down", key, mask))
                    await session.execute_raw("Input.dispatchKeyEvent", key_event("up", key, mask))
                if delay_ms:
                    await trio.sleep(delay_ms / 1000)
    except SessionDetached:
        # A tab that closes itself on the Enter that ends the text (a chat popup's) can be gone before
        # the key's events are answered: all of the text went in (as press).
        if not (typed and session.detached):
            raise


_SELECT = """function(wanted, apply) {
  if (this.localName !== 'select')
    return {error: 'the element is not a <select> (it is <' + this.localName + '>)'};
  // What a user needs to pick from it: waited for (NotYet), as the pointer actions' checks are.
  const r = this.getBoundingClientRect();
  if (!r.width || !r.height) return {notyet: ['visible', 'the select is not visible']};
  if (this.matches(':disabled')) return {notyet: ['enabled', 'the select is disabled']};  // a fieldset's too
  this.focus();  // fails silently on an inert select, or one behind a modal dialog
  const holder = (@FOCUS_HOLDER@)(this);
  if (holder)
    return {notyet: ['focus', 'the select did not take the focus (' + holder + ' has it): it is inert or '
      + 'behind a modal dialog']};
  const options = Array.from(this.options);
  const picked = [];
  for (const want of wanted) {
    const o = options.find(o => o.value === want)
      || options.find(o => o.label.trim() === want || o.text.trim() === want);
    if (!o) {
      const names = JSON.stringify(options.map(o => o.label.trim() || o.value));
      return {error: 'no option has the value or label ' + JSON.stringify(want) + '; the options: ' + names};
    }
    // :disabled: in a disabled optgroup too
    if (o.matches(':disabled')) return {error: 'the option ' + JSON.stringify(want) + ' is disabled'};
    if (!picked.includes(o)) picked.push(o);  // named twice (by value and label): selected once
  }
  if (!this.multiple && picked.length > 1)
    return {error: 'the select takes one option, not ' + picked.length};
  if (!apply) return {ready: true, values: picked.map(o => o.value)};
  for (const o of options) o.selected = picked.includes(o);
  this.dispatchEvent(new Event('input', {bubbles: true}));
  this.dispatchEvent(new Event('change', {bubbles: true}));
  // What it holds now: a change handler may have set it to something else.
  return {values: picked.map(o => o.value), now: Array.from(this.selectedOptions, o => o.value)};
}""".replace("@FOCUS_HOLDER@", FOCUS_HOLDER)


async def select_option(page: Page, ref: str, values: Sequence[str]) -> list[str]:
    """Select the options of ``ref`` whose value or label is in ``values``; returns the values the select
    holds once its change handlers ran."""
    if isinstance(values, str):
        values = [values]
    wanted = {"value": list(values)}
    group = new_group()
    sessions = {page.session}

    async def attempt() -> tuple[ResolvedNode, str, list[str]] | NotYet:
        node = await page.resolve(ref)
        sessions.add(node.session)
        handle = await object_id(node.session, node.backend_node_id, group, node.frame_id)
        if handle is None:
            return NotYet("attached", "the element is no longer in the document")
        got = await call_on(node.session, handle, _SELECT, wanted, False)
        if "notyet" in got:
            return NotYet(*got["notyet"])
        if "error" in got:  # the wrong element or option: waiting would not help
            raise ActionError(f"select_option {ref}: {got['error']}", ref=ref, check="option")
        return node, handle, got["values"]

    try:
        node, handle, picked = await retry_until_deadline("select_option", ref, attempt, page=page)
        # A change handler may navigate (a jump menu): its new document is parsed before this returns.
        async with navigation_watch(sessions_to_watch(page, node), node.ref) as watch:
            try:
                got = await call_on(node.session, handle, _SELECT, wanted, True)
            except SessionDetached:
                # The pick goes to the select's own session, not the page's as a click's or a key's input:
                # in an out-of-process iframe, a navigation its change handler started (top.location, or
                # the frame to another site) takes the frame and its session away, and Chromium dropped the
                # reply on the way (2 runs of 23): the pick was made. The wait goes on for that navigation.
                if node.session is page.session or node.session.connection.closed is not None:
                    raise
                if not watch.requested:  # the frame went for another reason: its ref is stale
                    raise
                got = {"values": picked, "now": picked}  # the select went with its document
    finally:
        for session in sessions:
            release(session, group)
    if "error" in got or "notyet" in got:  # it changed since the check, a round trip ago
        problem = got["error"] if "error" in got else got["notyet"][1]
        raise ActionError(f"select_option {ref}: {problem}", ref=ref, check="option")
    # What it holds now: a change handler may have set more (an "All" option), or set it back (a select
    # that adds a tag and resets): that is the page's answer, not a failure.
    now: list[str] = got["now"]
    if sorted(now) != sorted(got["values"]):
        log.info("select_option %s: picked %s; the page's change handler left %s", ref, got["values"], now)
    return now


async def _ask_element(node: ResolvedNode, js: str, *args: Any) -> Any:
    """What ``js`` (``this``: the element, in the engine's world) returns for ``node``.

    Raises:
        ActionError: the element is no longer in the document (``check="attached"``).
    """
    group = new_group()
    try:
        handle = await object_id(node.session, node.backend_node_id, group, node.frame_id)
        if handle is None:
            raise ActionError(
                f"{node.ref}: the element is no longer in the document", ref=node.ref, check="attached"
            )
        return await call_on(node.session, handle, js, *args)
    finally:
        release(node.session, group)


_CHECKED = """function() {
  const el = this.localName === 'label' && this.control ? this.control : this;
  if (el.localName === 'input' && ['checkbox', 'radio'].includes(el.type)) return [el.checked, el.type];
  const aria = el.getAttribute('aria-checked');
  return aria === null ? null : [aria === 'true', el.getAttribute('role') || ''];
}"""


async def set_checked(page: Page, ref: str, checked: bool) -> None:
    """Click ``ref`` if its checked state is not ``checked`` yet, then make sure it changed."""

    async def state() -> tuple[bool, str]:
        value = await _ask_element(await page.resolve(ref), _CHECKED)
        if value is None:
            raise ActionError(
                f"{ref} is not a checkbox, radio or aria-checked element", ref=ref, check="checkable"
            )
        return bool(value[0]), str(value[1])

    if (await state())[0] == checked:
        return
    await click(page, ref)
    try:
        now, kind = await state()
    except StaleRefError as exc:
        if exc.reason not in ("navigated", "removed"):
            raise
        # The click went through and the page moved on (a change handler that submits the form): the
        # state is gone with the document. Raising here told the caller nothing happened.
        log.info(
            "%s %s: clicked; its document went before its state could be read (%s)", ref, exc.reason, exc
        )
        return
    if now != checked:
        what = "check" if checked else "uncheck"
        why = "a radio cannot be unchecked" if kind == "radio" and not checked else "the page set it back"
        raise ActionError(
            f"{what} {ref}: the click did not change its state ({why})", ref=ref, check="checked"
        )


async def set_input_files(page: Page, ref: str, files: Sequence[str | os.PathLike[str]]) -> None:
    """Put ``files`` (paths on this machine, which the browser must be able to read) in a file input."""
    listed = [files] if isinstance(files, (str, os.PathLike)) else files
    paths = [os.path.abspath(os.fspath(f)) for f in listed]  # noqa: ASYNC240 - no I/O, string work
    missing = [p for p in paths if not os.path.isfile(p)]  # noqa: ASYNC240 - a stat per file, no waiting
    if missing:
        raise FileNotFoundError(f"set_input_files: no such file(s): {missing}")
    node = await page.resolve(ref)
    try:
        multiple = await _ask_element(node, _FILE_INPUT, not paths)
        if multiple is None:
            raise ActionError(
                f"set_input_files {ref}: it is not an <input type=file>", ref=ref, check="file input"
            )
        if len(paths) > 1 and not multiple:
            # Chromium would keep the first and say nothing.
            raise ActionError(
                f"set_input_files {ref}: the input takes one file (it has no multiple attribute), not "
                f"{len(paths)}; nothing was set",
                ref=ref,
                check="file input",
            )
        if paths:  # (an empty list was cleared in the page: DOM.setFileInputFiles left the files there)
            await node.session.execute_raw(
                "DOM.setFileInputFiles", {"files": paths, "backendNodeId": node.backend_node_id}
            )
    except ProtocolError as exc:
        raise ActionError(
            f"set_input_files {ref}: {exc.message} (is it an <input type=file>?)", ref=ref, check="file input"
        ) from None


_FILE_INPUT = """function (clear) {
  if (this.localName !== 'input' || this.type !== 'file') return null;
  if (clear && this.files.length) {
    this.value = '';
    this.dispatchEvent(new Event('input', {bubbles: true, composed: true}));
    this.dispatchEvent(new Event('change', {bubbles: true}));
  }
  return this.multiple || this.webkitdirectory;
}"""
"""Whether the file input takes several files (``multiple``, or a directory's: ``webkitdirectory``; null:
not a file input); with ``clear``, empty it as a user would, with its input and change events."""
