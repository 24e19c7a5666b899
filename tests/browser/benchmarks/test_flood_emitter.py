"""roundtrip.flood's emitter in a real page: a stopped rep's safety timer spares the next rep's emitter."""

from __future__ import annotations

import trio

import cdp
from benchmarks.scenarios import flood_start_expression, flood_stop_expression
from engine import Browser, Session


async def _console_page(browser: Browser) -> Session:
    page = await browser.new_page()
    await page.session.execute(cdp.runtime.enable())
    return page.session


async def _evaluate(session: Session, expression: str) -> None:
    await session.execute(cdp.runtime.evaluate(expression=expression))


async def _events_in(session: Session, seconds: float) -> int:
    """The console events that arrive on ``session`` in the next ``seconds``."""
    async with session.listen(cdp.runtime.ConsoleAPICalled, buffer_size=100_000) as events:
        await trio.sleep(seconds)
        return events.statistics().buffered


async def test_a_stopped_floods_timer_does_not_stop_the_next_flood(browser: Browser) -> None:
    session = await _console_page(browser)
    with trio.fail_after(20):
        await _evaluate(session, flood_start_expression(max_ms=300))
        await _evaluate(session, flood_stop_expression())
        await _evaluate(session, flood_start_expression())
        await trio.sleep(0.6)  # the first flood's 300 ms timer has fired by now
        seen = await _events_in(session, 0.2)
        await _evaluate(session, flood_stop_expression())
    # 40 events every 4 ms: about 2,000 in 0.2 s while the second flood runs, none once it was stopped.
    assert seen > 100, f"the second flood stopped early: {seen} events in 0.2 s"


async def test_the_safety_timer_stops_a_flood_nobody_stops(browser: Browser) -> None:
    session = await _console_page(browser)
    with trio.fail_after(20):
        await _evaluate(session, flood_start_expression(max_ms=200))
        await trio.sleep(0.5)
        seen = await _events_in(session, 0.2)
    assert seen == 0
