"""What the tests see of processes: live members of a session or group, read from /proc (Linux)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def live_processes() -> Iterator[tuple[int, int, int]]:
    """(pid, process group, session) of every process that is not a zombie.

    Zombies are skipped: this container's init does not reap them, and they write nothing.
    """
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] not in "ZX":
            yield int(entry), int(fields[2]), int(fields[3])


def session_members(sid: int) -> list[int]:
    """Live processes of session ``sid``."""
    return [pid for pid, _, session in live_processes() if session == sid]


def group_members(pgid: int) -> list[int]:
    """Live processes of process group ``pgid``."""
    return [pid for pid, group, _ in live_processes() if group == pgid]


def cmdline(pid: int) -> bytes:
    """The process's command line (NUL-separated), or b"" once it is gone."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def kill_session(sid: int) -> None:
    """SIGKILL every live member of session ``sid``, stopped ones too: what a failing test left behind."""
    for pid in session_members(sid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def reap(process: subprocess.Popen[Any], browser: int = 0) -> None:
    """Kill ``process`` if it still runs, and the session of its ``browser`` pid (launched with a session of
    its own, it outlives a killed parent): a test's ``finally``, so a failing test leaves nothing running."""
    if process.poll() is None:
        process.kill()
        process.wait(10)
    if browser:
        kill_session(browser)


def kill_matching(fragment: str) -> None:
    """SIGKILL every live process whose command line holds ``fragment`` (a browser's profile folder, when
    its pid is not known)."""
    for pid, _, _ in live_processes():
        if fragment.encode() in cmdline(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
