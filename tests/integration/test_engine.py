"""The engine against a real headless Chromium: sessions, deadlines, teardown and faults."""

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
    NavigationError,
    ProtocolError,
    Session,
    SessionDetached,
    Settings,
    Subscription,
    TargetCrashed,
    connect,
    launch,
)

pytestmark = pytest.mark.browser

SLOW_PROMISE = "new Promise(r => setTimeout(() => r('late'), 400))"


async def test_typed_execute_and_goto(browser: Browser, server: str) -> None:
    with trio.fail_after(20):
        version = await browser.version()
        assert "Chrome" in version.product
        page = await browser.new_page()
        result = await page.goto(f"{server}/frame.html")
        assert result.loader_id
        evaluated = await page.session.execute(cdp.runtime.evaluate(expression="document.title"))
        assert evaluated.result.value == "frame"
        raw = await page.session.execute_raw("Runtime.evaluate", {"expression": "1+1"})
        assert raw["result"]["value"] == 2
        assert page in browser.pages


async def test_navigation_error_is_raised(browser: Browser) -> None:
    with trio.fail_after(20):
        page = await browser.new_page()
        with pytest.raises(NavigationError, match="ERR_"):
            await page.goto("http://127.0.0.1:9/nothing-listens-here")


async def test_protocol_error_names_the_method(browser: Browser) -> None:
    with trio.fail_after(10), pytest.raises(ProtocolError) as info:
        await browser.session.execute_raw("No.suchMethod")
    assert info.value.method == "No.suchMethod"
    assert info.value.code == -32601


async def test_listen_is_race_free_for_the_event_a_command_triggers(browser: Browser, server: str) -> None:
    with trio.fail_after(20):
        page = await browser.new_page()
        async with page.session.listen(cdp.page.LoadEventFired, cdp.page.FrameNavigated) as events:
            await page.session.execute(cdp.page.navigate(url=f"{server}/frame.html"))
            navigated = await events.wait_for(lambda e: isinstance(e, cdp.page.FrameNavigated))
            loaded = await events.wait_for(lambda e: isinstance(e, cdp.page.LoadEventFired))
        assert navigated.frame.url.endswith("/frame.html")
        assert loaded.timestamp > 0


async def test_cancelled_command_leaves_nothing_pending(browser: Browser) -> None:
    with trio.fail_after(20):
        page = await browser.new_page()
        evaluate = cdp.runtime.evaluate(expression=SLOW_PROMISE, await_promise=True)
        with trio.move_on_after(0.05) as scope:
            await page.session.execute(evaluate)
        assert scope.cancelled_caught
        assert browser.connection.pending_count() == 0
        while browser.statistics().unknown_id_replies == 0:  # the late reply arrives and is dropped
            await trio.sleep(0.01)
        again = await page.session.execute(cdp.runtime.evaluate(expression="2+2"))
        assert again.result.value == 4


async def test_closing_a_tab_detaches_only_its_session(browser: Browser) -> None:
    with trio.fail_after(20):
        doomed, other = await browser.new_page(), await browser.new_page()
        hang = cdp.runtime.evaluate(expression="new Promise(() => {})", await_promise=True)
        async with trio.open_nursery() as nursery:

            async def pending() -> None:
                with pytest.raises(SessionDetached):
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


async def test_iframes_and_workers_attach_as_child_sessions(browser: Browser, server: str) -> None:
    with trio.fail_after(30):
        page = await browser.new_page()
        await page.goto(f"{server}/oopif.html")
        worker_page = await browser.new_page()
        await worker_page.goto(f"{server}/traffic.html")
        while not any(s.target_type == "iframe" for s in page.session.children.values()):
            await trio.sleep(0.05)
        while not any(s.target_type == "worker" for s in worker_page.session.children.values()):
            await trio.sleep(0.05)
        frame = next(s for s in page.session.children.values() if s.target_type == "iframe")
        text = await frame.execute(cdp.runtime.evaluate(expression="document.querySelector('p').textContent"))
        assert text.result.value == "Inside the frame"
        worker = next(s for s in worker_page.session.children.values() if s.target_type == "worker")
        kind = await worker.execute(cdp.runtime.evaluate(expression="typeof WorkerGlobalScope"))
        assert kind.result.value == "function"


async def test_launch_failure_carries_stderr() -> None:
    with trio.fail_after(30), pytest.raises(BrowserLaunchError):
        async with launch(executable="/bin/false"):
            pass


async def test_connect_to_a_running_browser_leaves_it_running() -> None:
    with trio.fail_after(60):
        async with launch(transport="websocket") as owner:
            assert owner.process is not None
            assert owner.process.ws_url
            ws_url = owner.process.ws_url
            port = ws_url.split(":")[2].split("/")[0]
            for url in (f"http://127.0.0.1:{port}", ws_url):
                async with connect(url) as browser:
                    page = await browser.new_page()
                    value = await page.session.execute(cdp.runtime.evaluate(expression="40+2"))
                    assert value.result.value == 42
                # The remote browser is still alive after the client left.
                assert "Chrome" in (await owner.version()).product
            targets = await owner.session.execute(cdp.target.get_targets())
            assert all(t.type_ != "page" or t.url == "about:blank" for t in targets.target_infos)


async def test_launch_cleans_up_process_and_profile() -> None:
    with trio.fail_after(30):
        async with launch() as browser:
            assert browser.process is not None
            profile = Path(browser.process.user_data_dir)
            pid = browser.process.process.pid
            assert profile.exists()
        assert not profile.exists()
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


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


async def test_on_attach_sees_a_child_sessions_first_events(browser: Browser, server: str) -> None:
    """A subscription made in Browser.on_attach exists before the child runs: nothing is missed."""
    subscriptions: list[tuple[Session, Subscription]] = []

    def hook(child: Session) -> None:
        subscriptions.append((child, child.subscribe(cdp.runtime.ExecutionContextCreated, buffer_size=16)))
        child.execute_nowait(cdp.runtime.enable())

    browser.on_attach = hook
    with trio.fail_after(30):
        page = await browser.new_page()
        await page.goto(f"{server}/oopif.html")
        while not any(child.target_type == "iframe" for child, _ in subscriptions):
            await trio.sleep(0.05)
        child, subscription = next((c, s) for c, s in subscriptions if c.target_type == "iframe")
        created = await subscription.receive()
        assert created.context.origin.startswith("http://localhost")
        child.unsubscribe(subscription)
