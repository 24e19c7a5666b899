"""What the tests see of processes: live members of a session or group, read from /proc (Linux)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path


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
