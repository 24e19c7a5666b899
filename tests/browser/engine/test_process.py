"""Starting and stopping a real Chromium through open_chromium."""

from __future__ import annotations

import os
import signal
import tempfile
from pathlib import Path

import pytest
import trio

from engine import BrowserLaunchError, ConnectionClosed, Settings, launch
from engine.lowlevel import (
    open_chromium,
)
from tests.procs import group_members
from tests.unit.engine.test_process import (
    TRANSPORTS,
    Kind,
    assert_gone,
    names,
    open_fds,
    wait_group_gone,
)
from tests.unit.faults.test_process_faults import CHROMIUM, script


@pytest.mark.browser
@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_bad_flag_gives_stderr(kind: Kind, profiles: Path) -> None:
    with trio.fail_after(30), pytest.raises(BrowserLaunchError) as info:
        async with open_chromium(transport=kind, args=["--type=bogus"]):
            pytest.fail("should not start")
    assert info.value.stderr_tail
    assert "exited with" in str(info.value)
    assert names(profiles) == []


@pytest.mark.browser
@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_exit_leaves_nothing_behind(kind: Kind, profiles: Path) -> None:
    fds_before = open_fds()
    with trio.fail_after(60):
        async with open_chromium(transport=kind) as browser:
            assert names(profiles) == [os.path.basename(browser.temp_dir)]
            assert (browser.ws_url is None) == (kind == "pipe")
            assert group_members(browser.pid)
            assert browser.stderr_tail() == "\n".join(browser.stderr_tail().splitlines()[-40:])
        assert_gone(browser)
        await wait_group_gone(browser.pid)
        assert names(profiles) == []
    assert open_fds() == fds_before


@pytest.mark.browser
async def test_downloads_and_crash_reports_stay_in_the_browsers_directory(profiles: Path) -> None:
    # A download went to ~/Downloads and a crashed renderer's report to ~/.config/chromium, for good.
    with trio.fail_after(60):
        async with launch() as browser:
            assert browser.process is not None
            assert browser.download_dir is not None
            assert browser.download_dir.startswith(browser.process.temp_dir + os.sep)
            environ = Path(f"/proc/{browser.process.pid}/environ").read_bytes()  # (a small /proc file)
            env = dict(item.split(b"=", 1) for item in environ.split(b"\0") if b"=" in item)
            assert env[b"XDG_CONFIG_HOME"].decode().startswith(browser.process.temp_dir + os.sep)
            for text in ("hello", "again"):  # the same name twice: both kept (one overwrote the other)
                page = await browser.new_page()  # (Chromium holds a page's second download for a prompt)
                await page.evaluate(
                    "(text) => Object.assign(document.body.appendChild(document.createElement('a')),"
                    " {href: 'data:text/plain,' + text, download: 'hello.txt'}).click()",
                    text,
                )
                saved = Path(browser.download_dir, "hello.txt" if text == "hello" else "hello (1).txt")
                while not saved.exists() or saved.read_text() != text:
                    await trio.sleep(0.05)
        assert names(profiles) == []


@pytest.mark.browser
async def test_error_in_block_comes_out_as_itself(profiles: Path) -> None:
    with trio.fail_after(60), pytest.raises(KeyError, match="mine"):
        async with open_chromium() as browser:
            raise KeyError("mine")
    assert_gone(browser)
    assert names(profiles) == []


@pytest.mark.browser
async def test_cancelled_block_and_cancelled_launch(profiles: Path) -> None:
    fds_before = open_fds()
    with trio.fail_after(60):
        with trio.CancelScope() as scope:  # cancelled once started: a slow start-up under load is fine
            async with open_chromium() as browser:
                scope.cancel()
                await trio.sleep_forever()
        assert scope.cancelled_caught
        assert_gone(browser)
        for delay in (0.0, 0.05, 0.2):
            started = trio.current_time()
            with trio.move_on_after(delay):
                async with open_chromium():  # a start-up faster than ``delay`` is cancelled in the block
                    await trio.sleep_forever()
            assert trio.current_time() - started < delay + 3.0
        await trio.sleep(0.5)
        assert names(profiles) == []
    assert open_fds() == fds_before


@pytest.mark.browser
async def test_wait_exit_after_pipe_close(profiles: Path) -> None:
    with trio.fail_after(60):
        async with open_chromium() as browser:
            assert not await browser.wait_exit(0.1)
            await browser.transport.aclose()  # Chromium exits when its pipe input ends
            assert await browser.wait_exit(10)
            assert browser.process.returncode == 0
            with pytest.raises(ConnectionClosed):
                await browser.transport.receive_batch()
        assert_gone(browser)


@pytest.mark.browser
async def test_sigterm_ignored_then_killed(profiles: Path) -> None:
    """A browser that ignores SIGTERM is killed after kill_timeout."""
    # Not a SIGSTOP: the SIGTERM comes with a SIGCONT, so a stopped browser now exits on it.
    body = f"trap '' TERM\n{CHROMIUM} \"$@\" &\nwait\nwhile :; do sleep 1; done"
    with tempfile.TemporaryDirectory() as scripts:  # not among the profiles
        deaf = script(Path(scripts), body, name="deaf")
        with trio.fail_after(60):
            async with open_chromium(executable=deaf, settings=Settings(kill_timeout=0.5)) as browser:
                pass
    assert browser.process.returncode == -signal.SIGKILL
    assert names(profiles) == []
