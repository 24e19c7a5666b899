"""Browser._chore: engine work that outlives the call that started it, owned by the browser's block."""

from __future__ import annotations

import logging

import pytest
import trio

from engine import ConnectionClosed
from engine.testing import open_fake_browser


async def test_a_chore_runs_after_its_caller_returned_and_is_cancelled_with_the_block() -> None:
    ran = trio.Event()
    ended: list[str] = []

    async def chore() -> None:
        ran.set()
        try:
            await trio.sleep_forever()
        finally:
            ended.append("cancelled")

    async with open_fake_browser() as (browser, _):
        assert browser._chore("a test chore", chore)
        with trio.fail_after(5):
            await ran.wait()
        assert ended == []
    assert ended == ["cancelled"]
    assert not browser._chore("a chore too late", chore)  # the block is gone: nothing runs


async def test_a_chore_that_fails_is_logged_and_the_block_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    async def breaks() -> None:
        raise RuntimeError("boom")

    async def link_gone() -> None:
        raise ConnectionClosed("gone")

    def said(text: str) -> list[logging.LogRecord]:
        return [record for record in caplog.records if text in record.getMessage()]

    with caplog.at_level(logging.DEBUG, logger="engine.browser"):
        async with open_fake_browser() as (browser, _):
            browser._chore("a breaking chore", breaks)
            browser._chore("a chore whose link went", link_gone)
            with trio.fail_after(5):
                while not (said("a breaking chore failed") and said("a chore whose link went ended")):
                    await trio.sleep(0.01)
    assert said("a breaking chore failed")[0].levelno == logging.ERROR
    assert said("a chore whose link went ended")[0].levelno == logging.DEBUG


async def test_the_blocks_own_error_comes_out_as_it_is() -> None:
    with pytest.raises(KeyError):
        async with open_fake_browser():
            raise KeyError("mine")
