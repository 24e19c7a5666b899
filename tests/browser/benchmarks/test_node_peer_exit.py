"""A Node peer that ends in any way but a "stop" (the harness was interrupted, or the peer was killed) leaves
no browser running and nothing in /tmp."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from benchmarks import chromium
from benchmarks.clients.base import Env
from benchmarks.clients.node_peers import ChromeRemoteInterface, NodePeer, PuppeteerPipe, PuppeteerWebSocket


def _running_on(folder: Path) -> list[int]:
    """Live processes whose command line names ``folder``."""
    pids = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{name}/stat", "rb") as f:
                state = f.read().rpartition(b")")[2].split()[0]
        except (OSError, IndexError):
            continue
        if str(folder).encode() in cmdline and state not in (b"Z", b"X"):
            pids.append(int(name))
    return pids


def _wait_gone(folder: Path, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while _running_on(folder) and time.monotonic() < deadline:
        time.sleep(0.05)


def _started(peer: NodePeer) -> tuple[Path, Path]:
    """Start ``peer``; -> (its log, its TMPDIR, where its browsers' profiles go)."""
    env = Env(
        ws_url="", http_url=None, chromium=chromium.CHROMIUM, chromium_args=chromium.FLAGS, big_page_url=""
    )
    peer.start(env)
    assert peer._log is not None
    assert peer._tmp is not None
    tmp = Path(peer._tmp)
    assert _running_on(tmp), "the peer's browser did not start"
    return Path(peer._log.name), tmp


def test_the_peers_browser_is_stopped_when_its_stdin_closes() -> None:
    peer = ChromeRemoteInterface()
    log, tmp = _started(peer)
    try:
        (profile,) = set(tmp.glob("cdp-bench-node-*"))
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


@pytest.mark.parametrize("peer_class", [ChromeRemoteInterface, PuppeteerWebSocket, PuppeteerPipe])
def test_a_killed_peer_leaves_no_browser_once_stopped(peer_class: type[NodePeer]) -> None:
    # Its websocket browser runs detached, so it outlived a SIGKILLed peer: three were found an hour old.
    peer = peer_class()
    _, tmp = _started(peer)
    try:
        process = peer._process
        assert process is not None
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        peer.stop()
    _wait_gone(tmp, 10)
    assert not _running_on(tmp)
    assert not tmp.exists()


@pytest.mark.parametrize("end", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name)
@pytest.mark.parametrize("peer_class", [ChromeRemoteInterface, PuppeteerWebSocket])
def test_a_signalled_peer_stops_its_browser_itself(peer_class: type[NodePeer], end: signal.Signals) -> None:
    peer = peer_class()
    _, tmp = _started(peer)
    try:
        process = peer._process
        assert process is not None
        os.kill(process.pid, end)
        process.wait(timeout=30)
        _wait_gone(tmp, 10)
        assert not _running_on(tmp), "the peer died and left its browser running"
    finally:
        peer.stop()
    assert not tmp.exists()
