"""Finding, starting and stopping Chromium; the exception-group helper."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Literal

import pytest
import trio

import engine._process as process_module
from engine import BrowserLaunchError, Settings
from engine._process import ENV_VAR, _StderrTail
from engine._util import reraise_unwrapped, unwrap_group
from engine.lowlevel import (
    BASE_FLAGS,
    ChromiumProcess,
    chromium_command,
    find_chromium,
    make_pipe_pair,
    open_chromium,
)
from tests.procs import group_members

Kind = Literal["pipe", "websocket"]
TRANSPORTS: list[Kind] = ["pipe", "websocket"]


# -- helpers -----------------------------------------------------------------------------------------


async def wait_group_gone(pgid: int) -> None:
    """Wait (under the caller's deadline) until the group has no live member."""
    for _ in range(1000):
        if not group_members(pgid):
            return
        await trio.sleep(0.05)
    pytest.fail(f"process group {pgid} is still alive")


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def names(directory: Path) -> list[str]:
    return sorted(entry.name for entry in directory.iterdir())


def assert_gone(browser: ChromiumProcess) -> None:
    assert browser.process.returncode is not None
    assert not os.path.exists(browser.user_data_dir)


def script(tmp_path: Path, body: str) -> str:
    path = tmp_path / "fake-chromium"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


# -- finding and command line ------------------------------------------------------------------------


def test_find_explicit_env_and_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = script(tmp_path, "exit 0")
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert find_chromium(fake) == fake
    monkeypatch.setenv(ENV_VAR, fake)
    assert find_chromium(None) == fake
    assert find_chromium("sh") == "/usr/bin/sh" or find_chromium("sh").endswith("/sh")


def test_find_rejects_a_bad_explicit_choice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(BrowserLaunchError, match="executable argument"):
        find_chromium(str(tmp_path / "nope"))
    monkeypatch.setenv(ENV_VAR, "/nonexistent/chromium")
    with pytest.raises(BrowserLaunchError, match=ENV_VAR):
        find_chromium(None)


def test_find_nothing_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setattr(process_module, "_CANDIDATES", ("/nonexistent/chromium", "no-such-browser-xyz"))
    with pytest.raises(BrowserLaunchError) as info:
        find_chromium(None)
    assert "apt-get install -y chromium" in str(info.value)
    assert ENV_VAR in str(info.value)


def test_command_lines() -> None:
    pipe = chromium_command("/bin/chromium", user_data_dir="/tmp/p", args=["--lang=de"])
    assert pipe[0] == "/bin/chromium"
    assert pipe[-2:] == ["--lang=de", "--no-startup-window"]  # no start-up tab: pages come from new_page
    assert set(BASE_FLAGS) <= set(pipe)
    assert "--user-data-dir=/tmp/p" in pipe
    assert "--remote-debugging-pipe" in pipe
    assert not any(flag.startswith("--remote-debugging-port") for flag in pipe)

    ws = chromium_command("c", user_data_dir="/tmp/p", transport="websocket", headless=False)
    assert "--remote-debugging-port=0" in ws
    assert "--remote-debugging-address=127.0.0.1" in ws
    assert "--remote-debugging-pipe" not in ws
    assert "--headless" not in ws


def test_stderr_tail_is_bounded() -> None:
    tail = _StderrTail(3)
    assert tail.feed(b"one\ntwo\nthr") == ["one", "two"]
    assert tail.feed(b"ee\r\nfour\nfive\n" + b"x" * 100_000) == ["three", "four", "five"]
    assert list(tail.lines) == ["three", "four", "five"]
    tail.feed(b"y" * 100_000 + b"\n")
    tail.finish()
    assert len(tail.lines) == 3
    assert all(len(line) <= 4096 for line in tail.lines)


# -- the exception-group helper ----------------------------------------------------------------------


def test_unwrap_group() -> None:
    error = ValueError("x")
    assert unwrap_group(BaseExceptionGroup("", [error])) is error
    assert unwrap_group(BaseExceptionGroup("", [BaseExceptionGroup("", [error])])) is error
    two = BaseExceptionGroup("", [ValueError(), KeyError()])
    assert unwrap_group(two) is two
    # The block's own group of several errors, wrapped by two nurseries, comes back as the block raised it.
    assert unwrap_group(BaseExceptionGroup("", [BaseExceptionGroup("", [two])])) is two


async def test_unwrap_group_drops_riding_cancellations() -> None:
    cancelled: list[BaseException] = []
    with trio.CancelScope() as scope:
        scope.cancel()
        try:
            await trio.sleep(1)
        except trio.Cancelled as exc:
            cancelled.append(exc)
            raise
    error = KeyError("k")
    assert unwrap_group(BaseExceptionGroup("", [cancelled[0], error])) is error
    assert unwrap_group(BaseExceptionGroup("", [cancelled[0]])) is cancelled[0]


def test_reraise_unwrapped_keeps_the_leafs_own_context() -> None:
    try:
        raise KeyError("first")
    except KeyError:
        try:
            raise ValueError("second")
        except ValueError as exc:
            leaf = exc
    original_context = leaf.__context__

    def fail_in_group() -> None:
        try:
            raise BaseExceptionGroup("", [leaf])
        except BaseExceptionGroup as group:
            reraise_unwrapped(group)

    with pytest.raises(ValueError, match="second") as info:
        fail_in_group()
    assert info.value is leaf
    assert leaf.__context__ is original_context


# -- launching failures (no real browser) --------------------------------------------------------------


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_early_exit_carries_stderr(kind: Kind, tmp_path: Path, profiles: Path) -> None:
    fake = script(tmp_path, 'echo "this is not a browser: $*" >&2\nexit 3')
    with trio.fail_after(20), pytest.raises(BrowserLaunchError) as info:
        async with open_chromium(executable=fake, transport=kind):
            pytest.fail("should not start")
    assert "status 3" in str(info.value)
    assert "this is not a browser" in info.value.stderr_tail
    assert "--user-data-dir=" in info.value.stderr_tail
    assert names(profiles) == ["fake-chromium"]


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_silent_process_times_out_and_is_killed(kind: Kind, tmp_path: Path, profiles: Path) -> None:
    pid_file = tmp_path / "pid"
    fake = script(tmp_path, f'echo $$ > {pid_file}\necho "starting up" >&2\nexec sleep 60')
    settings = Settings(launch_timeout=1.0, kill_timeout=1.0)
    with trio.fail_after(20), pytest.raises(BrowserLaunchError, match="launch_timeout") as info:
        async with open_chromium(executable=fake, transport=kind, settings=settings):
            pytest.fail("should not start")
    assert "starting up" in info.value.stderr_tail
    pid = int(pid_file.read_text())
    with trio.fail_after(5):
        await wait_group_gone(pid)
    assert names(profiles) == ["fake-chromium", "pid"]


async def test_pipe_child_reads_fd_3_and_writes_fd_4(tmp_path: Path, profiles: Path) -> None:
    """A shell stand-in answers the start-up probe on fd 4, then echoes fd 3 to fd 4."""
    fake = script(
        tmp_path,
        f"head -c {len(process_module._PROBE) + 1} <&3 >/dev/null\n"
        'printf \'{"id":0,"result":{}}\\0\' >&4\n'
        "exec cat <&3 >&4",
    )
    with trio.fail_after(20):
        async with open_chromium(executable=fake, settings=Settings(kill_timeout=1)) as browser:
            assert browser.transport.name == "pipe"
            assert browser.ws_url is None
            await browser.transport.send([b'{"id":1}', b'{"id":2}'])
            received: list[bytes] = []
            while len(received) < 2:
                received += await browser.transport.receive_batch()
            assert received == [b'{"id":1}', b'{"id":2}']
            await browser.transport.aclose()
            assert await browser.wait_exit(5)  # cat saw the end of its input
        assert_gone(browser)


def test_child_pipe_ends_are_numbered_above_4() -> None:
    ours, theirs = make_pipe_pair()
    try:
        assert min(theirs) >= 5
        assert not any(os.get_inheritable(fd) for fd in (*ours, *theirs))
    finally:
        for fd in (*ours, *theirs):
            os.close(fd)


# -- a real Chromium ---------------------------------------------------------------------------------
