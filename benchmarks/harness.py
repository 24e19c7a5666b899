"""``python -m benchmarks``: run the scenarios over the clients, interleaved, and write the results.

Every client gets a Chromium of its own, same binary and flags (websocket clients one launched here, pipe
clients and the Node peers their own), so only the client and its transport differ; ``--connect`` shares
one given browser instead and says so in the context. Per scenario every client sets up (pages, sessions),
runs once unmeasured, then each measured round runs every client once in an order shuffled from a recorded
seed, so drift on a noisy machine spreads over all clients and no client always follows the same one.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import chromium, context, report
from benchmarks.clients import DEFAULT, REGISTRY, Client, Env, SkipClient, load
from benchmarks.clients.floor_ws import RawWebSocket
from benchmarks.pages import PageServer
from benchmarks.report import Collected
from benchmarks.scenarios import BY_NAME, SCENARIOS, Kind, Scenario

RESULTS = Path(__file__).resolve().parent / "results" / "latest.json"
SETTLE_S = 2.0


def parse_args(argv: Sequence[str] | None, prog: str = "python -m benchmarks") -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=prog, description="Side-by-side CDP latency suite (see benchmarks/README.md)."
    )
    parser.add_argument("--quick", action="store_true", help="few repetitions, small counts")
    parser.add_argument("--json", type=Path, default=RESULTS, help="results JSON (.md and .png beside it)")
    parser.add_argument("--connect", metavar="URL", help="use this browser (http://host:port or ws://...)")
    parser.add_argument("--scenarios", type=_csv, default=[s.name for s in SCENARIOS], help="a,b,...")
    parser.add_argument("--clients", type=_csv, default=list(DEFAULT), help="x,y,...")
    parser.add_argument("--chromium", default=chromium.CHROMIUM, help="executable to launch")
    parser.add_argument(
        "--playwright-shared",
        action="store_true",
        help="attach Playwright to the shared browser instead of giving it its own (see README)",
    )
    parser.add_argument(
        "--reps",
        type=int,
        default=None,
        help="measured reps of every scenario (default: each scenario's own; more reps, narrower intervals)",
    )
    parser.add_argument("--list", action="store_true", help="list scenarios and clients, then exit")
    parser.add_argument("--seed", type=int, default=None, help="seed of the shuffled order (default: random)")
    parser.add_argument("--force", action="store_true", help="run even when the load is above the core count")
    parser.add_argument(
        "--readme",
        type=Path,
        default=None,
        help="also rewrite this README's table generated from the --json file",
    )
    args = parser.parse_args(argv)
    if args.reps is not None and args.reps < 2:
        parser.error("--reps must be at least 2 (an interval needs reps)")
    for name in args.scenarios:
        if name not in BY_NAME:
            parser.error(f"unknown scenario {name!r}; known: {', '.join(BY_NAME)}")
    for name in args.clients:
        if name not in REGISTRY:
            parser.error(f"unknown client {name!r}; known: {', '.join(REGISTRY)}")
    if args.readme is not None:  # checked now, not after the run: a missing block would lose the rewrite
        try:
            report.readme_block(args.readme.read_text(), args.json.stem)
        except OSError as exc:
            parser.error(f"cannot read --readme {args.readme}: {exc}")
        except ValueError:
            begin, end = report.readme_markers(args.json.stem)
            parser.error(
                f"{args.readme} has no table generated from {args.json.stem}.json to rewrite: add the lines"
                f" {begin} and {end} where it goes, or leave out --readme"
            )
    return args


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def browser_version(ws_url: str) -> str:
    """The browser's version, e.g. "156.0.8078.79", from Browser.getVersion."""
    ws = RawWebSocket(ws_url)
    try:
        ws.send_many([b'{"id":1,"method":"Browser.getVersion"}'])
        while True:
            msg = json.loads(ws.recv())
            if msg.get("id") == 1:
                product: str = msg["result"]["product"]
                return product.split("/", 1)[-1]
    finally:
        ws.close()


def probe_version(executable: str) -> tuple[str, str, str | None]:
    """(version, ws_url, http_url) of a Chromium launched only to tell its version, and stopped again."""
    probe = chromium.launch_websocket(executable)
    try:
        return browser_version(probe.ws_url), probe.ws_url, probe.http_url
    finally:
        probe.stop()


def admitted(force: bool) -> tuple[bool, str | None]:
    """Whether to run, and the load problem to record: above the core count a run is refused unless forced."""
    busy = context.load_problem()
    if busy is None:
        return True, None
    if not force:
        log(f"refusing to run: {busy}. Wait for a quieter machine or pass --force.")
        return False, busy
    log(f"warning: {busy}; going on because of --force")
    return True, busy


Browsers = list[chromium.WebSocketBrowser]


def own_env(client: Client, env: Env, browsers: Browsers, capture: dict[str, Env]) -> Env:
    """The Env for ``client``: a Chromium of its own unless it launches one itself or the run shares one.

    Decode-only clients measure no I/O: one browser serves all their captures.
    """
    if env.shared or client.own_browser:
        return env
    if client.transport == "offline" and "env" in capture:
        return capture["env"]
    browser = chromium.launch_websocket(env.chromium, env.chromium_args)
    browsers.append(browser)
    mine = dataclasses.replace(env, ws_url=browser.ws_url, http_url=browser.http_url)
    if client.transport == "offline":
        capture["env"] = mine
    return mine


def start_clients(
    names: list[str], env: Env, browsers: Browsers
) -> tuple[list[Client], dict[str, tuple[str, str, bool]]]:
    """The clients that started, and name -> (reason, transport, own_browser) for those that did not."""
    started: list[Client] = []
    skipped: dict[str, tuple[str, str, bool]] = {}
    capture: dict[str, Env] = {}
    client: Client | None = None
    try:
        for name in names:
            client = None
            t0 = time.monotonic()
            try:
                client = load(name)
                client.start(own_env(client, env, browsers, capture))
                if not env.shared and client.transport != "offline":
                    client.own_browser = True
            except SkipClient as exc:
                reason = str(exc)
            except ImportError as exc:
                reason = f"not installed ({exc})"
            except Exception as exc:
                reason = f"failed to start ({describe(exc)})"
            else:
                started.append(client)
                log(f"  started {name} ({time.monotonic() - t0:.1f}s)")
                continue
            transport = getattr(client, "transport", "?")
            own = bool(getattr(client, "own_browser", False))
            skipped[name] = (reason, transport, own)
            log(f"  skipped {name}: {reason}")
            if client is not None:
                _quietly(client.stop)
    except BaseException:
        # Interrupted (Ctrl-C) part-way: the caller never gets these clients to stop, and their browsers
        # (the engine's, a Node peer's) would outlive the run.
        if client is not None and client not in started:
            started.append(client)
        for begun in started:
            _quietly(begun.stop)
        raise
    return started, skipped


def _quietly(fn: Any, *args: Any) -> None:
    try:
        fn(*args)
    except Exception as exc:
        log(f"    (ignored during cleanup: {type(exc).__name__}: {exc})")


WARMUP_RETRY_PAUSE_S = 2.0
"""Pause before the one retry of a failed warm-up. Seen: Playwright's own browser answered a screenshot with
"Unable to capture screenshot" in a full run and in one quick run right after it, then in none of 10 quick
runs (5 with a busy core)."""


def warm_up(client: Client, scenario: Scenario, quick: bool, got: Collected) -> None:
    """The unmeasured warm-up; one failure (not a timeout) is retried once and recorded in the results."""
    try:
        client.run(scenario, scenario.warmup_size(quick))
    except TimeoutError:
        raise
    except Exception as exc:
        got.warmup_retried = describe(exc)
        log(f"    {client.name}: warm-up failed ({got.warmup_retried}); retrying once")
        time.sleep(WARMUP_RETRY_PAUSE_S)
        client.run(scenario, scenario.warmup_size(quick))


def run_scenario(
    scenario: Scenario, clients: list[Client], quick: bool, rng: random.Random, reps: int | None = None
) -> dict[str, Collected]:
    """Set up, warm up, measure interleaved, tear down; one ``Collected`` per client.

    ``reps`` replaces the scenario's own count of measured reps (``--reps``).
    A client that times out is marked ``hung``: its loop may still be stuck, so it runs no more scenarios.
    """
    out = {c.name: Collected(c.transport, c.own_browser) for c in clients}
    if scenario.kind is Kind.PLACEHOLDER:
        for c in out.values():
            c.skipped = scenario.skip_reason
        return out
    size, own_reps = scenario.sized(quick)
    reps = own_reps if reps is None else reps
    pids = {client.rss_pid for client in clients}
    for pid in pids:
        context.reset_peak_rss(pid)
    active: list[Client] = []
    for client in clients:
        reason = client.unsupported(scenario)
        if reason is not None:
            out[client.name].skipped = reason
            continue
        try:
            client.setup(scenario)
            warm_up(client, scenario, quick, out[client.name])
        except Exception as exc:
            out[client.name].skipped = f"failed in setup or warm-up ({describe(exc)})"
            out[client.name].hung = isinstance(leaf(exc), TimeoutError)
            log(f"    {client.name}: {out[client.name].skipped}")
            _quietly(client.teardown, scenario)
            continue
        active.append(client)
    # Every client lives in this one process: freeze what exists now (the clients, their pages, the
    # harness) so that one client's garbage collections do not traverse the others' long-lived objects.
    gc.collect()
    gc.freeze()
    try:
        _measure(scenario, active, out, (size, reps), rng)
    finally:
        gc.unfreeze()
    for client in active:
        _quietly(client.teardown, scenario)
    peaks = {pid: context.peak_rss_kib(pid) for pid in pids}
    for client in active:
        out[client.name].peak_rss_kib = peaks[client.rss_pid]
        out[client.name].rss_shared = client.rss_shared
    return out


def _measure(
    scenario: Scenario,
    active: list[Client],
    out: dict[str, Collected],
    sizes: tuple[int, int],
    rng: random.Random,
) -> None:
    """The measured rounds: each client once per round, in an order shuffled per round."""
    size, reps = sizes
    running = list(active)
    for rep in range(reps):
        order = list(running)
        rng.shuffle(order)
        for client in order:
            if not measure_once(client, scenario, size, out[client.name], f"run {rep + 1}"):
                running.remove(client)


def remove_leftovers() -> None:
    """Remove the profiles a killed run left behind (its browsers exited with it), and say so."""
    for path in chromium.sweep():
        log(f"removed {path}, left by a run that was killed")


def leaf(exc: BaseException) -> BaseException:
    """What failed: ``exc`` without the groups of one exception that trio's nurseries wrap it in."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def describe(exc: BaseException) -> str:
    """``Type: message`` of what failed, for a reason in the results (not "Exceptions from Trio nursery")."""
    what = leaf(exc)
    return f"{type(what).__name__}: {what}"


def measure_once(client: Client, scenario: Scenario, size: int, got: Collected, which: str) -> bool:
    """One measured run of ``client``, added to ``got``; False (and ``got.skipped`` says why) if it failed."""
    cpu0 = time.thread_time_ns()
    try:
        sample = client.run(scenario, size)
    except Exception as exc:
        got.skipped = f"failed in {which} ({describe(exc)})"
        got.hung = isinstance(leaf(exc), TimeoutError)
        log(f"    {client.name}: {got.skipped}")
        return False
    # A client on a loop thread reports its thread's CPU time; a blocking one runs in this thread.
    cpu = sample.cpu_ns if sample.cpu_ns is not None else time.thread_time_ns() - cpu0
    got.reps_us.append(sample.latencies_us)
    got.ops += sample.ops
    got.elapsed_ns += sample.elapsed_ns
    got.cpu_ns += cpu
    got.cpu_ops += sample.ops
    if sample.nbytes is not None:
        got.nbytes = sample.nbytes
    if sample.events is not None:
        got.events += sample.events
    return True


def main(argv: Sequence[str] | None = None, *, prog: str = "python -m benchmarks") -> int:
    """Run the suite; ``prog`` is the name its usage lines give (``cdp-engine bench`` runs it too)."""
    args = parse_args(argv, prog)
    if args.list:
        for s in SCENARIOS:
            print(f"{s.name:24} {s.summary}")
        print()
        for name in REGISTRY:
            print(f"{name}{'' if name in DEFAULT else '  (not run by default)'}")
        return 0
    remove_leftovers()
    go, busy = admitted(args.force)
    if not go:
        return 3
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    scenarios = [BY_NAME[n] for n in args.scenarios]
    begin = time.monotonic()
    load_at_start = context.loadavg()
    git_at_start = context.git()
    browsers: Browsers = []
    clients: list[Client] = []
    results: report.Results = {}
    loads: dict[str, dict[str, list[float] | float | None]] = {}
    with PageServer() as pages:
        try:
            try:
                if args.connect:
                    ws_url, http_url = chromium.browser_ws_url(args.connect)
                    version = browser_version(ws_url)
                else:  # it only tells the version: every client gets a browser of its own
                    version, ws_url, http_url = probe_version(args.chromium)
            except (OSError, RuntimeError, ValueError, KeyError) as exc:
                log(f"error: no browser to measure against ({type(exc).__name__}: {exc})")
                return 2
            given = f" at {args.connect} (given, shared)" if args.connect else ""
            log(f"Chromium {version}{given}; seed {seed}")
            env = Env(
                ws_url=ws_url,
                http_url=http_url,
                chromium=args.chromium,
                chromium_args=chromium.FLAGS,
                big_page_url=pages.url("/big.html"),
                quick=args.quick,
                isolate_playwright=not (args.playwright_shared or args.connect),
                shared=bool(args.connect),
                page_server=pages.url(""),
            )
            clients, skipped = start_clients(args.clients, env, browsers)
            time.sleep(SETTLE_S)  # freshly launched browsers finish their start-up work first
            for scenario in scenarios:
                settled = context.settle()
                t0 = time.monotonic()
                before = context.loadavg()
                if context.load_problem() is not None:
                    log(f"  warning: {context.load_problem()} (before {scenario.name})")
                collected = run_scenario(scenario, clients, args.quick, rng, args.reps)
                loads[scenario.name] = {"before": before, "after": context.loadavg(), "settled_s": settled}
                for name, (reason, transport, own) in skipped.items():
                    collected[name] = Collected(transport, own, skipped=reason)
                order = {n: i for i, n in enumerate(args.clients)}
                results[scenario.name] = {
                    n: report.entry(collected[n]) for n in sorted(collected, key=order.__getitem__)
                }
                log(
                    f"  {scenario.name}: {time.monotonic() - t0:.1f}s,"
                    f" load {before} -> {loads[scenario.name]['after']}"
                )
                for client in [c for c in clients if collected[c.name].hung]:
                    clients.remove(client)
                    reason = f"timed out in {scenario.name}, not run further"
                    skipped[client.name] = (reason, client.transport, client.own_browser)
                    _quietly(client.stop)
        finally:
            for client in clients:
                _quietly(client.stop)
            for browser in browsers:
                _quietly(browser.stop)
    report.add_ratios(results, seed)
    ctx = context.collect(
        context.command_line() if argv is None else ["-m", "benchmarks", *argv],
        version,
        seed=seed,
        forced=busy is not None,
        load_at_start=load_at_start,
        git_at_start=git_at_start,
    )
    ctx["shared_browser"] = bool(args.connect)
    ctx["peak_rss_mib_python_clients"] = context.peak_rss_mib()
    ctx["seconds"] = round(time.monotonic() - begin)
    doc: dict[str, Any] = {
        "context": ctx,
        "quick": args.quick,
        "load": loads,
        "cross_transport": report.cross_transport(results, seed),
        "scenarios": results,
    }
    print(report.text_table(results))
    written = report.write(doc, args.json)
    if args.readme is not None:
        report.update_readme(doc, args.readme, args.json.stem)
        written.append(args.readme)
    log(f"wrote {', '.join(str(p) for p in written)} in {time.monotonic() - begin:.0f}s")
    return 0
