"""Small helpers shared by the engine's layers."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn, TypeVar

import trio

T = TypeVar("T")


def attached_state(owner: Any, name: str, make: Callable[[], T]) -> T:
    """The state a module keeps on ``owner`` (a Page) under ``name``, made on first use: it lives and dies
    with its owner, and the owner's class need not know of it."""
    state: T | None = owner.__dict__.get(name)
    if state is None:
        state = owner.__dict__[name] = make()
    return state


class NoPublicConstructor(type):
    """A metaclass for classes only the engine creates: ``Cls(...)`` raises, ``Cls._create(...)`` works.

    Sessions, subscriptions and connections only make sense inside the engine's own context managers.
    """

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            f"{cls.__module__}.{cls.__qualname__} has no public constructor; the engine creates it "
            "(launch()/connect() give a Browser, browser.new_page() a Page with its session)"
        )

    def _create(cls: type[T], *args: Any, **kwargs: Any) -> T:
        return super().__call__(*args, **kwargs)  # type: ignore[misc,no-any-return]


def is_interruption(exc: BaseException | None) -> bool:
    """``exc`` is a cancellation or a Ctrl-C, alone or anywhere in a group: the caller is leaving.

    Teardown then takes its short budgets, so a cancelled block exits within a second.
    """
    interruptions = (trio.Cancelled, KeyboardInterrupt)
    if isinstance(exc, BaseExceptionGroup):
        return exc.subgroup(interruptions) is not None
    return isinstance(exc, interruptions)


def in_a_hurry(leaving: BaseException | None) -> bool:
    """The block is being left by a cancellation or Ctrl-C, or its deadline has already passed: nobody
    waits for a polite or graceful teardown. Call it outside any shield: it reads the caller's deadline."""
    return is_interruption(leaving) or trio.current_effective_deadline() <= trio.current_time()


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    """Every non-group exception in ``group``, depth first."""
    out: list[BaseException] = []
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            out.extend(_leaves(exc))
        else:
            out.append(exc)
    return out


def unwrap_group(eg: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one exception a group stands for, or the group itself when it carries several errors.

    Nurseries wrap whatever crosses them in groups, even a single exception. Public context managers
    re-raise the plain exception instead. Cancellations that ride along with a real error are dropped (the
    error is what the caller must see; an outer cancel scope still ends once it propagates); a group of
    nothing but cancellations becomes its first ``trio.Cancelled``.

    Args:
        eg: the group a nursery raised.

    Returns:
        The single (non-cancellation) leaf, the first cancellation, or, for several errors, the innermost
        group that holds them all: the layers that nurseries wrapped around it (one member each) are peeled,
        so a block that raised its own group gets back that group, not the engine's wrapping of it.
    """
    leaves = _leaves(eg)
    errors = [exc for exc in leaves if not isinstance(exc, trio.Cancelled)]
    if len(errors) == 1:
        return errors[0]
    if not errors and leaves:
        return leaves[0]
    group: BaseExceptionGroup[BaseException] = eg
    while True:
        members = [exc for exc in group.exceptions if not isinstance(exc, trio.Cancelled)]
        if len(members) != 1 or not isinstance(members[0], BaseExceptionGroup):
            return group
        group = members[0]


def reraise_unwrapped(eg: BaseExceptionGroup[BaseException]) -> NoReturn:
    """Raise what :func:`unwrap_group` finds, keeping that exception's own ``__context__``.

    Call it from an ``except BaseExceptionGroup`` block. Raising there would otherwise chain the group as
    the leaf's context and print it twice in tracebacks.
    """
    leaf = unwrap_group(eg)
    context = leaf.__context__
    try:
        raise leaf
    finally:
        leaf.__context__ = context
        del leaf, context


@contextmanager
def first_error() -> Iterator[None]:
    """Concurrent calls that fail together (a page closed under them) raise one error, not a group: the
    engine's own nurseries inside a public method let no ExceptionGroup out."""
    try:
        yield
    except BaseExceptionGroup as group:
        one = unwrap_group(group)
        while isinstance(one, BaseExceptionGroup):
            one = one.exceptions[0]
        raise one from None


@contextmanager
def collapse_groups() -> Iterator[None]:
    """Let no ExceptionGroup out of a public context manager: re-raise the one exception it stands for.

    The engine's background tasks never raise into their nursery, so a group only carries what the caller's
    own block raised (plus cancellations); a group of several real errors is left as it is.
    """
    try:
        yield
    except BaseExceptionGroup as group:
        reraise_unwrapped(group)


class _GCPause:
    """How many blocks hold the cyclic GC paused, and whether it was on before the first one."""

    depth = 0
    resume = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic GC for the block; nested and overlapping pauses (concurrent tasks) compose.

    For work that allocates hundreds of thousands of containers that die by reference count at the end:
    with the GC on, each allocation burst makes it walk all of them again.
    """
    if _GCPause.depth == 0:
        _GCPause.resume = gc.isenabled()
        gc.disable()
    _GCPause.depth += 1
    try:
        yield
    finally:
        _GCPause.depth -= 1
        if _GCPause.depth == 0 and _GCPause.resume:
            gc.enable()
