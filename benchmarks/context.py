"""What a result file must say about where it came from: commit, arguments, versions, machine, load.

A number without its context cannot be checked. Every results JSON carries ``context`` from
:func:`collect`; the harness adds the load before and after each scenario (:func:`loadavg`) and refuses
to start when the machine is busier than its cores unless ``--force`` says to go on anyway
(:func:`load_problem`).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
NODE_DIR = Path(__file__).resolve().parent / "node"
PYTHON_PEERS = ("trio", "cdp-use", "playwright", "websockets", "pydoll-python")
NODE_PEERS = ("puppeteer-core", "chrome-remote-interface")


def loadavg() -> list[float] | None:
    """The 1, 5 and 15-minute load averages, or None where the OS has none."""
    with contextlib.suppress(OSError):
        return [round(x, 2) for x in os.getloadavg()]
    return None


def running() -> int | None:
    """Processes runnable now (the kernel's run queue, this one included), or None where unknown."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        return int(Path("/proc/loadavg").read_text().split()[3].split("/")[0])
    return None


def settle(cores: int | None = None, limit_s: float = 90.0) -> float:
    """Wait until the run queue holds at most ``cores`` processes in 5 samples in a row (200 ms apart),
    or ``limit_s``: a scenario that leaves renderers busy must not tax the next one. Seconds waited."""
    cores = cores or os.cpu_count() or 1
    started = time.monotonic()
    quiet = 0
    while quiet < 5 and time.monotonic() - started < limit_s:
        now = running()
        if now is None:
            break
        quiet = quiet + 1 if now <= cores else 0
        time.sleep(0.2)
    return round(time.monotonic() - started, 1)


def load_problem(cores: int | None = None) -> str | None:
    """Why the machine is too busy for a fair run (1-minute load above the core count), or None."""
    cores = cores or os.cpu_count() or 1
    load = loadavg()
    if load is not None and load[0] > cores:
        return (
            f"the 1-minute load average is {load[0]} on {cores} cores: other work would take turns with the "
            "clients and widen every interval"
        )
    return None


def git() -> dict[str, Any]:
    """The commit the code came from and whether the work tree differs from it."""

    def run(*args: str) -> str:
        out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=20, check=True)
        return out.stdout.strip()

    try:
        commit = run("rev-parse", "HEAD")
        dirty = bool(run("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": commit, "dirty": dirty}


def cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def versions(chromium: str | None) -> dict[str, str | None]:
    """Python, Chromium and every peer library's version (None: not installed)."""
    out: dict[str, str | None] = {"python": platform.python_version(), "chromium": chromium}
    for name in PYTHON_PEERS:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    for name in NODE_PEERS:
        try:
            out[name] = json.loads((NODE_DIR / "node_modules" / name / "package.json").read_text())["version"]
        except (OSError, ValueError, KeyError):
            out[name] = None
    try:
        node = subprocess.run(["node", "--version"], capture_output=True, text=True, timeout=10, check=True)
        out["node"] = node.stdout.strip().lstrip("v")
    except (OSError, subprocess.SubprocessError):
        out["node"] = None
    return out


def collect(
    argv: Sequence[str],
    chromium: str | None,
    *,
    seed: int,
    forced: bool,
    load_at_start: list[float] | None,
    git_at_start: dict[str, Any],
) -> dict[str, Any]:
    """The ``context`` object of a results file; ``load_at_start`` was read before any browser started
    (read here, at the end, it was the load the last scenario left behind), and ``git_at_start`` then too:
    the code measured is the code imported at the start (read at the end, an edit made during the run
    marked a clean run dirty, and a commit made then named the wrong commit)."""
    return {
        "git": git_at_start,
        "argv": list(argv),
        "seed": seed,
        "forced_despite_load": forced,
        "versions": versions(chromium),
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "os": platform.platform(),
        "loadavg_at_start": load_at_start,
    }


def peak_rss_mib() -> float:
    """This process's peak resident set (every Python client shares it), in MiB."""
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(kib / 1024, 1)


def reset_peak_rss(pid: int) -> bool:
    """Start a new peak-RSS window for process ``pid`` (Linux: "5" to its clear_refs resets VmHWM)."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def peak_rss_kib(pid: int) -> int | None:
    """The peak resident set of ``pid`` since its last reset (VmHWM), in KiB; None when unknown.

    Without /proc, this process's lifetime peak (``resource.getrusage``) stands in.
    """
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    if pid == os.getpid():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return None


def command_line() -> list[str]:
    return [sys.executable, "-m", "benchmarks", *sys.argv[1:]]
