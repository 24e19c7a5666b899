"""The launcher's clean-up: a profile is removed after the last process of the browser's group is gone."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from benchmarks import chromium
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


def _never_ready(tmp_path: Path) -> str:
    """A stand-in "Chromium" that starts and never writes its DevToolsActivePort."""
    script = tmp_path / "never-ready"
    script.write_text("#!/bin/sh\nexec sleep 60\n")
    script.chmod(0o755)
    return str(script)


def test_a_launch_interrupted_while_it_waits_for_the_port_stops_the_browser(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    launched: list[tuple[chromium.Spawned, str]] = []
    real_spawn = chromium._spawn_logged

    def spawn(argv: list[str], profile: str) -> tuple[chromium.Spawned, tuple[int, int]]:
        process, fds = real_spawn(argv, profile)
        launched.append((process, profile))
        return process, fds

    def interrupted(process: chromium.Waitable, profile: str) -> tuple[str, str]:
        raise KeyboardInterrupt  # Ctrl-C while it waits for the port

    temp = tmp_path / "temp"  # a temp folder of its own: another worker's browser may start meanwhile
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.setattr(chromium, "_spawn_logged", spawn)
    monkeypatch.setattr(chromium, "_debugging_port", interrupted)
    with pytest.raises(KeyboardInterrupt):
        chromium.launch_websocket(_never_ready(tmp_path))
    monkeypatch.undo()
    ((process, profile),) = launched
    assert process.poll() is not None, "the stand-in browser is still running"
    assert Path(profile).parent == temp
    assert not list(temp.iterdir()), "the interrupted launch left its profile"


def test_a_stop_interrupted_while_it_waits_still_kills_the_browser_and_removes_its_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    profile = tmp_path / "cdp-bench-ws-y"
    profile.mkdir()
    ignores_term = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(60)\n"
    process = subprocess.Popen([sys.executable, "-c", ignores_term], start_new_session=True)
    time.sleep(0.3)  # its SIGTERM handler is set

    def wait(timeout: float) -> int:
        raise KeyboardInterrupt  # Ctrl-C while the stop waits out SIGTERM's grace

    browser = WebSocketBrowser(process.pid, "", "", str(profile), process)
    with monkeypatch.context() as patch:
        patch.setattr(process, "wait", wait)
        with pytest.raises(KeyboardInterrupt):
            browser.stop()
    assert process.wait(timeout=5) is not None
    assert not profile.exists()
