"""Fixtures of the fault-injection tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from engine import Browser, Session
from engine.lowlevel import Connection
from engine.testing import FakePeer, open_fake_browser


@pytest.fixture
async def fake() -> AsyncIterator[tuple[Browser, FakePeer]]:
    """A Browser on an in-memory link and the peer playing the browser."""
    async with open_fake_browser() as pair:
        yield pair


@pytest.fixture
def pair(fake: tuple[Browser, FakePeer]) -> tuple[Connection, FakePeer, Session]:
    """The same link seen as its connection, the peer and the browser-level session."""
    browser, peer = fake
    return browser.connection, peer, browser.session
