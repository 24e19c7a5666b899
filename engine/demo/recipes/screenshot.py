"""page.png and page.pdf of a page, in the current folder: python -m engine.demo.recipes.screenshot URL"""

import trio

import cdp
from engine import launch
from engine.demo.recipes import url_argument


async def main(url: str) -> None:
    async with launch() as browser:
        page = await browser.new_page(url)
        png = await page.session.execute(cdp.page.capture_screenshot(format_="png"))  # .data is bytes
        pdf = await page.session.execute(cdp.page.print_to_pdf(print_background=True))
    await trio.Path("page.png").write_bytes(png.data)
    await trio.Path("page.pdf").write_bytes(pdf.data)
    print(f"page.png: {len(png.data):,} bytes, page.pdf: {len(pdf.data):,} bytes")


if __name__ == "__main__":
    trio.run(main, url_argument())
