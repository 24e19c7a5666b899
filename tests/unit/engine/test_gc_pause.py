"""gc_paused: overlapping pauses of concurrent tasks compose, and the GC comes back as it was."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
import trio

from engine._util import gc_paused


@pytest.fixture
def gc_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    # Back as it was, either way: a test that leaves it off would run the rest of its worker without a GC.
    if was:
        gc.enable()
    else:
        gc.disable()


def test_nested_pauses_resume_once(gc_on: None) -> None:
    with gc_paused():
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer block still holds it
    assert gc.isenabled()


def test_a_gc_that_was_off_stays_off(gc_on: None) -> None:
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()


def test_an_error_in_the_block_resumes_it(gc_on: None) -> None:
    with pytest.raises(ZeroDivisionError), gc_paused():
        1 / 0
    assert gc.isenabled()


async def test_overlapping_tasks(gc_on: None) -> None:
    """The first task leaves before the second: the GC stays paused until the second leaves too."""
    first_left = trio.Event()
    states: list[bool] = []

    async def first() -> None:
        with gc_paused():
            await trio.sleep(0.01)
        first_left.set()

    async def second() -> None:
        with gc_paused():
            await first_left.wait()
            states.append(gc.isenabled())
        states.append(gc.isenabled())

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(first)
            nursery.start_soon(second)
    assert states == [False, True]
