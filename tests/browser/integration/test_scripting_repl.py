"""A browser held across the lines of ``python -m trio``, driven through a subprocess with a deadline."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time

import pytest
import trio

import engine
from engine.testing import open_fake_browser
from tests.procs import session_members

pytestmark = pytest.mark.browser


def run_repl(lines: str) -> subprocess.CompletedProcess[str]:
    """Feed ``lines`` to ``python -m trio`` as a user would type them; at most 60 s."""
    return subprocess.run(
        [sys.executable, "-m", "trio"],
        input=textwrap.dedent(lines),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def facts(out: str) -> dict[str, str]:
    """``KEY value`` lines the session printed."""
    found = {}
    for line in out.splitlines():
        key, _, value = re.sub(r"^((>>>|\.\.\.) )+", "", line).partition(" ")
        if key.isupper() and key.isalpha():
            found[key] = value
    return found


def test_leaving_the_repl_with_a_browser_open_closes_it_without_a_traceback(server: str) -> None:
    proc = run_repl(
        f"""\
        import cdp, engine
        browser = await engine.launch_in_background()
        page = await browser.new_page("{server}/frame.html")
        result = await page.session.execute(cdp.runtime.evaluate(expression="6*7"))
        print("VALUE", result.result.value)
        print("PID", browser.process.pid)
        print("DIR", browser.process.temp_dir)
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "Error" not in proc.stderr, proc.stderr
    seen = facts(proc.stdout)
    assert seen["VALUE"] == "42", proc.stdout
    assert session_members(int(seen["PID"])) == []  # Chromium and every child of it are gone
    assert not os.path.exists(seen["DIR"])  # and its profile


def test_aclose_closes_it_and_the_repl_goes_on(server: str) -> None:
    proc = run_repl(
        f"""\
        import engine, os
        browser = await engine.launch_in_background()
        page = await browser.new_page("{server}/frame.html")
        pid, folder = browser.process.pid, browser.process.temp_dir
        await browser.aclose()
        await browser.aclose()
        print("PROFILE", os.path.exists(folder))
        print("PID", pid)
        again = await engine.launch_in_background()
        print("VERSION", (await again.version()).product.split("/")[0])
        exit()
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    seen = facts(proc.stdout)
    assert seen["PROFILE"] == "False", proc.stdout
    assert session_members(int(seen["PID"])) == []
    assert seen["VERSION"] in ("Chrome", "HeadlessChrome"), proc.stdout


async def test_a_failed_start_raises_in_the_caller_and_the_run_goes_on() -> None:
    with trio.fail_after(30), pytest.raises(engine.BrowserLaunchError):
        await engine.launch_in_background(executable="/bin/false")
    with trio.fail_after(30):
        browser = await engine.launch_in_background()
        assert browser.process is not None
        pid = browser.process.pid
        await browser.aclose()
    assert session_members(pid) == []
    # Used after aclose(): it said the browser "exited or crashed".
    with trio.fail_after(5), pytest.raises(engine.ConnectionClosed, match=r"aclose\(\) was called"):
        await browser.version()


async def test_a_block_owned_browser_says_to_leave_its_block_instead_of_aclose() -> None:
    async with open_fake_browser() as (browser, _):
        with pytest.raises(RuntimeError, match="block is left"):
            await browser.aclose()


def test_a_script_that_never_closes_it_still_leaves_nothing_behind() -> None:
    """The end of trio.run cancels the system task: launch() tears down as for any cancelled block."""
    seen: dict[str, object] = {}

    async def forgetful() -> None:
        with trio.fail_after(30):
            browser = await engine.launch_in_background()
        assert browser.process is not None
        seen["pid"], seen["dir"] = browser.process.pid, browser.process.temp_dir

    start = time.monotonic()
    trio.run(forgetful)
    assert time.monotonic() - start < 30
    assert session_members(int(str(seen["pid"]))) == []
    assert not os.path.exists(str(seen["dir"]))
