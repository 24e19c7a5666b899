"""The launcher's child process (posix_spawn, no Python in the child): its fds, exit status and waiters."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
import trio

from engine import BrowserLaunchError, Settings
from engine._process import _spawn
from engine.lowlevel import ChromiumProcess
from tests.unit.engine.test_process import open_fds

_forked_into: list[str] = []  # set by a test: where Python code run in a forked child leaves a mark


def _mark_python_in_child() -> None:
    for path in _forked_into:
        with open(path, "a") as mark:
            mark.write(f"{os.getpid()}\n")


os.register_at_fork(after_in_child=_mark_python_in_child)


def spawn(tmp_path: Path, body: str) -> ChromiumProcess:
    return _spawn(["/bin/sh", "-c", body], str(tmp_path), Settings())


async def stderr_of(browser: ChromiumProcess) -> bytes:
    stream = browser.process.stderr
    data = b""
    while chunk := await stream.receive_some(4096):
        data += chunk
    return data


async def test_the_child_has_the_pipe_on_3_and_4_and_stderr_on_a_pipe(tmp_path: Path) -> None:
    with trio.fail_after(10):
        browser = spawn(tmp_path, 'printf ready >&4; cat <&3 >&2; echo "$TMPDIR" >&2')
        assert os.getsid(browser.pid) == browser.pid  # a session of its own (the sweep relies on it)
        assert browser._lifeline is not None
        our_read, our_write = browser._lifeline
        os.write(our_write, b"sent on fd 3\n")
        os.close(our_write)
        assert os.read(our_read, 100) == b"ready"
        os.close(our_read)
        assert await stderr_of(browser) == f"sent on fd 3\n{tmp_path}/tmp\n".encode()
        assert await browser.process.wait() == 0


async def test_every_waiter_gets_the_exit_status(tmp_path: Path) -> None:
    """The exit watcher and a stop wait at the same time: a second wait on the pidfd must not fail."""
    with trio.fail_after(10):
        browser = spawn(tmp_path, "sleep 0.2; exit 3")
        codes: list[int] = []

        async def wait() -> None:
            codes.append(await browser.process.wait())

        async with trio.open_nursery() as nursery:
            nursery.start_soon(wait)
            nursery.start_soon(wait)
        assert codes == [3, 3]
        assert browser.process.returncode == 3
        await browser.process.stderr.aclose()


async def test_a_signal_exit_is_negative_and_a_reaped_child_is_not_signalled(tmp_path: Path) -> None:
    with trio.fail_after(10):
        browser = spawn(tmp_path, "exec sleep 30")
        assert browser.process.returncode is None
        browser.process.terminate()
        assert await browser.process.wait() == -signal.SIGTERM
        browser.process.kill()  # reaped: its pid may be another process's now, so nothing is sent
        await browser.process.stderr.aclose()


async def test_without_a_pidfd_wait_polls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_pidfd(pid: int) -> int:
        raise OSError("pidfd_open: not on this kernel")

    monkeypatch.setattr(os, "pidfd_open", no_pidfd)
    with trio.fail_after(10):
        browser = spawn(tmp_path, "sleep 0.1; exit 4")
        assert await browser.process.wait() == 4
        await browser.process.stderr.aclose()


async def test_a_binary_that_cannot_run_is_a_launch_error_and_leaks_no_fd(tmp_path: Path) -> None:
    before = open_fds()
    with pytest.raises(BrowserLaunchError, match="could not run /nonexistent/chromium"):
        _spawn(["/nonexistent/chromium"], str(tmp_path), Settings())
    assert open_fds() == before


async def test_no_python_runs_in_the_child(tmp_path: Path) -> None:
    """A preexec_fn (what placed the pipe before) forks the whole parent and runs Python in the copy:
    slow from a large parent (54-64 ms from one holding 1 GiB, measured) and unsafe with threads. The
    at-fork hook of this module marks any child where Python runs after a fork."""
    mark = tmp_path / "python-ran-in-a-child"
    _forked_into.append(str(mark))
    try:
        with trio.fail_after(10):
            browser = spawn(tmp_path, "exit 0")
            assert await browser.process.wait() == 0
            await browser.process.stderr.aclose()
    finally:
        _forked_into.clear()
    assert not mark.exists(), mark.read_text()
