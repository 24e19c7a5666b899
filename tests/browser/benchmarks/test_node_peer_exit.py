"""A Node peer that ends in any way but a "stop" (the harness was interrupted, or the peer was killed) leaves
no browser running and nothing in /tmp."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

import pytest

from benchmarks import chromium
from benchmarks.clients.base import Env
from benchmarks.clients.node_peers import (
    ChromeRemoteInterface,
    NodePeer,
    PuppeteerPipe,
    PuppeteerWebSocket,
    scenario_json,
)
from benchmarks.scenarios import BY_NAME


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


@contextmanager
def _started(peer: NodePeer) -> Iterator[tuple[Path, Path]]:
    """Start ``peer``; -> (its log, its TMPDIR, where its browsers' profiles go). Stopped on the way out,
    also when its start failed half-way."""
    env = Env(
        ws_url="", http_url=None, chromium=chromium.CHROMIUM, chromium_args=chromium.FLAGS, big_page_url=""
    )
    try:
        peer.start(env)
        assert peer._log is not None
        assert peer._tmp is not None
        tmp = Path(peer._tmp)
        assert _running_on(tmp), "the peer's browser did not start"
        yield Path(peer._log.name), tmp
    finally:
        peer.stop()


def _end(peer: NodePeer, how: signal.Signals) -> None:
    """Send the peer's Node process ``how`` and wait for it to exit."""
    process = peer._process
    assert process is not None
    os.kill(process.pid, how)
    process.wait(timeout=30)


def _long_run(peer: NodePeer) -> None:
    """Send a request the peer works on for minutes (a million Browser.getVersion), without reading it."""
    scenario = BY_NAME["roundtrip.getVersion"]
    process = peer._process
    assert process is not None
    assert process.stdin is not None
    process.stdin.write(json.dumps({"op": "run", "scenario": scenario_json(scenario), "size": 10**6}) + "\n")
    process.stdin.flush()
    time.sleep(0.5)  # under way


def test_the_peers_browser_is_stopped_when_its_stdin_closes() -> None:
    peer = ChromeRemoteInterface()
    with _started(peer) as (log, tmp):
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
    assert not log.exists(), "an empty peer log was left in /tmp"  # 58 had piled up there
    assert not tmp.exists()  # with the org.chromium.Chromium.* folders its browsers left


def test_a_peer_whose_stdin_closes_in_the_middle_of_a_request_exits_at_once() -> None:
    # It finished the request first (minutes, or for good if the browser hung), its browser running.
    peer = ChromeRemoteInterface()
    with _started(peer) as (_, tmp):
        _long_run(peer)
        process = peer._process
        assert process is not None
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=10)
        _wait_gone(tmp, 10)
        assert not _running_on(tmp), "the peer exited and left its browser running"


class _Interrupt(Exception):
    pass


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise _Interrupt


def test_stop_after_a_request_cut_short_does_not_wait_for_that_request() -> None:
    # As a Ctrl-C in the middle of a scenario: stop() sent "stop" and read the cut request's reply as its
    # own, once that request ended (minutes later here).
    peer = ChromeRemoteInterface()
    old = signal.signal(signal.SIGALRM, _interrupt)
    try:
        with _started(peer) as (_, tmp):
            scenario = BY_NAME["roundtrip.getVersion"]
            signal.setitimer(signal.ITIMER_REAL, 0.5)
            with pytest.raises(_Interrupt):
                peer._request("run", scenario=scenario_json(scenario), size=10**6)
            signal.setitimer(signal.ITIMER_REAL, 20)  # a stop() that waits for the request is cut here
            start = time.monotonic()
            peer.stop()
            took = time.monotonic() - start
            signal.setitimer(signal.ITIMER_REAL, 0)
            assert took < 10, f"stop() took {took:.1f} s"
            assert not _running_on(tmp)
            assert not tmp.exists()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("peer_class", [ChromeRemoteInterface, PuppeteerWebSocket, PuppeteerPipe])
def test_a_killed_peer_leaves_no_browser_once_stopped(peer_class: type[NodePeer]) -> None:
    # Its websocket browser runs detached, so it outlived a SIGKILLed peer: three were found an hour old.
    peer = peer_class()
    with _started(peer) as (_, tmp):
        _end(peer, signal.SIGKILL)
    _wait_gone(tmp, 10)
    assert not _running_on(tmp)
    assert not tmp.exists()


def test_a_killed_peers_websocket_browser_exits_by_itself() -> None:
    # Its lifeline (an unused --remote-debugging-pipe) closes with the peer: no harness needed to sweep.
    peer = ChromeRemoteInterface()
    with _started(peer) as (_, tmp):
        _end(peer, signal.SIGKILL)
        _wait_gone(tmp, 10)
        assert not _running_on(tmp), "the killed peer's browser is still running"


@pytest.mark.parametrize("end", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name)
@pytest.mark.parametrize("peer_class", [ChromeRemoteInterface, PuppeteerWebSocket])
def test_a_signalled_peer_stops_its_browser_itself(peer_class: type[NodePeer], end: signal.Signals) -> None:
    peer = peer_class()
    with _started(peer) as (_, tmp):
        _end(peer, end)
        _wait_gone(tmp, 10)
        assert not _running_on(tmp), "the peer died and left its browser running"
    assert not tmp.exists()


def test_a_peer_whose_harness_stopped_reading_exits_and_stops_its_browser() -> None:
    # Its next reply meets a closed pipe (EPIPE): the harness is gone even though stdin is still open.
    peer = ChromeRemoteInterface()
    with _started(peer) as (_, tmp):
        process = peer._process
        assert process is not None
        assert process.stdin is not None
        assert process.stdout is not None
        process.stdout.close()
        scenario = BY_NAME["roundtrip.getVersion"]
        process.stdin.write(json.dumps({"op": "run", "scenario": scenario_json(scenario), "size": 5}) + "\n")
        process.stdin.flush()
        process.wait(timeout=30)
        _wait_gone(tmp, 10)
        assert not _running_on(tmp), "the peer exited and left its browser running"
    assert not tmp.exists()
