"""The agent loop: snapshot, click by ref, wait, read the page: python -m engine.demo.recipes.agent URL"""

import trio

from engine import launch
from engine.demo.recipes import url_argument


async def main(url: str) -> None:
    async with launch() as browser:
        page = await browser.new_page(url)
        snap = await page.snapshot()  # lines such as '- button "Go" [ref=e2]'
        button = next(ref for ref in snap.refs.values() if ref.role == "button")
        with trio.fail_after(5):  # one deadline for the whole loop
            await page.click(button.ref)  # after the actionability checks; a stale ref raises
            await page.wait_for(text="Clicked")
        print((await page.snapshot()).text)  # the same refs for the same elements


if __name__ == "__main__":
    trio.run(main, url_argument())
