"""Turning samples into the results: statistics, ratios, the printed table, JSON, markdown and a chart."""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.clients import FLOORS, TRIO_FLOORS
from benchmarks.scenarios import BY_NAME, Kind
from benchmarks.stats import Ratio, percentile, ratio_ci

Entry = dict[str, Any]
Results = dict[str, dict[str, Entry]]


@dataclass
class Collected:
    """Everything one client produced in one scenario: the raw samples of every rep, kept apart."""

    transport: str
    own_browser: bool
    reps_us: list[list[float]] = field(default_factory=list)
    ops: int = 0
    elapsed_ns: int = 0
    cpu_ns: int = 0
    cpu_ops: int = 0
    nbytes: int | None = None
    events: int = 0
    peak_rss_kib: int | None = None
    rss_shared: bool = True
    skipped: str | None = None
    hung: bool = False
    warmup_retried: str | None = None  # why the first warm-up failed, when a second one succeeded

    @property
    def latencies_us(self) -> list[float]:
        return [x for rep in self.reps_us for x in rep]

    @property
    def reps(self) -> int:
        return len(self.reps_us)


RSS_SHARED = "the Python process every Python client shares, over this scenario"
RSS_OWN = "the client's own process, over this scenario"


def entry(c: Collected) -> Entry:
    """One client's entry in ``scenarios.<name>``: the summary first, the raw samples last."""
    base: Entry = {"transport": c.transport, "browser": "own" if c.own_browser else "shared"}
    if c.transport == "offline":
        base["browser"] = "none (decodes captured bytes)"
    samples = c.latencies_us
    if c.skipped is not None or not samples:
        return {
            "median_us": None,
            "p95_us": None,
            "ops_per_s": None,
            "runs": 0,
            "skipped": c.skipped or "no samples",
            **base,
        }
    rep_medians = [statistics.median(rep) for rep in c.reps_us]
    out: Entry = {
        "median_us": round(statistics.median(rep_medians), 2),
        "median_all_us": round(statistics.median(samples), 2),
        "p95_us": round(percentile(samples, 95), 2),
        "ops_per_s": round(c.ops / (c.elapsed_ns / 1e9), 1) if c.elapsed_ns else None,
        "cpu_us_per_op": round(c.cpu_ns / 1000 / c.cpu_ops, 2) if c.cpu_ops else None,
        "runs": len(samples),
        "reps": c.reps,
        **base,
    }
    if c.warmup_retried is not None:
        out["warmup_retried"] = c.warmup_retried
    if c.nbytes is not None:
        out["bytes"] = c.nbytes
    if c.events and c.elapsed_ns:
        out["events_per_s"] = round(c.events / (c.elapsed_ns / 1e9), 1)
    if c.peak_rss_kib is not None:
        out["peak_rss_mib"] = round(c.peak_rss_kib / 1024, 1)
        out["peak_rss_of"] = RSS_SHARED if c.rss_shared else RSS_OWN
    out["rep_medians_us"] = [round(m, 2) for m in rep_medians]
    out["samples_us"] = [[round(x, 1) for x in rep] for rep in c.reps_us]
    return out


def comparable(a: Entry, b: Entry) -> bool:
    """Two entries a ratio may compare: the same transport (a pipe is never set against a websocket)."""
    return bool(a.get("transport") == b.get("transport"))


def _ratio(a: Entry, b: Entry, seed: int) -> Ratio:
    return ratio_ci(a["rep_medians_us"], b["rep_medians_us"], seed=seed)


def add_ratios(results: Results, seed: int) -> None:
    """``x_floor`` and ``x_peers`` (ratio, 95% CI, verdict) against every client of the same transport."""
    for clients in results.values():
        measured = {n: e for n, e in clients.items() if e.get("median_us")}
        for name, e in measured.items():
            floor = FLOORS.get(e["transport"])
            if floor in measured and floor != name:
                e["x_floor"] = _ratio(e, measured[floor], seed).as_json()
            e["x_peers"] = {
                p: _ratio(e, other, seed).as_json()
                for p, other in measured.items()
                if p != name and comparable(e, other)
            }


CROSS_TRANSPORT = (
    ("engine.pipe", "engine.ws"),
    ("floor.pipe", "floor.ws"),
    ("puppeteer.pipe", "puppeteer.ws"),
)
"""Pipe against websocket, each client against itself: reported in rows of their own, never as a peer."""


def cross_transport(results: Results, seed: int) -> dict[str, dict[str, Entry]]:
    """scenario -> "a / b" -> ratio JSON for the same client over the pipe and over the websocket."""
    out: dict[str, dict[str, Entry]] = {}
    for scenario, clients in results.items():
        for a, b in CROSS_TRANSPORT:
            ea, eb = clients.get(a, {}), clients.get(b, {})
            if ea.get("median_us") and eb.get("median_us"):
                out.setdefault(scenario, {})[f"{a} / {b}"] = _ratio(ea, eb, seed).as_json()
    return out


def _fmt(value: object, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float | int):
        return f"{value:,.{digits}f}"
    return str(value)


def fmt_ratio(r: Entry | None) -> str:
    """``0.93 [0.90, 0.97] faster``: the ratio, its 95% interval and the verdict."""
    if not r:
        return "-"
    low, high = r["ci95"]
    return f"{r['ratio']:.2f} [{_bound(low)}, {_bound(high)}] {r['verdict']}"


def _bound(value: float) -> str:
    """Two decimals, or three where two would print 1.00 for a bound that is not 1 (``[0.87, 0.997]
    faster``: ``[0.87, 1.00] faster`` reads as an interval that holds 1)."""
    text = f"{value:.2f}"
    return f"{value:.3f}" if text == "1.00" and value != 1 else text


ENGINES = {"websocket": "engine.ws", "pipe": "engine.pipe", "offline": "cdp.decode"}
"""Whose ratio the tables show against every other client of a transport."""


def _rows(clients: dict[str, Entry]) -> tuple[list[str], list[list[str]], list[str]]:
    """(header, rows, footnotes) of one scenario's table."""
    header = [
        "client",
        "transport",
        "median µs",
        "p95 µs",
        "ops/s",
        "CPU µs/op",
        "reps",
        "x floor",
        "engine / this",
        "trio floor / this",
    ]
    rows: list[list[str]] = []
    notes: list[str] = []
    for name, e in clients.items():
        if e.get("skipped"):
            notes.append(f"{name}: skipped ({e['skipped']})")
            continue
        engine = ENGINES.get(e["transport"], "")
        versus = clients.get(engine, {}).get("x_peers", {}).get(name) if engine != name else None
        floor = TRIO_FLOORS.get(e["transport"], "")
        room = clients.get(floor, {}).get("x_peers", {}).get(name) if floor != name else None
        rows.append(
            [
                name,
                e["transport"],
                _fmt(e["median_us"]),
                _fmt(e["p95_us"]),
                _fmt(e["ops_per_s"], 0 if (e["ops_per_s"] or 0) >= 100 else 1),
                _fmt(e.get("cpu_us_per_op")),
                str(e.get("reps", 0)),
                fmt_ratio(e.get("x_floor")),
                fmt_ratio(versus),
                fmt_ratio(room),
            ]
        )
    return header, rows, notes


def _meaning(scenario: str) -> str:
    kind = BY_NAME[scenario].kind
    return {
        Kind.BATCH: "median/p95 per batch of 64; ops/s = commands/s",
        Kind.EVENTS: "median/p95 per flood (time to the last event); ops/s = events/s",
        Kind.DECODE: "median/p95 per full call or decode",
        Kind.FANOUT: "median/p95 per command; ops/s = commands/s over all tabs",
        Kind.COLDSTART: "median/p95 per cold start, a fresh browser each",
        Kind.NAVIGATE: "median/p95 per navigation, Page.navigate to the load event",
        Kind.ATTACH: "median/p95 per batch of targets created and attached; ops/s = targets/s",
        Kind.FLOOD: "median/p95 per command under the event flood; events_per_s in the JSON",
    }.get(kind, "median/p95 per command")


RATIO_NOTE = (
    "median = the median of the per-rep medians; ratios are medians over medians with a paired bootstrap 95%"
    ' interval over the reps; an interval that holds 1.00 is "no difference". `x floor` = this client over'
    " the blocking floor of its transport (json.loads.nogc for decode-only rows); `engine / this` = the"
    " engine of the same transport over this client (below 1: the engine is faster); `trio floor / this` ="
    " the one-task trio floor of the transport over this client, the room this client leaves. Every client"
    " ran on a Chromium of its own, same binary and flags; reps in a shuffled order per round (seed in the"
    " context)."
)


def text_table(results: Results) -> str:
    out: list[str] = []
    for scenario, clients in results.items():
        out.append(f"\n{scenario}  ({_meaning(scenario)})")
        header, rows, notes = _rows(clients)
        if rows:
            widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
            for r in [header, *rows]:
                cells = [
                    c.ljust(w) if i == 0 else c.rjust(w)
                    for i, (c, w) in enumerate(zip(r, widths, strict=True))
                ]
                out.append("  " + "  ".join(cells))
        out.extend(f"  - {n}" for n in notes)
    out.append("\n" + RATIO_NOTE)
    return "\n".join(out)


def commit_label(ctx: dict[str, Any]) -> str:
    """The run's commit as the tables quote it: 10 digits, and "(dirty)" if the tree had changes."""
    git_ = ctx["git"]
    return (git_.get("commit") or "?")[:10] + (" (dirty)" if git_.get("dirty") else "")


def run_flags(doc: dict[str, Any]) -> str:
    """What a context line adds when a run was forced despite the load or was a --quick one."""
    return ("; run with --force despite the load" if doc["context"].get("forced_despite_load") else "") + (
        "; --quick (smoke sizes)" if doc.get("quick") else ""
    )


def context_line(doc: dict[str, Any]) -> str:
    """One line of where the numbers came from, for the markdown and the README."""
    ctx = doc["context"]
    v = ctx["versions"]
    commit = commit_label(ctx)
    befores = [s["before"][0] for s in doc.get("load", {}).values() if s.get("before")]
    afters = [s["after"][0] for s in doc.get("load", {}).values() if s.get("after")]
    during = f"{min(befores)}-{max(befores)}" if befores else "?"
    return (
        f"commit {commit}; Chromium {v.get('chromium')}; Python {v.get('python')}, trio {v.get('trio')}; "
        f"{ctx['cpu']} ({ctx['cores']} cores); load average {ctx['loadavg_at_start']} before the browsers "
        f"started, 1-minute load {during} as each scenario began (the clients' own browsers), highest after "
        f"a scenario {max(afters, default=None)}{run_flags(doc)}"
    )


LATEST = "latest"
"""The stem of the default results file, whose README block is the benchmark table."""


def markdown(doc: dict[str, Any], source: str = LATEST) -> str:
    """The tables of results file ``source`` (its stem: ``latest`` unless ``--json`` said otherwise)."""
    out = [f"# CDP latency suite: {source} results", "", context_line(doc) + ".", "", RATIO_NOTE]
    results: Results = doc["scenarios"]
    for scenario, clients in results.items():
        load = doc.get("load", {}).get(scenario, {})
        waited = f" (after {load['settled_s']} s for a quiet run queue)" if "settled_s" in load else ""
        out += [
            "",
            f"## {scenario}",
            "",
            f"{BY_NAME[scenario].summary} ({_meaning(scenario)}); load {load.get('before')} before,"
            f" {load.get('after')} after{waited}.",
            "",
        ]
        header, rows, notes = _rows(clients)
        if rows:
            out.append("| " + " | ".join(header) + " |")
            out.append("|" + "|".join(["---", "---"] + ["---:"] * (len(header) - 2)) + "|")
            out += ["| " + " | ".join(r) + " |" for r in rows]
            out.append("")
        out += [f"- {n}" for n in notes]
    cross = doc.get("cross_transport", {})
    if cross:
        out += ["", "## pipe against websocket (the same client, two transports)", ""]
        out += ["| scenario | comparison | ratio [95% CI] |", "|---|---|---:|"]
        for scenario, pairs in cross.items():
            out += [f"| {scenario} | {pair} | {fmt_ratio(r)} |" for pair, r in pairs.items()]
    return "\n".join(out) + "\n"


def readme_markers(source: str = LATEST) -> tuple[str, str]:
    """The begin and end markers of the README block generated from ``benchmarks/results/<source>.json``."""
    begin = f"<!-- benchmark-table:begin (generated from benchmarks/results/{source}.json; do not edit) -->"
    end = "<!-- benchmark-table:end -->" if source == LATEST else f"<!-- benchmark-table:end ({source}) -->"
    return begin, end


def readme_table(doc: dict[str, Any], source: str = LATEST) -> str:
    """The README's claims: the engine over each peer of the same transport, then pipe against websocket."""
    results: Results = doc["scenarios"]
    begin, end = readme_markers(source)
    out = [begin, "", context_line(doc) + ".", ""]
    for transport in ("websocket", "pipe"):
        engine = ENGINES[transport]
        peers: list[str] = []
        for clients in results.values():
            for name in clients.get(engine, {}).get("x_peers", {}):
                ours = name.startswith("engine.")  # the engine's own variants are in latest.md, not claims
                if name not in peers and not ours and clients[name].get("transport") == transport:
                    peers.append(name)
        if not peers:
            continue
        out += [
            f"{engine} over each peer on the {transport} (ratio of medians [95% CI];"
            " below 1: the engine is faster):",
            "",
            "| scenario | " + " | ".join(peers) + " |",
            "|---|" + "---:|" * len(peers),
        ]
        for scenario, clients in results.items():
            mine = clients.get(engine, {}).get("x_peers")
            if mine:
                out.append(f"| {scenario} | " + " | ".join(fmt_ratio(mine.get(p)) for p in peers) + " |")
        out.append("")
    out += _room_table(results)
    cross = doc.get("cross_transport", {})
    if cross:
        out += [
            "The same client over the pipe against over a websocket (its own row, never a peer claim):",
            "",
        ]
        pairs = sorted({pair for s in cross.values() for pair in s})
        out += ["| scenario | " + " | ".join(pairs) + " |", "|---|" + "---:|" * len(pairs)]
        for scenario, got in cross.items():
            out.append(f"| {scenario} | " + " | ".join(fmt_ratio(got.get(p)) for p in pairs) + " |")
        out.append("")
    out.append(end)
    return "\n".join(out)


ROOM_NOTE = (
    "The room each peer leaves: the one-task trio floor of its transport over it (below 1: the floor is"
    " faster). The engine does the floor's work and more (a typed API, routing, bounded subscriptions): where"
    " the floor itself is level with a peer, the engine can be shown ahead of that peer only by beating the"
    " floor of its own transport:"
)


def _room_table(results: Results) -> list[str]:
    """Lines of the README table of each trio floor over the peers of its transport; none if no floor ran."""
    pairs: list[tuple[str, str]] = []
    for transport, floor in TRIO_FLOORS.items():
        for clients in results.values():
            for peer in clients.get(floor, {}).get("x_peers", {}):
                theirs = not peer.startswith(("engine.", "floor."))
                if theirs and clients[peer].get("transport") == transport and (floor, peer) not in pairs:
                    pairs.append((floor, peer))
    if not pairs:
        return []
    out = [ROOM_NOTE, "", "| scenario | " + " | ".join(f"{f} / {p}" for f, p in pairs) + " |"]
    out.append("|---|" + "---:|" * len(pairs))
    for scenario, clients in results.items():
        cells = [clients.get(f, {}).get("x_peers", {}).get(p) for f, p in pairs]
        if any(cells):
            out.append(f"| {scenario} | " + " | ".join(fmt_ratio(c) for c in cells) + " |")
    return [*out, ""]


def readme_block(readme: str, source: str = LATEST) -> str:
    """The block generated from ``source`` as it stands in a README's text (markers included); ValueError
    if absent."""
    begin_marker, end_marker = readme_markers(source)
    begin = readme.index(begin_marker)
    end = readme.index(end_marker, begin)
    return readme[begin : end + len(end_marker)]


def chart(results: Results, path: Path) -> None:
    """One bar group per scenario (median µs, log scale), one bar per client."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scenarios = [s for s, clients in results.items() if any(e.get("median_us") for e in clients.values())]
    clients: list[str] = []
    for s in scenarios:
        clients += [c for c, e in results[s].items() if e.get("median_us") and c not in clients]
    fig, ax = plt.subplots(figsize=(max(8, 1.6 * len(scenarios) + 3), 5.5))
    width = 0.8 / max(1, len(clients))
    for i, client in enumerate(clients):
        xs = [j + (i - (len(clients) - 1) / 2) * width for j in range(len(scenarios))]
        ys = [results[s].get(client, {}).get("median_us") or 0 for s in scenarios]
        ax.bar(xs, ys, width, label=client)
    ax.set_xticks(range(len(scenarios)))
    ax.set_xticklabels(scenarios, rotation=20, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("median µs (log; lower is faster)")
    ax.set_title("CDP latency by scenario and client")
    ax.legend(fontsize="small", ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write(doc: dict[str, Any], json_path: Path) -> list[Path]:
    """Write the JSON, and the markdown and PNG beside it with the same stem; the paths written."""
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(doc, indent=2) + "\n")
    md_path = json_path.with_suffix(".md")
    md_path.write_text(markdown(doc, json_path.stem))
    png_path = json_path.with_suffix(".png")
    chart(doc["scenarios"], png_path)
    return [json_path, md_path, png_path]


def update_readme(doc: dict[str, Any], readme: Path, source: str = LATEST) -> None:
    """Replace the block of ``readme`` generated from results file ``source`` with the table of ``doc``."""
    text = readme.read_text()
    readme.write_text(text.replace(readme_block(text, source), readme_table(doc, source)))
