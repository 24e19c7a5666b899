"""Form actions on a real headless Chromium: fill, type, press, selects, checkboxes, radios, files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import trio

from engine import ActionError, Browser
from tests.browser.integration._actions_helpers import open_page, ref, value
from tests.stalls import raised_before_deadline

pytestmark = pytest.mark.browser


async def test_fill_replaces_the_value_and_fires_input_and_change(browser: Browser, server: str) -> None:
    page = await open_page(browser, f"{server}/actions/form.html")
    with trio.fail_after(10):
        snap = await page.snapshot()
        await page.fill(ref(snap, "textbox", "Name"), "Ada Lovelace")
        await page.fill(ref(snap, "textbox", "Notes"), "line one\nline two")
        await page.fill(ref(snap, "textbox", "Editor"), "new text")
        await page.fill(ref(snap, "Date", "Date"), "2024-05-17")
    assert await value(page, "document.getElementById('name').value") == "Ada Lovelace"
    assert await value(page, "document.getElementById('notes').value") == "line one\nline two"
    assert await value(page, "document.getElementById('editor').textContent") == "new text"
    assert await value(page, "document.getElementById('date').value") == "2024-05-17"
    log = (await value(page, "document.getElementById('log').textContent")).split()
    for field in ("name", "notes", "date"):
        assert f"input:{field}" in log
        # Once, though each field lost the focus to the next: the browser's own change at that blur
        # would tell the same news again.
        assert log.count(f"change:{field}") == 1, log
    assert "input:editor" in log
    with trio.fail_after(10):
        await page.fill(ref(snap, "textbox", "Name"), "")
    assert await value(page, "document.getElementById('name').value") == ""


_CHANGES = (
    "data:text/html,<input aria-label=Jump onchange='other.focus()'><input id=other aria-label=Other>"
    "<div id=host></div><script>window.log = []; const root = host.attachShadow({mode: 'open'});"
    "root.innerHTML = '<input aria-label=Inside>';"
    "for (const el of [document.querySelector('input'), root.querySelector('input')])"
    "  el.addEventListener('change', () => log.push(el.getAttribute('aria-label')));</script>"
)


async def test_fill_fires_one_change_when_a_handler_moves_the_focus_or_in_a_shadow_root(
    browser: Browser,
) -> None:
    # The browser's own change, owed for the typed text, came during fill's (a change handler that moves
    # the focus) or was never seen at the window (a shadow root's input): the listeners ran twice.
    page = await open_page(browser, _CHANGES)
    with trio.fail_after(10):
        snap = await page.snapshot()
        await page.fill(ref(snap, "textbox", "Jump"), "abc")
        await page.fill(ref(snap, "textbox", "Inside"), "abc")
        await page.click(ref(snap, "textbox", "Other"))  # the shadow input loses the focus
    assert await value(page, "window.log") == ["Jump", "Inside"]


async def test_fill_with_a_value_the_input_cannot_take_fails_at_once(browser: Browser) -> None:
    # A number input typed "ten" (or "1e400", past a double) keeps an empty value: fill returned OK.
    page = await open_page(
        browser, "data:text/html,<label>Qty <input type=number></label><label>Day <input type=date></label>"
    )
    with trio.fail_after(10):
        snap = await page.snapshot()
        quantity = ref(snap, "spinbutton", "Qty")
        await page.fill(quantity, "-1.5e2")
        assert await value(page, "document.querySelector('[type=number]').value") == "-1.5e2"
        day = ref(snap, "Date", "Day")
        cases = ((quantity, "ten"), (quantity, "+5"), (quantity, "5."), (quantity, "1e400"), (day, "soon"))
        for field, text in cases:
            started = trio.current_time()
            with pytest.raises(
                ActionError, match=re.escape(f'input does not take the value "{text}"')
            ) as caught:
                await page.fill(field, text)
            assert caught.value.check == "editable"
            assert trio.current_time() - started < 2  # not retried until the deadline
        assert await value(page, "document.querySelector('[type=number]').value") == "-1.5e2"


async def test_a_refused_value_leaves_the_field_as_it_was(browser: Browser) -> None:
    # A range refused "7.5" yet held 8 after (set with no event), an input dropped the line break of
    # "a\nb" and fill returned OK, and a color refused "#00FF00", which it takes as "#00ff00".
    page = await open_page(
        browser,
        "data:text/html,<label>Volume <input type=range min=0 max=10 value=5></label>"
        "<label>Paint <input type=color></label><label>Street <input value=old></label>"
        "<label>Note <textarea></textarea></label>",
    )
    with trio.fail_after(10):
        refs = {r.name: r.ref for r in (await page.snapshot()).refs.values()}
        for name, text in (("Volume", "7.5"), ("Street", "a\nb")):
            with pytest.raises(ActionError, match="does not take the value"):
                await page.fill(refs[name], text)
        await page.fill(refs["Paint"], "#00FF00")
        await page.fill(refs["Note"], "a\nb")
        assert await value(page, "[...document.querySelectorAll('input, textarea')].map(e => e.value)") == [
            "5",
            "#00ff00",
            "old",
            "a\nb",
        ]


async def test_fill_with_more_than_maxlength_fails_at_once_and_cuts_nothing(browser: Browser) -> None:
    # The browser cut "abcdef" to "abc" at maxlength, and fill returned OK.
    page = await open_page(browser, "data:text/html,<label>Zip <input maxlength=3 value=xy></label>")
    with trio.fail_after(10):
        zip_code = ref(await page.snapshot(), "textbox", "Zip")
        with pytest.raises(ActionError, match=r"at most 3 characters \(maxlength\), the text has 6") as cut:
            await page.fill(zip_code, "abcdef")
        assert cut.value.check == "editable"
        assert await value(page, "document.querySelector('input').value") == "xy"  # nothing lost
        await page.fill(zip_code, "abc")
        assert await value(page, "document.querySelector('input').value") == "abc"


async def test_fill_of_an_element_that_is_no_text_field_fails_at_once(browser: Browser) -> None:
    page = await open_page(browser, "data:text/html,<button>Go</button><select aria-label=Size></select>")
    with trio.fail_after(10):
        snap = await page.snapshot()
        for role, name, tag in (("button", "Go", "button"), ("combobox", "Size", "select")):
            started = trio.current_time()
            with pytest.raises(ActionError, match=f"not a text field, textarea or contenteditable .*<{tag}>"):
                await page.fill(ref(snap, role, name), "text")
            assert trio.current_time() - started < 2  # not retried until the deadline


_FOCUS_THIEVES = (
    "data:text/html,<label>Name <input id=name></label><label>Search <input id=search></label>"
    "<label>Redirect <input id=redir onfocus=\"document.getElementById('search').focus()\"></label>"
    "<dialog id=dlg><label>Box <input id=box></label></dialog>"
)
_VALUES = "Object.fromEntries([...document.querySelectorAll('input')].map(i => [i.id, i.value]))"


async def test_text_never_goes_to_a_field_other_than_the_one_named(browser: Browser) -> None:
    # el.focus() fails silently (an inert field, one behind a modal dialog opened after the snapshot) and a
    # focus handler may move the focus on: fill and type put the text in whatever had the focus, and
    # returned as if it had worked.
    page = await open_page(browser, _FOCUS_THIEVES)
    with trio.fail_after(10):
        snap = await page.snapshot()
    name, redirect = ref(snap, "textbox", "Name"), ref(snap, "textbox", "Redirect")
    cases = {
        "modal": ("document.getElementById('dlg').showModal(); document.getElementById('box').focus()", name),
        "inert": (
            "document.getElementById('search').focus(); document.getElementById('name').inert = true",
            name,
        ),
        "handler": ("document.getElementById('search').focus()", redirect),
    }
    for case, (setup, target) in cases.items():
        with trio.fail_after(10):
            await value(page, setup)
        raised = await raised_before_deadline(
            ActionError,
            1,
            lambda: page.fill(target, "filled"),
            match="did not take the focus",
        )
        assert raised.error.check == "focus", case
        with pytest.raises(ActionError, match="did not take the focus") as caught, trio.fail_after(5):
            await page.type(target, "typed")
        assert caught.value.check == "focusable", case
        with pytest.raises(ActionError, match="did not take the focus") as caught, trio.fail_after(5):
            await page.press("x", ref=target)
        assert caught.value.check == "focusable", case
        with trio.fail_after(5):
            assert set((await value(page, _VALUES)).values()) == {""}, case
            await value(
                page, "document.getElementById('dlg').close(); document.getElementById('name').inert = false"
            )
    with trio.fail_after(10):
        await page.fill(name, "works")
        assert (await value(page, _VALUES))["name"] == "works"
        # Read-only: fill refused it, type returned OK having typed nothing; a key press there is fine.
        await value(page, "document.getElementById('name').readOnly = true")
        with pytest.raises(ActionError, match="the field is read-only") as caught:
            await page.type(name, "more")
        assert caught.value.check == "editable"
        await page.press("End", ref=name)


_FOCUS_MOVED_LATER = (
    "data:text/html,<label>Card <input id=a></label><label>Search <input id=b></label>"
    "<script>a.onfocus = () => queueMicrotask(() => b.focus())</script>"
)


@pytest.mark.parametrize("action", ["fill", "type", "press"])
async def test_a_focus_moved_on_after_the_field_took_it_stops_the_text(browser: Browser, action: str) -> None:
    # A focus handler that moves the focus on a moment later (from a microtask here; a task or an animation
    # frame on real pages), after the check that the field has it: the text went into the other field and
    # the action returned as done (fill 2 times in 5, type 4 in 5).
    page = await open_page(browser, _FOCUS_MOVED_LATER)
    with trio.fail_after(10):
        snap = await page.snapshot()
    card, search = ref(snap, "textbox", "Card"), ref(snap, "textbox", "Search")
    with pytest.raises(ActionError, match="moved the focus to input#b") as caught, trio.fail_after(5):
        if action == "fill":
            await page.fill(card, "4111")
        elif action == "type":
            await page.type(card, "4111")
        else:
            await page.press("x", ref=card)
    assert caught.value.check == "focus"
    assert await value(page, "[a.value, b.value]") == ["", ""]
    with trio.fail_after(5):  # no guard stays behind to stop the next text
        await page.fill(search, "ok")
        assert await value(page, "b.value") == "ok"


async def test_type_goes_key_by_key_and_press_sends_combos(browser: Browser, server: str) -> None:
    page = await open_page(browser, f"{server}/actions/form.html")
    with trio.fail_after(10):
        snap = await page.snapshot()
        name = ref(snap, "textbox", "Name")
        await page.fill(name, "")
        await value(page, "window.keys = []")
        await page.type(name, "Hi é!")
        assert await value(page, "document.getElementById('name').value") == "Hi é!"
        await page.press("Control+a", ref=name)
        await page.press("Backspace")
        assert await value(page, "document.getElementById('name').value") == ""
        await page.type(name, "abc")
        await page.press("Shift+ArrowLeft")
        await page.press("Shift+ArrowLeft")
        selected = await value(
            page,
            "[document.getElementById('name').selectionStart, document.getElementById('name').selectionEnd]",
        )
    assert selected == [1, 3]
    keys = await value(page, "window.keys")
    assert keys[:2] == ["H+shift", "i"]
    assert "a+ctrl" in keys
    assert "ArrowLeft+shift" in keys


async def test_select_option_by_value_or_label_single_and_multiple(browser: Browser, server: str) -> None:
    page = await open_page(browser, f"{server}/actions/form.html")
    with trio.fail_after(10):
        snap = await page.snapshot()
        colour = ref(snap, "combobox", "Colour")
        assert await page.select_option(colour, "Blue") == ["b"]
        assert await page.select_option(colour, ["g"]) == ["g"]
        sizes = ref(snap, "listbox", "Sizes")
        assert await page.select_option(sizes, ["Small", "l"]) == ["s", "l"]
        with pytest.raises(ActionError, match=r"Purple.*Red"):
            await page.select_option(colour, "Purple")
        with pytest.raises(ActionError, match="takes one option"):
            await page.select_option(colour, ["Red", "Blue"])
    assert await value(page, "document.getElementById('colour').value") == "g"
    assert await value(
        page, "Array.from(document.getElementById('sizes').selectedOptions).map(o => o.value)"
    ) == ["s", "l"]
    log = await value(page, "document.getElementById('log').textContent")
    assert "change:colour" in log
    assert "change:sizes" in log


_SELECTS = (
    "data:text/html,<select aria-label=Colour><option>Red</option>"
    "<optgroup label=Dark disabled><option>Navy</option></optgroup></select>"
    "<fieldset id=set disabled><select aria-label=Size><option>S</option><option>M</option></select>"
    "</fieldset>"
    "<div id=box><select aria-label=Fruit><option>Apple</option><option>Pear</option></select></div>"
    "<dialog id=dlg>modal</dialog>"
    "<script>window.changes = 0; document.addEventListener('change', () => window.changes++)</script>"
)


async def test_select_option_picks_only_what_a_user_could(browser: Browser) -> None:
    # It checked only the select's own disabled and the option's: an option of a disabled optgroup, a
    # select in a disabled fieldset, an inert one and one behind a modal dialog all changed, with events.
    page = await open_page(browser, _SELECTS)
    with trio.fail_after(10):
        snap = await page.snapshot()
    colour, size, fruit = (
        ref(snap, "combobox", "Colour"),
        ref(snap, "combobox", "Size"),
        ref(snap, "combobox", "Fruit"),
    )
    with trio.fail_after(5), pytest.raises(ActionError, match='the option "Navy" is disabled') as caught:
        await page.select_option(colour, "Navy")  # at once: waiting would not help
    assert caught.value.check == "option"
    cases = {"fieldset": (size, "M", "enabled", ""), "inert": (fruit, "Pear", "focus", "box.inert = true")}
    cases["modal"] = (fruit, "Pear", "focus", "box.inert = false; dlg.showModal()")
    for case, (target, option, check, setup) in cases.items():
        with trio.fail_after(5):
            await value(page, setup or "0")
        raised = await raised_before_deadline(
            ActionError,
            1,
            lambda: page.select_option(target, option),
        )
        assert raised.error.check == check, case
    with trio.fail_after(5):
        assert await value(page, "window.changes") == 0
        assert await value(page, "[...document.querySelectorAll('select')].map(s => s.value)") == [
            "Red",
            "S",
            "Apple",
        ]
        # A select that becomes usable within the deadline is waited for, as the pointer actions wait.
        await value(page, "dlg.close(); setTimeout(() => { set.disabled = false }, 300), 0")
        assert await page.select_option(size, "M") == ["M"]
        assert await page.select_option(fruit, "Pear") == ["Pear"]
        assert await value(page, "window.changes") == 2


async def test_select_option_says_what_the_select_holds_after_its_change(browser: Browser) -> None:
    # It returned what it picked: a change handler that set the select back left the caller believing in
    # "L" while it held "S" (raising instead refused pages that reset a select on purpose, an add-a-tag
    # select); an option named twice (by value and by label) came back twice.
    page = await open_page(
        browser,
        "data:text/html,<select aria-label=Size onchange=\"this.value = 'S'\">"
        "<option>S</option><option value=L>Large</option></select>"
        "<select aria-label=Many multiple><option value=1>One</option><option>Two</option></select>",
    )
    with trio.fail_after(10):
        snap = await page.snapshot()
    with trio.fail_after(5):
        assert await page.select_option(ref(snap, "combobox", "Size"), "L") == ["S"]
        assert await page.select_option(ref(snap, "listbox", "Many"), ["1", "One", "Two"]) == ["1", "Two"]


async def test_check_and_uncheck_checkboxes_and_radios(browser: Browser, server: str) -> None:
    page = await open_page(browser, f"{server}/actions/form.html")
    with trio.fail_after(10):
        snap = await page.snapshot()
        gift = ref(snap, "checkbox", "Gift wrap")
        await page.check(gift)
        await page.check(gift)  # already checked: nothing to do
        assert await value(page, "document.getElementById('gift').checked") is True
        await page.uncheck(gift)
        assert await value(page, "document.getElementById('gift').checked") is False
        await page.check(ref(snap, "radio", "Fast"))
        assert await value(page, "document.querySelector('input[name=speed]:checked').value") == "fast"
        with pytest.raises(ActionError, match="radio cannot be unchecked"):
            await page.uncheck(ref(snap, "radio", "Fast"))


async def test_check_whose_change_submits_the_form_returns_and_one_set_back_says_so(
    browser: Browser, server: str
) -> None:
    # The state read after the click raised StaleRefError ("navigated"): the caller was told nothing
    # happened, when the form was submitted; and a checkbox set back by its page was blamed on a radio.
    page = await open_page(browser, f"{server}/steps/index.html")
    with trio.fail_after(10):
        await value(
            page,
            'document.body.innerHTML = \'<form action="/steps/next.html"><label><input type=checkbox '
            'name=agree onchange="this.form.submit()"> Agree and go</label></form><label><input '
            'type=checkbox id=back onclick="event.preventDefault()"> Flaky</label>\'',
        )
        snap = await page.snapshot()
        await page.check(ref(snap, "checkbox", "Agree and go"))
        assert "/steps/next.html?agree=on" in await value(page, "location.href")
        await page.back()
        snap = await page.snapshot()
    with (
        trio.fail_after(10),
        pytest.raises(ActionError, match=r"did not change its state \(the page set it back\)"),
    ):
        await page.check(ref(snap, "checkbox", "Flaky"))


async def test_set_input_files_puts_the_file_in_the_input(
    browser: Browser, server: str, tmp_path: Path
) -> None:
    report = tmp_path / "report.pdf"
    report.write_bytes(b"%PDF-1.4 test")
    page = await open_page(browser, f"{server}/actions/form.html")
    with trio.fail_after(10):
        snap = await page.snapshot()
        await page.set_input_files(ref(snap, "button", "Report"), [str(report)])
    files = await value(
        page, "Array.from(document.getElementById('report').files).map(f => f.name + ':' + f.size)"
    )
    assert files == ["report.pdf:13"]
    assert "change:report" in await value(page, "document.getElementById('log').textContent")
    with pytest.raises(FileNotFoundError, match=r"nope\.pdf"):
        await page.set_input_files(ref(snap, "button", "Report"), [str(tmp_path / "nope.pdf")])
    # Two files into an input without `multiple` kept the first and said OK; [] left the files there.
    with trio.fail_after(10), pytest.raises(ActionError, match=r"takes one file .* not 2; nothing was set"):
        await page.set_input_files(ref(snap, "button", "Report"), [str(report), str(report)])
    assert await value(page, "document.getElementById('report').files.length") == 1
    with trio.fail_after(10):
        await page.set_input_files(ref(snap, "button", "Report"), [])
    assert await value(page, "document.getElementById('report').files.length") == 0
    assert await value(page, "document.getElementById('log').textContent.split('change:').length") == 3


_PAGE_WORK = (
    "data:text/html,<label>Card <input id=card></label><input id=raw type=hidden>"
    "<label>First <input id=a></label><label>Next <input id=b></label>"
    "<div contenteditable id=editor>Editor <label>Inner <input id=inner></label></div>"
    "<script>card.oninput = () => { raw.value = card.value; raw.dispatchEvent(new Event('input')) };"
    "a.onkeydown = (e) => { if (e.key === 'Enter') b.focus() };"
    "addEventListener('keydown', (e) => { if (e.key === 'Enter' && e.target === c) { e.preventDefault();"
    "  e.stopImmediatePropagation(); window.sent = c.value; b.focus() } }, true);</script>"
    "<label>Chat <input id=c></label>"
)


async def test_the_typing_guard_lets_the_page_do_its_own_work(browser: Browser) -> None:
    # Refused as "the focus moved" while the text had gone in: a mask that fires its own input event on a
    # hidden field, and a keydown handler that moves on to the next field on Enter; and a field inside a
    # contenteditable region got its text put into the editor instead (fill chose the editor's branch).
    page = await open_page(browser, _PAGE_WORK)
    with trio.fail_after(10):
        snap = await page.snapshot()
        await page.fill(ref(snap, "textbox", "Card"), "4111")
        await page.type(ref(snap, "textbox", "Card"), "22")
        assert await value(page, "[card.value, raw.value]") == ["411122", "411122"]
        await page.press("Enter", ref=ref(snap, "textbox", "First"))
        assert await value(page, "document.activeElement.id") == "b"
        # A window listener of the page's handles Enter before the guard sees it, and moves the focus on in
        # the same frame: it was refused as keys gone into another frame, after the text was sent.
        await page.type(ref(snap, "textbox", "Chat"), "hi\n")
        assert await value(page, "[window.sent, document.activeElement.id]") == ["hi", "b"]
        await page.fill(ref(snap, "textbox", "Inner"), "inside")
        assert await value(page, "[inner.value, editor.textContent.trim()]") == ["inside", "Editor Inner"]


async def test_text_that_a_focus_handler_sends_into_another_frame_is_an_error(browser: Browser) -> None:
    # Nothing in the field's frame saw the keys, which counted as done: the text went into the iframe. (A
    # microtask moves the focus here, after the check that the field has it; pages do it from a task.)
    page = await open_page(
        browser,
        "data:text/html,<label>Name <input id=who></label><iframe srcdoc='<input id=victim>'></iframe>"
        "<script>who.onfocus = () => queueMicrotask(() => {"
        "  frames[0].document.getElementById('victim').focus() })</script>",
    )
    with trio.fail_after(10):
        snap = await page.snapshot()
        assert await value(page, "!!frames[0].document.getElementById('victim')") is True
    with pytest.raises(ActionError, match="into another frame") as caught, trio.fail_after(5):
        await page.fill(ref(snap, "textbox", "Name"), "secret")
    assert caught.value.check == "focus"


async def test_keys_that_a_handler_sends_into_another_frame_halfway_are_an_error(browser: Browser) -> None:
    # type returned OK with "abc" in the field and the rest in the iframe: the guard saw the first keys.
    # (The "d" whose keydown moved the focus is typed nowhere: Chromium drops its keypress.)
    page = await open_page(
        browser,
        "data:text/html,<label>Name <input id=who></label><iframe srcdoc='<input id=victim>'></iframe>"
        "<script>who.onkeydown = () => { if (who.value.length === 3)"
        "  frames[0].document.getElementById('victim').focus() }</script>",
    )
    with trio.fail_after(10):
        snap = await page.snapshot()
    with pytest.raises(ActionError, match="keys after that went there") as caught, trio.fail_after(5):
        await page.type(ref(snap, "textbox", "Name"), "abcdefgh")
    assert caught.value.check == "focus"
    with trio.fail_after(5):
        assert await value(page, "[who.value, frames[0].document.getElementById('victim').value]") == [
            "abc",
            "efgh",
        ]
        await page.evaluate("who.value = ''; who.onkeydown = null")
        await page.type(ref(snap, "textbox", "Name"), "xy")
        assert await value(page, "who.value") == "xy"
