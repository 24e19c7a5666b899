"""The ``cdp-engine`` command line, run as a user would, against a browser it launches."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.browser


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "engine.cli", *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_protocol_summary_and_domain_listing() -> None:
    summary = run("protocol")
    assert summary.returncode == 0, summary.stderr
    assert "59 domains" in summary.stdout
    listing = run("protocol", "Inspector")
    assert "event    Inspector.targetCrashed" in listing.stdout


def test_call_prints_the_raw_result() -> None:
    done = run("call", "Runtime.evaluate", '{"expression": "6*7", "returnByValue": true}')
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"]["value"] == 42


def test_a_protocol_error_is_a_clear_message_and_exit_1() -> None:
    done = run("call", "Browser.noSuchThing")
    assert done.returncode == 1
    assert "ProtocolError" in done.stderr
    assert "Browser.noSuchThing" in done.stderr
