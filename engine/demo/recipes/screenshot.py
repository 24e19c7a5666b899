"""A PNG screenshot and a PDF of a page: python -m engine.demo.recipes.screenshot URL [DIR]"""

import sys

import trio

import cdp
from engine import launch


async def main(url: str, folder: str) -> None:
    async with launch() as browser:
        page = await browser.new_page(url)
        png = await page.session.execute(cdp.page.capture_screenshot(format_="png"))  # .data is bytes
        pdf = await page.session.execute(cdp.page.print_to_pdf(print_background=True))
    await trio.Path(folder, "page.png").write_bytes(png.data)
    await trio.Path(folder, "page.pdf").write_bytes(pdf.data)
    print(f"page.png: {len(png.data):,} bytes, page.pdf: {len(pdf.data):,} bytes")


if __name__ == "__main__":
    trio.run(main, sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else ".")
