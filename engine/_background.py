"""A browser held across the lines of a REPL: ``browser = await engine.launch_in_background()``.

``async with launch()`` needs one block of code around everything that uses the browser, which a REPL
does not have: in ``python -m trio`` every line runs on its own, so entering ``launch()`` by hand on one
line and leaving it on another ends in "Nursery stack corrupted". Here the ``async with`` runs in a trio
*system task* instead, which lives as long as the ``trio.run`` (the REPL session) does:

    $ python -m trio
    >>> import cdp, engine
    >>> browser = await engine.launch_in_background()
    >>> page = await browser.new_page("http://127.0.0.1:8000/")
    >>> await browser.aclose()            # or just leave: the run's end closes it

The browser closes with ``await browser.aclose()``, or when the run ends (leaving the REPL, Ctrl-D,
``exit()``): trio cancels system tasks when its main task is done, and ``launch()`` then tears down as it
does for any cancelled block (Browser.close, then the process and its profile, within a second).

Not for Jupyter: its ``%autoawait trio`` runs every cell in a ``trio.run`` of its own, so nothing started
in one cell outlives it; there, keep the browser inside one cell's ``async with launch()``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Literal

import outcome
import trio

from engine._browser import Browser, connect, launch
from engine._settings import DEFAULT_SETTINGS, Settings

log = logging.getLogger("engine.background")

Opener = Callable[[], AbstractAsyncContextManager[Browser]]


class _Holder:
    """The system task's side: ``stop`` asks it to leave its ``async with``; ``stopped`` says it has."""

    def __init__(self) -> None:
        self.stop = trio.Event()
        self.stopped = trio.Event()

    async def aclose(self) -> None:
        self.stop.set()
        await self.stopped.wait()


async def _hold(
    open_browser: Opener, holder: _Holder, ready: Callable[[outcome.Outcome[Browser]], None]
) -> None:
    """The system task: open the browser, hand it over, keep it open until asked or cancelled.

    A system task that raises crashes the whole run (TrioInternalError), so every error goes to the caller
    of :func:`_start` (a failed start) or to the log (a failed close); only the run's own cancellation
    leaves it, as trio expects.
    """
    started = False
    try:
        async with open_browser() as browser:
            browser._aclose = holder.aclose
            started = True
            ready(outcome.Value(browser))
            await holder.stop.wait()
    except trio.Cancelled:
        raise  # the run is ending: launch()/connect() have already closed what they opened
    except BaseException as exc:
        if not started:
            ready(outcome.Error(exc))
        else:
            log.warning("the background browser did not close cleanly: %r", exc)
    finally:
        holder.stopped.set()


async def _start(open_browser: Opener, name: str) -> Browser:
    holder = _Holder()
    arrived = trio.Event()
    got: list[outcome.Outcome[Browser]] = []

    def ready(result: outcome.Outcome[Browser]) -> None:
        got.append(result)
        arrived.set()

    trio.lowlevel.spawn_system_task(_hold, open_browser, holder, ready, name=name)
    try:
        await arrived.wait()
    except BaseException:
        holder.stop.set()  # the caller gave up while it started: it must not outlive them
        raise
    return got[0].unwrap()


async def launch_in_background(
    *,
    executable: str | None = None,
    transport: Literal["pipe", "websocket"] = "pipe",
    headless: bool = True,
    args: Sequence[str] = (),
    settings: Settings = DEFAULT_SETTINGS,
) -> Browser:
    """Launch a browser that stays open across REPL lines, until ``await browser.aclose()`` or the run ends.

    Takes the arguments of :func:`engine.launch`. For scripts, prefer ``async with launch()``: its block
    says where the browser's life ends.

    Raises:
        BrowserLaunchError: as :func:`engine.launch`.
    """
    return await _start(
        lambda: launch(
            executable=executable, transport=transport, headless=headless, args=args, settings=settings
        ),
        "engine.launch_in_background",
    )


async def connect_in_background(url: str, *, settings: Settings = DEFAULT_SETTINGS) -> Browser:
    """:func:`engine.connect` held across REPL lines; ``aclose()`` (or the run's end) closes this client's
    pages and its link, never the browser."""
    return await _start(lambda: connect(url, settings=settings), "engine.connect_in_background")
