"""``python -m codegen --check`` on the committed tree and on edited copies, and the drift report.

The drift comparison lives in the engine (``engine.drift``); ``python -m codegen --drift`` uses it.
"""

from __future__ import annotations

import copy
import http.server
import json
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codegen import _render
from codegen.__main__ import main
from engine import ConnectError
from engine import drift as _drift

ROOT = Path(__file__).resolve().parents[3]


def run_codegen(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codegen", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )


def test_check_passes_on_committed_tree() -> None:
    proc = run_codegen("--check")
    assert proc.returncode == 0, proc.stderr
    assert "up to date" in proc.stdout
    assert (ROOT / "protocol-json" / "VERSION").read_text().strip() in proc.stdout


def test_check_names_modified_missing_and_extra_files(tmp_path: Path) -> None:
    copied = tmp_path / "cdp"
    shutil.copytree(_render.OUTPUT_DIR, copied, ignore=shutil.ignore_patterns("__pycache__"))
    page = copied / "page.py"
    page.write_text(page.read_text().replace("Navigates current page", "Navigates the page", 1))
    (copied / "dom.py").unlink()
    (copied / "stale.py").write_text("# left over from an older protocol\n")

    proc = run_codegen("--check", "--output", str(copied))

    assert proc.returncode == 1
    named = {line.strip() for line in proc.stderr.splitlines() if line.startswith("  ")}
    assert named == {"page.py", "dom.py", "stale.py"}, proc.stderr
    assert "python -m codegen" in proc.stderr


def test_check_passes_on_an_unmodified_copy(tmp_path: Path) -> None:
    copied = tmp_path / "cdp"
    shutil.copytree(_render.OUTPUT_DIR, copied, ignore=shutil.ignore_patterns("__pycache__"))
    assert _render.check(_render.load(), copied) == []


# --- drift -------------------------------------------------------------------------------------------------

PINNED: list[dict[str, Any]] = [
    {
        "domain": "Alpha",
        "types": [
            {
                "id": "Thing",
                "type": "object",
                "properties": [
                    {"name": "size", "type": "integer"},
                    {"name": "gone", "type": "string"},
                ],
            },
            {"id": "Mode", "type": "string", "enum": ["on", "off"]},
            {"id": "Ids", "type": "array", "items": {"type": "integer"}},
        ],
        "commands": [
            {
                "name": "run",
                "parameters": [{"name": "mode", "$ref": "Mode"}],
                "returns": [{"name": "thing", "$ref": "Thing"}],
            },
            {"name": "retired"},
        ],
        "events": [
            {"name": "ran", "parameters": [{"name": "thing", "$ref": "Thing"}]},
            {"name": "vanished"},
        ],
    },
    {"domain": "Beta", "commands": [{"name": "enable"}]},
]


def _live() -> list[dict[str, Any]]:
    live = copy.deepcopy(PINNED)
    alpha = live[0]
    thing, mode, ids = alpha["types"]
    thing["properties"] = [
        {"name": "size", "type": "number", "optional": True},
        {"name": "label", "type": "string"},
    ]
    mode["enum"] = ["on", "auto"]
    ids["items"] = {"type": "string"}
    alpha["types"].append({"id": "Extra", "type": "string"})
    run, _retired = alpha["commands"]
    run["parameters"].append({"name": "fast", "type": "boolean", "optional": True})
    run["returns"] = []
    alpha["commands"] = [run, {"name": "launch"}]
    ran, _vanished = alpha["events"]
    ran["parameters"][0] = {"name": "thing", "$ref": "Beta.Thing"}
    alpha["events"] = [ran, {"name": "appeared"}]
    live[1] = {"domain": "Gamma"}
    return live


EXPECTED: _drift.Report = {
    "domain": {"added": ["Gamma"], "removed": ["Beta"]},
    "type": {
        "added": ["Alpha.Extra"],
        "changed": ["Alpha.Ids: array of integer -> array of string"],
    },
    "property": {
        "added": ["Alpha.Thing.label"],
        "removed": ["Alpha.Thing.gone"],
        "changed": ["Alpha.Thing.size: integer -> number (optional)"],
    },
    "enum value": {"added": ["Alpha.Mode.auto"], "removed": ["Alpha.Mode.off"]},
    "command": {"added": ["Alpha.launch"], "removed": ["Alpha.retired", "Beta.enable"]},
    "parameter": {"added": ["Alpha.run.fast"]},
    "return": {"removed": ["Alpha.run.thing"]},
    "event": {"added": ["Alpha.appeared"], "removed": ["Alpha.vanished"]},
    "event parameter": {"changed": ["Alpha.ran.thing: $ref Thing -> $ref Beta.Thing"]},
}


def test_compare_reports_every_kind_of_change() -> None:
    assert _drift.compare(PINNED, _live()) == EXPECTED


def test_compare_is_empty_for_identical_protocols() -> None:
    assert _drift.compare(PINNED, copy.deepcopy(PINNED)) == {}
    pinned = _drift.load_pinned(_render.PROTOCOL_DIR)
    assert _drift.compare(pinned, copy.deepcopy(pinned)) == {}
    assert _drift.compare(pinned, _drift.load_pinned()) == {}  # the copy packaged with the engine
    assert _drift.format_report({}).startswith("no drift")


def test_compare_reverse_swaps_added_and_removed() -> None:
    forward, backward = _drift.compare(PINNED, _live()), _drift.compare(_live(), PINNED)
    assert backward["domain"] == {"added": ["Beta"], "removed": ["Gamma"]}
    assert forward["command"]["added"] == backward["command"]["removed"]


def test_format_report_groups_by_kind() -> None:
    text = _drift.format_report(EXPECTED)
    lines = text.splitlines()
    assert "command: 1 added, 2 removed" in lines
    assert "  removed  Beta.enable" in lines
    assert "  changed  Alpha.Thing.size: integer -> number (optional)" in lines
    kinds = [line.partition(":")[0] for line in lines if not line.startswith(" ")]
    assert kinds == sorted(EXPECTED)


@pytest.fixture
def browser_json() -> Iterator[str]:
    """A local HTTP server that answers ``/json/protocol`` like a browser (the :func:`_live` protocol)."""
    body = json.dumps({"version": {"major": "1", "minor": "3"}, "domains": _live()}).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path != "/json/protocol":
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_drift_cli_against_a_local_endpoint(
    browser_json: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, domains in (("browser_protocol.json", PINNED), ("js_protocol.json", [])):
        (tmp_path / name).write_text(json.dumps({"domains": domains}))
    assert _drift.fetch_live(browser_json + "/json/protocol/") == _live()
    # a DevTools websocket URL, as `cdp-engine launch` prints: the HTTP endpoint on its host and port
    assert _drift.fetch_live(browser_json.replace("http:", "ws:") + "/devtools/browser/0a1b") == _live()
    assert main(["--drift", browser_json + "/", "--protocol-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == _drift.format_report(EXPECTED)


def test_an_endpoint_that_is_no_browser_is_a_connect_error(browser_json: str) -> None:
    # They were raw urllib errors (URLError, HTTPError) where every other command says what it expected.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    with pytest.raises(
        ConnectError, match=r"/json/protocol failed \(expected a browser .*Connection refused"
    ):
        _drift.fetch_live(closed)
    with pytest.raises(ConnectError, match=r"/nothing/json/protocol answered HTTP 404 \(expected a browser"):
        _drift.fetch_live(browser_json + "/nothing")


def test_a_missing_pinned_protocol_is_an_error_not_an_empty_side(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"browser_protocol\.json"):
        _drift.load_pinned(tmp_path)
