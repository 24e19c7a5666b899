"""Shared fixtures: a static page server on 127.0.0.1 and a launched headless Chromium."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from engine import Browser, launch
from engine.testing import serve_directory

PAGES = Path(__file__).parent / "integration" / "pages"


@pytest.fixture(scope="session")
def server() -> Iterator[str]:
    """Base URL of tests/integration/pages served on 127.0.0.1."""
    with serve_directory(PAGES) as url:
        yield url


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with launch() as b:
        yield b
