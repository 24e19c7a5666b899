"""The steps macro's public half: the step schema, its validator, the budget rule and the result.

``page.run_steps(steps)`` runs a short list of steps on one tab in one call (``engine/_steps.py``); this
module says what a step may be and what comes back, with no I/O, so tools can check a plan before sending it.

A step is a JSON object whose ``type`` is one of a whitelist (nothing else runs; arbitrary JavaScript is not
a step type)::

    {"type": "navigate", "url": "http://127.0.0.1:8000/"}
    {"type": "click", "target": "e3"}                       # a ref (e3, f1e3) or node:<backendNodeId>
    {"type": "fill", "target": "e5", "value": "Ada"}
    {"type": "press", "key": "Enter", "target": "e5"}       # target optional: the focused element
    {"type": "hover", "target": "e3"}
    {"type": "select", "target": "e6", "values": ["Blue"]}
    {"type": "wait_for", "text": "Saved"}                   # exactly one of text, gone_text, load, time_ms
    {"type": "read_page", "interactive_only": true, "delta": true, "max_chars": 4000}

Every step may carry ``timeout_ms``. :data:`STEP_SCHEMA` is the JSON Schema of one step and
:data:`STEPS_SCHEMA` of the list; :func:`validate` is driven by the schema (it reads the constraints from it)
and the tests check that it accepts exactly what a JSON Schema validator accepts.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import attrs

from engine._errors import StepsValidationError
from engine._keys import parse_combo

__all__ = [
    "HARD_MAX_STEPS",
    "RESULT_FORMAT",
    "STEPS_SCHEMA",
    "STEP_SCHEMA",
    "STEP_TYPES",
    "Problem",
    "ReturnMode",
    "StepOutcome",
    "StepsResult",
    "step_budget",
    "validate",
]

HARD_MAX_STEPS = 50
"""No call runs more steps than this, whatever ``max_steps`` says."""

DEFAULT_MAX_STEPS = 10

DEFAULT_PER_STEP_TIMEOUT_MS = 5000

ReturnMode = Literal["final", "all", "delta"]
RETURN_MODES: tuple[ReturnMode, ...] = ("final", "all", "delta")

TARGET_PATTERN = r"^(?:(?:f[0-9]+)?e[0-9]+|node:[0-9]+)$"
"""A ref from a snapshot (``e3``, ``f1e3`` in a child frame) or ``node:<backendNodeId>``."""

_TARGET: dict[str, Any] = {
    "type": "string",
    "pattern": TARGET_PATTERN,
    "description": "a ref from page.snapshot() (e3, or f1e3 in a child frame) or node:<backendNodeId>",
}
_TIMEOUT: dict[str, Any] = {
    "type": "integer",
    "minimum": 1,
    "maximum": 600_000,
    "description": "this step's own limit in milliseconds (it also gets no more than what is left)",
}
_TEXT: dict[str, Any] = {"type": "string", "minLength": 1}


def _variant(name: str, doc: str, required: Sequence[str], **properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "title": name,
        "description": doc,
        "type": "object",
        "properties": {"type": {"const": name}, **properties, "timeout_ms": _TIMEOUT},
        "required": ["type", *required],
        "additionalProperties": False,
    }


_WAIT_FOR = _variant(
    "wait_for",
    "wait until a text appears (text), disappears (gone_text), a load state is reached, or a time passes",
    (),
    text={**_TEXT, "description": "wait until this text is shown in any frame"},
    gone_text={**_TEXT, "description": "wait until this text is no longer shown"},
    load={"enum": ["load", "domcontentloaded", "networkidle"], "description": "a load state"},
    time_ms={"type": "integer", "minimum": 0, "maximum": 600_000, "description": "a fixed pause"},
)
_WAIT_FOR["oneOf"] = [{"required": [key]} for key in ("text", "gone_text", "load", "time_ms")]

PAGE_SCHEMES = ("http", "https", "file", "data", "about")
"""The URL schemes a navigate step (and WebArena's goto) may load: pages. Not javascript: (it runs its text
as a script, which no step may do), nor chrome: (chrome://hang and chrome://crash stop the tab; chrome://quit
the browser) or any other of the browser's own."""


def _ci(word: str) -> str:
    return "".join(f"[{c.lower()}{c.upper()}]" for c in word)


STEP_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://cdp-engine.invalid/schemas/step.json",
    "title": "cdp-engine step",
    "description": "One step of page.run_steps(); the type names one of a whitelist of actions.",
    "type": "object",
    "required": ["type"],
    "oneOf": [
        _variant(
            "navigate",
            "load a URL in the tab and wait for its document",
            ["url"],
            url={
                **_TEXT,
                "pattern": "^(" + "|".join(_ci(scheme) for scheme in PAGE_SCHEMES) + "):",
                "description": "an absolute URL of a page (http:, https:, file:, data:, about:; not "
                "javascript:, chrome: or another of the browser's own)",
            },
        ),
        _variant("click", "click an element (actionability checks first)", ["target"], target=_TARGET),
        _variant(
            "fill",
            "clear a text field and insert a value",
            ["target", "value"],
            target=_TARGET,
            value={"type": "string", "description": "the new value"},
        ),
        _variant(
            "press",
            "press a key or combination (Enter, Control+a), on an element or the focused one",
            ["key"],
            key={**_TEXT, "description": "a key name or combination, e.g. Enter or Control+Shift+ArrowLeft"},
            target=_TARGET,
        ),
        _variant("hover", "move the mouse over an element", ["target"], target=_TARGET),
        _variant(
            "select",
            "choose options of a <select> by value or label",
            ["target", "values"],
            target=_TARGET,
            values={"type": "array", "items": {"type": "string"}, "minItems": 1},
        ),
        _WAIT_FOR,
        _variant(
            "read_page",
            "take a snapshot of the page (what an agent reads)",
            (),
            interactive_only={"type": "boolean", "description": "only the controls"},
            delta={
                "type": "boolean",
                "description": "only what changed since the page's last uncut read with these options",
            },
            max_chars={"type": "integer", "minimum": 1, "description": "cut the text at a line boundary"},
        ),
    ],
}
"""The JSON Schema (draft 2020-12) of one step."""

STEPS_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://cdp-engine.invalid/schemas/steps.json",
    "title": "cdp-engine steps",
    "type": "array",
    "items": STEP_SCHEMA,
    "minItems": 1,
    "maxItems": HARD_MAX_STEPS,
}
"""The JSON Schema of a list of steps (``max_steps`` may lower its ``maxItems``)."""

_VARIANTS: dict[str, dict[str, Any]] = {v["title"]: v for v in STEP_SCHEMA["oneOf"]}
STEP_TYPES: tuple[str, ...] = tuple(_VARIANTS)
"""The step types, in the schema's order."""


@attrs.frozen(kw_only=True)
class Problem:
    """One thing wrong with a steps list: the step (None for the list itself), the field, and what."""

    index: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = "steps" if self.index is None else f"step {self.index}"
        if self.field:
            where += f" {self.field}"
        return f"{where}: {self.message}"


_JSON_TYPES = {
    "string": "a string",
    "integer": "a whole number",
    "boolean": "true or false",
    "array": "a list",
    "object": "an object",
}


def _json_name(value: Any) -> str:
    """What a JSON reader would call ``value``'s type."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "a whole number"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Sequence):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def _has_type(value: Any, kind: str) -> bool:
    # As JSON Schema reads JSON: a boolean is not an integer, 5.0 is one.
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        if isinstance(value, bool):
            return False
        return isinstance(value, int) or (
            isinstance(value, float) and math.isfinite(value) and value.is_integer()
        )
    if kind == "array":
        return isinstance(value, list | tuple)
    if kind == "object":
        return isinstance(value, Mapping)
    raise AssertionError(f"STEP_SCHEMA uses type {kind!r}, which validate() does not read")


def _check_value(value: Any, schema: Mapping[str, Any], field: str, out: list[tuple[str, str]]) -> None:
    """Check ``value`` against the keywords of ``schema`` that STEP_SCHEMA uses; append (field, message)."""
    if "const" in schema and value != schema["const"]:
        out.append((field, f"must be {json.dumps(schema['const'])}"))
        return
    if "enum" in schema and value not in schema["enum"]:
        choices = ", ".join(json.dumps(c) for c in schema["enum"])
        out.append((field, f"is {_short(value)}; expected one of {choices}"))
        return
    kind = schema.get("type")
    if kind is not None and not _has_type(value, kind):
        out.append((field, f"must be {_JSON_TYPES[kind]}, not {_json_name(value)} ({_short(value)})"))
        return
    # JSON Schema's patterns are ECMA-262's, where "$" is only the end of the text (Python's also matches
    # before a final newline: "e1\n" passed, and the steps before it ran).
    if "pattern" in schema and not re.search(re.sub(r"\$$", r"\\Z", schema["pattern"]), value):
        expected = schema.get("description", f"text matching {schema['pattern']}")
        out.append((field, f"is {_short(value)}; expected {expected}"))
    if "minLength" in schema and len(value) < schema["minLength"]:
        out.append((field, "must not be empty"))
    if "minimum" in schema and value < schema["minimum"]:
        out.append((field, f"is {_short(value)}; it must be at least {schema['minimum']}"))
    if "maximum" in schema and value > schema["maximum"]:
        out.append((field, f"is {_short(value)}; it must be at most {schema['maximum']}"))
    if "minItems" in schema and len(value) < schema["minItems"]:
        out.append((field, f"must hold at least {schema['minItems']} item(s)"))
    if "items" in schema and kind == "array":
        for i, item in enumerate(value):
            _check_value(item, schema["items"], f"{field}[{i}]", out)


def _short(value: Any) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _closest(word: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _check_step(step: Any) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if not isinstance(step, Mapping):
        return [("", f"must be an object with a type, not {_json_name(step)} ({_short(step)})")]
    kind = step.get("type")
    if "type" not in step:
        return [("type", f"is missing; expected one of {', '.join(STEP_TYPES)}")]
    if not isinstance(kind, str) or kind not in _VARIANTS:
        hint = _closest(kind, STEP_TYPES) if isinstance(kind, str) else ""
        return [("type", f"{_short(kind)} is not a step type{hint}; expected one of {', '.join(STEP_TYPES)}")]
    schema = _VARIANTS[kind]
    properties: Mapping[str, Any] = schema["properties"]
    for key in step:
        if key not in properties:
            known = [k for k in properties if k != "type"]
            out.append(
                (
                    str(key),
                    f"is not a field of {kind}{_closest(str(key), known)}; it takes {', '.join(known)}",
                )
            )
    for key in schema["required"]:
        if key not in step:
            out.append((key, f"is missing ({kind} needs {', '.join(schema['required'][1:])})"))
    for key, value in step.items():
        if key in properties and key != "type":
            _check_value(value, properties[key], key, out)
    if kind == "press" and isinstance(step.get("key"), str) and step["key"]:
        try:  # a key Chromium cannot press would fail halfway through the call, after earlier steps ran
            parse_combo(step["key"])
        except ValueError as exc:
            out.append(("key", str(exc)))
    if "oneOf" in schema:
        keys = [group["required"][0] for group in schema["oneOf"]]
        given = [k for k in keys if k in step]
        if len(given) != 1:
            what = "none" if not given else " and ".join(given)
            out.append(("/".join(keys), f"give exactly one of {', '.join(keys)} ({what} given)"))
    return out


def validate(
    steps: Any,
    *,
    max_steps: int = DEFAULT_MAX_STEPS,
    return_mode: str = "final",
    per_step_timeout_ms: int | None = DEFAULT_PER_STEP_TIMEOUT_MS,
    fail_fast: bool = True,
) -> list[dict[str, Any]]:
    """Check a whole steps call (the list against :data:`STEP_SCHEMA`, the limits, the options) before
    anything runs.

    Returns:
        The steps as plain dicts (whole-number floats such as 5.0 turned into ints).

    Raises:
        StepsValidationError: one error listing every problem (``problems``), each with its step index
            and field; ``index`` and ``field`` name the first. Nothing was run.
    """
    problems: list[Problem] = []
    if type(max_steps) is not int or not 1 <= max_steps <= HARD_MAX_STEPS:
        problems.append(
            Problem(
                index=None,
                field="max_steps",
                message=f"is {max_steps!r}; give a whole number from 1 to {HARD_MAX_STEPS}",
            )
        )
        max_steps = HARD_MAX_STEPS
    if not isinstance(fail_fast, bool):  # "no" or 0 from a JSON file would read as true or false
        problems.append(
            Problem(index=None, field="fail_fast", message=f"is {_short(fail_fast)}; give true or false")
        )
    if return_mode not in RETURN_MODES:
        problems.append(
            Problem(
                index=None,
                field="return_mode",
                message=f"is {return_mode!r}; expected one of {', '.join(RETURN_MODES)}",
            )
        )
    if per_step_timeout_ms is not None and (
        type(per_step_timeout_ms) is not int or not 1 <= per_step_timeout_ms <= 600_000
    ):
        problems.append(
            Problem(
                index=None,
                field="per_step_timeout_ms",
                message=f"is {per_step_timeout_ms!r}; give whole milliseconds from 1 to 600000, or None",
            )
        )
    if isinstance(steps, str | bytes) or not isinstance(steps, Sequence):
        problems.append(
            Problem(index=None, field="", message=f"must be a list of step objects, not {_json_name(steps)}")
        )
        steps = []
    elif not steps:
        problems.append(Problem(index=None, field="", message="is empty; give at least one step"))
    elif len(steps) > max_steps:
        problems.append(
            Problem(
                index=None,
                field="",
                message=f"has {len(steps)} steps, more than max_steps={max_steps} "
                f"(the hard cap is {HARD_MAX_STEPS}); split the work into several calls",
            )
        )
    for index, step in enumerate(steps):
        for field, message in _check_step(step):
            problems.append(Problem(index=index, field=field, message=message))
    if problems:
        lines = "\n".join(f"  - {p}" for p in problems)
        raise StepsValidationError(
            f"{len(problems)} problem(s) in the steps; nothing was run:\n{lines}",
            index=problems[0].index,
            field=problems[0].field,
            problems=problems,
        )
    return [_normalise(step) for step in steps]


def _normalise(step: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(step)
    for key, value in out.items():
        if isinstance(value, float):  # only whole numbers pass validation
            out[key] = int(value)
        elif isinstance(value, tuple):
            out[key] = list(value)
    return out


# --- the budget -----------------------------------------------------------------------------------------

RESULT_MARGIN_S = 0.05
"""Kept back from the caller's deadline so the result is built and returned before the caller's scope fires
(building it is pure Python: well under 1 ms for 50 steps)."""


def step_budget(
    *, now: float, deadline: float, per_step_timeout_ms: int | None, timeout_ms: int | None
) -> float:
    """The trio deadline of one step: ``min(per_step_timeout_ms, its own timeout_ms, what is left)``.

    ``deadline`` is the caller's (``trio.current_effective_deadline()``, ``inf`` when none); what is left
    excludes :data:`RESULT_MARGIN_S`. A result at or before ``now`` means no time is left for the step.
    """
    limits = [deadline - RESULT_MARGIN_S if deadline != math.inf else math.inf]
    for ms in (per_step_timeout_ms, timeout_ms):
        if ms is not None:
            limits.append(now + ms / 1000)
    return min(limits)


# --- the result -----------------------------------------------------------------------------------------

RESULT_FORMAT = "cdp-engine.steps-result/1"
"""The ``format`` field of :meth:`StepsResult.to_json`; it changes only when a field changes meaning."""


@attrs.frozen(kw_only=True)
class StepOutcome:
    """How one step went. ``error`` is None on success, else ``{"kind": ..., "message": ...}``.

    ``kind`` is the engine's exception class name (``StaleRefError``, ``ActionError``, ``NavigationError``,
    ...), ``TimeoutError`` when the step's budget ran out, or ``Skipped`` for a step that was not run
    (after a failure under ``fail_fast``, after a failed navigation, or with no time left).
    """

    index: int
    type: str
    ok: bool
    duration_ms: float
    error: dict[str, str] | None = None
    output: str | None = None  # the text of a read_page step

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "type": self.type,
            "ok": self.ok,
            "duration_ms": round(self.duration_ms, 3),
            "error": self.error,
        }


@attrs.frozen(kw_only=True)
class StepsResult:
    """What ``page.run_steps`` did: per step outcomes, the final url and title, and the page output.

    ``pages`` holds the page text by ``return_mode``: ``final`` one entry (the last read_page, or a
    snapshot taken at the end when no step read the page), ``all`` one per read_page step. ``delta`` holds
    the ref-keyed changes since the page's last full snapshot before the first step (``return_mode="delta"``).
    """

    ok: bool
    failed_step: int | None
    steps: list[StepOutcome]
    url: str
    title: str
    return_mode: ReturnMode
    pages: list[dict[str, Any]] = attrs.field(factory=list)
    delta: dict[str, dict[str, str]] | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict; its shape is stable (``format`` names the version)::

            {"format": "cdp-engine.steps-result/1", "ok": bool, "failed_step": int | null,
             "url": str, "title": str, "return_mode": "final" | "all" | "delta",
             "steps": [{"index": int, "type": str, "ok": bool, "duration_ms": float,
                        "error": {"kind": str, "message": str} | null}, ...],
             "pages": [{"step": int | null, "text": str}, ...],     # final: 0 or 1 entry; delta: []
             "delta": {"added": {ref: line}, "changed": {ref: line}, "removed": {ref: old line}} | null}

        ``pages[i].step`` is the read_page step's index, or null for the snapshot taken at the end.
        """
        return {
            "format": RESULT_FORMAT,
            "ok": self.ok,
            "failed_step": self.failed_step,
            "url": self.url,
            "title": self.title,
            "return_mode": self.return_mode,
            "steps": [step.to_json() for step in self.steps],
            "pages": list(self.pages),
            "delta": self.delta,
        }

    def dumps(self) -> str:
        """``to_json()`` as compact JSON text (what the CLI prints and what a tool would send on)."""
        return json.dumps(self.to_json(), ensure_ascii=False, separators=(",", ":"))
