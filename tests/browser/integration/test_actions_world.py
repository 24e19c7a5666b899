"""Actions on a page that replaced the built-ins their checks use: the checks run in the engine's world."""

from __future__ import annotations

import pytest
import trio

import engine._waiting
import engine._worlds
from engine import ActionError, Browser
from tests.browser.integration._actions_helpers import open_page, ref, value
from tests.deadlines import without_a_deadline

pytestmark = pytest.mark.browser


async def test_actions_work_on_a_page_that_replaced_its_builtins(browser: Browser, server: str) -> None:
    page = await open_page(browser, f"{server}/actions/patched.html")
    with trio.fail_after(15):
        snap = await page.snapshot()
        await page.click(ref(snap, "button", "Go"))
        await page.wait_for(text="Clicked")
        await page.fill(ref(snap, "textbox", "Name"), "Ada")
        await page.check(ref(snap, "checkbox", "Agree"))
        await page.hover(ref(snap, "button", "Go"))
        await page.click(ref(snap, "button", "Inner button"))  # in a same-process iframe: its own world
        await page.wait_for(text="Inner clicked")
        await page.wait_for(ref=ref(snap, "button", "Go"), state="visible")
        await page.scroll(ref=ref(snap, "button", "Go"))
        await page.scroll(direction="down")  # the look for what the wheel moves
        assert await value(page, "document.getElementById('name').value") == "Ada"
        assert await value(page, "document.getElementById('agree').checked") is True
        # The page's replacements were never called: what it replaced cannot fool the checks, nor see them.
        assert await value(page, "window.seen") == 0


async def test_fill_of_a_tracked_field_is_seen_as_a_change(browser: Browser, server: str) -> None:
    """The value is set through the native setter, out of the page's world: a React-style tracker on the
    field, which ignores values set through the field's own setter, reports the change."""
    page = await open_page(browser, f"{server}/actions/patched.html?tracker-only")
    with trio.fail_after(15):
        snap = await page.snapshot()
        await page.fill(ref(snap, "Date", "When"), "2026-11-24")
        assert await value(page, "document.getElementById('when').value") == "2026-11-24"
        assert await value(page, "document.getElementById('changes').textContent") == "2026-11-24"


async def test_the_world_is_made_again_after_a_navigation(browser: Browser, server: str) -> None:
    page = await open_page(browser, f"{server}/actions/patched.html")
    with trio.fail_after(20):
        await page.click(ref(await page.snapshot(), "button", "Go"))
        for _ in range(2):  # the engine's world went with the old document each time
            await page.goto(f"{server}/actions/patched.html")
            await page.click(ref(await page.snapshot(), "button", "Go"))
            await page.wait_for(text="Clicked")
        assert await value(page, "window.seen") == 0


async def test_the_world_is_not_mistaken_for_a_context_of_the_next_process(
    browser: Browser, server: str
) -> None:
    """Context ids are numbered per renderer process: after a navigation to another site, the old world's
    id can name an iframe's main world in the new process. The engine must not act there."""
    page = await open_page(browser, f"{server}/actions/patched.html?tracker-only")
    other_site = server.replace("127.0.0.1", "localhost")  # another site: a new renderer process
    with trio.fail_after(20):
        await page.click(ref(await page.snapshot(), "button", "Go"))  # the world is made here
        for _ in range(2):
            await page.goto(f"{other_site}/actions/editor-frames.html")
            await page.fill(ref(await page.snapshot(), "textbox", "Editor"), "new")
            assert await value(page, "document.getElementById('editor').textContent") == "new"
            await page.goto(f"{server}/actions/patched.html?tracker-only")
            await page.click(ref(await page.snapshot(), "button", "Go"))


async def test_a_key_press_does_not_wait_on_the_pages_timers(
    browser: Browser, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a key, the action waits a task turn in the page (a setTimeout of 0) so that a navigation the
    key's handler asks for is seen; on a page that replaced setTimeout that turn must still come."""
    monkeypatch.setattr(engine._waiting, "BARRIER_TIMEOUT", 60.0)  # its limit would end the wait otherwise
    page = await open_page(browser, f"{server}/actions/patched.html?tracker-only")
    await value(page, "window.setTimeout = () => 0")  # only the timers: a task turn never comes there
    with trio.fail_after(15):
        field = ref(await page.snapshot(), "textbox", "Name")
        await page.press("Enter", ref=field)
        await page.type(field, "ab")
    assert await value(page, "document.getElementById('name').value") == "ab"


async def test_actions_in_a_frame_of_another_origin_run_in_that_frames_world(
    browser: Browser, server: str, peer_port: str
) -> None:
    """The parent's world cannot reach into a frame of another origin (in the same process): the frame
    gets a world of its own."""
    page = await open_page(browser, f"{server}/actions/patched-host.html?peer={peer_port}")
    with trio.fail_after(15):
        await page.wait_for(text="Ready")
        snap = await page.snapshot()
        assert not page.session.children  # the same process: no session of its own
        go = ref(snap, "button", "Go")
        await page.click(go)
        await page.wait_for(text="Clicked")
        await page.fill(ref(snap, "textbox", "Name"), "Ada")
        seen = await page.evaluate("(el) => el.ownerDocument.defaultView.seen", ref=go)
    assert seen == 0


async def test_a_gone_world_is_made_again_without_the_navigation_hook(
    browser: Browser, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Should the hook miss a navigation, the resolve that meets the gone world makes it again."""
    monkeypatch.setattr(engine._worlds, "add_hook", lambda *_: None)
    page = await open_page(browser, f"{server}/actions/patched.html")
    with trio.fail_after(20):
        await page.click(ref(await page.snapshot(), "button", "Go"))
        await page.goto(f"{server}/actions/patched.html")  # the same process: the old context id is gone
        await page.click(ref(await page.snapshot(), "button", "Go"))  # DOM.resolveNode meets it
        await page.wait_for(text="Clicked")
        assert await value(page, "window.seen") == 0
        await page.goto(f"{server}/actions/patched.html")
        await page.scroll(direction="down")  # Runtime.evaluate meets it
    assert await value(page, "window.seen") == 0


async def test_frames_that_keep_navigating_do_not_hide_the_main_frames_text(
    browser: Browser, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A world made while some other frame navigated is still good: the text check of the main frame
    must not come back empty, or a wait for the text to go would end while it is still shown."""
    page = await open_page(browser, f"{server}/actions/busy-frames.html")
    # Under the default budget, not a deadline of the test's: a busy machine would let that one win.
    monkeypatch.setattr(engine._waiting, "DEFAULT_BUDGET", 0.5)
    async with without_a_deadline():
        for _ in range(6):
            with pytest.raises(ActionError, match="'Persistent' to disappear"):
                await page.wait_for(gone_text="Persistent")


async def test_an_element_moved_out_of_its_frame_is_still_clicked(browser: Browser, server: str) -> None:
    page = await open_page(browser, f"{server}/actions/adopt.html")
    with trio.fail_after(10):
        await page.wait_for(text="Go now")
        go = ref(await page.snapshot(), "button", "Go now")
        await value(page, "dest.appendChild(frame.contentDocument.getElementById('b')), 0")
        await page.click(go)  # the hit lands on a child of the button, now in the top document
    assert await value(page, "window.hits") == 1
