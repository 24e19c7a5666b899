"""The sweep of directories left by a killed owner: what it removes, and everything it must keep."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine._process import _OWNER_FILE, _pid_namespace, _start_time, mark_owner, sweep_orphans

pytestmark = pytest.mark.skipif(_pid_namespace() is None, reason="reads processes from /proc (Linux)")


@pytest.fixture
def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


@pytest.fixture
def live_session() -> Iterator[int]:
    """The id of a session with a live process in it (a browser still shutting down, say)."""
    child = subprocess.Popen(["sleep", "60"], start_new_session=True)
    yield child.pid
    child.kill()
    child.wait()


def engine_dir(parent: Path, name: str, mark: str | None) -> Path:
    path = parent / f"cdp-engine-{name}"
    (path / "profile" / "Default").mkdir(parents=True)
    (path / "profile" / "Default" / "Cookies").write_bytes(b"x" * 1000)
    if mark is not None:
        (path / _OWNER_FILE).write_text(mark)
    return path


def mark(owner: int, started: str | None, browser: int, namespace: str | None = None) -> str:
    return f"{namespace or _pid_namespace()} {owner} {started} {browser}\n"


def test_a_dead_owners_directory_is_removed(tmp_path: Path, dead_pid: int) -> None:
    left = engine_dir(tmp_path, "dead", mark(dead_pid, "12345", dead_pid))
    assert sweep_orphans(str(tmp_path)) == [str(left)]
    assert not left.exists()


def test_a_reused_pid_does_not_keep_the_directory(tmp_path: Path, dead_pid: int) -> None:
    # This process is alive, but it is not the one that made the directory: its start time differs.
    left = engine_dir(tmp_path, "reused", mark(os.getpid(), "1", dead_pid))
    assert sweep_orphans(str(tmp_path)) == [str(left)]


def test_what_the_sweep_cannot_be_sure_of_is_kept(tmp_path: Path, dead_pid: int, live_session: int) -> None:
    me = os.getpid()
    kept = [
        engine_dir(tmp_path, "owner-alive", mark(me, _start_time(me), dead_pid)),
        engine_dir(tmp_path, "browser-alive", mark(dead_pid, "1", live_session)),
        engine_dir(tmp_path, "other-namespace", mark(dead_pid, "1", dead_pid, "pid:[1]")),
        engine_dir(tmp_path, "no-mark", None),
        engine_dir(tmp_path, "garbled", "pid:[1] twelve\n"),
        engine_dir(tmp_path, "binary", "\xff\xfe"),
    ]
    fifo = engine_dir(tmp_path, "fifo", None)
    os.mkfifo(fifo / _OWNER_FILE)  # read blocking, it would hang the launch
    linked = engine_dir(tmp_path, "linked-mark", None)
    (tmp_path / "a-mark").write_text(mark(dead_pid, "1", dead_pid))
    (linked / _OWNER_FILE).symlink_to(tmp_path / "a-mark")
    kept += [fifo, linked]
    not_ours = tmp_path / "other-tool-dead"
    not_ours.mkdir()
    (not_ours / _OWNER_FILE).write_text(mark(dead_pid, "1", dead_pid))
    target = engine_dir(tmp_path / "elsewhere", "target", mark(dead_pid, "1", dead_pid))
    (tmp_path / "cdp-engine-link").symlink_to(target)
    (tmp_path / "cdp-engine-file").write_text(mark(dead_pid, "1", dead_pid))

    assert sweep_orphans(str(tmp_path)) == []
    for path in [*kept, not_ours, target, tmp_path / "cdp-engine-file"]:
        assert path.exists(), path
    assert (tmp_path / "cdp-engine-link").is_symlink()


def test_a_missing_temp_folder_is_no_error(tmp_path: Path) -> None:
    assert sweep_orphans(str(tmp_path / "absent")) == []


def test_the_mark_names_this_process_and_the_browser(tmp_path: Path) -> None:
    mark_owner(str(tmp_path), 4242)
    namespace, pid, started, browser = (tmp_path / _OWNER_FILE).read_text().split()
    me = os.getpid()
    assert (namespace, int(pid), started, int(browser)) == (_pid_namespace(), me, _start_time(me), 4242)
    # While this process lives, its directory stays.
    engine = tmp_path / "parent" / "cdp-engine-mine"
    engine.mkdir(parents=True)
    mark_owner(str(engine), 4242)
    assert sweep_orphans(str(tmp_path / "parent")) == []
    assert engine.exists()
