"""Block images, answer fetches, rewrite HTML (Fetch): python -m engine.demo.recipes.intercept URL"""

import trio

import cdp
from engine import Session, Subscription, check_result, launch, response_body
from engine.demo.recipes import url_argument

BOTH_STAGES = [cdp.fetch.RequestPattern(request_stage=stage) for stage in cdp.fetch.RequestStage]
WAIT = 3  # seconds for a list item, as the answered fetch makes on the test page; most pages make none
SHOW = f"(async () => {{ for (const end = Date.now() + {WAIT * 1000}; !document.querySelector('li')"
SHOW += " && Date.now() < end;) await new Promise(r => setTimeout(r, 20));"
SHOW += " return [!!document.querySelector('li'), document.body.innerText] })()"


async def intercept(session: Session, paused_requests: Subscription[cdp.fetch.RequestPaused]) -> None:
    async for paused in paused_requests:
        rid, kind, answered = paused.request_id, paused.resource_type, paused.response_status_code is not None
        if kind == "Image":
            command = cdp.fetch.fail_request(
                request_id=rid, error_reason=cdp.network.ErrorReason.BLOCKED_BY_CLIENT
            )
        elif kind == "XHR" and not answered:  # fetch() and XMLHttpRequest; a body is bytes
            command = cdp.fetch.fulfill_request(request_id=rid, response_code=200, body=b'{"items": ["new"]}')
        elif kind == "Document" and answered:
            html = (await response_body(session, rid, domain="Fetch")).replace(b"<h1>", b"<h1>Rewritten ")
            command = cdp.fetch.fulfill_request(request_id=rid, response_code=200, body=html)
        else:
            command = cdp.fetch.continue_request(request_id=rid)
        print(f"{command.method:<21} {paused.request.url}")
        await session.execute(command)


async def main(url: str) -> None:
    async with launch() as browser, trio.open_nursery() as nursery:
        page = await browser.new_page()
        async with page.session.listen(cdp.fetch.RequestPaused) as paused_requests:
            await page.session.execute(cdp.fetch.enable(patterns=BOTH_STAGES))  # before and after responses
            nursery.start_soon(intercept, page.session, paused_requests)
            await page.goto(url)
            with trio.fail_after(WAIT + 5):  # the script gives up after WAIT; this, if the page is stuck
                shown = await page.session.execute(
                    cdp.runtime.evaluate(expression=SHOW, await_promise=True, return_by_value=True)
                )
            listed, text = check_result(shown)
            print(text if listed else f"(no <li> came within {WAIT} s; the page as it is:)\n{text}")
            nursery.cancel_scope.cancel()


if __name__ == "__main__":
    trio.run(main, url_argument())
