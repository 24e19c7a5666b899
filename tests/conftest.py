"""Shared fixtures: a static page server on 127.0.0.1, a launched headless Chromium, and temp folders of
a test's own for the process tests."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from engine import Browser, launch
from engine.testing import serve_directory

PAGES = Path(__file__).parent / "browser" / "integration" / "pages"


@pytest.fixture(scope="session")
def server() -> Iterator[str]:
    """Base URL of tests/browser/integration/pages served on 127.0.0.1."""
    with serve_directory(PAGES) as url:
        yield url


@pytest.fixture(scope="session")
def peer() -> Iterator[str]:
    """The same pages from a second server on another 127.0.0.1 port: another origin of the same site."""
    with serve_directory(PAGES) as url:
        yield url


@pytest.fixture
def peer_port(peer: str) -> str:
    """The port of ``peer``, for pages that build their other-origin URLs from it (``?peer=PORT``)."""
    return peer.rsplit(":", 1)[1].strip("/")


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with launch() as b:
        yield b


@pytest.fixture
def profiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Temporary profiles go under a directory of this test alone.

    Reached through a short symlink: Chromium's TMPDIR goes inside, and a pytest tmp_path is too long a
    path for its singleton socket (the engine would fall back to /tmp).
    """
    short = tempfile.mkdtemp(prefix="cdp-test-", dir="/tmp")
    os.symlink(tmp_path, os.path.join(short, "p"))
    monkeypatch.setattr(tempfile, "tempdir", os.path.join(short, "p"))
    yield tmp_path
    shutil.rmtree(short)  # the link, not what it points to


@pytest.fixture
def system_temp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The "system temp folder" for this test alone: tempfile and $TMPDIR both point at it.

    A short path: the engine puts Chromium's TMPDIR inside it, and Chromium aborts when its socket
    path ($TMPDIR/org.chromium.Chromium.XXXXXX/SingletonSocket) passes 107 bytes.
    """
    path = tempfile.mkdtemp(prefix="cdp-test-", dir="/tmp")
    monkeypatch.setattr(tempfile, "tempdir", path)
    monkeypatch.setenv("TMPDIR", path)
    yield Path(path)
    shutil.rmtree(path, ignore_errors=True)
