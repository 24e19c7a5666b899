"""Navigation, waiting, dialogs, popups, screenshots, scrolling and drag and drop on a real Chromium."""

from __future__ import annotations

import base64
import gc
import json
import math
import struct
import warnings
import zlib
from collections.abc import Awaitable, Callable

import pytest
import trio

import engine._actionability
import engine._navigating
import engine._page
import engine._waiting
from engine import (
    ActionError,
    Browser,
    Dialog,
    NavigationError,
    Page,
    SessionDetached,
    StaleRefError,
    _input,
    _popups,
)
from tests.browser.integration._actions_helpers import open_page, ref, value
from tests.deadlines import without_a_deadline

pytestmark = pytest.mark.browser


def png_size(png: bytes) -> tuple[int, int]:
    """Width and height of a PNG, after checking that its signature and every chunk's CRC are right."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos = 8
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind, body = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", png[pos + 8 + length : pos + 12 + length])
        assert zlib.crc32(kind + body) == crc
        pos += 12 + length
    width, height = struct.unpack(">II", png[16:24])
    return width, height


async def test_link_click_and_form_submit_return_after_the_new_document_commits(
    browser: Browser, server: str
) -> None:
    page = await open_page(browser, f"{server}/actions/nav.html")
    with trio.fail_after(10):
        snap = await page.snapshot()
        start = trio.current_time()
        await page.click(ref(snap, "link", "Part two"))  # same document: nothing to wait for
        assert trio.current_time() - start < 2
        assert await value(page, "location.hash") == "#part2"
        await page.click(ref(snap, "link", "Next page"))
        after = await page.snapshot()  # straight after the click: the new page
        assert 'heading "Next page"' in after.text
        assert await page.back() is True
        snap = await page.snapshot()
        await page.fill(ref(snap, "textbox", "Query"), "shoes")
        await page.press("Enter", ref=ref(snap, "textbox", "Query"))
        assert await value(page, "location.search") == "?q=shoes"
        assert 'heading "Next page"' in (await page.snapshot()).text
        await page.back()
        assert await page.forward() is True
        assert await value(page, "location.pathname") == "/actions/next.html"
        await page.reload()
        assert await value(page, "document.readyState") == "complete"
        snap = await page.snapshot()
        await page.click(ref(snap, "button", "Here"))  # no navigation: returns at once


async def test_wait_for_text_gone_text_load_state_ref_and_time(
    browser: Browser, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = await open_page(browser, f"{server}/actions/nav.html")
    with trio.fail_after(10):
        snap = await page.snapshot()
        await page.click(ref(snap, "button", "Save"))
        await page.wait_for(text="Saved")
        await page.click(ref(snap, "button", "Finish"))
        await page.wait_for(gone_text="Loading")
        await page.wait_for(load_state="load")
        await page.wait_for(load_state="domcontentloaded")
        await page.wait_for(load_state="networkidle")
        await page.wait_for(ref=ref(snap, "button", "Save"))
        await page.wait_for(time_ms=10)
    # Under the default budget, not a deadline of the test's: the ActionError comes RETRY_MARGIN (0.1 s)
    # before a deadline, and a machine busy for longer than that let the test's own TooSlowError win.
    monkeypatch.setattr(engine._waiting, "DEFAULT_BUDGET", 0.5)
    async with without_a_deadline():
        with pytest.raises(ActionError, match="'Never shown' to appear"):
            await page.wait_for(text="Never shown")
    with pytest.raises(ValueError, match="exactly one"):
        await page.wait_for(text="a", gone_text="b")
    with pytest.raises(TypeError, match="text= takes a str, not 5"):  # it waited out the budget
        await page.wait_for(text=5)  # type: ignore[arg-type]


async def test_waits_for_text_see_shadow_roots_and_no_break_spaces(browser: Browser, server: str) -> None:
    page = await open_page(browser, f"{server}/actions/waits.html")
    with trio.fail_after(10):
        snap = await page.snapshot()
        assert "Loading results" in snap.text
        assert "Total: $5" in snap.text  # as the snapshot prints it
        await page.wait_for(text="Loading results")
        await page.wait_for(text="Total: $5")
        start = trio.current_time()
        await page.click(ref(snap, "button", "Finish"))  # the element with the shadow root goes 0.5 s later
        await page.wait_for(gone_text="Loading results")
        assert trio.current_time() - start >= 0.5
        assert "Loading results" not in (await page.snapshot()).text


async def test_a_wait_under_a_deadline_a_tenth_of_a_second_away_still_looks(
    browser: Browser, server: str
) -> None:
    page = await open_page(browser, f"{server}/actions/nav.html")
    with trio.fail_after(10):
        await page.wait_for(text="Next page")  # the engine's world is made: a look is two round trips now

    async def by_wait() -> str | None:
        try:
            with trio.fail_after(0.1):
                await page.wait_for(text="Next page")
        except (trio.TooSlowError, ActionError) as error:
            return repr(error)
        return None

    async def by_step() -> str | None:
        result = await page.run_steps([{"type": "wait_for", "text": "Next page", "timeout_ms": 100}])
        return None if result.ok else str(result.steps[0].error)

    # A wait that never looks fails every try; on a loaded machine one look can outlast 0.1 s, so each way
    # gets five tries.
    for look in (by_wait, by_step):
        errors: list[str] = []
        with trio.fail_after(10):
            while len(errors) < 5 and (error := await look()) is not None:
                errors.append(error)
        assert len(errors) < 5, f"{look.__name__}: no try of five found the text: {errors}"


async def test_a_wait_for_a_ref_to_hide_takes_only_a_removed_element_as_hidden(
    browser: Browser, server: str
) -> None:
    page = await open_page(browser, f"{server}/actions/waits.html")
    with trio.fail_after(10):
        snap = await page.snapshot()
        with pytest.raises(StaleRefError, match="unknown ref 'e999'"):
            await page.wait_for(ref="e999", state="hidden")
        await page.click(ref(snap, "button", "Save"))
        with pytest.raises(StaleRefError, match="another accessible name"):
            await page.wait_for(ref=ref(snap, "button", "Save"), state="hidden")
        await page.click(ref(snap, "button", "Remove me"))
        await page.wait_for(ref=ref(snap, "button", "Remove me"), state="hidden")


async def test_dialogs_are_dismissed_by_default_and_recorded_or_answered_by_on_dialog(
    browser: Browser, server: str
) -> None:
    page = await open_page(browser, f"{server}/actions/dialogs.html")
    with trio.fail_after(10):
        snap = await page.snapshot()
        await page.click(ref(snap, "button", "Alert"))
        assert await value(page, "document.getElementById('out').textContent") == "after alert"
        await page.click(ref(snap, "button", "Confirm"))
        assert await value(page, "document.getElementById('out').textContent") == "confirm false"
        page.on_dialog = lambda dialog: dialog.accept("Grace" if dialog.type == "prompt" else None)
        await page.click(ref(snap, "button", "Prompt"))
        assert await value(page, "document.getElementById('out').textContent") == "prompt Grace"
        await page.click(ref(snap, "button", "Confirm"))
        assert await value(page, "document.getElementById('out').textContent") == "confirm true"
    kinds = [(d.type, d.message, d.accepted) for d in page.dialogs]
    assert kinds == [
        ("alert", "Hello", False),
        ("confirm", "Sure?", False),
        ("prompt", "Name?", True),
        ("confirm", "Sure?", True),
    ]
    assert page.dialogs[2].prompt_text == "Grace"
    assert page.dialogs[-1:] == [page.dialogs[-1]]  # a list: it sliced as a deque does not

    async def answer(dialog: Dialog) -> None:  # would never be awaited
        dialog.accept()

    with pytest.raises(TypeError, match="cannot be awaited"):
        page.on_dialog = answer
    page.on_dialog = lambda dialog: answer(dialog)  # noqa: PLW0108 - the same, through a lambda: refused when run
    with warnings.catch_warnings(record=True) as caught, trio.fail_after(10):
        warnings.simplefilter("always")
        await page.click(ref(await page.snapshot(), "button", "Confirm"))
        assert await value(page, "document.getElementById('out').textContent") == "confirm false"
        gc.collect()
    assert not [w for w in caught if "never awaited" in str(w.message)]


async def test_beforeunload_is_accepted_by_default_so_the_page_is_left(browser: Browser, server: str) -> None:
    page = await open_page(browser, f"{server}/actions/leave.html")

    async def touch() -> None:  # the gesture without which Chromium asks nothing
        await page.click(ref(await page.snapshot(), "button", "Touch"))

    with trio.fail_after(10):
        await touch()
        await page.reload()  # dismissed, it was cancelled: reload waited for a load that never came
        await touch()
        await page.goto(f"{server}/actions/nav.html")  # dismissed: NavigationError net::ERR_ABORTED
        assert await value(page, "location.pathname") == "/actions/nav.html"
        await page.back()
        await touch()
        page.on_dialog = lambda dialog: dialog.dismiss()  # stay
        stay = "did not happen: the page's beforeunload handler asked to stay, and page.on_dialog dismissed"
        with pytest.raises(NavigationError, match=stay):
            await page.goto(f"{server}/actions/nav.html")
        await touch()  # a gesture each: Chromium asks once per user activation
        with pytest.raises(NavigationError, match=stay):
            await page.reload()  # at once: it waited for a load that never came
        await touch()
        with pytest.raises(NavigationError, match=stay):
            await page.forward()  # at once: it waited for a commit that never came
        await page.evaluate("document.body.insertAdjacentHTML('beforeend', '<a href=nav.html>Away</a>')")
        await touch()
        with trio.fail_after(3):  # the click is done and the page stayed: it waited out the deadline
            await page.click(ref(await page.snapshot(), "link", "Away"))
        assert await value(page, "location.pathname") == "/actions/leave.html"
    assert [(d.type, d.accepted) for d in page.dialogs] == [("beforeunload", True)] * 2 + [
        ("beforeunload", False)
    ] * 4


async def test_an_alert_the_page_opens_by_itself_does_not_wedge_snapshot_or_evaluate(
    browser: Browser, server: str
) -> None:
    # An open alert holds Chromium's AX and Runtime commands until it is answered; the default answer
    # (dismiss) comes as it opens, so nothing after it hangs.
    page = await open_page(browser, f"{server}/actions/dialogs.html")
    with trio.fail_after(10):
        await page.evaluate("setTimeout(() => { alert('Late'); document.title = 'after late alert'; }, 0)")
        await page.wait_for(time_ms=200)
        snap = await page.snapshot()
        assert await page.evaluate("document.title") == "after late alert"
    assert ref(snap, "button", "Alert")
    assert [(d.type, d.message, d.accepted) for d in page.dialogs] == [("alert", "Late", False)]


async def test_popups_from_target_blank_and_window_open_appear_in_browser_pages(
    browser: Browser, server: str
) -> None:
    page = await open_page(browser, f"{server}/actions/nav.html")
    with trio.fail_after(10):
        snap = await page.snapshot()
        async with page.expect_popup() as popup:
            await page.click(ref(snap, "link", "Open tab"))
        tab = popup.page
        assert tab in browser.pages
        await tab.wait_for(load_state="load")
        assert 'heading "Popup page"' in (await tab.snapshot()).text
        async with page.expect_popup() as second:
            await page.click(ref(snap, "button", "Open window"))
        await second.page.bring_to_front()
        assert len(browser.pages) == 3
        await tab.close()
        assert tab not in browser.pages
        assert len(browser.pages) == 2


async def test_a_popup_whose_first_script_opens_a_dialog_is_answered_not_frozen(
    browser: Browser, server: str
) -> None:
    # Attached only once it ran, such a popup was frozen for good: its dialog was never announced (2 runs
    # of 20 with a served page, 1 of 10 with a javascript: URL). Each kind a few times, as it was a race.
    # Attached from its start, it showed its initial about:blank to the load wait right after.
    page = await open_page(browser, f"{server}/actions/nav.html")
    opens = [
        "window.open('/actions/popup-alerts.html')",
        "window.open('/actions/popup-alerts.html', '', 'noopener')",
        "window.open('javascript:alert(`from the popup`); document.title = `after alert`; void 0')",
    ]
    for script in opens * 4:
        with trio.fail_after(10):
            async with page.expect_popup() as popup:
                await page.evaluate(f"{script}; 0")
            tab = popup.page
            await tab.wait_for(load_state="load")
            if "javascript:" not in script:  # not the initial about:blank's load
                assert engine._navigating.documents_committed(tab) == 1
            assert await tab.evaluate("document.title") == "after alert"
            assert [(d.type, d.message, d.accepted) for d in tab.dialogs] == [
                ("alert", "from the popup", False)
            ]
            await tab.close()
    assert browser.pages == [page]


async def test_a_key_whose_handler_closes_the_popup_is_pressed_and_typed(
    browser: Browser, server: str
) -> None:
    # The tab can be gone before the key's events are answered: that ended a press or the typing with
    # SessionDetached in 2 runs of 5, where a click on a button that closes the popup was always fine.
    page = await open_page(browser, f"{server}/actions/nav.html")
    for how in ["press", "type"] * 4:
        with trio.fail_after(10):
            async with page.expect_popup() as popup:
                await page.evaluate("window.open('/actions/closes-on-enter.html'); 0")
            chat = popup.page
            await chat.wait_for(load_state="load")
            field = ref(await chat.snapshot(), "textbox", "Message")
            await (chat.press("Enter", ref=field) if how == "press" else chat.type(field, "Bye\n"))
            while not chat.closed:  # the close may also come after the keyup's answer
                await trio.sleep(0.01)
    # A closed popup is let go of as the next page comes (it was held until someone read browser.pages).
    assert len(browser._pages) <= 2
    # Keys after the one that closed the tab may go in before it goes, or be sent unseen: "y" was, and type
    # returned OK (7 runs of 16). OK now means the page saw every key.
    for _ in range(6):
        with trio.fail_after(10):
            async with page.expect_popup() as popup:
                await page.evaluate("localStorage.keys = ''; window.open('/actions/closes-on-enter.html'); 0")
            chat = popup.page
            await chat.wait_for(load_state="load")
            try:
                await chat.type(ref(await chat.snapshot(), "textbox", "Message"), "x\ny")
            except SessionDetached:
                continue
            assert await page.evaluate("localStorage.keys") == "x,Enter,y,"


async def test_wait_for_without_a_deadline_names_its_own_budget(
    browser: Browser, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # It said "before the deadline" to a caller who had set none.
    monkeypatch.setattr(engine._waiting, "DEFAULT_BUDGET", 0.5)
    page = await open_page(browser, f"{server}/actions/nav.html")
    async with without_a_deadline():
        with pytest.raises(ActionError, match=r"did not happen in the 0\.5 s a wait gets when no deadline"):
            await page.wait_for(text="nowhere")
    with pytest.raises(ActionError, match="did not happen before the deadline") as answered:
        with trio.fail_after(1):  # a wait keeps a tenth for its error: 0.05 s of 0.5 s was too little (CI)
            await page.wait_for(text="nowhere")
    assert "did not answer" not in str(answered.value)
    # Nothing said the page was not answering (a script held it), nor refused what cannot be waited for.
    for bad in ({"text": ""}, {"gone_text": " "}, {"time_ms": math.nan}, {"time_ms": -1}):
        with pytest.raises(ValueError, match="wait_for's"):
            await page.wait_for(**bad)
    with trio.fail_after(5):
        await page.evaluate(
            "setTimeout(() => { const t = Date.now(); while (Date.now() - t < 4000); }, 0); 0"
        )
    with pytest.raises(
        ActionError,
        match=r"did not answer any look for 1\.\d s: its main thread, or an out-of-process iframe.s, is busy",
    ):
        with trio.fail_after(2):
            await page.wait_for(text="nowhere")


async def test_expect_popup_without_a_deadline_gives_up_after_the_budget(
    browser: Browser, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_popups, "DEFAULT_BUDGET", 0.5)
    page = await open_page(browser, f"{server}/actions/nav.html")
    with trio.fail_after(10):
        snap = await page.snapshot()
    async with without_a_deadline():
        with pytest.raises(ActionError, match=r"this page opened no tab in the 0\.5 s after the block"):
            async with page.expect_popup():
                await page.click(ref(snap, "button", "Save"))  # opens nothing


async def test_reads_of_a_page_in_an_endless_loop_give_up_without_a_deadline(
    browser: Browser, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine._page, "DEFAULT_BUDGET", 0.5)
    page = await open_page(browser, f"{server}/actions/nav.html")
    with trio.fail_after(10):
        link = ref(await page.snapshot(), "link", "Next page")
        await value(page, "setTimeout(() => { while (true) {} }, 50), 0")
        await trio.sleep(0.2)
    reads: dict[str, Callable[[], Awaitable[object]]] = {
        "snapshot": page.snapshot,
        f"resolve {link}": lambda: page.resolve(link),
        "frames": page.frames,
        "screenshot": page.screenshot,
        "scroll": lambda: page.scroll(direction="down"),
    }
    async with without_a_deadline():
        for what, read in reads.items():
            with pytest.raises(ActionError, match=rf"^{what}: the page did not answer in 0\.5 s") as caught:
                await read()
            assert caught.value.check == "responsive"
            assert "navigating" not in str(caught.value)
    with trio.fail_after(10), pytest.raises(trio.TooSlowError):
        with trio.fail_after(0.5):
            await page.evaluate("1 + 1")  # terminates the page's loop
    with trio.fail_after(10):
        assert ref(await page.snapshot(), "link", "Next page") == link


async def test_screenshots_decode_and_have_the_expected_size(browser: Browser, server: str) -> None:
    page = await open_page(browser, f"{server}/actions/tall.html")
    with trio.fail_after(10):
        width, height = await value(page, "[innerWidth, innerHeight]")
        assert png_size(await page.screenshot()) == (width, height)
        full = await value(
            page, "[document.documentElement.scrollWidth, document.documentElement.scrollHeight]"
        )
        assert full[0] == 1500
        assert full[1] > 3000
        assert png_size(await page.screenshot(full_page=True)) == tuple(full)
        snap = await page.snapshot()
        button = ref(snap, "button", "Bottom button")
        box = await value(
            page,
            "(() => { const r = document.querySelector('button').getBoundingClientRect();"
            " return [r.width, r.height] })()",
        )
        assert png_size(await page.screenshot(ref=button)) == (round(box[0]), round(box[1]))


async def test_a_screenshot_of_an_element_larger_than_the_viewport_has_all_of_it(browser: Browser) -> None:
    # Only the part inside the viewport was drawn, the rest white (20% of it magenta), and no error.
    page = await browser.new_page()
    with trio.fail_after(20):
        await page.goto(
            "data:text/html,<body style='margin:0'><p>above</p><button style='display:block;width:1200px;"
            "height:1500px;background:rgb(255,0,255);border:0'>Big</button><div role=img aria-label=Left"
            " style='position:absolute;left:-40px;top:0;width:100px;height:50px;background:rgb(255,0,255)'>"
        )
        snap = await page.snapshot()
        big = await page.screenshot(ref=ref(snap, "button", "Big"))
        assert png_size(big) == (1200, 1500)
        assert await magenta(page, big) > 0.99  # (all but its label)
        # Partly left of the page: Chromium captured the top of the viewport for a clip at x = -40.
        left = await page.screenshot(ref=ref(snap, "img", "Left"))
        assert png_size(left) == (60, 50)
        assert await magenta(page, left) == 1.0


async def magenta(page: Page, png: bytes) -> float:
    """The share of a PNG's pixels that are rgb(255, 0, 255), decoded by the page."""
    share = await page.evaluate(
        "async (src) => { const img = new Image(); img.src = src; await img.decode();"
        " const g = new OffscreenCanvas(img.width, img.height).getContext('2d'); g.drawImage(img, 0, 0);"
        " const d = g.getImageData(0, 0, img.width, img.height).data; let n = 0;"
        " for (let i = 0; i < d.length; i += 4) n += d[i] === 255 && d[i + 1] === 0 && d[i + 2] === 255;"
        " return n / (img.width * img.height) }",
        "data:image/png;base64," + base64.b64encode(png).decode(),
    )
    assert isinstance(share, float | int)
    return float(share)


async def test_a_screenshot_raced_by_a_navigation_returns_a_png(browser: Browser, server: str) -> None:
    # Chromium never answers a capture pending as a new document commits, and refuses one asked for as
    # the old document leaves: before the engine asked again, about half of these raised or hung.
    page = await open_page(browser, f"{server}/actions/nav.html")
    for n in range(30):
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(page.goto, f"{server}/actions/nav.html?{n}")
                await trio.sleep(0.003 * (n % 5))
                assert png_size(await page.screenshot())[0] > 0


async def test_a_reload_given_up_halfway_leaves_history_and_reload_working(
    browser: Browser, server: str
) -> None:
    # For 20-30 ms after a reload stopped halfway, Chromium refuses Page.reload and the history commands
    # ("Not attached to an active page"): before the engine asked again, these raised a ProtocolError.
    page = await open_page(browser, f"{server}/actions/nav.html?first")
    with trio.fail_after(10):
        await page.goto(f"{server}/actions/nav.html?second")
    for n in range(40):
        with trio.move_on_after(0.001 * (n % 20)):
            await page.reload()
        with trio.fail_after(10):
            if n % 4 == 0:
                assert await page.back() is True
            elif n % 4 == 1:
                assert await page.forward() is True
            else:
                await page.reload()


async def test_scroll_by_direction_and_to_a_ref(browser: Browser, server: str) -> None:
    page = await open_page(browser, f"{server}/actions/tall.html")
    with trio.fail_after(10):
        await page.scroll(direction="down")
        assert await value(page, "scrollY") > 100
        below = await value(page, "scrollY")
        await page.scroll()  # down, as the README's table shows it
        assert await value(page, "scrollY") > below
        await page.scroll(direction="right", amount=200)
        assert await value(page, "scrollX") == 200
        snap = await page.snapshot()
        await page.scroll(ref=ref(snap, "button", "Bottom button"))
        assert await value(page, "scrollY") > 2500
        await page.scroll(direction="up", amount=300)
        assert 2200 < await value(page, "scrollY") < 2800


async def test_scroll_by_direction_in_an_inner_box_and_at_its_end(browser: Browser, server: str) -> None:
    # The page itself cannot scroll (overflow: hidden); its scrolling box is an inner element. Watching
    # only the page's offset, each of these polled it for 0.35 s (21 more commands) and then gave up.
    page = await open_page(browser, f"{server}/actions/scrollers.html")
    connection = browser.connection

    async def scroll_down() -> int:
        sent = connection.statistics().messages_sent
        await page.scroll(direction="down", amount=300)
        return connection.statistics().messages_sent - sent

    with trio.fail_after(10):
        assert await scroll_down() <= 6
        assert await value(page, "document.getElementById('inner').scrollTop") == 300  # it waited for it
        await page.evaluate("document.getElementById('inner').scrollTop = 1e6")
        assert await scroll_down() <= 6  # at its end: nothing can move that way
        assert await value(page, "wheels") == 2  # the page's own wheel listener had run
        await page.scroll(direction="up", amount=300)
        bottom = await value(page, "(e => e.scrollHeight - e.clientHeight)(document.getElementById('inner'))")
        assert await value(page, "document.getElementById('inner').scrollTop") == bottom - 300


@pytest.mark.parametrize(
    ("page_name", "direction", "offset", "moved", "watched"),
    [
        ("scroll-body", "down", "scrollY", 200, "viewport"),  # the body's overflow is the viewport's
        ("scroll-slot", "down", "box().scrollTop", 200, "inner"),  # a shadow root's box around a slot
        ("scroll-contain", "down", "scrollY", 0, "nothing"),  # a box at its end that keeps the wheel
        ("scroll-rtl", "left", "scrollX", -200, "viewport"),  # offsets that run leftward
        ("scroll-fixed", "down", "scrollY", 200, "viewport"),  # a fixed box: the wheel skips its scroller
        ("scroll-absolute", "down", "scrollY", 200, "viewport"),  # an absolute one: the same, here
    ],
)
async def test_scroll_by_direction_finds_what_moves(
    browser: Browser, server: str, page_name: str, direction: str, offset: str, moved: int, watched: str
) -> None:
    # What the page says will move decides the wait: the viewport's offset, an inner box's, or one frame.
    # Each of these was misjudged once, and then scroll() waited 0.35 s for a box that never moved.
    page = await open_page(browser, f"{server}/actions/{page_name}.html")
    with trio.fail_after(10):
        if page_name == "scroll-contain":
            await page.evaluate("document.getElementById('dialog').scrollTop = 1e6")
        width, height = await value(page, "[innerWidth, innerHeight]")
        dx, dy = {"down": (0, 200), "left": (-200, 0)}[direction]
        probe = _input._LANDING % json.dumps([width / 2, height / 2, dx, dy])
        viewport, inner = await value(page, f"(landing => [landing.viewport, landing.inner])({probe})")
        assert {(True, False): "viewport", (False, True): "inner", (False, False): "nothing"}[
            (viewport, inner)
        ] == watched
        await page.scroll(direction=direction, amount=200)  # type: ignore[arg-type]
        assert await value(page, offset) == moved


@pytest.mark.parametrize(
    ("page_name", "offset"),
    [("scroll-snap", "scrollY"), ("scroll-snap-inner", "document.getElementById('box').scrollTop")],
)
async def test_scroll_by_direction_returns_once_a_snapping_box_has_settled(
    browser: Browser, server: str, page_name: str, offset: str
) -> None:
    # The wheel's scroll lands at 0.8 of a screen, then Chromium glides to the next section's top a pixel a
    # frame for about 0.17 s. scroll() returned at the landing, and a look right after saw the glide.
    page = await open_page(browser, f"{server}/actions/{page_name}.html")
    with trio.fail_after(10):
        height = await value(page, "innerHeight")
        await page.scroll(direction="down")
        assert await value(page, offset) == height  # the snap point, not where the glide began
        await trio.sleep(0.3)
        assert await value(page, offset) == height


async def test_scroll_by_direction_waits_out_a_glide_on_a_busy_renderer(
    browser: Browser, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # CI saw scroll() return at 400 of 493: two looks at the offset a frame apart saw a glide that a busy
    # renderer held, and took it for its end; and a look at what will scroll that took over 0.35 s missed
    # the snapping. A 100x CPU throttle showed both (at 394-492, 3 of 5 scrolls down). The caps are raised: a
    # glide this slow outlasts them, and what is tested here is the glide's end.
    monkeypatch.setattr(_input, "SNAP_SETTLE", 10.0)
    page = await open_page(browser, f"{server}/actions/scroll-snap.html")
    with trio.fail_after(60):
        height = await value(page, "innerHeight")
        await page.session.execute_raw("Emulation.setCPUThrottlingRate", {"rate": 100})
        for direction, section in (("down", 1), ("down", 2), ("down", 3), ("up", 2), ("up", 1)):
            await page.scroll(direction=direction)  # type: ignore[arg-type]
            assert await value(page, "scrollY") == section * height


async def test_drag_and_drop_html5_and_mouse_based(browser: Browser, server: str) -> None:
    page = await open_page(browser, f"{server}/actions/drag.html")
    with trio.fail_after(10):
        snap = await page.snapshot()
        await page.drag(ref(snap, "button", "Card"), ref(snap, "region", "Bin"))
        await page.drag(ref(snap, "button", "Knob"), ref(snap, "region", "Slot"))
    assert (await value(page, "document.getElementById('out').textContent")).split() == [
        "dropped:card-data",
        "knob-in-slot",
    ]


_DRAGS = (
    "data:text/html,<div draggable=true role=button aria-label=Card style='width:60px;height:30px'>c</div>"
    "<div role=button aria-label=Knob style='width:60px;height:30px'>k</div>"
    "<div id=bin role=region aria-label=Bin style='width:60px;height:30px'>b</div>"
    "<button onclick='window.clicks = (window.clicks || 0) + 1'>Count</button>"
)


async def test_a_drag_given_up_halfway_leaves_the_page_taking_input(
    browser: Browser, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The button stayed down and the HTML5 drag open: the page dropped every later click and key.
    monkeypatch.setattr(engine._actionability, "DEFAULT_BUDGET", 1.0)  # no deadline to race (see above)
    page = await open_page(browser, _DRAGS)
    with trio.fail_after(10):
        snap = await page.snapshot()
        await page.evaluate("document.getElementById('bin').style.visibility = 'hidden'")
    for source in ("Card", "Knob"):  # an HTML5 drag, and a drag by mouse events
        async with without_a_deadline():
            # With no deadline the retries end with the default budget, and the error says which.
            with pytest.raises(
                ActionError, match=r"not visible.*the default budget of 1 s: no deadline was given"
            ):
                await page.drag(ref(snap, "button", source), ref(snap, "region", "Bin"))
        with trio.fail_after(10):
            await page.evaluate("window.clicks = 0")
            await page.click(ref(snap, "button", "Count"))
            assert await value(page, "window.clicks") == 1


_HANGS = (
    "<!doctype html><title>Busy</title><button onclick='while (true) {}'>Hang</button>"
    "<button onclick=\"document.title = 'clicked'\">Fine</button>"
)


async def test_a_handler_in_an_endless_loop_bounds_the_click_and_evaluate_frees_the_tab(
    browser: Browser, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The click's input reply waits for the page's handler: with no deadline, the action gives up after
    its default budget with an ActionError that says so; an evaluate under a deadline then terminates the
    page's loop (through the tab's own session: the evaluate session, attached while the main thread
    was busy, could not), and the tab works again."""
    import engine._waiting

    monkeypatch.setattr(engine._waiting, "DEFAULT_BUDGET", 1.0)
    page = await open_page(browser, "data:text/html," + _HANGS)
    with trio.fail_after(10):
        snap = await page.snapshot()

    async def watchdog() -> None:  # the click itself must run with no deadline: it is what is tested
        await trio.sleep(10)
        raise AssertionError("the click was not bounded by its default budget")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(watchdog)
        with pytest.raises(ActionError, match="main thread is busy") as caught:
            await page.click(ref(snap, "button", "Hang"))
        nursery.cancel_scope.cancel()
    assert caught.value.ref == ref(snap, "button", "Hang")
    with trio.fail_after(10), pytest.raises(trio.TooSlowError):
        with trio.fail_after(1):
            await page.evaluate("1 + 1")
    with trio.fail_after(3):
        assert await page.evaluate("1 + 1") == 2
        await page.click(ref(snap, "button", "Fine"))
        assert await page.evaluate("document.title") == "clicked"


async def test_a_handler_in_an_endless_loop_ends_the_click_by_the_callers_deadline(browser: Browser) -> None:
    """Under the caller's deadline the click gives up on the input's reply RETRY_MARGIN before it, with the
    ActionError that says why (it was a bare TooSlowError), and its guard's removal, which the busy page
    never answers, does not hold it past the deadline (it held it 0.25 s)."""
    page = await open_page(browser, "data:text/html," + _HANGS)
    with trio.fail_after(10):
        snap = await page.snapshot()
    for _ in range(2):
        started = trio.current_time()
        # 2 s: the input must still have INPUT_VERDICT_MIN of it after the checks (with 1 s, the checks took
        # over half of it once under the suite's load, and the deadline ended the click as TooSlowError).
        with pytest.raises(ActionError, match="main thread is busy") as caught, trio.fail_after(2):
            await page.click(ref(snap, "button", "Hang"))
        assert caught.value.check == "input handled"
        assert "0.1 s before the deadline" in str(caught.value)
        # Not held long past the deadline by the guard's removal, which the busy page never answers. The
        # exact bound (0.05 s before the deadline) is pinned with a mock clock in tests/unit/engine/
        # test_hit_target.py: here the suite's load alone once added 0.27 s.
        assert trio.current_time() - started < 2.5
        with trio.fail_after(10), pytest.raises(trio.TooSlowError):
            with trio.fail_after(1):
                await page.evaluate("1 + 1")  # terminates the loop
    with trio.fail_after(3):
        await page.click(ref(snap, "button", "Fine"))
        assert await page.evaluate("document.title") == "clicked"


@pytest.mark.parametrize("how", ["goto", "reload", "back"])
async def test_a_navigation_from_a_page_in_an_endless_loop_frees_the_tab(
    browser: Browser, server: str, how: str
) -> None:
    # A navigation that stays in the page's process never commits while a script holds its main thread, and
    # Chromium holds the tab's every command until the commit, a termination too: the tab was lost for good
    # (every evaluate, snapshot and navigation after it timed out).
    page = await open_page(browser, f"{server}/steps/index.html")
    with trio.fail_after(10):
        await page.goto(f"{server}/steps/next.html")
        await page.session.execute_raw(
            "Runtime.evaluate", {"expression": "setTimeout(() => { while (true) {} })"}
        )
    with trio.fail_after(5):
        if how == "goto":
            await page.goto(f"{server}/steps/index.html")
        elif how == "reload":
            await page.reload()
        else:
            assert await page.back()
    landed = "/steps/next.html" if how == "reload" else "/steps/index.html"
    with trio.fail_after(3):
        assert await page.evaluate("location.pathname") == landed
        await page.snapshot()


async def test_a_goto_to_another_fragment_leaves_a_busy_pages_script_to_finish(
    browser: Browser, server: str
) -> None:
    # The page is not left: its 2.5 s task was terminated by the look before the navigation (5 of 5).
    page = await open_page(browser, f"{server}/steps/index.html")
    busy = "setTimeout(() => { const end = Date.now() + 2500; while (Date.now() < end) {} window.done = 1 })"
    with trio.fail_after(10):
        await page.session.execute_raw("Runtime.evaluate", {"expression": busy})
        await page.goto(f"{server}/steps/index.html#part")
        assert await page.evaluate("[window.done, location.hash]") == [1, "#part"]


async def test_a_navigation_in_the_middle_of_an_action_is_a_stale_ref(browser: Browser, server: str) -> None:
    # Each ref passes its identity check before its element is touched; a reload can land after that. Chromium
    # then answers "Cannot find context with specified id", "Element is not focusable", ...: the action must
    # raise StaleRefError (take a new snapshot), never a bare ProtocolError or ActionError.
    page = await open_page(browser, f"{server}/actions/reloading.html")
    actions: dict[str, Callable[[dict[str, str]], Awaitable[object]]] = {
        "fill": lambda refs: page.fill(refs["textbox"], "hello"),
        "click": lambda refs: page.click(refs["button"]),
        "hover": lambda refs: page.hover(refs["button"]),
        "select": lambda refs: page.select_option(refs["combobox"], "b"),
        "type": lambda refs: page.type(refs["textbox"], "abc"),
        "evaluate": lambda refs: page.evaluate("(el) => el.value", ref=refs["textbox"]),
        "check": lambda refs: page.check(refs["checkbox"]),
    }
    mid_action = 0
    for n in range(70):
        with trio.fail_after(5):
            snap = await page.snapshot()
            refs = {r.role: r.ref for r in snap.refs.values()}
            if len(refs) < 4:
                continue  # snapshot taken between two documents
            try:
                await list(actions.values())[n % len(actions)](refs)
            except StaleRefError as exc:
                mid_action += exc.__cause__ is not None  # found out after the check, in the middle
    assert mid_action, "no reload landed in the middle of an action: the test showed nothing"


async def test_a_click_follows_a_scripts_redirects_after_the_navigation_it_started(
    browser: Browser, server: str
) -> None:
    page = await open_page(browser, f"{server}/actions/redirects.html")
    with trio.fail_after(10):
        for name in ("One redirect", "Two redirects"):
            await page.click(ref(await page.snapshot(), "link", name))
            assert 'heading "Next page"' in (await page.snapshot()).text  # straight after: the last page
            await page.goto(f"{server}/actions/redirects.html")
        # A frame's new document that sends the top elsewhere: that navigation is the click's sequel too.
        await page.goto(f"{server}/actions/bust.html")
        await page.click(ref(await page.snapshot(), "link", "Break out"))
        assert 'heading "Next page"' in (await page.snapshot()).text


async def test_frames_that_keep_navigating_by_themselves_do_not_hold_a_click(
    browser: Browser, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Their navigations during the click are waited for, but not each one that replaces it after."""
    page = await open_page(browser, f"{server}/actions/busy-frames.html")
    monkeypatch.setattr(engine._waiting, "DEFAULT_BUDGET", 5.0)  # the budget, so that a hang is an error
    async with without_a_deadline():
        count = ref(await page.snapshot(), "button", "Count")
        for _ in range(4):
            await page.click(count)
    assert await value(page, "window.clicks") == 4
