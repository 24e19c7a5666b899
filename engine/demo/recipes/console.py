"""Console messages and uncaught exceptions of a page: python -m engine.demo.recipes.console URL"""

import sys

import trio

import cdp
from engine import describe, exception_message, launch


async def main(url: str) -> None:
    async with launch() as browser:
        page = await browser.new_page()
        async with page.session.listen(cdp.runtime.ConsoleAPICalled, cdp.runtime.ExceptionThrown) as events:
            await page.session.execute(cdp.runtime.enable())
            await page.goto(url)
            while True:  # until the page has been quiet for half a second
                with trio.move_on_after(0.5) as quiet:
                    event = await events.receive()
                if quiet.cancelled_caught:
                    break
                if isinstance(event, cdp.runtime.ConsoleAPICalled):
                    print(f"console.{event.type_}:", *(describe(arg) for arg in event.args))
                else:
                    print("uncaught:", exception_message(event.exception_details))


if __name__ == "__main__":
    trio.run(main, sys.argv[1])
