"""Fault injection against open_chromium: what a stopped, killed, wrapped or interrupted browser leaves.

Each test is a way the process layer once left a file or a process on the machine (or took too long to
leave); each asserts the machine is clean the moment the block is left, under a deadline that is never what
ends the test. Real Chromium where its behaviour matters, shell stand-ins where a fault must be exact.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest
import trio

import engine._process as process_module
from engine import BrowserLaunchError, Settings
from engine.lowlevel import ChromiumProcess, chromium_command, find_chromium, open_chromium
from tests.procs import session_members

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
Kind = Literal["pipe", "websocket"]


# -- helpers -----------------------------------------------------------------------------------------


def kill_session(sid: int) -> None:
    """Clean up after a failing test (the old code leaves processes behind)."""
    for pid in session_members(sid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def names(directory: Path) -> list[str]:
    return sorted(entry.name for entry in directory.iterdir())


def script(directory: Path, body: str, name: str = "fake-chromium") -> str:
    path = directory / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


# A stand-in that answers the start-up probe on fd 4, then holds the pipe until it ends.
ANSWER_PROBE = (
    f'head -c {len(process_module._PROBE) + 1} <&3 >/dev/null\nprintf \'{{"id":0,"result":{{}}}}\\0\' >&4\n'
)


async def get_version(browser: ChromiumProcess) -> dict[str, object]:
    """One real DevTools round trip over the browser's transport."""
    await browser.transport.send([b'{"id":1,"method":"Browser.getVersion"}'])
    while True:
        for raw in await browser.transport.receive_batch():
            message = json.loads(raw)
            if message.get("id") == 1:
                result: dict[str, object] = message["result"]
                return result


@pytest.fixture
def system_temp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The "system temp folder" for this test alone: tempfile and $TMPDIR both point at it.

    A short path: the engine puts Chromium's TMPDIR inside it, and Chromium aborts when its socket
    path ($TMPDIR/org.chromium.Chromium.XXXXXX/SingletonSocket) passes 107 bytes.
    """
    path = tempfile.mkdtemp(prefix="cdp-test-", dir="/tmp")
    monkeypatch.setattr(tempfile, "tempdir", path)
    monkeypatch.setenv("TMPDIR", path)
    yield Path(path)
    shutil.rmtree(path, ignore_errors=True)


# -- 1. Chromium's temporary files ---------------------------------------------------------------------


@pytest.mark.browser
async def test_cancelled_start_ups_leave_nothing_in_the_system_temp_folder(system_temp: Path) -> None:
    """Before: 43 of 50 start-ups cancelled at random left an org.chromium.Chromium.* entry there."""
    rng = random.Random(20240611)
    with trio.fail_after(60):
        for _ in range(8):
            with trio.move_on_after(rng.uniform(0.0, 0.5)) as scope:
                async with open_chromium():
                    await trio.sleep_forever()
            assert scope.cancelled_caught
            assert trio.current_time() - scope.deadline < 1.0
        await trio.sleep(0.3)  # a straggler would write now
    assert names(system_temp) == []


# -- 2. the whole session is gone before the profile is removed ----------------------------------------


@pytest.mark.browser
async def test_sigkilled_browser_leaves_no_profile_and_no_process(system_temp: Path) -> None:
    with trio.fail_after(30):
        async with open_chromium() as browser:
            children = [pid for pid in session_members(browser.pid) if pid != browser.pid]
            assert children  # zygotes, GPU and utility processes
            for pid in children:
                os.kill(pid, signal.SIGSTOP)  # children too busy to notice their parent died
            os.kill(browser.pid, signal.SIGKILL)
            assert await browser.wait_exit(5)
            started = trio.current_time()
        try:
            assert trio.current_time() - started < 1.0
            assert session_members(browser.pid) == []
            assert not os.path.exists(browser.temp_dir)
            assert names(system_temp) == []
        finally:
            kill_session(browser.pid)


async def test_children_writing_into_the_profile_are_killed_before_it_is_removed(
    tmp_path: Path, system_temp: Path
) -> None:
    """A child that keeps writing into the profile after its parent was SIGKILLed."""
    fake = script(
        tmp_path,
        'for arg in "$@"; do case $arg in --user-data-dir=*) profile=${arg#--user-data-dir=};; esac; done\n'
        '(i=0; while :; do echo x > "$profile/f$i"; i=$((i+1)); done) 2>/dev/null &\n'
        + ANSWER_PROBE
        + "exec sleep 60",
    )
    with trio.fail_after(20):
        async with open_chromium(executable=fake) as browser:
            while len(os.listdir(browser.user_data_dir)) < 100:
                await trio.sleep(0.01)
            os.kill(browser.pid, signal.SIGKILL)
            assert await browser.wait_exit(5)
            assert len(session_members(browser.pid)) == 1  # the writer
        try:
            assert session_members(browser.pid) == []
            await trio.sleep(0.2)
            assert names(system_temp) == []
        finally:
            kill_session(browser.pid)


# -- 3. launchers -------------------------------------------------------------------------------------


@pytest.mark.browser
@pytest.mark.parametrize(
    ("kind", "launcher"),
    [
        ("pipe", f'{CHROMIUM} "$@" &\nexit 0'),
        ("websocket", f'{CHROMIUM} "$@" &\nexit 0'),
        ("pipe", f'{CHROMIUM} "$@"'),
    ],
    ids=["forks-and-exits-pipe", "forks-and-exits-websocket", "forks-and-waits-pipe"],
)
async def test_browser_started_by_a_launcher_script_is_used_and_then_stopped(
    kind: Kind, launcher: str, tmp_path: Path, system_temp: Path
) -> None:
    pid_file = tmp_path / "launcher-pid"
    wrapper = script(tmp_path, f"echo $$ > {pid_file}\n{launcher}", name="launcher")
    try:
        with trio.fail_after(60):
            async with open_chromium(executable=wrapper, transport=kind) as browser:
                version = await get_version(browser)
                assert "Chrome" in str(version["product"])
                if "exit 0" in launcher:
                    assert await browser.wait_exit(5)
                    assert browser.process.returncode == 0
                assert len(session_members(browser.pid)) > 1  # the browser and its children live on
        assert session_members(browser.pid) == []
        assert names(system_temp) == []
    finally:
        if pid_file.exists():
            kill_session(int(pid_file.read_text()))


async def test_launcher_that_detaches_the_browser_is_refused(tmp_path: Path, system_temp: Path) -> None:
    """A browser in a session of its own could be neither stopped nor waited for."""
    pid_file = tmp_path / "detached-pid"
    inner = script(tmp_path, f"echo $$ > {pid_file}\nsleep 0.3\n{ANSWER_PROBE}exec cat <&3 >&4", "inner")
    launcher = script(tmp_path, f"setsid {inner} &\nexit 0", name="launcher")
    try:
        with trio.fail_after(20):
            with pytest.raises(BrowserLaunchError, match="detached") as info:
                async with open_chromium(executable=launcher):
                    pytest.fail("a detached browser should be refused")
            assert "exited (status 0)" in str(info.value)
            detached = int(pid_file.read_text())
            while session_members(detached):
                await trio.sleep(0.02)  # it sees the end of its pipe and exits
        assert names(system_temp) == []
    finally:
        if pid_file.exists():
            kill_session(int(pid_file.read_text()))


# -- 4. Ctrl-C, again and again, during the close ---------------------------------------------------------

KI_SCRIPT = """
import json, os, signal, sys
import trio
from engine.lowlevel import open_chromium
from engine import Settings

async def main(first_in_block: bool, stopped: bool) -> None:
    async with open_chromium(settings=Settings(kill_timeout=3.0)) as browser:
        print(json.dumps({"temp_dir": browser.temp_dir, "pid": browser.pid}), flush=True)
        if stopped:
            os.kill(browser.pid, signal.SIGSTOP)  # slow to stop: SIGTERM waits for the whole grace
        print("closing", flush=True)
        if first_in_block:
            await trio.sleep_forever()

trio.run(main, sys.argv[1] == "block", sys.argv[2] == "stopped")
"""


@pytest.mark.browser
@pytest.mark.parametrize(
    ("first", "browser_state", "gap"),
    [("block", "stopped", 0.05), ("close", "stopped", 0.05), ("block", "running", 0.01)],
)
async def test_repeated_ctrl_c_during_close_leaves_no_profile_and_no_process(
    first: str, browser_state: str, gap: float, tmp_path: Path, system_temp: Path
) -> None:
    """Three quick SIGINTs to a script leaving open_chromium; before: 10 of 10 left the profile."""
    program = tmp_path / "interrupted.py"
    program.write_text(KI_SCRIPT)
    process = await trio.lowlevel.open_process(
        [sys.executable, str(program), first, browser_state],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    assert process.stderr is not None
    output = b""
    sid = 0
    try:
        with trio.fail_after(30):
            while b"closing\n" not in output:
                chunk = await process.stdout.receive_some()
                assert chunk, "the script ended before closing"
                output += chunk
            for _ in range(3):
                process.send_signal(signal.SIGINT)
                await trio.sleep(gap)
            await process.wait()
            errors = b""
            while chunk := await process.stderr.receive_some():
                errors += chunk
        launched = json.loads(output.splitlines()[0])
        sid = launched["pid"]
        assert process.returncode == -signal.SIGINT, errors.decode()
        assert errors.rstrip().endswith(b"KeyboardInterrupt"), errors.decode()
        assert b"ExceptionGroup" not in errors
        assert session_members(sid) == []
        assert not os.path.exists(launched["temp_dir"])
        assert names(system_temp) == []
    finally:
        with trio.CancelScope(shield=True), trio.move_on_after(5):
            if process.returncode is None:
                process.kill()
            await process.wait()
        await process.stdout.aclose()
        await process.stderr.aclose()
        if sid:
            kill_session(sid)


def test_two_ctrl_c_caught_while_leaving_come_out_as_one_keyboard_interrupt() -> None:
    first, second = KeyboardInterrupt(), KeyboardInterrupt()
    error = ValueError("from the block")
    nested = BaseExceptionGroup("", [KeyError(), BaseExceptionGroup("", [first, second])])
    assert process_module._ctrl_c_wins(nested).exceptions == (first,)
    assert process_module._ctrl_c_wins(BaseExceptionGroup("", [error, second])).exceptions == (second,)
    alone = BaseExceptionGroup("", [error, KeyError()])
    assert process_module._ctrl_c_wins(alone) is alone


# -- 5. arguments ------------------------------------------------------------------------------------------


async def test_a_plain_string_for_args_is_refused_before_anything_is_spawned(
    tmp_path: Path, system_temp: Path
) -> None:
    fake = script(tmp_path, "exit 3")
    with trio.fail_after(10):
        with pytest.raises(TypeError, match=r"list of flags.*args=\['--mute-audio'\]"):
            async with open_chromium(executable=fake, args="--mute-audio"):
                pytest.fail("should not start")
        with pytest.raises(TypeError, match=r"args\[1\] is a int"):
            async with open_chromium(executable=fake, args=["--mute-audio", 3]):  # type: ignore[list-item]
                pytest.fail("should not start")
        with pytest.raises(TypeError, match=r"args\[0\] is a bytes"):
            async with open_chromium(executable=fake, args=[b"--mute-audio"]):  # type: ignore[list-item]
                pytest.fail("should not start")
        with pytest.raises(ValueError, match="NUL"):
            async with open_chromium(executable=fake, args=["--lang=de\0"]):
                pytest.fail("should not start")
    with pytest.raises(TypeError, match="list of flags"):
        chromium_command(fake, user_data_dir="/p", args="--mute-audio")
    assert names(system_temp) == []


async def test_an_empty_executable_is_an_error_not_the_default_browser(system_temp: Path) -> None:
    with pytest.raises(ValueError, match="empty string; pass None for the default"):
        find_chromium("")
    with pytest.raises(TypeError, match="str path or None, not int"):
        find_chromium(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="empty string"):
        chromium_command("", user_data_dir="/p")
    with trio.fail_after(10), pytest.raises(ValueError, match="empty string"):
        async with open_chromium(executable=""):
            pytest.fail("should not start")
    assert names(system_temp) == []


# -- 6. teardown speed ------------------------------------------------------------------------------------


@pytest.mark.browser
@pytest.mark.parametrize("cancelled", [True, False], ids=["cancelled", "left-normally"])
async def test_stuck_browser_is_killed_within_a_second_of_a_cancellation(
    cancelled: bool, system_temp: Path
) -> None:
    """A browser that ignores SIGTERM: half a second under cancellation, else Settings.kill_timeout."""
    settings = Settings(kill_timeout=1.5)
    with trio.fail_after(60):
        with trio.CancelScope() as scope:
            async with open_chromium(settings=settings) as browser:
                os.kill(browser.pid, signal.SIGSTOP)  # a stopped process cannot act on SIGTERM
                started = trio.current_time()
                if cancelled:
                    scope.cancel()
                    await trio.sleep_forever()
        took = trio.current_time() - started
    assert scope.cancelled_caught == cancelled
    assert browser.process.returncode == -signal.SIGKILL
    if cancelled:
        assert took < 1.0
    else:
        assert settings.kill_timeout <= took < settings.kill_timeout + 1.0
    assert session_members(browser.pid) == []
    assert names(system_temp) == []
