"""The CLI's rewording of engine messages: only limits that --timeout-ms replaces are reworded."""

from __future__ import annotations

import argparse
import json
import math

from engine._cli_page import json_ready
from engine.cli import _in_cli_terms


def test_only_the_limits_a_deadline_replaces_are_said_in_cli_terms() -> None:
    # Every "(Settings.x)" became "(the limit without --timeout-ms)": false for launch_timeout and
    # max_inbound_bytes, which --timeout-ms does not lift.
    args = argparse.Namespace(timeout_ms=None)
    assert _in_cli_terms(
        "ran past 30 s (Settings.evaluate_timeout; no deadline of your own was set)", args
    ) == ("ran past 30 s (the limit without --timeout-ms)")
    assert _in_cli_terms("did not end within 30 s (Settings.navigation_timeout)", args).endswith(
        "(the limit without --timeout-ms)"
    )
    for kept in ("did not start in 30 s (Settings.launch_timeout)", "is over (Settings.max_inbound_bytes)"):
        assert _in_cli_terms(kept, args) == kept
    assert (
        _in_cli_terms("x (Settings.evaluate_timeout)", argparse.Namespace())
        == "x (Settings.evaluate_timeout)"
    )


def test_numbers_json_cannot_hold_are_spelled_as_cdp_spells_them() -> None:
    value = [1.5, -0.0, 0.0, math.nan, {"x": (math.inf, -math.inf)}, "NaN", 2**70]
    ready = json_ready(value)
    assert ready == [1.5, "-0", 0.0, "NaN", {"x": ["Infinity", "-Infinity"]}, "NaN", 2**70]
    json.dumps(ready, allow_nan=False)  # raises on NaN and the infinities
