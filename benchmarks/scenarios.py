"""The scenarios of the side-by-side suite: what each one measures and how big it is.

A scenario is data only. Every client implements every scenario it supports in its own event loop
(see ``benchmarks.clients``); the harness only decides the order, the sizes and the repetitions.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass


class Kind(enum.Enum):
    """How a scenario's runs are shaped, which decides what a sample means."""

    BROWSER_ROUNDTRIP = "browser_roundtrip"  # sequential commands, no session; sample = one command
    PAGE_ROUNDTRIP = "page_roundtrip"  # sequential commands on a page session; sample = one command
    BATCH = "batch"  # BATCH_SIZE commands in flight; sample = one batch
    DECODE = "decode"  # one large response; sample = one full call (or one decode)
    EVENTS = "events"  # a console flood; sample = time until the last event arrived
    FANOUT = "fanout"  # many tabs, sequential commands each, all tabs at once; sample = one command
    COLDSTART = "coldstart"  # a fresh browser launched (or connected to) until its first reply; sample = one
    NAVIGATE = "navigate"  # Page.navigate until the load event, sequentially; sample = one navigation
    ATTACH = "attach"  # create targets and attach a flattened session to each, at once; sample = all attached
    FLOOD = "flood"  # sequential commands on a page flooding console events; sample = one command
    PLACEHOLDER = "placeholder"  # registered, not runnable yet


BATCH_SIZE = 64
EVALUATE = "1+1"
NEEDS_UPPER_LAYERS = "needs the upper layers"
SMALL_PAGE = "/small.html"
"""The small page ``navigate.load`` loads (served by ``benchmarks.pages``)."""
FLOOD_PER_TICK = 40
FLOOD_TICK_MS = 4
FLOOD_MAX_MS = 3_000
"""``roundtrip.flood``'s emitter: 40 console.log every 4 ms (Chromium clamps nested timers to 4 ms), about
10,000 events/s, in short bursts so a command waits at most one burst for the renderer. It stops by itself
after 3 s: a client that falls behind (Playwright forwards every event to Python) then drains its backlog
instead of running into the call timeout; ``events_per_s`` in the results shows the rate it really got."""


@dataclass(frozen=True)
class Scenario:
    """One row group of the results table.

    Attributes:
        name: the key used in the JSON output and on the command line.
        kind: the shape of a run.
        summary: one line for the README and the table.
        size: operations per run in a full run (commands, batches, events, or commands per tab).
        quick_size: the same in --quick mode.
        reps: measured repetitions per client in a full run (each client once per repetition, interleaved).
        quick_reps: the same in --quick mode.
        pages: page sessions the scenario needs per client.
        big_page: whether those pages load the generated 5,000-element document.
        method: the CDP method a DECODE scenario calls.
        params: its parameters.
        skip_reason: set for placeholders.
    """

    name: str
    kind: Kind
    summary: str
    size: int = 0
    quick_size: int = 0
    reps: int = 0
    quick_reps: int = 0
    pages: int = 0
    big_page: bool = False
    method: str = ""
    params: tuple[tuple[str, object], ...] = ()
    skip_reason: str | None = None

    def sized(self, quick: bool) -> tuple[int, int]:
        """(operations per run, measured repetitions) for the chosen mode."""
        return (self.quick_size, self.quick_reps) if quick else (self.size, self.reps)

    def warmup_size(self, quick: bool) -> int:
        """Operations in the unmeasured warm-up run that precedes the repetitions."""
        size = self.quick_size if quick else self.size
        if self.kind in (Kind.DECODE, Kind.COLDSTART, Kind.ATTACH):
            return 1
        if self.kind in (Kind.EVENTS, Kind.FANOUT):
            return max(1, size // 10)
        return max(2, size // 5)

    @property
    def params_dict(self) -> dict[str, object]:
        return dict(self.params)


REPS_CHEAP = 30
"""Reps of the round-trip and throughput scenarios: a rep of them lasts 30-400 ms per client, and on 2 cores
a rep's median swings with where the scheduler put the client and its browser (the same client's reps
differ by up to 2x), so 10 reps left intervals 20-50% wide around ratios near 1."""

SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "roundtrip.getVersion",
        Kind.BROWSER_ROUNDTRIP,
        "sequential Browser.getVersion on the browser-level connection (no session)",
        size=200,
        quick_size=30,
        reps=REPS_CHEAP,
        quick_reps=3,
    ),
    Scenario(
        "roundtrip.evaluate",
        Kind.PAGE_ROUNDTRIP,
        'sequential Runtime.evaluate("1+1") on a flattened page session',
        size=200,
        quick_size=30,
        reps=REPS_CHEAP,
        quick_reps=3,
        pages=1,
    ),
    Scenario(
        "throughput.1session",
        Kind.BATCH,
        f"{BATCH_SIZE} Runtime.evaluate in flight on one session; per-batch latency and ops/s",
        size=20,
        quick_size=4,
        reps=REPS_CHEAP,
        quick_reps=3,
        pages=1,
    ),
    Scenario(
        "throughput.8sessions",
        Kind.BATCH,
        f"{BATCH_SIZE} Runtime.evaluate in flight over 8 sessions (8 each); per-batch latency and ops/s",
        size=20,
        quick_size=4,
        reps=REPS_CHEAP,
        quick_reps=3,
        pages=8,
    ),
    Scenario(
        "decode.axtree",
        Kind.DECODE,
        "Accessibility.getFullAXTree of a 5,000-element page: full call, json.loads, typed decode",
        size=1,
        quick_size=1,
        reps=10,
        quick_reps=3,
        pages=1,
        big_page=True,
        method="Accessibility.getFullAXTree",
    ),
    Scenario(
        "decode.document",
        Kind.DECODE,
        "DOM.getDocument(depth=-1) of a 5,000-element page: full call, json.loads, typed decode",
        size=1,
        quick_size=1,
        reps=10,
        quick_reps=3,
        pages=1,
        big_page=True,
        method="DOM.getDocument",
        params=(("depth", -1),),
    ),
    Scenario(
        "screenshot",
        Kind.DECODE,
        "Page.captureScreenshot (png) of a 1280x4000 clip of the 5,000-element page: a large binary reply",
        size=1,
        quick_size=1,
        reps=10,
        quick_reps=3,
        pages=1,
        big_page=True,
        method="Page.captureScreenshot",
        params=(("format", "png"), ("clip", {"x": 0, "y": 0, "width": 1280, "height": 4000, "scale": 1})),
    ),
    Scenario(
        "evaluate.10MB",
        Kind.DECODE,
        "Runtime.evaluate returning a 10 MiB string by value: one large text reply",
        size=1,
        quick_size=1,
        reps=10,
        quick_reps=3,
        pages=1,
        method="Runtime.evaluate",
        params=(("expression", "'x'.repeat(10 * 1024 * 1024)"), ("returnByValue", True)),
    ),
    Scenario(
        "events.console",
        Kind.EVENTS,
        "Runtime.consoleAPICalled flood (the page logs in a loop) delivered to a subscriber; events/s",
        size=10_000,
        quick_size=1_000,
        reps=10,
        quick_reps=3,
        pages=1,
    ),
    Scenario(
        "fanout.20tabs",
        Kind.FANOUT,
        "20 tabs, sequential Runtime.evaluate on each, all tabs concurrently; per-command latency",
        size=50,
        quick_size=10,
        reps=10,
        quick_reps=3,
        pages=20,
    ),
    Scenario(
        "coldstart",
        Kind.COLDSTART,
        "a fresh browser each time: launch (pipe clients) or connect (websocket clients) to the first"
        " Browser.getVersion reply",
        size=1,
        quick_size=1,
        reps=10,
        quick_reps=2,
    ),
    Scenario(
        "navigate.load",
        Kind.NAVIGATE,
        "Page.navigate to a small 127.0.0.1 page until its Page.loadEventFired, sequentially",
        size=20,
        quick_size=3,
        reps=10,
        quick_reps=2,
        pages=1,
    ),
    Scenario(
        "roundtrip.flood",
        Kind.FLOOD,
        'sequential Runtime.evaluate("1+1") on a page logging ~10,000 console events/s to the subscribed'
        " client (Runtime.enable)",
        size=200,
        quick_size=20,
        reps=10,
        quick_reps=2,
        pages=1,
    ),
    # Last: 50 renderers per client leave the run queue long (load ~80 on 2 cores) after they close.
    Scenario(
        "attach.50",
        Kind.ATTACH,
        "50 Target.createTarget(about:blank) + Target.attachToTarget(flatten) at once, until all are"
        " attached (closed again untimed)",
        size=50,
        quick_size=5,
        reps=10,
        quick_reps=2,
    ),
)

BY_NAME: dict[str, Scenario] = {s.name: s for s in SCENARIOS}


def console_flood_expression(count: int) -> str:
    """The script a page evaluates to emit ``count`` Runtime.consoleAPICalled events."""
    return f"for (let i = 0; i < {count}; i++) console.log(i); {count}"


def flood_start_expression(max_ms: int = FLOOD_MAX_MS) -> str:
    """Start ``roundtrip.flood``'s emitter in the page (stopped by :func:`flood_stop_expression`).

    Its safety timer (``max_ms``) clears its own interval, not whichever one ``__benchFlood`` names when it
    fires: the timer of a rep that was stopped must not stop the next rep's emitter on the same page.
    """
    return (
        "(h => { globalThis.__benchFlood = h;"
        f" setTimeout(() => clearInterval(h), {max_ms}); return 1; }})(setInterval(() => {{"
        f" for (let i = 0; i < {FLOOD_PER_TICK}; i++) console.log(i); }}, {FLOOD_TICK_MS}))"
    )


def flood_stop_expression() -> str:
    """Stop the emitter. Every event it sent comes before this command's reply on the session."""
    return "clearInterval(globalThis.__benchFlood); 1"


def small_page_url(page_server: str) -> str:
    """The small page's URL on the suite's page server (``Env.page_server``)."""
    return page_server.rstrip("/") + SMALL_PAGE


def ready_expression(url: str) -> str:
    """True once the page has committed ``url`` and loaded, for polling after navigation.

    Checking the URL matters: the initial about:blank of a new target is already "complete".
    """
    return f"location.href === {json.dumps(url)} && document.readyState === 'complete'"
