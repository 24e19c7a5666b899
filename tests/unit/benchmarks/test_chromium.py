"""The launcher's clean-up: a profile is removed after the last process of the browser's group is gone."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from benchmarks.chromium import WebSocketBrowser

# A stand-in browser: its child (same process group), signalled, takes 0.2 s to write its last file
# (making its folder again, as Chromium's stores do) and exit; the main process exits at once.
STAND_IN = """
import os, signal, sys, time
profile = sys.argv[1]
if os.fork() == 0:
    def last_words(*_):
        time.sleep(0.2)
        os.makedirs(os.path.join(profile, "Default"), exist_ok=True)
        with open(os.path.join(profile, "Default", "last"), "w") as f:
            f.write("x")
        os._exit(0)
    signal.signal(signal.SIGTERM, last_words)
    with open(os.path.join(profile, "child-ready"), "w") as f:
        f.write("x")
    while True:
        time.sleep(0.01)
signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
while True:
    time.sleep(0.01)
"""


def test_the_profile_is_removed_after_a_child_that_writes_on_its_way_out(tmp_path: Path) -> None:
    profile = tmp_path / "cdp-bench-ws-x"
    profile.mkdir()
    process = subprocess.Popen([sys.executable, "-c", STAND_IN, str(profile)], start_new_session=True)
    deadline = time.monotonic() + 10
    while not (profile / "child-ready").exists():
        assert time.monotonic() < deadline, "the stand-in's child did not start"
        time.sleep(0.01)
    browser = WebSocketBrowser(process.pid, "", "", str(profile), process)
    browser.stop()
    time.sleep(0.4)  # past the child's last write, had it been left alive
    assert not profile.exists(), sorted(str(p.relative_to(profile)) for p in profile.rglob("*"))
