"""Turning samples into the results: statistics, ratios, the printed table, JSON, markdown and a chart."""

from __future__ import annotations

import contextlib
import json
import math
import os
import platform
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.clients import FLOORS
from benchmarks.scenarios import BY_NAME, Kind

Entry = dict[str, Any]
OWN_BROWSER_NOTE = (
    "pipe clients because a pipe is 1:1 with its browser, Playwright because connect_over_cdp instruments"
    " every page of the browser it attaches to (same binary and flags); the rest share one browser."
)
Results = dict[str, dict[str, Entry]]


@dataclass
class Collected:
    """Everything one client produced in one scenario."""

    transport: str
    own_browser: bool
    latencies_us: list[float] = field(default_factory=list)
    ops: int = 0
    elapsed_ns: int = 0
    reps: int = 0
    nbytes: int | None = None
    skipped: str | None = None
    hung: bool = False


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def entry(c: Collected) -> Entry:
    """One client's entry in ``scenarios.<name>``: the required keys first, extras after."""
    base: Entry = {"transport": c.transport, "browser": "own" if c.own_browser else "shared"}
    if c.transport == "offline":
        base["browser"] = "none (decodes captured bytes)"
    if c.skipped is not None or not c.latencies_us:
        return {
            "median_us": None,
            "p95_us": None,
            "ops_per_s": None,
            "runs": 0,
            "skipped": c.skipped or "no samples",
            **base,
        }
    out: Entry = {
        "median_us": round(statistics.median(c.latencies_us), 2),
        "p95_us": round(percentile(c.latencies_us, 95), 2),
        "ops_per_s": round(c.ops / (c.elapsed_ns / 1e9), 1) if c.elapsed_ns else None,
        "runs": len(c.latencies_us),
        "reps": c.reps,
        **base,
    }
    if c.nbytes is not None:
        out["bytes"] = c.nbytes
    return out


def add_ratios(results: Results) -> None:
    """Add ``x_floor`` (median / the same transport's floor median) and ``x_peers`` to every entry."""
    for clients in results.values():
        measured = {n: e["median_us"] for n, e in clients.items() if e.get("median_us")}
        floors = set(FLOORS.values())
        peers = [n for n in measured if n not in floors]
        for name, e in clients.items():
            if name not in measured:
                continue
            floor = FLOORS.get(e["transport"])
            if floor in measured:
                e["x_floor"] = round(measured[name] / measured[floor], 3)
            e["x_peers"] = {p: round(measured[name] / measured[p], 3) for p in peers if p != name}


def machine_info() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    info: dict[str, Any] = {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "os": platform.platform(),
    }
    with contextlib.suppress(OSError):
        info["loadavg_at_start"] = [round(x, 2) for x in os.getloadavg()]
    return info


def _fmt(value: object, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float | int):
        return f"{value:,.{digits}f}"
    return str(value)


def _rows(clients: dict[str, Entry]) -> tuple[list[str], list[list[str]], list[str]]:
    """(header, rows, footnotes) of one scenario's table."""
    measured = [n for n, e in clients.items() if e.get("median_us")]
    floors = set(FLOORS.values())
    peers = [n for n in measured if n not in floors]
    header = ["client", "median µs", "p95 µs", "ops/s", "runs", "x floor", *(f"x {p}" for p in peers)]
    rows: list[list[str]] = []
    notes: list[str] = []
    for name, e in clients.items():
        label = name + (" *" if e.get("browser", "").startswith("own") else "")
        if e.get("skipped"):
            notes.append(f"{name}: skipped ({e['skipped']})")
            continue
        ratios = e.get("x_peers", {})
        rows.append(
            [
                label,
                _fmt(e["median_us"]),
                _fmt(e["p95_us"]),
                _fmt(e["ops_per_s"], 0 if (e["ops_per_s"] or 0) >= 100 else 1),
                str(e["runs"]),
                _fmt(e.get("x_floor"), 2),
                *(_fmt(ratios.get(p), 2) if p != name else "1.00" for p in peers),
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
    }.get(kind, "median/p95 per command")


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
    out.append(
        f"\n* = {OWN_BROWSER_NOTE}\nx floor = this median / the median of the floor of the same transport;"
        " x <peer> = this median / that median (lower is faster)."
    )
    return "\n".join(out)


def markdown(doc: dict[str, Any]) -> str:
    machine = doc["machine"]
    out = [
        "# CDP latency suite: latest results",
        "",
        f"Chromium {doc['chromium']}; {machine.get('cpu')} ({machine.get('cores')} cores); "
        f"Python {machine.get('python')}; {machine.get('os')}.",
        "",
        "Clients run interleaved (A B C A B C ...) after a warm-up; medians and p95 over all measured runs."
        f" Clients marked * measure on a Chromium of their own: {OWN_BROWSER_NOTE}",
        "",
        "`x floor` = this median / the median of the floor of the same transport (floor.ws for websocket"
        " and decode-only rows, floor.pipe for pipe rows); `x <peer>` = this median / that median."
        " Lower is faster.",
    ]
    results: Results = doc["scenarios"]
    for scenario, clients in results.items():
        out += ["", f"## {scenario}", "", f"{BY_NAME[scenario].summary} ({_meaning(scenario)}).", ""]
        header, rows, notes = _rows(clients)
        if rows:
            out.append("| " + " | ".join(header) + " |")
            out.append("|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|")
            out += ["| " + " | ".join(r) + " |" for r in rows]
            out.append("")
        out += [f"- {n}" for n in notes]
    return "\n".join(out) + "\n"


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
    md_path.write_text(markdown(doc))
    png_path = json_path.with_suffix(".png")
    chart(doc["scenarios"], png_path)
    return [json_path, md_path, png_path]
