"""Launching the Chromium the suite measures against: one shared over a websocket, one per pipe client.

Every launched browser gets the same flags and a fresh user-data-dir, runs in its own session (process
group), and is stopped by signalling that group only. Each also holds a DevTools pipe whose other ends
only this process has (a websocket browser's is unused): when this process dies without its cleanup
(SIGKILL, a timeout in a test, SIGTERM's default), Chromium exits, as the engine's own launch does, and
the next run removes the profile (``sweep_orphans``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from engine.lowlevel import BASE_FLAGS, mark_owner, session_members, sweep_orphans

CHROMIUM = "/usr/bin/chromium"
FLAGS: tuple[str, ...] = BASE_FLAGS  # the flags that work on a closed network, shared with the engine
START_TIMEOUT_S = 30.0
REMOVE_TIMEOUT_S = 2.0


PREFIX = "cdp-bench-"
"""The start of every profile folder the suite makes in the temp folder."""


class Waitable(Protocol):
    """What the stop needs of a browser's process: a ``Spawned`` or a ``subprocess.Popen``."""

    @property
    def returncode(self) -> int | None: ...
    def poll(self) -> int | None: ...
    def wait(self, timeout: float | None = None) -> int: ...


class Spawned:
    """A process started by ``posix_spawn``, waited for as a ``subprocess.Popen`` is."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                done, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: gone all the same
                self.returncode = -1
            else:
                if done:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(CHROMIUM, timeout or 0.0)
            time.sleep(0.02)
        return code


@dataclass
class WebSocketBrowser:
    """A Chromium listening on 127.0.0.1 with --remote-debugging-port=0 (and holding its lifeline)."""

    pid: int
    http_url: str
    ws_url: str
    profile: str
    process: Waitable
    lifeline: tuple[int, ...] = ()

    def stop(self) -> None:
        try:
            _stop_group(self.pid, self.process.wait)
        finally:  # interrupted too: remove_profile SIGKILLs what is left of the browser
            _close(self.lifeline)
            remove_profile(self.profile, self.pid)


@dataclass
class PipeBrowser:
    """A Chromium started with --remote-debugging-pipe: we write to ``write_fd``, read from ``read_fd``."""

    pid: int
    read_fd: int
    write_fd: int
    profile: str

    def stop(self) -> None:
        _close((self.write_fd, self.read_fd))
        try:
            _stop_group(self.pid, Spawned(self.pid).wait)
        finally:  # interrupted too: remove_profile SIGKILLs what is left of the browser
            remove_profile(self.profile, self.pid)


def _close(fds: tuple[int, ...]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def _stop_group(pid: int, wait: Callable[[float], object]) -> None:
    """SIGTERM the browser's process group, then SIGKILL it if it lingers."""
    for sig, grace in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        try:
            wait(grace)
        except (subprocess.TimeoutExpired, ChildProcessError):
            continue
        return


def remove_profile(path: str, session: int | None = None) -> None:
    """Remove a browser's profile once no live process of its ``session`` is left to write into it.

    The main process is gone when this runs, but its children, signalled with it, may still be writing
    their last files: a single rmtree then leaves a folder behind in /tmp. Bounded by REMOVE_TIMEOUT_S;
    then removed as it is.
    """
    deadline = time.monotonic() + REMOVE_TIMEOUT_S
    while session is not None and session_members(session) and time.monotonic() < deadline:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(session, signal.SIGKILL)  # its own group too: started as a session leader
        time.sleep(0.01)
    shutil.rmtree(path, ignore_errors=True)


def sweep() -> list[str]:
    """Remove the profiles a killed run left in the temp folder (once their browsers are gone)."""
    return sweep_orphans(tempfile.gettempdir(), PREFIX)


def launch_websocket(chromium: str = CHROMIUM, flags: tuple[str, ...] = FLAGS) -> WebSocketBrowser:
    """Launch a headless Chromium with a debugging port picked by the OS on 127.0.0.1."""
    profile = tempfile.mkdtemp(prefix=PREFIX + "ws-")
    argv = [
        chromium,
        *flags,
        "--remote-debugging-address=127.0.0.1",
        "--remote-debugging-port=0",
        "--remote-debugging-pipe",  # the lifeline: never used, closed when this process dies
        f"--user-data-dir={profile}",
        "about:blank",
    ]
    try:
        process, lifeline = _spawn_logged(argv, profile)
    except OSError:
        shutil.rmtree(profile, ignore_errors=True)
        raise
    try:
        port, path = _debugging_port(process, profile)
    except BaseException:  # that, or Ctrl-C while it starts: nobody else could stop it
        WebSocketBrowser(process.pid, "", "", profile, process, lifeline).stop()
        raise
    return WebSocketBrowser(
        process.pid, f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}{path}", profile, process, lifeline
    )


def _debugging_port(process: Waitable, profile: str) -> tuple[str, str]:
    """(port, browser path) from the profile's DevToolsActivePort, once Chromium has written it."""
    port_file = os.path.join(profile, "DevToolsActivePort")
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            with open(port_file) as f:
                lines = f.read().split()
            if len(lines) >= 2:
                return lines[0], lines[1]
        except FileNotFoundError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"Chromium did not open its debugging port (exit code {process.returncode})")
        time.sleep(0.05)


def _env(profile: str) -> dict[str, str]:
    """The browser's environment: its temporary files go inside the profile, removed with it."""
    return dict(os.environ, TMPDIR=profile)


def _high_fd(fd: int) -> int:
    """A close-on-exec duplicate of ``fd`` numbered 10 or above, so dup2 onto 3 and 4 never collides."""
    new = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return new


def launch_pipe(
    chromium: str = CHROMIUM, flags: tuple[str, ...] = FLAGS, pipe_size: int | None = None
) -> PipeBrowser:
    """Launch a headless Chromium speaking CDP on fds 3 (its input) and 4 (its output).

    ``posix_spawn`` with dup2 file actions places the pipe ends; no Python runs in the child, which keeps
    this safe while other threads (the async clients' loops) are running.
    """
    profile = tempfile.mkdtemp(prefix=PREFIX + "pipe-")
    argv = [chromium, *flags, "--remote-debugging-pipe", f"--user-data-dir={profile}", "about:blank"]
    try:
        process, (read_fd, write_fd) = _spawn_logged(argv, profile, pipe_size)
    except OSError:
        shutil.rmtree(profile, ignore_errors=True)
        raise
    return PipeBrowser(process.pid, read_fd, write_fd, profile)


def _spawn_logged(
    argv: list[str], profile: str, pipe_size: int | None = None
) -> tuple[Spawned, tuple[int, int]]:
    """Start ``argv`` in a session of its own, the DevTools pipe on its fds 3 and 4, its output in the
    profile's chromium.log; the process, and our (read, write) ends of the pipe."""
    to_child_r, to_child_w = (_high_fd(fd) for fd in os.pipe())
    from_child_r, from_child_w = (_high_fd(fd) for fd in os.pipe())
    if pipe_size is not None:
        with contextlib.suppress(OSError):
            fcntl.fcntl(from_child_r, fcntl.F_SETPIPE_SZ, pipe_size)
            fcntl.fcntl(to_child_w, fcntl.F_SETPIPE_SZ, pipe_size)
    log = os.path.join(profile, "chromium.log")
    try:
        pid = os.posix_spawn(
            argv[0],
            argv,
            _env(profile),
            file_actions=[
                (os.POSIX_SPAWN_DUP2, to_child_r, 3),
                (os.POSIX_SPAWN_DUP2, from_child_w, 4),
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_OPEN, 1, log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644),
                (os.POSIX_SPAWN_DUP2, 1, 2),
            ],
            setsid=True,
        )
    except OSError:
        _close((from_child_r, to_child_w))
        raise
    finally:
        _close((to_child_r, from_child_w))
    mark_owner(profile, pid)
    return Spawned(pid), (from_child_r, to_child_w)


def browser_ws_url(endpoint: str) -> tuple[str, str | None]:
    """(websocket url, http url or None) for an endpoint given as http://host:port or ws://..."""
    if endpoint.startswith(("ws://", "wss://")):
        return endpoint, None
    http_url = endpoint.rstrip("/")
    with urllib.request.urlopen(f"{http_url}/json/version", timeout=10) as response:
        info = json.load(response)
    return str(info["webSocketDebuggerUrl"]), http_url
