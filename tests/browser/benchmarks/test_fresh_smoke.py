"""``python -m benchmarks.fresh`` end to end on real browsers, in --quick mode: new browsers every rep.

Timings are never asserted (the machine is shared and noisy); only that every client ran every rep, on a
browser no other client and no other rep used.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.fresh import LAUNCHED_BY_CLIENT

ROOT = Path(__file__).resolve().parents[3]
CLIENTS = ["engine.ws", "floor.trio.ws", "floor.trio.ws#2", "engine.pipe"]

pytestmark = pytest.mark.browser


def test_every_client_runs_every_rep_on_a_browser_of_its_own(tmp_path: Path) -> None:
    out = tmp_path / "fresh.json"
    command = [
        sys.executable,
        "-m",
        "benchmarks.fresh",
        "--quick",
        "--force",  # the shared test machine is often busier than its cores; the file records it
        "--reps",
        "2",
        "--seed",
        "5",
        "--scenarios",
        "roundtrip.getVersion",
        "--clients",
        ",".join(CLIENTS),
        "--json",
        str(out),
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    doc = json.loads(out.read_text())
    entries = doc["scenarios"]["roundtrip.getVersion"]
    assert list(entries) == CLIENTS
    for label, entry in entries.items():
        assert entry["reps"] == 2, (label, entry.get("skipped"))
        assert entry["median_us"] > 0
    assert entries["engine.ws"]["x_peers"]["floor.trio.ws"]["reps"] == 2
    assert "engine.pipe" not in entries["engine.ws"]["x_peers"]  # never a pipe against a websocket
    reps = doc["browsers_per_rep"]
    assert len(reps) == 2
    assert all(rep["engine.pipe"] == LAUNCHED_BY_CLIENT for rep in reps)
    websockets = [rep[label] for rep in reps for label in CLIENTS if label != "engine.pipe"]
    assert all(url.startswith("ws://127.0.0.1:") for url in websockets)
    assert len(set(websockets)) == len(websockets) == 6  # a new browser per client and per rep
    assert "engine.ws / floor.trio.ws" in done.stdout  # the README block is printed too
