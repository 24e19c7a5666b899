"""Ten tabs at once, each loading the page: python -m engine.demo.recipes.tabs URL"""

import sys

import trio

import cdp
from engine import Browser, check_result, launch


async def visit(browser: Browser, url: str, n: int) -> None:
    page = await browser.new_page(f"{url}?tab={n}")
    title = await page.session.execute(cdp.runtime.evaluate(expression="document.title"))
    print(f"tab {n}: {check_result(title)}")
    await page.close()


async def main(url: str) -> None:
    async with launch() as browser, trio.open_nursery() as nursery:
        for n in range(10):
            nursery.start_soon(visit, browser, url, n)


if __name__ == "__main__":
    trio.run(main, sys.argv[1])
