"""A Node peer whose stdin closes without a "stop" (the harness was interrupted) still stops its browser."""

from __future__ import annotations

import os
import time
from pathlib import Path

from benchmarks import chromium
from benchmarks.clients.base import Env
from benchmarks.clients.node_peers import ChromeRemoteInterface


def _profiles(folder: str) -> set[Path]:
    return set(Path(folder).glob("cdp-bench-node-*"))


def _running_on(profile: Path) -> list[int]:
    """Live processes whose command line names ``profile``."""
    pids = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{name}/stat", "rb") as f:
                state = f.read().rpartition(b")")[2].split()[0]
        except (OSError, IndexError):
            continue
        if str(profile).encode() in cmdline and state not in (b"Z", b"X"):
            pids.append(int(name))
    return pids


def test_the_peers_browser_is_stopped_when_its_stdin_closes() -> None:
    env = Env(
        ws_url="", http_url=None, chromium=chromium.CHROMIUM, chromium_args=chromium.FLAGS, big_page_url=""
    )
    peer = ChromeRemoteInterface()
    peer.start(env)
    assert peer._log is not None
    log = Path(peer._log.name)
    assert peer._tmp is not None  # the peer's TMPDIR, where its browsers' profiles go
    tmp = Path(peer._tmp)
    try:
        (profile,) = _profiles(str(tmp))
        assert _running_on(profile), "the peer's browser did not start"
        process = peer._process
        assert process is not None
        assert process.stdin is not None
        process.stdin.close()  # as when the harness dies: no "stop" request
        process.wait(timeout=30)
        deadline = time.monotonic() + 10
        while (_running_on(profile) or profile.exists()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _running_on(profile)
        assert not profile.exists()
    finally:
        peer.stop()
    assert not log.exists(), "an empty peer log was left in /tmp"  # 58 had piled up there
    assert not tmp.exists()  # with the org.chromium.Chromium.* folders its browsers left
