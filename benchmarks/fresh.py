"""``python -m benchmarks.fresh``: the engine against the trio floors, each client on new browsers each rep.

The main suite starts one browser per client for the whole run. A browser that is slower for reasons of its
own (where its threads landed, what its start-up left running) then slows its client in every rep, and the
bootstrap over the reps cannot see it: the interval holds the reps' spread, not the browsers'. Here each rep
launches a new browser for every client, so the interval holds the browsers' spread too. A second copy of
each floor (``floor.trio.ws#2``: the same client on a browser of its own) is the control: its ratio to the
floor is what the method gets wrong by itself, and its interval should hold 1.00.

With ``--share`` the websocket clients of a rep take turns on one new browser instead, which takes the
browsers' spread out of a ratio between them (the pipe clients and the Node peers still launch their own).
In a 20-rep run that did not narrow the intervals: most of the spread is the machine's, rep to rep.

The scenarios and clients are the main suite's own code; only the browsers' lifetime differs. The peers are
not run by default: a Node peer launches its browser itself, so a new browser is a new Node process whose
JIT has seen only the warm-up, a handicap the main run does not give it (the likely reason why the engine's
getVersion took 0.75-0.82x chrome-remote-interface's time in two runs here, and 1.08x, no difference, in
the main run).

    python -m benchmarks.fresh [--reps 20] [--scenarios a,b] [--clients x,y,x#2] [--share] [--seed N]
                               [--quick] [--json PATH] [--readme README.md] [--force]
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import importlib
import json
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import chromium, context, report
from benchmarks.clients import REGISTRY, Client, Env, load
from benchmarks.harness import (
    SETTLE_S,
    Browsers,
    admitted,
    describe,
    log,
    measure_once,
    own_env,
    probe_version,
    remove_leftovers,
    warm_up,
)
from benchmarks.pages import PageServer
from benchmarks.report import Collected
from benchmarks.scenarios import BY_NAME, Scenario

RESULTS = Path(__file__).resolve().parent / "results" / "fresh.json"
LAUNCHED_BY_CLIENT = "launched by the client"
COPY = "#"
"""``name#2`` is another instance of the client ``name``, with a browser of its own (the control)."""

DEFAULT_CLIENTS = (
    "engine.ws",
    "floor.trio.ws",
    "floor.trio.ws#2",
    "engine.pipe",
    "floor.trio.pipe",
    "floor.trio.pipe#2",
)
DEFAULT_SCENARIOS = ("roundtrip.getVersion", "roundtrip.evaluate", "throughput.1session")

COLUMNS = (
    ("engine.ws", "floor.trio.ws"),
    ("floor.trio.ws#2", "floor.trio.ws"),
    ("engine.pipe", "floor.trio.pipe"),
    ("floor.trio.pipe#2", "floor.trio.pipe"),
)
"""The README's ratios: the engine over its trio floor, and each floor's control."""

SHARED = " (the websocket clients of a rep on one, taking turns)"

README_BEGIN = "<!-- fresh-browsers:begin (generated from benchmarks/results/fresh.json; do not edit) -->"
README_END = "<!-- fresh-browsers:end -->"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.fresh",
        description="The engine against the trio floors, every client on a new browser every rep.",
    )
    parser.add_argument("--reps", type=int, default=20, help="reps, each on new browsers (default 20)")
    parser.add_argument("--scenarios", type=_csv, default=list(DEFAULT_SCENARIOS), help="a,b,...")
    parser.add_argument("--clients", type=_csv, default=list(DEFAULT_CLIENTS), help="x,y,x#2,...")
    parser.add_argument(
        "--share",
        action="store_true",
        help="the websocket clients of a rep share one new browser (the pipe clients and Node peers cannot)",
    )
    parser.add_argument("--quick", action="store_true", help="the scenarios' smoke sizes")
    parser.add_argument("--seed", type=int, default=None, help="seed of the shuffled order (default: random)")
    parser.add_argument("--json", type=Path, default=RESULTS, help="results JSON")
    parser.add_argument("--readme", type=Path, default=None, help="also rewrite this README's block")
    parser.add_argument("--force", action="store_true", help="run even when the load is above the core count")
    args = parser.parse_args(argv)
    for name in args.scenarios:
        if name not in BY_NAME:
            parser.error(f"unknown scenario {name!r}; known: {', '.join(BY_NAME)}")
    for label in args.clients:
        if client_name(label) not in REGISTRY:
            parser.error(f"unknown client {label!r}; known: {', '.join(REGISTRY)} (a copy: name#2)")
    if len(set(args.clients)) != len(args.clients):
        parser.error("a client is named twice; name a second instance name#2")
    if args.reps < 2:
        parser.error("--reps must be at least 2 (an interval needs reps)")
    return args


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def client_name(label: str) -> str:
    """The registry name behind a label (``floor.trio.ws#2`` -> ``floor.trio.ws``)."""
    return label.partition(COPY)[0]


Collecting = dict[str, dict[str, Collected]]
"""scenario -> label -> what that label collected over the reps."""


def run_rep(
    labels: list[str],
    env: Env,
    scenarios: list[Scenario],
    *,
    quick: bool,
    rng: random.Random,
    got: Collecting,
    failed: dict[str, str],
    endpoints: dict[str, str] | None = None,
) -> None:
    """One rep: start every client on a new browser, run each scenario once per client, stop them all.

    A client that fails to start or to run is recorded in ``failed`` and left out of the later reps.
    ``endpoints`` gets each client's browser: its websocket URL, or LAUNCHED_BY_CLIENT.
    """
    order = list(labels)
    rng.shuffle(order)
    browsers: Browsers = []
    clients: dict[str, Client] = {}
    try:
        if env.shared:
            browser = chromium.launch_websocket(env.chromium, env.chromium_args)
            browsers.append(browser)
            env = dataclasses.replace(env, ws_url=browser.ws_url, http_url=browser.http_url)
        for label in order:
            client: Client | None = None
            try:
                client = load(client_name(label))
                given = own_env(client, env, browsers, {})
                if endpoints is not None:
                    endpoints[label] = given.ws_url or LAUNCHED_BY_CLIENT
                client.start(given)
                if not env.shared:
                    client.own_browser = True
            except Exception as exc:  # SkipClient, ImportError and whatever a start raised
                failed[label] = f"failed to start ({describe(exc)})"
                log(f"    {label}: {failed[label]}")
                if client is not None:
                    _quietly(client.stop)
                continue
            clients[label] = client
        time.sleep(SETTLE_S)  # the new browsers finish their start-up work first
        for scenario in scenarios:
            context.settle()
            size, _ = scenario.sized(quick)
            ready: list[str] = []
            for label in order:
                if label not in clients or label in failed:  # it failed earlier in this rep
                    continue
                try:
                    clients[label].setup(scenario)
                    warm_up(clients[label], scenario, quick, got[scenario.name][label])
                except Exception as exc:
                    failed[label] = f"failed to set up {scenario.name} ({describe(exc)})"
                    log(f"    {label}: {failed[label]}")
                    _quietly(clients[label].teardown, scenario)
                    continue
                ready.append(label)
            rng.shuffle(ready)
            gc.collect()
            gc.freeze()
            try:
                for label in ready:
                    mine = got[scenario.name][label]
                    mine.own_browser = clients[label].own_browser
                    if not measure_once(clients[label], scenario, size, mine, f"rep {len(mine.reps_us) + 1}"):
                        failed[label] = mine.skipped or "failed"
            finally:
                gc.unfreeze()
            for label in ready:
                _quietly(clients[label].teardown, scenario)
    finally:
        for client in clients.values():
            _quietly(client.stop)
        for browser in browsers:
            _quietly(browser.stop)


def _quietly(fn: Any, *args: Any) -> None:
    try:
        fn(*args)
    except Exception as exc:
        log(f"    (ignored during cleanup: {type(exc).__name__}: {exc})")


def readme_block(doc: dict[str, Any]) -> str:
    """The README's table: each column of COLUMNS per scenario, with the run's context line."""
    ctx = doc["context"]
    loads = [rep[0] for rep in doc["load_per_rep"] if rep]
    results: report.Results = doc["scenarios"]
    columns = [(a, b) for a, b in COLUMNS if any(a in c and b in c for c in results.values())]
    out = [
        README_BEGIN,
        "",
        f"commit {report.commit_label(ctx)}; Chromium {ctx['versions'].get('chromium')}; {doc['reps']} reps,"
        f" each on new browsers{SHARED if ctx.get('shared_browser') else ''}; seed {ctx['seed']}; 1-minute"
        f" load {min(loads, default=None)}-{max(loads, default=None)} as the reps began (each rep's launches"
        f" raise it; every scenario waits for a quiet run queue); {ctx['cores']} cores"
        f"{report.run_flags(doc)}.",
        "",
        "| scenario | " + " | ".join(f"{a} / {b}" for a, b in columns) + " |",
        "|---|" + "---:|" * len(columns),
    ]
    for scenario, clients in results.items():
        cells = [report.fmt_ratio(clients.get(a, {}).get("x_peers", {}).get(b)) for a, b in columns]
        out.append(f"| {scenario} | " + " | ".join(cells) + " |")
    out += ["", README_END]
    return "\n".join(out)


def readme_text_block(readme: str) -> str:
    """The generated block as it stands in a README's text (markers included); ValueError if absent."""
    begin, end = readme.index(README_BEGIN), readme.index(README_END)
    return readme[begin : end + len(README_END)]


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    remove_leftovers()
    go, busy = admitted(args.force)
    if not go:
        return 3
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    scenarios = [BY_NAME[n] for n in args.scenarios]
    labels: list[str] = list(args.clients)
    begin = time.monotonic()
    load_at_start = context.loadavg()
    git_at_start = context.git()
    got: Collecting = {s.name: {} for s in scenarios}
    failed: dict[str, str] = {}
    load_per_rep: list[list[float] | None] = []
    browsers_per_rep: list[dict[str, str]] = []
    with PageServer() as pages:
        try:
            version, _, _ = probe_version(chromium.CHROMIUM)
        except (OSError, RuntimeError, ValueError, KeyError) as exc:
            log(f"error: no browser to measure against ({type(exc).__name__}: {exc})")
            return 2
        log(f"Chromium {version}; seed {seed}; {args.reps} reps of {', '.join(labels)}")
        env = Env(
            ws_url="",  # every client gets a browser of its own (own_env), or each rep one to share
            http_url=None,
            chromium=chromium.CHROMIUM,
            chromium_args=chromium.FLAGS,
            big_page_url=pages.url("/big.html"),
            quick=args.quick,
            page_server=pages.url(""),
            shared=args.share,
        )
        for rep in range(args.reps):
            running = [label for label in labels if label not in failed]
            for scenario in scenarios:
                for label in running:
                    got[scenario.name].setdefault(label, Collected(_transport(label), own_browser=True))
            load_per_rep.append(context.loadavg())
            t0 = time.monotonic()
            browsers_per_rep.append({})
            run_rep(
                running,
                env,
                scenarios,
                quick=args.quick,
                rng=rng,
                got=got,
                failed=failed,
                endpoints=browsers_per_rep[-1],
            )
            log(f"  rep {rep + 1}/{args.reps}: {time.monotonic() - t0:.1f}s, load {load_per_rep[-1]}")
    results: report.Results = {}
    for scenario in scenarios:
        collected = got[scenario.name]
        for label, reason in failed.items():
            collected.setdefault(label, Collected(_transport(label), own_browser=True)).skipped = reason
        results[scenario.name] = {n: report.entry(collected[n]) for n in labels if n in collected}
    report.add_ratios(results, seed)
    ctx = context.collect(
        context.command_line() if argv is None else ["-m", "benchmarks.fresh", *argv],
        version,
        seed=seed,
        forced=busy is not None,
        load_at_start=load_at_start,
        git_at_start=git_at_start,
    )
    ctx["seconds"] = round(time.monotonic() - begin)
    ctx["shared_browser"] = args.share
    doc: dict[str, Any] = {
        "context": ctx,
        "quick": args.quick,
        "reps": args.reps,
        "load_per_rep": load_per_rep,
        "browsers_per_rep": browsers_per_rep,
        "scenarios": results,
    }
    print(report.text_table(results))
    print(readme_block(doc))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(doc, indent=2) + "\n")
    written = [str(args.json)]
    if args.readme is not None:
        text = args.readme.read_text()
        args.readme.write_text(text.replace(readme_text_block(text), readme_block(doc)))
        written.append(str(args.readme))
    log(f"wrote {', '.join(written)} in {time.monotonic() - begin:.0f}s")
    return 0


def _transport(label: str) -> str:
    """A client's transport without starting it (its class says)."""
    module_name, _, class_name = REGISTRY[client_name(label)].partition(":")
    return str(getattr(importlib.import_module(module_name), class_name).transport)


if __name__ == "__main__":
    sys.exit(main())
