"""A run of the suite killed without its cleanup (SIGKILL, a test's timeout) leaves no browser running, and
the next run removes the profiles it left.

Before, the websocket browsers (the one most peers share, and every websocket client's own) outlived the
run for good: a smoke test that timed out left five Chromiums behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks import chromium
from engine.lowlevel import session_members

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[3]

RUN = """
from benchmarks import chromium
ws, pipe = chromium.launch_websocket(), chromium.launch_pipe()
print(ws.pid, pipe.pid, ws.profile, pipe.profile, flush=True)
import time
time.sleep(120)
"""


def test_a_killed_run_leaves_no_browser_and_the_next_run_removes_its_profiles(system_temp: Path) -> None:
    with subprocess.Popen(
        [sys.executable, "-c", RUN],
        stdout=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(system_temp), "PYTHONPATH": str(ROOT)},
    ) as run:
        assert run.stdout is not None
        ws_pid, pipe_pid, *profiles = run.stdout.readline().decode().split()
        sessions = [int(ws_pid), int(pipe_pid)]
        try:
            assert all(session_members(sid) for sid in sessions), "both browsers run before the kill"
            run.send_signal(signal.SIGKILL)
            assert run.wait(timeout=10) == -signal.SIGKILL
            deadline = time.monotonic() + 15
            while any(session_members(sid) for sid in sessions) and time.monotonic() < deadline:
                time.sleep(0.1)
            left = {sid: session_members(sid) for sid in sessions}
            assert left == {sid: [] for sid in sessions}, f"browsers outlived the killed run: {left}"
        finally:
            for sid in sessions:
                for pid in session_members(sid):  # don't leak them into the rest of the suite
                    os.kill(pid, signal.SIGKILL)
    assert sorted(str(p) for p in system_temp.iterdir()) == sorted(profiles)
    assert sorted(chromium.sweep()) == sorted(profiles)
    assert list(system_temp.iterdir()) == []
