"""The public surface: what ``engine`` and ``cdp`` export is sorted, importable and nothing more."""

from __future__ import annotations

import types

import cdp
import engine


def test_engine_all_is_sorted_and_complete() -> None:
    assert engine.__all__ == sorted(engine.__all__)
    public = {
        name
        for name, value in vars(engine).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public == set(engine.__all__)
    for name in engine.__all__:
        assert getattr(engine, name).__module__.startswith("engine")


def test_errors_have_one_root() -> None:
    errors = [
        getattr(engine, n) for n in engine.__all__ if n.endswith(("Error", "Closed", "Crashed", "Detached"))
    ]
    errors += [engine.EventOverflow, engine.MessageTooLarge]
    for error in errors:
        assert issubclass(error, engine.CDPError), error
    assert issubclass(engine.ResponseDecodeError, cdp.DecodeError)
    assert issubclass(engine.TargetCrashed, engine.ConnectionClosed)


def test_cdp_all_is_sorted() -> None:
    assert cdp.__all__ == sorted(cdp.__all__)
    for name in cdp.__all__:
        assert getattr(cdp, name) is not None


def test_lowlevel_and_testing_all_are_sorted_and_complete() -> None:
    import engine.lowlevel
    import engine.testing

    for module in (engine.lowlevel, engine.testing):
        assert module.__all__ == sorted(module.__all__), module
        for name in module.__all__:
            assert getattr(module, name) is not None
    # lowlevel re-exports engine internals; testing exports what it defines.
    lowlevel = {
        name
        for name, value in vars(engine.lowlevel).items()
        if not name.startswith("_") and getattr(value, "__module__", "").startswith("engine._")
    }
    assert lowlevel <= set(engine.lowlevel.__all__)
    testing = {
        name
        for name, value in vars(engine.testing).items()
        if not name.startswith("_") and getattr(value, "__module__", "") == "engine.testing"
    }
    assert testing <= set(engine.testing.__all__)
