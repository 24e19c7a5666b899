"""roundtrip.flood's emitter in a real page: a stopped rep's safety timer spares the next rep's emitter.

Both tests wait for the page to say the safety timer has fired (a marker timer of the same delay, set just
after it, fires after it) rather than sleeping for a guessed time, so a loaded machine slows them down but
cannot make them pass or fail wrongly.
"""

from __future__ import annotations

import trio

import cdp
from benchmarks.scenarios import flood_start_expression, flood_stop_expression
from engine import Browser, Session


async def _console_page(browser: Browser) -> Session:
    page = await browser.new_page()
    await page.session.execute(cdp.runtime.enable())
    return page.session


async def _evaluate(session: Session, expression: str) -> object:
    reply = await session.execute(cdp.runtime.evaluate(expression=expression, return_by_value=True))
    return reply.result.value


async def _start_with_marker(session: Session, max_ms: int) -> None:
    """Start a flood whose safety timer fires after ``max_ms``, and a marker timer that fires after it."""
    await _evaluate(session, flood_start_expression(max_ms=max_ms))
    await _evaluate(
        session, f"globalThis.__timerFired = false; setTimeout(() => {{ __timerFired = true; }}, {max_ms}); 1"
    )


async def _until_timer_fired(session: Session) -> None:
    """Return once the marker has fired; every event sent before then came before that reply."""
    while await _evaluate(session, "globalThis.__timerFired") is not True:
        await trio.sleep(0.02)


async def test_a_stopped_floods_timer_does_not_stop_the_next_flood(browser: Browser) -> None:
    session = await _console_page(browser)
    with trio.fail_after(30):
        await _start_with_marker(session, max_ms=300)
        await _evaluate(session, flood_stop_expression())
        await _evaluate(session, flood_start_expression())
        await _until_timer_fired(session)
        seen = 0
        async with session.listen(cdp.runtime.ConsoleAPICalled, buffer_size=100_000) as events:
            with trio.move_on_after(10):
                async for _ in events:
                    seen += 1
                    if seen == 200:
                        break
        await _evaluate(session, flood_stop_expression())
    # The second flood sends 40 events every 4 ms; had the first flood's timer stopped it, none would come.
    assert seen == 200, f"the second flood stopped with the first one's timer: {seen} events in 10 s"


async def test_the_safety_timer_stops_a_flood_nobody_stops(browser: Browser) -> None:
    session = await _console_page(browser)
    with trio.fail_after(30):
        await _start_with_marker(session, max_ms=200)
        await _until_timer_fired(session)
        async with session.listen(cdp.runtime.ConsoleAPICalled, buffer_size=100_000) as events:
            await trio.sleep(0.3)
            seen = events.statistics().buffered
    assert seen == 0
