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
    # The drift names the browser it launched by its build: its port is gone by the time the report prints.
    assert "Chrome/" in done.stdout.split("1. launched")[0]
    assert "127.0.0.1:" not in done.stdout.split("1. launched")[0]
    assert "cart count 1" in done.stdout
    assert "ActionError check='hit test'" in done.stdout  # the banner took the click, so nothing was clicked
    assert 'dialog "Cookie banner"' in done.stdout
    assert "raises StaleRefError (removed)" in done.stdout
    assert "7. bounded evaluate by ref" in done.stdout
    assert "evaluate by ref -> 'Add coffee x42'" in done.stdout
    assert "8. page.run_steps: click, wait_for, read_page in one call: ok=True" in done.stdout
    for row in ("Runtime.evaluate 1+1 (page session)", "page.click('e", "page.snapshot() x40"):
        assert row in done.stdout
    assert "browser closed, profile removed" in done.stdout
