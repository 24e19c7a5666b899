"""Fixtures of the fault-injection tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from engine._connection import Connection, open_connection
from engine._session import Session
from tests.engine.fake import FakePeer, FakeTransport


@pytest.fixture
async def pair() -> AsyncIterator[tuple[Connection, FakePeer, Session]]:
    transport = FakeTransport()
    async with open_connection(transport) as connection:
        yield connection, FakePeer(transport), connection.sessions.browser
