"""The ``cdp-engine`` command line, run as a user would (a subprocess), end to end, with its failure lines.

Most commands ``--connect`` to one ``cdp-engine launch`` of this module; a few launch their own browser.
Checks that must happen before a browser starts run with ``CDP_ENGINE_CHROMIUM`` pointing at nothing, so
a launch would fail loudly instead.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine import drift as _drift
from tests.procs import kill_matching, reap

pytestmark = pytest.mark.browser

NO_BROWSER = {"CDP_ENGINE_CHROMIUM": "/nonexistent/chromium"}


def run(
    *args: str, env: dict[str, str] | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "engine.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        input=stdin,
        env={**os.environ, **(env or {})},
    )


def failed(done: subprocess.CompletedProcess[str], status: int) -> str:
    """The one stderr line of a failure (no traceback), after checking the exit status."""
    assert done.returncode == status, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    return lines[0]


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    """``cdp-engine launch`` in the background; its http endpoint. Stopped with Ctrl-C (SIGINT) at the end."""
    process = subprocess.Popen(
        [sys.executable, "-m", "engine.cli", "launch", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    info: dict[str, Any] = {}
    try:
        info = json.loads(process.stdout.readline())
        assert info["http"].startswith("http://127.0.0.1:"), info
        yield info["http"]
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
        assert process.returncode == 0, err
        assert "stopped: its browser is closed" in err
    finally:
        reap(process, info.get("pid", 0))


def test_python_m_engine_runs_the_cli_and_import_engine_does_not_load_it() -> None:
    # It said "No module named engine.__main__".
    done = subprocess.run(
        [sys.executable, "-m", "engine", "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: cdp-engine ")
    code = (
        "import engine, sys; print(sorted(m for m in sys.modules if m in ('engine.cli', 'engine.__main__')))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert loaded.stdout.strip() == "[]", loaded.stderr


# --- protocol ---------------------------------------------------------------------------------------------


def test_protocol_summary_and_domain_listing() -> None:
    summary = run("protocol")
    assert summary.returncode == 0, summary.stderr
    assert f"{len(_drift.load_pinned())} domains" in summary.stdout  # 59 in protocol 0.0.1734725
    listing = run("protocol", "Inspector")
    assert "event    Inspector.targetCrashed" in listing.stdout


def test_protocol_prints_a_commands_params_and_docs_in_any_case() -> None:
    done = run("protocol", "page.navigate")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "command Page.navigate"
    assert "  Navigates current page to the given URL." in lines
    assert "    url: string: URL to navigate the page to." in lines
    assert any(line.startswith("    errorText: string (optional)") for line in lines)
    event = run("protocol", "Page.loadEventFired").stdout
    assert "    timestamp: Network.MonotonicTime" in event
    kind = run("protocol", "Network.ResourceType").stdout
    assert kind.startswith("type Network.ResourceType")
    assert '"Document"' in kind


def test_protocol_searches_names_and_descriptions_and_says_when_nothing_matches() -> None:
    found = run("protocol", "screenshot").stdout.splitlines()
    assert found[0].endswith("matches for 'screenshot' (name first, then description):")
    assert any(line.startswith("command  Page.captureScreenshot") for line in found)
    as_json = json.loads(run("protocol", "captureScreenshot", "--json").stdout)
    assert as_json[0]["name"] == "Page.captureScreenshot"
    assert {p["name"] for p in as_json[0]["parameters"]} >= {"format", "clip", "captureBeyondViewport"}
    line = failed(run("protocol", "Page.navigat3"), 2)
    assert (
        line == "cdp-engine protocol: nothing in the protocol is named or described 'Page.navigat3'; "
        "did you mean 'Page.navigate'?"
    )
    # Words in any order, and the bindings' Python names (each found nothing, or only an exact phrase).
    words = run("protocol", "screenshot capture").stdout.splitlines()
    assert words[1].startswith("command  Page.captureScreenshot"), words
    for query, name in (("print pdf", "Page.printToPDF"), ("capture_screenshot", "Page.captureScreenshot")):
        assert run("protocol", query).stdout.startswith(f"command {name}\n"), query
    assert run("protocol", "cdp.page.navigate").stdout.startswith("command Page.navigate\n")
    # A name within its domain is an exact match too: it came after the longer names that hold it.
    listed = run("protocol", "RemoteObject").stdout.splitlines()
    assert listed[1].startswith("type     Runtime.RemoteObject "), listed


def test_protocol_search_cuts_a_long_description_at_a_word_and_says_so() -> None:
    """The protocol wraps descriptions at about 100 columns: the first line used to stop mid-sentence."""
    found = run("protocol", "screenshot").stdout.splitlines()
    line = next(line for line in found if " HeadlessExperimental.beginFrame " in line)
    shown = line.split("  ", 2)[2]  # kind, name, description
    assert shown.endswith("...")
    (item,) = [
        c
        for d in _drift.load_pinned()
        if d["domain"] == "HeadlessExperimental"
        for c in d["commands"]
        if c["name"] == "beginFrame"
    ]
    whole = " ".join(item["description"].split())
    assert whole.startswith(shown[:-3] + " ")  # a cut between words, of the text joined across its lines


# --- call and listen: names checked before a browser starts -----------------------------------------------


def test_call_prints_the_raw_result(endpoint: str) -> None:
    done = run(
        "call", "Runtime.evaluate", '{"expression": "6*7", "returnByValue": true}', "--connect", endpoint
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"]["value"] == 42


@pytest.mark.parametrize(
    ("deadline", "line"),
    [
        (
            ("--timeout-ms", "1500"),
            "cdp-engine call: the deadline of --timeout-ms 1500 passed while waiting for the answer to "
            "Runtime.evaluate (a larger --timeout-ms gives it more time)",
        ),
        (
            ("--seconds", "0.5"),
            "cdp-engine call: no answer to Runtime.evaluate within --seconds 0.5 "
            "(a larger --seconds waits longer)",
        ),
    ],
)
def test_call_has_the_deadlines_of_the_other_commands(
    endpoint: str, deadline: tuple[str, str], line: str
) -> None:
    # --timeout-ms bounds the whole run, as for eval and snapshot; --seconds the answer alone.
    never = '{"expression": "new Promise(() => {})", "awaitPromise": true}'
    began = time.monotonic()
    done = run(
        "call", "Runtime.evaluate", never, "--url", "data:text/html,x", *deadline, "--connect", endpoint
    )
    assert failed(done, 1) == line
    assert time.monotonic() - began < 20


def test_launch_leaves_a_tab_for_tools_that_attach_to_a_page(endpoint: str) -> None:
    """A launch opens no tab of its own (``--no-startup-window``); ``cdp-engine launch`` opens one, so a
    tool that attaches to the first page (chrome-remote-interface, /json/list) finds it."""
    with urllib.request.urlopen(f"{endpoint}/json/list", timeout=10) as response:
        targets = json.load(response)
    assert any(t["type"] == "page" and t["url"] == "about:blank" for t in targets), targets


def test_a_protocol_error_is_one_line_and_exit_1(endpoint: str) -> None:
    line = failed(run("call", "DOM.describeNode", '{"backendNodeId": 987654321}', "--connect", endpoint), 1)
    assert line.startswith("cdp-engine call: ProtocolError: DOM.describeNode")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ("call", "Page.navigat"),
            "cdp-engine call: unknown method 'Page.navigat'; did you mean 'Page.navigate'?",
        ),
        (
            ("call", "Page.navigate", '{"URL": "x"}'),
            "cdp-engine call: Page.navigate has no param 'URL'; did you mean 'url'?",
        ),
        (("call", "Page.navigate", "{}"), "cdp-engine call: Page.navigate needs the param(s) url"),
        (
            ("call", "Page.navigate", "{bad"),
            "cdp-engine call: PARAMS_JSON is not valid JSON: Expecting property name",
        ),
        (("call", "Page.navigate", "[1]"), "cdp-engine call: PARAMS_JSON must be a JSON object"),
        (
            ("listen", "Runtime.consoleApiCalled"),
            "cdp-engine listen: unknown event 'Runtime.consoleApiCalled'; "
            "did you mean 'Runtime.consoleAPICalled'?",
        ),
        (
            ("listen", "Page.loadEventFired", "--seconds", "-1"),
            "cdp-engine listen: argument --seconds: -1: give a",
        ),
        (
            ("listen", "Page.loadEventFired", "--count", "-2"),
            "cdp-engine listen: argument --count: --count -2: give 0",
        ),
        (("snapshot",), "cdp-engine snapshot: the following arguments are required: URL"),
        (
            ("version", "--connect", "garbage"),
            "cdp-engine version: argument --connect: 'garbage' is not a browser endpoint; give http://host:port",
        ),
        (
            ("eval", "http://127.0.0.1:9/", "1", "--connect", "http://127.0.0.1:99999"),
            "cdp-engine eval: argument --connect: 'http://127.0.0.1:99999': the port must be a number from 1",
        ),
        (
            ("drift", "--connect", "127.0.0.1:9222"),
            "cdp-engine drift: argument --connect: '127.0.0.1:9222' has no scheme; "
            "did you mean 'http://127.0.0.1:9222'?",
        ),
        (("version", "--connect", "wss://h:1"), "cdp-engine version: argument --connect: 'wss://h:1': TLS"),
        # A page URL without a scheme launched a browser, then failed to navigate (status 1).
        (
            ("snapshot", "example.com"),
            "cdp-engine snapshot: argument URL: 'example.com' has no scheme; did you mean 'http://example.com'?",
        ),
        (
            ("eval", "localhost:8000/a", "1"),
            "cdp-engine eval: argument URL: 'localhost:8000/a' has no scheme; "
            "did you mean 'http://localhost:8000/a'?",
        ),
        (
            ("call", "Page.reload", "--url", "127.0.0.1:8000"),
            "cdp-engine call: argument --url: '127.0.0.1:8000' has no scheme",
        ),
        (
            ("screenshot", "JavaScript:alert(1)", "-o", "x.png"),
            "cdp-engine screenshot: argument URL: 'JavaScript:alert(1)': a javascript: URL is a script",
        ),
        (
            ("launch", "--connect", "http://127.0.0.1:9222"),
            "cdp-engine launch: unrecognized arguments: --connect http://127.0.0.1:9222 "
            "(see cdp-engine launch --help)",
        ),
    ],
)
def test_bad_input_is_refused_in_one_line_before_a_browser_starts(
    args: tuple[str, ...], expected: str
) -> None:
    line = failed(run(*args, env=NO_BROWSER), 2)
    assert line.startswith(expected), line
    # With --json the same failure is a document on stdout too (an argument's error printed none).
    as_json = run(*args, "--json", env=NO_BROWSER)
    assert failed(as_json, 2) == line
    error = json.loads(as_json.stdout)["error"]
    assert (error["kind"], error["status"]) == ("UsageError", 2)
    assert line.startswith(f"cdp-engine {args[0]}: {error['message']}"), (line, error)


def test_count_0_means_no_events_and_starts_nothing() -> None:
    done = run("listen", "Page.loadEventFired", "--count", "0", env=NO_BROWSER)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""


def test_listen_prints_count_events_as_json_lines(endpoint: str, server: str) -> None:
    url = f"{server}/steps/console.html"
    done = run("listen", "Runtime.consoleAPICalled", "--url", url, "--count", "3", "--connect", endpoint)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(lines) == 3
    assert {line["method"] for line in lines} == {"Runtime.consoleAPICalled"}
    # Fewer than --count within --seconds: what came, then a failure that says so (it exited 0).
    short = run(
        "listen", "Runtime.consoleAPICalled", "--url", url, "--count", "500", "--seconds", "0.5",
        "--connect", endpoint,
    )  # fmt: skip
    line = failed(short, 1)
    came = len(short.stdout.splitlines())
    assert 0 < came < 500
    assert line == (
        f"cdp-engine listen: {came} of the 500 event(s) asked for came within --seconds 0.5; "
        "a larger --seconds waits longer"
    )


def test_a_closed_pipe_ends_quietly_with_141(endpoint: str, server: str) -> None:
    url = f"{server}/steps/console.html"
    command = [sys.executable, "-m", "engine.cli", "listen", "Runtime.consoleAPICalled", "--url", url]
    process = subprocess.Popen(
        [*command, "--seconds", "30", "--connect", endpoint], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdout is not None
    try:
        assert process.stdout.readline().startswith(b'{"method": "Runtime.consoleAPICalled"')
        process.stdout.close()  # what `| head -1` does after its line
        _, err = process.communicate(timeout=30)
        assert process.returncode == 141
        assert err == b""
    finally:
        reap(process)


def test_a_pipe_closed_in_the_middle_of_a_large_value_ends_with_141(endpoint: str) -> None:
    # `eval ... | head -c 3`: the reader leaves while most of the value is still to be written.
    command = [sys.executable, "-m", "engine.cli", "eval", "data:text/html,x", "'x'.repeat(4e6)"]
    process = subprocess.Popen(
        [*command, "--connect", endpoint], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdout is not None
    try:
        assert process.stdout.read(3) == b"xxx"
        process.stdout.close()
        _, err = process.communicate(timeout=30)
        assert (process.returncode, err) == (141, b"")
    finally:
        reap(process)


def test_ctrl_c_is_one_line_and_exit_130(endpoint: str, server: str) -> None:
    url = f"{server}/steps/console.html"
    command = [sys.executable, "-m", "engine.cli", "listen", "Runtime.consoleAPICalled", "--url", url]
    process = subprocess.Popen(
        [*command, "--seconds", "30", "--connect", endpoint], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdout is not None
    try:
        process.stdout.readline()  # it is running
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
        assert process.returncode == 130
        assert err.decode().strip() == "cdp-engine listen: interrupted (Ctrl-C); its tab was closed"
    finally:
        reap(process)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_close_the_browser_and_remove_its_profile(
    server: str, signum: signal.Signals
) -> None:
    # A folder of our own for launch()'s profile (pytest's tmp_path is too long for Chromium's TMPDIR).
    with tempfile.TemporaryDirectory(dir="/tmp") as temp:
        signal_a_listen(server, Path(temp), signum)


def signal_a_listen(server: str, tmp_path: Path, signum: signal.Signals) -> None:
    """Start `listen` with its own browser, send it `signum`, and check that it stopped and cleaned up."""
    url = f"{server}/steps/console.html"
    command = [sys.executable, "-m", "engine.cli", "listen", "Runtime.consoleAPICalled", "--url", url]
    process = subprocess.Popen(
        [*command, "--seconds", "30"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "TMPDIR": str(tmp_path)},  # where launch() makes the browser's profile
    )
    assert process.stdout is not None
    try:
        process.stdout.readline()  # it is running, with its own browser
        assert list(tmp_path.iterdir())
        process.send_signal(signum)
        _, err = process.communicate(timeout=30)
        assert process.returncode == 128 + signum
        assert err.decode().strip() == f"cdp-engine listen: stopped by {signum.name}; the browser was closed"
        assert list(tmp_path.iterdir()) == []
    finally:
        reap(process)
        kill_matching(str(tmp_path))  # its browser, whose profile is in tmp_path


# --- launch, snapshot, eval, steps, screenshot, version, drift ----------------------------------------------


def start_launch(temp: str, *args: str) -> subprocess.Popen[str]:
    """`cdp-engine launch --json ARGS`, its browser's profile in ``temp``; its first line is the endpoint."""
    return subprocess.Popen(
        [sys.executable, "-m", "engine.cli", "launch", "--json", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": temp},
    )


@pytest.mark.parametrize(("how", "exit_"), [("Browser.close", "status 0"), ("kill -9", "signal SIGKILL")])
def test_launch_says_when_its_browser_exits_and_fails_at_once(how: str, exit_: str) -> None:
    """It used to stay silent until --seconds ran out, then exit 0, serving nothing all along."""
    with tempfile.TemporaryDirectory(dir="/tmp") as temp:  # where launch() makes the browser's profile
        process = start_launch(temp, "--seconds", "20")
        assert process.stdout is not None
        try:
            info = json.loads(process.stdout.readline())
            started = time.monotonic()
            if how == "Browser.close":
                assert run("call", "Browser.close", "--connect", info["ws"]).returncode == 0
            else:
                os.kill(info["pid"], signal.SIGKILL)
            _, err = process.communicate(timeout=60)
            assert time.monotonic() - started < 10
            assert process.returncode == 1, err
            assert err.strip().splitlines()[-1] == (
                f"cdp-engine launch: the browser exited, with {exit_} before Ctrl-C or --seconds 20.0 "
                f"(a client's Browser.close, a kill or a crash); nothing listens at {info['http']} any more"
            )
            assert list(Path(temp).iterdir()) == []  # its profile is gone all the same
        finally:
            reap(process)
            kill_matching(temp)


def test_launch_on_a_port_of_ones_choosing_and_not_on_a_taken_one() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with tempfile.TemporaryDirectory(dir="/tmp") as temp:
        process = start_launch(temp, "--port", str(port), "--seconds", "20")
        assert process.stdout is not None
        try:
            info = json.loads(process.stdout.readline())
            assert info["http"] == f"http://127.0.0.1:{port}"
            # Taken: Chromium would have listened on [::1] instead, where nobody told 127.0.0.1 looks.
            line = failed(run("launch", "--port", str(port), "--seconds", "1"), 2)
            assert line.startswith(f"cdp-engine launch: --port {port}: 127.0.0.1:{port} is taken")
        finally:
            process.send_signal(signal.SIGINT)
            process.communicate(timeout=30)
            reap(process)
            kill_matching(temp)


def test_launch_through_a_launcher_script_that_forks_and_exits_keeps_serving(tmp_path: Path) -> None:
    # launch watched the process it started: a launcher that forks the browser and exits 0 ended launch at
    # once ("the browser exited ... with status 0") and closed a working browser.
    launcher = tmp_path / "chromium-launcher"
    launcher.write_text(f'#!/bin/sh\n{shutil.which("chromium") or "/usr/bin/chromium"} "$@" &\nexit 0\n')
    launcher.chmod(0o755)
    with tempfile.TemporaryDirectory(dir="/tmp") as temp:
        done = subprocess.run(
            [sys.executable, "-m", "engine.cli", "launch", "--json", "--seconds", "3"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={**os.environ, "TMPDIR": temp, "CDP_ENGINE_CHROMIUM": str(launcher)},
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout.splitlines()[0])["ws"].startswith("ws://127.0.0.1:")
        # Its end is said as Ctrl-C's is (it was silent after --seconds, SIGTERM and SIGHUP).
        assert done.stderr.strip().splitlines()[-1] == "cdp-engine launch: stopped: its browser is closed"


def test_a_result_made_just_before_the_timeout_is_printed(tmp_path: Path) -> None:
    # The step ran out with the deadline, the result came back just before it, and closing the browser
    # ran past it: the command printed only "the deadline of --timeout-ms 3000 passed while running".
    steps = tmp_path / "steps.json"
    steps.write_text('[{"type": "wait_for", "time_ms": 10000}]')
    done = run("steps", str(steps), "--url", "data:text/html,<p>hi</p>", "--timeout-ms", "3000")
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert result["failed_step"] == 0
    assert result["steps"][0]["error"]["kind"] == "TimeoutError"


def test_snapshot_in_each_format(endpoint: str, server: str) -> None:
    url = f"{server}/steps/index.html"
    yaml = run("snapshot", url, "--connect", endpoint)
    assert yaml.returncode == 0, yaml.stderr
    assert '- button "Go" [ref=e2]' in yaml.stdout
    interactive = run("snapshot", url, "--interactive", "--connect", endpoint).stdout
    assert "paragraph" not in interactive
    # The whole snapshot's refs: the next command (eval --ref, steps) resolves them from a whole one.
    assert '- button "Go" [ref=e2]' in interactive
    webarena = run("snapshot", url, "--format", "webarena", "--connect", endpoint).stdout
    assert "] button 'Go'" in webarena
    cut = run("snapshot", url, "--max-chars", "80", "--connect", endpoint).stdout
    assert "(max_chars)" in cut
    data = json.loads(run("snapshot", url, "--json", "--connect", endpoint).stdout)
    assert data["refs"]["e2"]["role"] == "button"
    assert data["refs"]["e2"]["name"] == "Go"
    assert data["refs"]["e2"]["nth"] == 0  # they were left out, with frame_id and the stats below
    assert data["refs"]["e2"]["frame_id"]
    assert data["stats"]["nodes_seen"] >= data["stats"]["nodes_rendered"] > 0
    assert data["stats"]["duration_ms"] > 0


def test_eval_prints_the_value_and_takes_a_ref(endpoint: str, server: str) -> None:
    url = f"{server}/steps/index.html"
    title = run("eval", url, "document.title", "--connect", endpoint)
    assert title.returncode == 0, title.stderr
    assert title.stdout == "Steps\n"
    assert json.loads(run("eval", url, "[1, 2].map(x => x * 3)", "--connect", endpoint).stdout) == [3, 6]
    by_ref = run("eval", url, "(el) => el.textContent", "--ref", "e2", "--json", "--connect", endpoint)
    assert json.loads(by_ref.stdout) == "Go"
    thrown = failed(run("eval", url, "null.x", "--connect", endpoint), 1)
    assert thrown.startswith("cdp-engine eval: JavaScriptError: ")
    # With --json a failure prints a document too (it printed nothing on stdout).
    as_json = run("eval", url, "null.x", "--json", "--connect", endpoint)
    assert json.loads(as_json.stdout) == {
        "ok": False,
        "error": {"kind": "JavaScriptError", "message": thrown.split(": ", 2)[2], "status": 1},
    }
    # Bad input, not a page error: it read "JavaScriptError: the script threw TypeError" with status 1.
    not_a_function = failed(run("eval", url, "document.title", "--ref", "e2", "--connect", endpoint), 2)
    assert "with --ref, EXPR must be a function that takes the element" in not_a_function
    named = failed(
        run("eval", url, "el.textContent", "--ref", "e2", "--connect", endpoint), 2
    )  # (a ReferenceError)
    assert "with --ref, EXPR must be a function that takes the element" in named
    # The engine's advice, in the shell's terms (it said "await page.snapshot()").
    unknown = failed(run("eval", url, "(el) => 1", "--ref", "e99", "--connect", endpoint), 1)
    assert "cdp-engine snapshot URL" in unknown
    assert "await" not in unknown


def _strict_json(text: str) -> object:
    def refuse(word: str) -> object:
        raise ValueError(f"{word} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_eval_prints_valid_json_for_numbers_json_cannot_hold(endpoint: str, server: str) -> None:
    # It printed NaN and [1, Infinity, -0.0]: Python's JSON, which other JSON readers refuse.
    url = f"{server}/steps/index.html"
    expression = "[1, NaN, Infinity, -Infinity, -0, {a: [NaN]}, 'NaN']"
    for extra in ((), ("--json",)):
        done = run("eval", url, expression, *extra, "--connect", endpoint)
        assert done.returncode == 0, done.stderr
        assert _strict_json(done.stdout) == [1, "NaN", "Infinity", "-Infinity", "-0", {"a": ["NaN"]}, "NaN"]
    assert _strict_json(run("eval", url, "NaN", "--json", "--connect", endpoint).stdout) == "NaN"
    assert run("eval", url, "-0", "--connect", endpoint).stdout == "-0\n"


def test_an_empty_eval_expression_is_a_usage_error_before_a_browser_starts() -> None:
    # It launched a browser (3.5 s), then failed with a TypeError and exit 1.
    for expression in ("", "  "):
        line = failed(run("eval", "http://127.0.0.1:9/", expression, env=NO_BROWSER), 2)
        assert (
            line == "cdp-engine eval: EXPR is empty; give an expression such as 'document.title' or '() => 1'"
        )


def test_the_timeout_ms_deadline_is_one_line_and_exit_1(endpoint: str, server: str) -> None:
    started = time.monotonic()
    done = run(
        "eval", f"{server}/steps/index.html", "while (true) {}", "--timeout-ms", "2000", "--connect", endpoint
    )
    line = failed(done, 1)
    assert line == (
        "cdp-engine eval: the deadline of --timeout-ms 2000 passed while evaluating the expression "
        "(a larger --timeout-ms gives it more time)"
    )
    assert time.monotonic() - started < 30


@pytest.fixture
def unanswered() -> Iterator[str]:
    """A URL on 127.0.0.1 whose server takes the connection and never answers."""
    with socket.create_server(("127.0.0.1", 0)) as listener:  # the kernel accepts; nobody reads
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/slow"


@pytest.mark.parametrize(
    "command",
    [("snapshot", "{url}"), ("eval", "{url}", "1"), ("screenshot", "{url}", "-o", "{tmp}/x.png")],
)
def test_timeout_ms_bounds_the_page_load_too(
    command: tuple[str, ...], unanswered: str, endpoint: str, tmp_path: Path
) -> None:
    """Not only the work after it: a page load that never ends used to run to its own 30 s limit."""
    argv = [arg.format(url=unanswered, tmp=tmp_path) for arg in command]
    started = time.monotonic()
    line = failed(run(*argv, "--timeout-ms", "1000", "--connect", endpoint), 1)
    assert time.monotonic() - started < 10
    assert line == (
        f"cdp-engine {command[0]}: the deadline of --timeout-ms 1000 passed while loading {unanswered} "
        "(a larger --timeout-ms gives it more time)"
    )


def test_timeout_ms_bounds_a_page_whose_script_never_yields(endpoint: str) -> None:
    url = "data:text/html,<script>while (true) {}</script>"
    started = time.monotonic()
    line = failed(run("eval", url, "1", "--timeout-ms", "1000", "--connect", endpoint), 1)
    assert time.monotonic() - started < 10
    assert line.startswith(f"cdp-engine eval: the deadline of --timeout-ms 1000 passed while loading {url}")


def test_timeout_ms_bounds_the_launch_of_the_commands_own_browser(server: str) -> None:
    line = failed(run("snapshot", f"{server}/steps/index.html", "--timeout-ms", "1"), 1)
    assert line.startswith(
        "cdp-engine snapshot: the deadline of --timeout-ms 1 passed while launching a headless Chromium"
    )


def test_an_evaluate_past_the_default_budget_fails_with_the_engines_own_message(
    endpoint: str, server: str
) -> None:
    """EvaluateTimeout is a TooSlowError too; eval has no --seconds for the line to blame.

    The CLI runs with the default budget lowered to 2 s (the real one is 30 s): the message is the same."""
    started = time.monotonic()
    lowered = (
        "import sys; from engine import _settings, cli; "
        "object.__setattr__(_settings.DEFAULT_SETTINGS, 'evaluate_timeout', 2.0); sys.exit(cli.main())"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            lowered,
            "eval",
            f"{server}/steps/index.html",
            "new Promise(() => {})",
            "--connect",
            endpoint,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    line = failed(done, 1)
    assert line.startswith(
        "cdp-engine eval: EvaluateTimeout: evaluate ran past 2.0 s (the limit without --timeout-ms) and "
        "was terminated"
    ), line
    assert line.endswith("Give the command a deadline of its own with --timeout-ms"), line  # not trio's
    assert time.monotonic() - started < 30


def test_steps_from_a_file_print_the_result_and_a_failed_step_exits_1(
    endpoint: str, server: str, tmp_path: Path
) -> None:
    url = f"{server}/steps/index.html"
    good = tmp_path / "good.json"
    good.write_text(
        json.dumps(
            [
                {"type": "click", "target": "e2"},
                {"type": "wait_for", "text": "Clicked", "timeout_ms": 3000},
                {"type": "read_page"},
            ]
        )
    )
    done = run("steps", str(good), "--url", url, "--connect", endpoint)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["ok"] is True
    assert "paragraph: Clicked" in result["pages"][0]["text"]

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"steps": [{"type": "click", "target": "e999"}], "return_mode": "all"}))
    done = run("steps", str(bad), "--url", url, "--json", "--connect", endpoint)
    line = failed(done, 1)
    assert line.startswith("cdp-engine: step 0 (click) failed: StaleRefError: unknown ref 'e999'")
    result = json.loads(done.stdout)
    assert result["failed_step"] == 0
    # The step's advice in the shell's terms in the document too (it said "await page.snapshot()").
    message = result["steps"][0]["error"]["message"]
    assert "cdp-engine snapshot URL" in message
    assert "await" not in message


def test_invalid_steps_are_refused_before_a_browser_starts(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"type": "clik", "target": "e1"}, {"type": "fill", "target": "e2"}]))
    line = failed(run("steps", str(bad), env=NO_BROWSER), 2)
    assert line.startswith("cdp-engine steps: 2 problem(s) in the steps, nothing was run: step 0 type: ")
    assert "step 1 value: is missing" in line
    bad.write_text(json.dumps([{"type": "click", "target": "the button"}]))
    line = failed(run("steps", str(bad), env=NO_BROWSER), 2)
    assert "a ref from cdp-engine snapshot" in line, line  # it said page.snapshot()
    broken = failed(run("steps", "-", env=NO_BROWSER, stdin="[{"), 2)
    assert broken.startswith("cdp-engine steps: stdin is not valid JSON: ")
    missing = failed(run("steps", str(tmp_path / "nope.json"), env=NO_BROWSER), 2)
    assert "cannot read the steps file" in missing


def test_screenshot_writes_a_png_of_the_viewport_or_the_full_page(
    endpoint: str, server: str, tmp_path: Path
) -> None:
    url = f"{server}/steps/search.html"  # 3,000 px tall
    sizes = {}
    for name, extra in (("view", ()), ("full", ("--full-page",))):
        out = tmp_path / f"{name}.png"
        done = run("screenshot", url, "-o", str(out), *extra, "--json", "--connect", endpoint)
        assert done.returncode == 0, done.stderr
        png = out.read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
        assert json.loads(done.stdout) == {
            "path": str(out),
            "bytes": len(png),
            "width": width,
            "height": height,
        }
        sizes[name] = height
    assert sizes["full"] > 3000 > sizes["view"]
    line = failed(run("screenshot", url, "-o", str(tmp_path / "no" / "x.png"), env=NO_BROWSER), 2)
    assert "the folder" in line
    # "-" is stdout (it wrote a file named "-"); another suffix than .png was written as a PNG anyway.
    piped = subprocess.run(
        [sys.executable, "-m", "engine.cli", "screenshot", url, "-o", "-", "--connect", endpoint],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout[:8] == b"\x89PNG\r\n\x1a\n"
    assert piped.stderr == b""
    assert not (Path.cwd() / "-").exists()
    assert "name the file .png" in failed(run("screenshot", url, "-o", "x.jpg", env=NO_BROWSER), 2)
    # Before a browser starts (it was an IsADirectoryError once the page had loaded, exit 1).
    folder = failed(run("screenshot", url, "-o", str(tmp_path), env=NO_BROWSER), 2)
    assert folder.endswith(f"it is a folder; name a file in it (-o {tmp_path / 'page.png'})")
    assert "cannot write /proc/x.png: " in failed(
        run("screenshot", url, "-o", "/proc/x.png", env=NO_BROWSER), 2
    )
    failed(
        run("screenshot", "http://127.0.0.1:9/", "-o", str(tmp_path / "gone.png"), "--connect", endpoint), 1
    )
    assert not (tmp_path / "gone.png").exists()  # the file made to try the name is removed again
    both = run("screenshot", url, "-o", "-", "--json", env=NO_BROWSER)
    assert "choose one" in failed(both, 2)
    assert json.loads(both.stdout)["error"]["kind"] == "UsageError"


def test_version_and_drift_through_connect(endpoint: str) -> None:
    version = run("version", "--json", "--connect", endpoint)
    assert version.returncode == 0, version.stderr
    assert "Chrome/" in json.loads(version.stdout)["product"]
    drift = run("drift", "--connect", endpoint)
    assert drift.returncode == 0, drift.stderr
    first = drift.stdout.splitlines()[0]
    assert first.startswith(("no drift", "pinned "))
    for line in drift.stdout.splitlines()[1:]:
        if line.startswith("  "):
            assert line.split()[0] in ("browser", "pinned", "both"), line  # each difference names its side
    report = json.loads(run("drift", "--json", "--connect", endpoint).stdout)
    assert {d["side"] for d in report["differences"]} <= {"browser only", "pinned only", "both, different"}
    with urllib.request.urlopen(f"{endpoint}/json/version", timeout=10) as response:
        ws = json.load(response)["webSocketDebuggerUrl"]
    by_ws = run("drift", "--connect", ws)  # what `cdp-engine launch` prints second
    assert by_ws.returncode == 0, by_ws.stderr
    assert by_ws.stdout.splitlines()[1:] == drift.stdout.splitlines()[1:]


def test_a_command_launches_its_own_browser_without_connect(server: str) -> None:
    done = run("eval", f"{server}/steps/index.html", "document.querySelectorAll('button').length")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "2\n"


def test_debug_adds_the_traceback() -> None:
    done = run("eval", "http://127.0.0.1:9/", "1", "--debug", env=NO_BROWSER)
    assert done.returncode == 1
    assert "Traceback" in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("cdp-engine eval: BrowserLaunchError: ")


def test_bench_help_and_errors_name_cdp_engine_bench() -> None:
    done = run("bench", "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: cdp-engine bench ")
    assert "cdp-engine bench: error: --reps must be at least 2" in run("bench", "--reps", "1").stderr


def test_bench_runs_from_anywhere_with_the_checkouts_editable_install(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "cdp-engine"  # the console script, not `python -m` in the checkout
    command = [str(script), "bench", "--list"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "roundtrip.getVersion" in done.stdout


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (
            b'[{"type": "fill", "target": "e1", "value": "\xff"}]',
            "is not UTF-8 text (byte 0xff at offset 44)",
        ),
        (b"[" * 100_000 + b"]" * 100_000, "its JSON nests too deep to read"),
        (b"{}", 'the object has no "steps" key'),
        (b'{"steps": [{"type": "read_page"}], "fail_fast": "no"}', 'fail_fast: is "no"; give true or false'),
    ],
)
def test_a_bad_steps_file_is_a_usage_error_that_says_what_is_wrong(
    tmp_path: Path, content: bytes, says: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    line = failed(run("steps", str(bad), env=NO_BROWSER), 2)
    assert says in line
    assert "--debug" not in line


def test_a_steps_file_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    marked = tmp_path / "bom.json"
    marked.write_bytes(b'\xef\xbb\xbf[{"type": "clik"}]')  # a valid file would start a browser
    line = failed(run("steps", str(marked), env=NO_BROWSER), 2)
    assert "step 0 type: " in line
