"""The ``cdp-engine`` command line, run as a user would, against a browser it launches."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine import drift as _drift

pytestmark = pytest.mark.browser


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "engine.cli", *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_protocol_summary_and_domain_listing() -> None:
    summary = run("protocol")
    assert summary.returncode == 0, summary.stderr
    assert f"{len(_drift.load_pinned())} domains" in summary.stdout  # 59 in protocol 0.0.1734725
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


def test_bench_runs_from_anywhere_with_the_checkouts_editable_install(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "cdp-engine"  # the console script, not `python -m` in the checkout
    command = [str(script), "bench", "--list"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "roundtrip.getVersion" in done.stdout
