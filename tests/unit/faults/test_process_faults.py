"""Fault injection against open_chromium: what a stopped, killed, wrapped or interrupted browser leaves.

Each test is a way the process layer once left a file or a process on the machine (or took too long to
leave); each asserts the machine is clean the moment the block is left, under a deadline that is never what
ends the test. Real Chromium where its behaviour matters, shell stand-ins where a fault must be exact.
"""

from __future__ import annotations

import json
import os
import signal
import stat
from pathlib import Path
from typing import Literal

import pytest
import trio

import engine._process as process_module
from engine import BrowserLaunchError
from engine.lowlevel import ChromiumProcess, chromium_command, find_chromium, open_chromium
from tests.procs import kill_session, session_members

REPO = Path(__file__).resolve().parents[3]
CHROMIUM = "/usr/bin/chromium"
Kind = Literal["pipe", "websocket"]


# -- helpers -----------------------------------------------------------------------------------------


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


# -- 1. Chromium's temporary files ---------------------------------------------------------------------


# -- 2. the whole session is gone before the profile is removed ----------------------------------------


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
