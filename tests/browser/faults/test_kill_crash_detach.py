"""Fault injection that held before the reliability work, kept beside the rest: a killed browser, a crashed
renderer, a closed tab, huge messages both ways, an event flood, a failed launch, and teardown.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
import trio

import cdp
from engine import (
    Browser,
    BrowserLaunchError,
    ConnectionClosed,
    MessageTooLarge,
    ProtocolError,
    SessionDetached,
    Settings,
    TargetCrashed,
    connect,
    launch,
)
from tests.deadlines import without_a_deadline
from tests.unit.faults.server import serve_faults

pytestmark = pytest.mark.browser


async def test_closing_a_tab_detaches_only_its_session(browser: Browser) -> None:
    with trio.fail_after(20):
        doomed, other = await browser.new_page(), await browser.new_page()
        hang = cdp.runtime.evaluate(expression="new Promise(() => {})", await_promise=True)
        async with trio.open_nursery() as nursery:

            async def pending() -> None:
                with pytest.raises(SessionDetached, match=r"closed by this client \(Page.close\)"):
                    await doomed.session.execute(hang)

            nursery.start_soon(pending)
            await trio.sleep(0.1)
            await doomed.close()
        with pytest.raises(SessionDetached):
            await doomed.session.execute(cdp.runtime.evaluate(expression="1"))
        alive = await other.session.execute(cdp.runtime.evaluate(expression="'still here'"))
        assert alive.result.value == "still here"
        assert doomed not in browser.pages


async def test_renderer_crash_raises_target_crashed(browser: Browser) -> None:
    with trio.fail_after(20):
        page = await browser.new_page()
        hang = cdp.runtime.evaluate(expression="new Promise(() => {})", await_promise=True)
        async with trio.open_nursery() as nursery:

            async def pending() -> None:
                with pytest.raises(TargetCrashed):
                    await page.session.execute(hang)

            nursery.start_soon(pending)
            await trio.sleep(0.1)
            with pytest.raises((TargetCrashed, ProtocolError)):
                await page.session.execute(cdp.page.crash())
        assert browser.connection.pending_count() == 0
        # The browser and other tabs are unaffected.
        fresh = await browser.new_page()
        ok = await fresh.session.execute(cdp.runtime.evaluate(expression="1+1"))
        assert ok.result.value == 2


async def test_a_subscription_is_told_of_a_crash_and_goes_on_after_the_reload(browser: Browser) -> None:
    # Nothing came: a consumer waited for its own deadline, or for ever without one.
    with trio.fail_after(20):
        page = await browser.new_page()
        await page.session.execute(cdp.runtime.enable())
        async with page.session.listen(cdp.runtime.ConsoleAPICalled) as events:
            await page.evaluate("console.log('before'); 0")
            with pytest.raises((TargetCrashed, ProtocolError)):
                await page.session.execute(cdp.page.crash())
            assert (await events.receive()).args[0].value == "before"
            with pytest.raises(TargetCrashed, match="a subscription goes on"):
                await events.receive()
            await page.reload()
            await page.session.execute(cdp.runtime.enable())
            await page.evaluate("console.log('after'); 0")
            assert (await events.receive()).args[0].value == "after"


@pytest.mark.parametrize("transport", ["pipe", "websocket"])
async def test_killed_browser_fails_pending_within_a_second(transport: str) -> None:
    with trio.fail_after(30):
        async with launch(transport=transport) as browser:  # type: ignore[arg-type]
            page = await browser.new_page()
            hang = cdp.runtime.evaluate(expression="new Promise(() => {})", await_promise=True)
            assert browser.process is not None
            pid = browser.process.process.pid
            outcome: list[float] = []
            async with trio.open_nursery() as nursery:

                async def pending(session_index: int) -> None:
                    session = page.session if session_index else browser.session
                    try:
                        while True:
                            if session_index:
                                await session.execute(hang)
                            else:
                                await session.execute(cdp.browser.get_version())
                    except ConnectionClosed:
                        outcome.append(time.monotonic())

                nursery.start_soon(pending, 1)
                nursery.start_soon(pending, 1)
                nursery.start_soon(pending, 0)
                await trio.sleep(0.2)
                killed = time.monotonic()
                os.kill(pid, signal.SIGKILL)
            assert len(outcome) == 3
            assert max(outcome) - killed < 1.0
            with pytest.raises(ConnectionClosed):
                await browser.version()


async def test_expect_popup_ends_when_the_browser_dies(server: str) -> None:
    async with launch() as browser:
        with trio.fail_after(20):
            page = await browser.new_page(f"{server}/actions/nav.html")
        assert browser.process is not None
        pid = browser.process.process.pid
        async with without_a_deadline():  # no deadline: it waited 30 s, then said no tab was opened
            killed = time.monotonic()
            with pytest.raises(ConnectionClosed, match=r"^expect_popup: "):
                async with page.expect_popup():
                    os.kill(pid, signal.SIGKILL)
            assert time.monotonic() - killed < 5


async def test_a_network_idle_wait_ends_when_the_browser_dies() -> None:
    """The wait sends nothing while it waits: it must look at the link itself (it waited out its deadline).
    The page holds a request for good, so the network never goes idle before the kill, however loaded."""
    with serve_faults() as faulty:
        async with launch() as browser:
            with trio.fail_after(20):
                page = await browser.new_page(f"{faulty}/fetching-forever.html")
            assert browser.process is not None
            pid = browser.process.process.pid

            async def kill_soon() -> None:
                await trio.sleep(0.5)
                os.kill(pid, signal.SIGKILL)

            started = time.monotonic()
            with trio.fail_after(20):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(kill_soon)
                    with pytest.raises(ConnectionClosed, match="the networkidle wait ended"):
                        await page.wait_for(load_state="networkidle")
            assert time.monotonic() - started < 5


@pytest.mark.parametrize("transport", ["pipe", "websocket"])
async def test_inbound_message_over_100_mb(transport: str) -> None:
    size = 110 * 1024 * 1024
    with trio.fail_after(120):
        async with launch(transport=transport) as browser:  # type: ignore[arg-type]
            page = await browser.new_page()
            result = await page.session.execute(
                cdp.runtime.evaluate(expression=f"'x'.repeat({size})", return_by_value=True)
            )
            value = result.result.value
            assert isinstance(value, str)
            assert len(value) == size
            del result
            small = await page.session.execute(cdp.runtime.evaluate(expression="1+1"))
            assert small.result.value == 2


async def test_outbound_over_the_limit_fails_before_sending() -> None:
    settings = Settings(max_outbound_bytes=1024 * 1024)
    with trio.fail_after(30):
        async with launch(settings=settings) as browser:
            page = await browser.new_page()
            sent_before = browser.statistics().messages_sent
            with pytest.raises(MessageTooLarge, match="nothing was sent"):
                await page.session.execute(cdp.runtime.evaluate(expression="'" + "y" * 2_000_000 + "'"))
            assert browser.statistics().messages_sent == sent_before
            assert browser.connection.pending_count() == 0
            ok = await page.session.execute(cdp.runtime.evaluate(expression="3*3"))
            assert ok.result.value == 9


async def test_console_flood_to_a_slow_subscriber_stays_bounded(browser: Browser) -> None:
    total, buffer = 100_000, 1000
    with trio.fail_after(120):
        page = await browser.new_page()
        await page.session.execute(cdp.runtime.enable())
        rss_before = peak = _rss_mib()
        async with page.session.listen(
            cdp.runtime.ConsoleAPICalled, buffer_size=buffer, overflow="drop_oldest"
        ) as events:
            flood = f"for (let i = 0; i < {total}; i++) console.log('m', i); 'done'"
            await page.session.execute(cdp.runtime.evaluate(expression=flood))
            seen = 0
            last = -1
            while last != total - 1:
                event = await events.receive()
                seen += 1
                last = event.args[1].value
                if seen % 100 == 0:
                    peak = max(peak, _rss_mib())
                    await trio.sleep(0.001)  # a slow consumer
            stats = events.statistics()
        grown_mib = peak - rss_before
    assert stats.delivered + stats.dropped + stats.buffered >= total
    assert stats.dropped > 0
    assert stats.buffered <= buffer
    assert browser.statistics().events_dropped >= stats.dropped
    print(f"flood: {seen} received, {stats.dropped} dropped, RSS grew at most {grown_mib:.1f} MiB")
    assert grown_mib < 100


def _rss_mib() -> float:
    """This process's resident set size now (not the lifetime peak, which earlier tests may have set)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / (1024 * 1024)


async def test_launch_failure_carries_stderr() -> None:
    with trio.fail_after(30), pytest.raises(BrowserLaunchError):
        async with launch(executable="/bin/false"):
            pass


async def test_launch_cleans_up_process_and_profile() -> None:
    with trio.fail_after(30):
        async with launch() as browser:
            assert browser.process is not None
            profile = Path(browser.process.user_data_dir)
            pid = browser.process.process.pid
            assert profile.exists()
            page = await browser.new_page("data:text/html,x")
        assert not profile.exists()
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    # A page used after the block: the browser is gone, which is the news (it blamed the tab, "Render
    # process gone", as if only that tab had closed).
    for call in (lambda: page.evaluate("1"), page.snapshot, lambda: page.goto("data:text/html,y")):
        with (
            trio.fail_after(5),
            pytest.raises(ConnectionClosed, match=r"async with launch\(\)` block was left"),
        ):
            await call()


@pytest.mark.parametrize("transport", ["pipe", "websocket"])
async def test_an_error_in_the_block_comes_out_as_itself(transport: str) -> None:
    """No ExceptionGroup escapes launch() or connect(): the caller sees the exception it raised."""

    class Boom(Exception):
        pass

    with trio.fail_after(60):
        with pytest.raises(Boom):
            async with launch(transport=transport) as owner:  # type: ignore[arg-type]
                if transport == "websocket":
                    assert owner.process is not None
                    assert owner.process.ws_url is not None
                    with pytest.raises(Boom):
                        async with connect(owner.process.ws_url) as browser:
                            await browser.new_page()
                            raise Boom
                raise Boom


_OWNER = """
import sys, trio
from engine import launch

async def main():
    async with launch(transport=sys.argv[1]) as browser:
        await browser.new_page("about:blank")
        print(browser.process.pid, flush=True)
        await trio.sleep(120)

trio.run(main)
"""


def _live_in_session(sid: int) -> list[int]:
    """Processes of session ``sid`` that have not exited (a zombie waiting for init to reap it has)."""
    live = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) ": state, ppid, pgrp, session
        if int(fields[3]) == sid and fields[0] != "Z":
            live.append(int(entry.name))
    return live


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads sessions from /proc (Linux)")
@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
@pytest.mark.parametrize("transport", ["pipe", "websocket"])
def test_browser_exits_when_its_owner_is_killed(
    transport: str, how: signal.Signals, tmp_path: Path, system_temp: Path
) -> None:
    """A Python process killed without its cleanup (SIGTERM's default, SIGKILL) leaves no browser behind.

    Over the websocket the whole browser used to stay up: the engine now also hands Chromium an unused
    DevTools pipe, which the kernel closes when its owner dies. Its temporary directory stays (nobody is
    left to remove it) until the next launch in the same temp folder, which removes it: before, it stayed
    for good. The owner makes it in this test's own temp folder, not in /tmp.
    """
    import subprocess
    import sys

    script = tmp_path / "owner.py"
    script.write_text(_OWNER)
    with subprocess.Popen(
        [sys.executable, str(script), transport],
        stdout=subprocess.PIPE,
        cwd=Path(__file__).parents[3],
        env={**os.environ, "TMPDIR": str(system_temp)},
    ) as owner:
        assert owner.stdout is not None
        line = owner.stdout.readline()  # the browser's pid, once a page is open
        pid = int(line)
        assert _live_in_session(pid), "the browser should be running before its owner is killed"
        owner.send_signal(how)
        assert owner.wait(timeout=10) == -how
        deadline = time.monotonic() + 15
        while _live_in_session(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = _live_in_session(pid)
        for stray in left:  # don't leak them into the rest of the run if the test fails
            os.kill(stray, signal.SIGKILL)
        assert not left, f"{len(left)} browser processes outlived their killed owner"
    leftover = [p.name for p in system_temp.iterdir()]
    assert len(leftover) == 1, leftover
    assert leftover[0].startswith("cdp-engine-"), leftover

    async def next_launch() -> None:
        with trio.fail_after(30):
            async with launch():
                assert not (system_temp / leftover[0]).exists()

    trio.run(next_launch)
    assert list(system_temp.iterdir()) == []
