"""Cookies and localStorage: set, read and clear them: python -m engine.demo.recipes.storage URL"""

import sys

import trio

import cdp
from engine import launch


async def main(url: str) -> None:
    async with launch() as browser:
        page = await browser.new_page()
        await page.session.execute(cdp.network.set_cookie(name="session", value="abc123", url=url))
        await page.goto(url)  # the page sets a cookie and a localStorage item of its own
        cookies = await page.session.execute(cdp.network.get_cookies(urls=[url]))
        for cookie in cookies.cookies:
            print(f"cookie  {cookie.name}={cookie.value} (path {cookie.path}, httpOnly {cookie.http_only})")
        origin = (await page.session.execute(cdp.page.get_frame_tree())).frame_tree.frame.security_origin
        local = cdp.dom_storage.StorageId(is_local_storage=True, security_origin=origin)
        await page.session.execute(cdp.dom_storage.enable())
        await page.session.execute(
            cdp.dom_storage.set_dom_storage_item(storage_id=local, key="theme", value="dark")
        )
        items = await page.session.execute(cdp.dom_storage.get_dom_storage_items(storage_id=local))
        for key, value in items.entries:
            print(f"storage {key}={value}")
        await page.session.execute(
            cdp.storage.clear_data_for_origin(origin=origin, storage_types="cookies,local_storage")
        )
        left = await page.session.execute(cdp.network.get_cookies(urls=[url]))
        print(f"after clearing {origin}: {len(left.cookies)} cookies")


if __name__ == "__main__":
    trio.run(main, sys.argv[1])
