"""Scripting helpers against a real Chromium: page.frames(), child sessions' target, URL and frame,
RemoteObject and exception helpers, response bodies as bytes."""

from __future__ import annotations

import math

import pytest
import trio

import cdp
import engine
from engine import Browser, JavaScriptError, Page, ProtocolError, check_result, describe, js_value

pytestmark = pytest.mark.browser


@pytest.fixture
async def page(browser: Browser, server: str) -> Page:
    with trio.fail_after(30):
        return await browser.new_page(f"{server}/scripting/shop.html")


async def evaluate(
    page: Page, expression: str, *, return_by_value: bool = False, generate_preview: bool = False
) -> cdp.runtime.EvaluateResult:
    command = cdp.runtime.evaluate(
        expression=expression, return_by_value=return_by_value, generate_preview=generate_preview
    )
    with trio.fail_after(10):
        return await page.session.execute(command)


async def test_frames_lists_every_frame_with_parent_and_driving_session(page: Page, server: str) -> None:
    with trio.fail_after(10):
        frames = await page.frames()
    main, *rest = frames
    assert (main.url, main.parent_id, main.session, main.out_of_process) == (
        f"{server}/scripting/shop.html",
        None,
        page.session,
        False,
    )
    local = next(f for f in rest if f.name == "local")
    assert (local.parent_id, local.session, local.out_of_process) == (main.id, page.session, False)
    remote = next(f for f in rest if f.url.startswith("http://localhost"))
    assert remote.parent_id == main.id
    assert remote.out_of_process
    assert remote.session is page.session.children[remote.session.session_id or ""]
    nested = [f for f in rest if f.url.startswith("data:")]
    assert {f.parent_id for f in nested} == {local.id, remote.id}
    assert next(f for f in nested if f.parent_id == remote.id).session is remote.session
    assert len(frames) == len({f.id for f in frames}) == 5


async def test_a_child_session_says_its_target_type_url_and_frame(page: Page, server: str) -> None:
    (child,) = [c for c in page.session.children.values() if c.target_type == "iframe"]
    assert child.frame_id == child.target_id
    assert child.parent is page.session
    with trio.fail_after(10):
        while not child.url.startswith("http"):
            await trio.sleep(0.02)
    assert child.url == server.replace("127.0.0.1", "localhost") + "/scripting/inner.html"
    assert child.url in repr(child)


VALUES = [
    ("1 + 1", 2),
    ("'text'", "text"),
    ("null", None),
    ("undefined", None),
    ("[1, 'a', {b: true}]", [1, "a", {"b": True}]),
    ("-0", -0.0),
    ("2n ** 70n", 2**70),
    ("Infinity", math.inf),
]


async def test_js_value_gives_the_python_value(page: Page) -> None:
    for expression, value in VALUES:
        got = js_value((await evaluate(page, expression, return_by_value=True)).result)
        assert got == value, expression
        assert type(got) is type(value), expression


async def test_js_value_of_nan_and_of_an_object_by_reference(page: Page) -> None:
    assert math.isnan(js_value((await evaluate(page, "NaN")).result))
    by_reference = (await evaluate(page, "document.body")).result
    with pytest.raises(ValueError, match=r"by reference .* return_by_value=True"):
        js_value(by_reference)
    assert describe(by_reference) == "body"


async def test_describe_reads_like_the_console(page: Page) -> None:
    async def shown(expression: str) -> str:
        return describe((await evaluate(page, expression, generate_preview=True)).result)

    assert await shown("({a: 1, b: 'x'})") == "{a: 1, b: 'x'}"
    assert await shown("[1, 2, 3]") == "[1, 2, 3]"
    assert await shown("'x'.repeat(100)") == repr("x" * 60) + "...<100 chars>"
    assert await shown("undefined") == "undefined"
    assert await shown("(function named() {})") == "function named() {}"
    assert await shown("new Map([[1, 2]])") == "Map(1)"


async def test_check_result_raises_a_one_line_error_with_its_location(page: Page, server: str) -> None:
    with pytest.raises(JavaScriptError) as info:
        check_result(await evaluate(page, "\n  null.f()"))
    assert str(info.value) == "TypeError: Cannot read properties of null (reading 'f') (at <anonymous>:2:8)"
    assert isinstance(info.value.details, cdp.runtime.ExceptionDetails)
    with pytest.raises(JavaScriptError, match=r"^Uncaught 'plain' \(at <anonymous>:1:1\)$"):
        check_result(await evaluate(page, "throw 'plain'"))
    assert check_result(await evaluate(page, "document.title")) == "Recipe shop"


async def test_response_body_is_bytes_for_text_and_binary(browser: Browser, server: str) -> None:
    wanted = {f"{server}/scripting/items.json", f"{server}/scripting/logo.svg"}
    with trio.fail_after(30):
        page = await browser.new_page()
        await page.session.execute(cdp.network.enable())
        async with page.session.listen(cdp.network.ResponseReceived, cdp.network.LoadingFinished) as events:
            await page.goto(f"{server}/scripting/shop.html")
            ids: dict[str, str] = {}
            finished: set[str] = set()
            while not (wanted <= {ids.get(rid) for rid in finished}):
                event = await events.receive()
                if isinstance(event, cdp.network.ResponseReceived):
                    ids[event.request_id] = event.response.url
                else:
                    finished.add(event.request_id)
        bodies = {
            ids[rid].rsplit("/", 1)[1]: await engine.response_body(page.session, rid)
            for rid in finished
            if ids.get(rid) in wanted
        }
    assert bodies["items.json"] == b'{"items": ["apple", "pear"]}\n'
    assert bodies["logo.svg"].startswith(b"<svg")


async def test_a_body_chromium_did_not_keep_says_to_enable_network(browser: Browser, server: str) -> None:
    # A new page's Network keeps no bodies (its own enable is for networkidle): the error was Chromium's
    # "Request content was evicted from inspector cache", with no word of what to do.
    with trio.fail_after(30):
        page = await browser.new_page()
        async with page.session.listen(cdp.network.ResponseReceived) as events:
            await page.goto(f"{server}/scripting/shop.html")
            request_id = (await events.receive()).request_id
        with pytest.raises(ProtocolError, match=r"send cdp\.network\.enable\(\) on this session before"):
            await engine.response_body(page.session, request_id)
