"""engine.webarena.execute on a real headless Chromium, action by action, with the ids that
``snapshot(format="webarena")`` prints (pages under tests/.../pages/steps/)."""

from __future__ import annotations

import re

import pytest
import trio

from engine import Browser, Page, StaleRefError, webarena

pytestmark = pytest.mark.browser


async def webarena_ids(page: Page) -> dict[str, str]:
    """``"role name" -> id`` from a webarena-format snapshot."""
    with trio.fail_after(10):
        snap = await page.snapshot(format="webarena")
    out = {}
    for line in snap.text.splitlines():
        match = re.match(r"\s*\[(\d+)\] (\w+) '([^']*)'", line)
        if match:
            out[f"{match.group(2)} {match.group(3)}"] = match.group(1)
    return out


async def value_of(page: Page, expression: str) -> object:
    with trio.fail_after(10):
        return await page.evaluate(expression)


async def run(page: Page, action: str) -> webarena.Executed:
    with trio.fail_after(15):
        return await webarena.execute(page, action)


async def test_click_hover_type_press_and_scroll_by_id(browser: Browser, server: str) -> None:
    with trio.fail_after(20):
        page = await browser.new_page(f"{server}/steps/search.html")
    ids = await webarena_ids(page)

    await run(page, f"hover [{ids['button Hover me']}]")
    assert await value_of(page, "document.getElementById('tip').textContent") == "Hovered"

    await run(page, f"click [{ids['button Click me']}]")
    assert await value_of(page, "document.getElementById('tip').textContent") == "Pressed BUTTON"

    await run(page, f"type [{ids['textbox Query']}] [red shoes] [0]")
    assert await value_of(page, "document.querySelector('input').value") == "red shoes"

    await run(page, "press [Control+a]")  # the focused textbox: its text selected
    selection = "[document.activeElement.selectionStart, document.activeElement.selectionEnd]"
    assert await value_of(page, selection) == [0, 9]

    await run(page, "scroll [down]")
    assert float(str(await value_of(page, "scrollY"))) > 0
    await run(page, "scroll [up]")
    assert await value_of(page, "scrollY") == 0


async def test_type_with_enter_submits_and_goto_back_forward_follow_history(
    browser: Browser, server: str
) -> None:
    with trio.fail_after(20):
        page = await browser.new_page(f"{server}/steps/search.html")
    ids = await webarena_ids(page)
    done = await run(page, f"type [{ids['textbox Query']}] [boots]")  # press_enter_after defaults to 1
    assert done.page is page
    with trio.fail_after(10):
        await page.wait_for(text="You searched boots")
    assert page.session.url.startswith(f"{server}/steps/results.html?q=boots")

    await run(page, "go_back")
    with trio.fail_after(10):
        await page.wait_for(text="Hover me")
    await run(page, "go_forward")
    with trio.fail_after(10):
        await page.wait_for(text="You searched boots")

    await run(page, f"goto [{server}/steps/next.html]")
    assert await value_of(page, "document.title") == "Next"


async def test_an_id_from_before_a_navigation_is_stale_and_nothing_is_clicked(
    browser: Browser, server: str
) -> None:
    with trio.fail_after(20):
        page = await browser.new_page(f"{server}/steps/search.html")
    ids = await webarena_ids(page)
    await run(page, f"goto [{server}/steps/search.html]")  # the same page again: a new document
    with pytest.raises(StaleRefError, match="navigated"):
        await run(page, f"click [{ids['button Click me']}]")
    assert await value_of(page, "document.getElementById('tip').textContent") == ""
    with pytest.raises(StaleRefError, match="unknown ref"):
        await run(page, "click [999999]")
    with pytest.raises(ValueError, match=r"expected 'click \[id\]'"):
        await run(page, "click 12")


async def test_tabs_new_focus_close_and_stop(browser: Browser, server: str) -> None:
    with trio.fail_after(20):
        first = await browser.new_page(f"{server}/steps/search.html")
    opened = await run(first, "new_tab")
    assert opened.page is not None
    assert opened.page is not first
    assert opened.page in browser.pages
    await run(opened.page, f"goto [{server}/steps/next.html]")

    focused = await run(opened.page, f"tab_focus [{browser.pages.index(first)}]")
    assert focused.page is first
    assert await value_of(first, "document.visibilityState") == "visible"
    with pytest.raises(ValueError, match="tab_focus"):
        await run(first, "tab_focus [7]")

    closed = await run(opened.page, "close_tab")
    assert opened.page.closed
    assert closed.page is first

    stopped = await run(first, "stop [The answer is [42]]")
    assert stopped.answer == "The answer is [42]"
    assert stopped.page is first


@pytest.mark.parametrize("url", ["java\tscript:document.title='ran'", "java\nscript:document.title='ran'"])
async def test_goto_runs_no_script_however_javascript_is_spelled(
    browser: Browser, server: str, url: str
) -> None:
    # Chromium drops the tab or newline, so this ran the script before parse() cleaned the URL as it does.
    with trio.fail_after(20):
        page = await browser.new_page(f"{server}/steps/search.html")
    before = await value_of(page, "document.title")
    with pytest.raises(ValueError, match="javascript: would run a script"):
        await run(page, f"goto [{url}]")
    await trio.sleep(0.2)  # a script that did run would have set the title by now
    assert await value_of(page, "document.title") == before
