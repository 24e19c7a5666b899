"""``make demo`` runs end to end (its output is what a new user sees first)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.browser


def test_demo_runs_and_shows_each_step() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "engine.demo"], capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    steps = (
        "0. drift",
        "1. launched",
        "3. event subscription",
        "5. page.snapshot()",
        "[ref=e3]",
        "page.resolve('e3')",
        "6. action",
    )
    for step in steps:
        assert step in done.stdout, done.stdout
    assert "cart count 1" in done.stdout
    assert "the tab is still usable: 6 * 7 = 42" in done.stdout
    assert "Runtime.evaluate 1+1 (page session)" in done.stdout
    assert "browser closed, profile removed" in done.stdout
