"""Connect-phase discovery against a real Chromium."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from engine import Settings
from engine.lowlevel import (
    discover_ws_url,
    open_chromium,
)


@pytest.mark.browser
async def test_discover_ws_url_finds_a_real_browsers_websocket() -> None:
    with trio.fail_after(60):
        async with open_chromium(transport="websocket", settings=Settings(launch_timeout=30)) as browser:
            assert browser.ws_url is not None
            port = int(browser.ws_url.split(":")[2].split("/")[0])
            assert await discover_ws_url("127.0.0.1", port, Settings()) == browser.ws_url
