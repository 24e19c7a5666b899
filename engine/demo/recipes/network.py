"""A table of the requests a page makes: python -m engine.demo.recipes.network URL"""

import trio

import cdp
from engine import launch
from engine.demo.recipes import url_argument


async def main(url: str) -> None:
    rows: dict[str, list[object]] = {}
    async with launch() as browser:
        page = await browser.new_page()
        await page.session.execute(cdp.network.enable())
        async with page.session.listen(cdp.network.ResponseReceived, cdp.network.LoadingFinished) as events:
            await page.goto(url)
            with trio.move_on_after(1):  # and the requests of the second after load
                async for event in events:
                    if isinstance(event, cdp.network.ResponseReceived):
                        rows[event.request_id] = [event.response.status, event.type_, "?", event.response.url]
                    elif event.request_id in rows:  # ("?" if it ended elsewhere: an out-of-process iframe)
                        rows[event.request_id][2] = f"{int(event.encoded_data_length):,}"
    for status, kind, size, address in rows.values():
        print(f"{status:>3} {kind:<10} {size:>7}  {address}")


if __name__ == "__main__":
    trio.run(main, url_argument())
