"""Launching the Chromium the suite measures against: one shared over a websocket, one per pipe client.

Every launched browser gets the same flags and a fresh user-data-dir, runs in its own session (process
group), and is stopped by signalling that group only.
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

from engine.lowlevel import BASE_FLAGS, session_members

CHROMIUM = "/usr/bin/chromium"
FLAGS: tuple[str, ...] = BASE_FLAGS  # the flags that work on a closed network, shared with the engine
START_TIMEOUT_S = 30.0
REMOVE_TIMEOUT_S = 2.0


@dataclass
class WebSocketBrowser:
    """A Chromium listening on 127.0.0.1 with --remote-debugging-port=0."""

    pid: int
    http_url: str
    ws_url: str
    profile: str
    process: subprocess.Popen[bytes]

    def stop(self) -> None:
        try:
            _stop_group(self.pid, self.process.wait)
        finally:  # interrupted too: remove_profile SIGKILLs what is left of the browser
            remove_profile(self.profile, self.pid)


@dataclass
class PipeBrowser:
    """A Chromium started with --remote-debugging-pipe: we write to ``write_fd``, read from ``read_fd``."""

    pid: int
    read_fd: int
    write_fd: int
    profile: str

    def stop(self) -> None:
        for fd in (self.write_fd, self.read_fd):
            with contextlib.suppress(OSError):
                os.close(fd)

        def wait(timeout: float) -> int:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                done, status = os.waitpid(self.pid, os.WNOHANG)
                if done:
                    return status
                time.sleep(0.05)
            raise subprocess.TimeoutExpired(CHROMIUM, timeout)

        try:
            _stop_group(self.pid, wait)
        finally:  # interrupted too: remove_profile SIGKILLs what is left of the browser
            remove_profile(self.profile, self.pid)


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


def launch_websocket(chromium: str = CHROMIUM, flags: tuple[str, ...] = FLAGS) -> WebSocketBrowser:
    """Launch a headless Chromium with a debugging port picked by the OS on 127.0.0.1."""
    profile = tempfile.mkdtemp(prefix="cdp-bench-ws-")
    try:
        process = _popen_logged(chromium, flags, profile)
    except OSError:
        shutil.rmtree(profile, ignore_errors=True)
        raise
    try:
        port, path = _debugging_port(process, profile)
    except BaseException:  # that, or Ctrl-C while it starts: nobody else could stop it
        WebSocketBrowser(process.pid, "", "", profile, process).stop()
        raise
    return WebSocketBrowser(
        process.pid, f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}{path}", profile, process
    )


def _debugging_port(process: subprocess.Popen[bytes], profile: str) -> tuple[str, str]:
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


def _popen_logged(chromium: str, flags: tuple[str, ...], profile: str) -> subprocess.Popen[bytes]:
    with open(os.path.join(profile, "chromium.log"), "wb") as log:
        return subprocess.Popen(
            [
                chromium,
                *flags,
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                f"--user-data-dir={profile}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            env=_env(profile),
        )


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
    to_child_r, to_child_w = (_high_fd(fd) for fd in os.pipe())
    from_child_r, from_child_w = (_high_fd(fd) for fd in os.pipe())
    if pipe_size is not None:
        with contextlib.suppress(OSError):
            fcntl.fcntl(from_child_r, fcntl.F_SETPIPE_SZ, pipe_size)
            fcntl.fcntl(to_child_w, fcntl.F_SETPIPE_SZ, pipe_size)
    profile = tempfile.mkdtemp(prefix="cdp-bench-pipe-")
    log = os.path.join(profile, "chromium.log")
    argv = [chromium, *flags, "--remote-debugging-pipe", f"--user-data-dir={profile}", "about:blank"]
    try:
        pid = os.posix_spawn(
            chromium,
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
        os.close(from_child_r)
        os.close(to_child_w)
        shutil.rmtree(profile, ignore_errors=True)
        raise
    finally:
        os.close(to_child_r)
        os.close(from_child_w)
    return PipeBrowser(pid, from_child_r, to_child_w, profile)


def browser_ws_url(endpoint: str) -> tuple[str, str | None]:
    """(websocket url, http url or None) for an endpoint given as http://host:port or ws://..."""
    if endpoint.startswith(("ws://", "wss://")):
        return endpoint, None
    http_url = endpoint.rstrip("/")
    with urllib.request.urlopen(f"{http_url}/json/version", timeout=10) as response:
        info = json.load(response)
    return str(info["webSocketDebuggerUrl"]), http_url
