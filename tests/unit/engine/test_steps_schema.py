"""engine.steps without a browser: the schema, the validator checked against a JSON Schema validator, the
budget rule and the stable result shape."""

from __future__ import annotations

import json
import math
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import StepsValidationError
from engine._keys import parse_combo
from engine.steps import (
    HARD_MAX_STEPS,
    RESULT_FORMAT,
    RESULT_MARGIN_S,
    STEP_SCHEMA,
    STEP_TYPES,
    STEPS_SCHEMA,
    StepOutcome,
    StepsResult,
    step_budget,
    validate,
)

VALID: list[dict[str, Any]] = [
    {"type": "navigate", "url": "http://127.0.0.1:8000/"},
    {"type": "click", "target": "e3"},
    {"type": "click", "target": "f1e3", "timeout_ms": 500},
    {"type": "click", "target": "node:42"},
    {"type": "fill", "target": "e5", "value": ""},
    {"type": "press", "key": "Enter"},
    {"type": "press", "key": "Control+a", "target": "e5"},
    {"type": "hover", "target": "e3"},
    {"type": "select", "target": "e6", "values": ["Blue", "Red"]},
    {"type": "wait_for", "text": "Clicked", "timeout_ms": 2000},
    {"type": "wait_for", "gone_text": "Loading"},
    {"type": "wait_for", "load": "networkidle"},
    {"type": "wait_for", "time_ms": 0},
    {"type": "read_page"},
    {"type": "read_page", "interactive_only": True, "delta": True, "max_chars": 4000},
]


def problems_of(steps: Any, **kwargs: Any) -> list[tuple[int | None, str]]:
    with pytest.raises(StepsValidationError) as caught:
        validate(steps, **kwargs)
    return [(p.index, p.field) for p in caught.value.problems]


def test_the_schema_is_valid_json_schema_and_accepts_every_example() -> None:
    jsonschema.Draft202012Validator.check_schema(STEP_SCHEMA)
    jsonschema.Draft202012Validator.check_schema(STEPS_SCHEMA)
    for step in VALID:
        jsonschema.validate(step, STEP_SCHEMA)
    assert validate(VALID[:HARD_MAX_STEPS], max_steps=len(VALID)) == VALID
    assert set(STEP_TYPES) == {
        "navigate", "click", "fill", "press", "hover", "select", "wait_for", "read_page"
    }  # fmt: skip


def test_every_problem_is_listed_with_its_step_index_and_field_and_nothing_else() -> None:
    steps = [
        {"type": "clik", "target": "e1"},  # unknown type
        {"type": "click"},  # missing field
        {"type": "fill", "target": "e1", "value": 5},  # mistyped field
        {"type": "hover", "target": "e1", "force": True},  # unknown key
        {"type": "click", "target": "button"},  # malformed target
        {"type": "wait_for", "text": "a", "time_ms": 10},  # two waits at once
        {"type": "select", "target": "e2", "values": []},  # too few values
        "click e3",  # not an object
        {"type": "navigate", "url": "JavaScript:alert(1)"},  # a script by another name
    ]
    assert problems_of(steps) == [
        (0, "type"),
        (1, "target"),
        (2, "value"),
        (3, "force"),
        (4, "target"),
        (5, "text/gone_text/load/time_ms"),
        (6, "values"),
        (7, ""),
        (8, "url"),
    ]


def test_the_error_message_names_every_step_and_suggests_the_closest_name() -> None:
    with pytest.raises(StepsValidationError) as caught:
        validate([{"type": "clik", "target": "e1"}, {"type": "read_page", "maxchars": 10}])
    error = caught.value
    assert (error.index, error.field) == (0, "type")
    text = str(error)
    assert "2 problem(s)" in text
    assert "nothing was run" in text
    assert "step 0 type" in text
    assert "did you mean 'click'?" in text
    assert "step 1 maxchars" in text
    assert "did you mean 'max_chars'?" in text


@pytest.mark.parametrize(
    ("steps", "kwargs", "field"),
    [
        ([{"type": "read_page"}] * 11, {}, ""),  # more than the default max_steps of 10
        ([{"type": "read_page"}] * 3, {"max_steps": 2}, ""),
        ([{"type": "read_page"}], {"max_steps": 51}, "max_steps"),  # over the hard cap
        ([{"type": "read_page"}], {"max_steps": 0}, "max_steps"),
        ([], {}, ""),
        ({"type": "read_page"}, {}, ""),  # one step, not a list
        ("[]", {}, ""),
        ([{"type": "read_page"}], {"return_mode": "everything"}, "return_mode"),
        ([{"type": "read_page"}], {"per_step_timeout_ms": -1}, "per_step_timeout_ms"),
        ([{"type": "read_page"}], {"per_step_timeout_ms": 1.5}, "per_step_timeout_ms"),
    ],
)
def test_the_list_and_the_options_are_checked_too(steps: Any, kwargs: dict[str, Any], field: str) -> None:
    assert problems_of(steps, **kwargs)[0] == (None, field)


def test_a_boolean_is_not_a_number_and_a_whole_float_is_one() -> None:
    assert problems_of([{"type": "wait_for", "time_ms": True}]) == [(0, "time_ms")]
    assert validate([{"type": "wait_for", "time_ms": 5.0}]) == [{"type": "wait_for", "time_ms": 5}]
    assert problems_of([{"type": "wait_for", "time_ms": 5.5}]) == [(0, "time_ms")]


# Steps built from the schema's own vocabulary, right and wrong: the validator must agree with jsonschema.
_values = st.one_of(
    st.sampled_from(
        [
            *("e3", "f2e10", "node:7", "x", "", "Enter", "load", "networkidle"),
            *("http://a/", "javascript:1", "data:,x", "a/b"),
        ]
    ),
    st.integers(min_value=-2, max_value=700_000),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1, max_value=10),
    st.lists(st.sampled_from(["Blue", "e1"]), max_size=2),
    st.lists(st.integers(0, 3), max_size=2),
)
_keys = st.sampled_from(
    [
        "target",
        "value",
        "key",
        "values",
        "text",
        "gone_text",
        "load",
        "time_ms",
        "timeout_ms",
        "url",
        "interactive_only",
        "delta",
        "max_chars",
        "bogus",
    ]
)
_steps = st.builds(
    lambda kind, fields: {**({"type": kind} if kind != "-" else {}), **fields},
    st.sampled_from([*STEP_TYPES, "script", "-"]),
    st.dictionaries(_keys, _values, max_size=4),
)


@settings(max_examples=600, deadline=None)
@given(_steps)
def test_the_validator_accepts_exactly_what_the_json_schema_accepts(step: dict[str, Any]) -> None:
    schema_ok = jsonschema.Draft202012Validator(STEP_SCHEMA).is_valid(step)
    try:
        validate([step])
        ours = True
    except StepsValidationError:
        ours = False
    # Beyond the schema, only a press's key name is checked (the schema cannot list every key).
    assert ours == (schema_ok and not _unknown_key(step)), step


def _unknown_key(step: dict[str, Any]) -> bool:
    if step.get("type") != "press" or not isinstance(step.get("key"), str):
        return False
    try:
        parse_combo(step["key"])
    except ValueError:
        return True
    return False


def test_a_key_chromium_cannot_press_is_refused_before_anything_runs() -> None:
    # Checked at run time only, ["click e1", "press Entr"] clicked, then failed at its second step.
    with pytest.raises(StepsValidationError, match=r"step 1 key: unknown key 'Entr'") as caught:
        validate([{"type": "click", "target": "e1"}, {"type": "press", "key": "Entr"}])
    assert "step 0" not in str(caught.value)
    validate([{"type": "press", "key": "Control+Shift+ArrowLeft"}, {"type": "press", "key": "+"}])


@settings(deadline=None)
@given(st.lists(st.sampled_from(VALID), min_size=0, max_size=HARD_MAX_STEPS + 3))
def test_the_list_limits_agree_with_the_list_schema(steps: list[dict[str, Any]]) -> None:
    schema_ok = jsonschema.Draft202012Validator(STEPS_SCHEMA).is_valid(steps)
    try:
        validate(steps, max_steps=HARD_MAX_STEPS)
        ours = True
    except StepsValidationError:
        ours = False
    assert ours == schema_ok


def test_each_step_gets_the_least_of_its_limits_and_what_is_left() -> None:
    now = 100.0
    # per-step limit the smallest
    assert step_budget(now=now, deadline=math.inf, per_step_timeout_ms=5000, timeout_ms=None) == 105.0
    # the step's own limit the smallest
    assert step_budget(now=now, deadline=math.inf, per_step_timeout_ms=5000, timeout_ms=200) == 100.2
    # what is left of the caller's deadline the smallest (less the margin kept for the result)
    assert (
        step_budget(now=now, deadline=101.0, per_step_timeout_ms=5000, timeout_ms=2000)
        == 101.0 - RESULT_MARGIN_S
    )
    # nothing set: no limit
    assert step_budget(now=now, deadline=math.inf, per_step_timeout_ms=None, timeout_ms=None) == math.inf
    # the deadline already passed: the budget is in the past
    assert step_budget(now=now, deadline=99.0, per_step_timeout_ms=5000, timeout_ms=None) <= now


def test_to_json_has_the_documented_stable_shape() -> None:
    result = StepsResult(
        ok=False,
        failed_step=1,
        steps=[
            StepOutcome(index=0, type="click", ok=True, duration_ms=1.23456),
            StepOutcome(
                index=1,
                type="click",
                ok=False,
                duration_ms=2.0,
                error={"kind": "StaleRefError", "message": "ref e9 is stale"},
            ),
        ],
        url="http://127.0.0.1/",
        title="Shop",
        return_mode="final",
        pages=[{"step": None, "text": '- button "Go" [ref=e1]\n'}],
    )
    data = result.to_json()
    assert list(data) == [
        "format",
        "ok",
        "failed_step",
        "url",
        "title",
        "return_mode",
        "steps",
        "pages",
        "delta",
    ]
    assert data["format"] == RESULT_FORMAT
    assert data["steps"][0] == {"index": 0, "type": "click", "ok": True, "duration_ms": 1.235, "error": None}
    assert data["steps"][1]["error"] == {"kind": "StaleRefError", "message": "ref e9 is stale"}
    assert json.loads(result.dumps()) == data


@pytest.mark.parametrize(
    "url",
    [
        *("java\tscript:1", "java\nscript:1", "\x00javascript:1", " javascript:1"),
        *("chrome://hang", "Chrome://quit", "view-source:http://a/", "blob:http://a/1", "localhost:8000/"),
    ],
)
def test_navigate_refuses_what_is_not_a_page(url: str) -> None:
    # Chromium drops tabs and newlines, and controls at the ends, before it reads a scheme; the pattern
    # wants a page's scheme from the first character on, so none of these passes (chrome://hang stopped the
    # tab for good, chrome://quit stops the browser).
    with pytest.raises(StepsValidationError, match="step 0 url"):
        validate([{"type": "navigate", "url": url}])


@pytest.mark.parametrize("value", ["no", 0, 1, None])
def test_fail_fast_is_true_or_false(value: Any) -> None:
    # "no" read as true: a steps file asking not to fail fast got fail_fast=True.
    with pytest.raises(StepsValidationError, match=r"fail_fast: is .*; give true or false"):
        validate([{"type": "read_page"}], fail_fast=value)


def test_run_steps_checks_fail_fast_before_touching_the_page() -> None:
    import trio

    from engine._steps import run_steps

    async def main() -> None:
        with pytest.raises(StepsValidationError, match="fail_fast"):
            await run_steps(object(), [{"type": "read_page"}], fail_fast="no")  # type: ignore[arg-type]

    trio.run(main)


@pytest.mark.parametrize("target", ["e1\n", "node:7\n", "f1e2\n"])
def test_a_target_with_a_trailing_newline_is_refused(target: str) -> None:
    # JSON Schema's "$" ends the text; Python's matched before a final newline, and the steps before ran.
    with pytest.raises(StepsValidationError, match="step 1 target"):
        validate([{"type": "click", "target": "e1"}, {"type": "click", "target": target}])
