"""The published numbers are the measured ones: each README table and each .md regenerate from its JSON
(latest.json, the full run; focus.json, a run of the deciding rows with more reps; events200.json and
events-peers.json, runs of the events row alone, quoted in the README's prose).

A claim edited by hand, a table left over from an older run, or a ratio that sets a pipe against a
websocket fails here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import report
from benchmarks.scenarios import BY_NAME, Kind

ROOT = Path(__file__).resolve().parents[3]
RESULTS = ROOT / "benchmarks" / "results"
README_SOURCES = ["latest", "focus"]  # each has a generated table in README.md
SOURCES = [*README_SOURCES, "events200", "events-peers"]


@pytest.fixture(scope="module", params=SOURCES)
def source(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def doc(source: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((RESULTS / f"{source}.json").read_text())
    return loaded


def test_the_md_is_generated_from_its_json(source: str, doc: dict[str, Any]) -> None:
    assert (RESULTS / f"{source}.md").read_text() == report.markdown(doc, source)


@pytest.mark.parametrize("source", README_SOURCES)
def test_the_readme_table_is_generated_from_its_json(source: str) -> None:
    doc = json.loads((RESULTS / f"{source}.json").read_text())
    readme = (ROOT / "README.md").read_text()
    assert report.readme_block(readme, source) == report.readme_table(doc, source), (
        f"README.md's table from benchmarks/results/{source}.json differs from that file: regenerate it "
        f"with `python -m benchmarks --json benchmarks/results/{source}.json --readme README.md` (or "
        "report.update_readme), never by hand"
    )


def test_every_ratio_compares_one_transport(doc: dict[str, Any]) -> None:
    for scenario, clients in doc["scenarios"].items():
        for name, entry in clients.items():
            for peer in entry.get("x_peers", {}):
                assert clients[peer]["transport"] == entry["transport"], (scenario, name, peer)
    for pairs in doc["cross_transport"].values():
        for pair in pairs:
            pipe, ws = pair.split(" / ")
            assert pipe.endswith(".pipe")
            assert ws.endswith(".ws")


def test_the_committed_run_is_a_full_run_with_its_context(doc: dict[str, Any]) -> None:
    assert doc["quick"] is False
    ctx = doc["context"]
    assert ctx["git"]["commit"]
    assert ctx["versions"]["chromium"]
    assert ctx["cores"]
    for scenario, clients in doc["scenarios"].items():
        if BY_NAME[scenario].kind is Kind.PLACEHOLDER:
            continue
        assert set(doc["load"][scenario]) == {"before", "after", "settled_s"}
        for name, entry in clients.items():
            if entry.get("median_us") is None:
                assert entry["skipped"], (scenario, name)
                continue
            assert entry["reps"] >= 10, (scenario, name)
            assert len(entry["samples_us"]) == entry["reps"], (scenario, name)
            for ratio in entry.get("x_peers", {}).values():
                low, high = ratio["ci95"]
                assert low <= ratio["ratio"] <= high
                expected = "faster" if high < 1 else "slower" if low > 1 else "no difference"
                assert ratio["verdict"] == expected


FRESH = ROOT / "benchmarks" / "results" / "fresh.json"


def test_the_readme_fresh_browser_block_is_generated_from_fresh_json() -> None:
    from benchmarks import fresh

    doc = json.loads(FRESH.read_text())
    readme = (ROOT / "README.md").read_text()
    assert fresh.readme_text_block(readme) == fresh.readme_block(doc), (
        "README.md's fresh-browser block differs from benchmarks/results/fresh.json: regenerate it with "
        "`python -m benchmarks.fresh --readme README.md`, never by hand"
    )
    assert doc["quick"] is False
    assert doc["reps"] >= 20
    assert not doc["context"]["git"]["dirty"]
    for clients in doc["scenarios"].values():
        for entry in clients.values():
            assert entry["reps"] == doc["reps"]  # no client failed a rep


def test_each_results_file_has_a_readme_block_of_its_own() -> None:
    doc = json.loads((RESULTS / "latest.json").read_text())
    latest, focus = report.readme_table(doc), report.readme_table(doc, "focus")
    assert latest != focus
    for text in (f"a\n{latest}\nb\n{focus}\nc", f"a\n{focus}\nb\n{latest}\nc"):
        assert report.readme_block(text) == latest
        assert report.readme_block(text, "focus") == focus
