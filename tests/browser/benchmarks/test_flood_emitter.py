"""roundtrip.flood's emitter in a real page: a stopped rep's safety timer spares the next rep's emitter."""

from __future__ import annotations

import trio

import cdp
from benchmarks.scenarios import flood_start_expression, flood_stop_expression
from engine import Browser


async def test_a_stopped_floods_timer_does_not_stop_the_next_flood(browser: Browser) -> None:
    page = await browser.new_page()
    session = page.session
    await session.execute(cdp.runtime.enable())
    with trio.fail_after(20):
        await session.execute(cdp.runtime.evaluate(expression=flood_start_expression(max_ms=300)))
        await session.execute(cdp.runtime.evaluate(expression=flood_stop_expression()))
        await session.execute(cdp.runtime.evaluate(expression=flood_start_expression()))
        await trio.sleep(0.6)  # the first flood's 300 ms timer has fired by now
        async with session.listen(cdp.runtime.ConsoleAPICalled, buffer_size=100_000) as events:
            await trio.sleep(0.2)
            seen = events.statistics().buffered
        await session.execute(cdp.runtime.evaluate(expression=flood_stop_expression()))
    # 40 events every 4 ms: about 2,000 in 0.2 s while the second flood runs, none once it was stopped.
    assert seen > 100, f"the second flood stopped early: {seen} events in 0.2 s"


async def test_the_safety_timer_stops_a_flood_nobody_stops(browser: Browser) -> None:
    page = await browser.new_page()
    session = page.session
    await session.execute(cdp.runtime.enable())
    with trio.fail_after(20):
        await session.execute(cdp.runtime.evaluate(expression=flood_start_expression(max_ms=200)))
        await trio.sleep(0.5)
        async with session.listen(cdp.runtime.ConsoleAPICalled, buffer_size=100_000) as events:
            await trio.sleep(0.2)
            seen = events.statistics().buffered
    assert seen == 0
