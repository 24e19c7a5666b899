"""Every frame of a page, cross-origin ones included, and a script run in each.

python -m engine.demo.recipes.frames URL
"""

import sys

import trio

import cdp
from engine import check_result, launch


async def main(url: str) -> None:
    async with launch() as browser:
        page = await browser.new_page(url)
        for frame in await page.frames():
            world = await frame.session.execute(cdp.page.create_isolated_world(frame_id=frame.id))
            title = cdp.runtime.evaluate(expression="document.title", context_id=world.execution_context_id)
            where = "out of process" if frame.out_of_process else "in the page's process"
            print(f"{frame.url} ({where}): title {check_result(await frame.session.execute(title))!r}")


if __name__ == "__main__":
    trio.run(main, sys.argv[1])
