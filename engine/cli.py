"""``cdp-engine``: script the protocol, snapshots, evaluate and steps from the shell.

    cdp-engine launch [--port N]            a headless Chromium on a loopback websocket, until Ctrl-C
    cdp-engine snapshot URL [--interactive] [--format yaml|webarena] [--max-chars N]
    cdp-engine eval URL EXPR [--ref R] [--timeout-ms N]
    cdp-engine steps FILE.json [--url URL] [--return-mode final|all|delta]
    cdp-engine screenshot URL -o FILE.png [--full-page]     (-o -: to stdout)
    cdp-engine call METHOD [PARAMS_JSON] [--url PAGE_URL]
    cdp-engine listen EVENT [EVENT ...] [--url PAGE_URL] [--count N] [--seconds S]
    cdp-engine protocol [QUERY]                         search domains, commands, events and types
    cdp-engine version | drift                          the browser's version; the pinned protocol against it
    cdp-engine bench [--quick] [--json PATH]            (from a checkout of the repository)

Without --connect, a headless Chromium is launched for the command and closed after it. Failures print one
line on stderr and exit non-zero (2: the command line is wrong and nothing started; 1: the command failed;
130: Ctrl-C; 141: stdout was closed, as under `| head`); --debug adds the traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import signal
import sys
import traceback
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, NoReturn
from urllib.parse import urlsplit

import trio

import cdp
from engine import drift as _drift
from engine._browser import launch
from engine._cli_page import (
    deadline,
    doing,
    emit,
    eval_command,
    launch_command,
    open_browser,
    progress,
    read_steps,
    screenshot_command,
    snapshot_command,
    steps_command,
)
from engine._cli_protocol import (
    CommandFailed,
    UsageError,
    check_event,
    check_method,
    check_params,
    drift_lines,
    in_shell_terms,
    protocol_lines,
)
from engine._errors import CDPError, StepsValidationError
from engine._session import Session
from engine._util import unwrap_group

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_PIPE_CLOSED = 141  # 128 + SIGPIPE, what a shell reports for a writer whose reader went away


# --- the protocol commands --------------------------------------------------------------------------------


async def _target(browser: Any, method: str, page_url: str | None) -> Session:
    """Browser-level methods go to the browser session; everything else to a fresh page."""
    if page_url is None and method.split(".", maxsplit=1)[0] in (
        "Browser",
        "Target",
        "SystemInfo",
        "Storage",
    ):
        session: Session = browser.session
        return session
    page = await browser.new_page(page_url)
    return page.session  # type: ignore[no-any-return]


async def _version(args: argparse.Namespace) -> None:
    with deadline(args):
        async with open_browser(args) as browser:
            doing(args, "asking for the version")
            version = await browser.version()
    emit(json.dumps(cdp.converter.unstructure(version), indent=None if args.json else 2))


def _call_params(args: argparse.Namespace) -> dict[str, Any]:
    """PARAMS_JSON, read and checked against the bindings before a browser starts."""
    try:
        params = json.loads(args.params) if args.params else {}
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"PARAMS_JSON is not valid JSON: {exc.msg} at column {exc.colno} of {args.params!r}"
        ) from None
    if not isinstance(params, dict):
        raise UsageError(
            f'PARAMS_JSON must be a JSON object such as \'{{"url": "..."}}\', not {args.params!r}'
        )
    if not args.no_check:
        check_method(args.method)
        check_params(args.method, params)
    return params


CALL_SECONDS = 30.0
"""The answer's own deadline when neither --seconds nor --timeout-ms is given."""


async def _call(args: argparse.Namespace, params: dict[str, Any]) -> None:
    # --timeout-ms bounds the whole run, as for the page commands; --seconds the answer alone.
    seconds = args.seconds if args.seconds is not None else math.inf if args.timeout_ms else CALL_SECONDS
    with deadline(args):
        async with open_browser(args) as browser:
            if args.url is not None:
                doing(args, f"loading {args.url}")
            session = await _target(browser, args.method, args.url)
            doing(args, f"waiting for the answer to {args.method}")
            with trio.move_on_after(seconds) as waited:
                result = await session.execute_raw(args.method, params)
            if waited.cancelled_caught:
                raise CommandFailed(
                    f"no answer to {args.method} within --seconds {seconds:g} "
                    "(a larger --seconds waits longer)"
                )
    emit(json.dumps(result, indent=None if args.json else 2))


async def _listen(args: argparse.Namespace) -> None:
    async with open_browser(args) as browser:
        page = await browser.new_page()
        domains = {name.split(".")[0] for name in args.events}
        async with page.session.listen(*args.events, buffer_size=10_000, typed=False, strict=False) as events:
            for domain in sorted(domains):
                with contextlib.suppress(CDPError):  # not every domain has enable()
                    await page.session.execute_raw(f"{domain}.enable")
            if args.url:
                await page.goto(args.url)
            seen = 0
            with trio.move_on_after(args.seconds):
                async for event in events:
                    emit(json.dumps({"method": event.method, "params": event.params}))
                    seen += 1
                    if args.count is not None and seen >= args.count:
                        break
            if args.count is not None and seen < args.count:
                # A script that asked for N events must not take fewer for all of them.
                raise CommandFailed(
                    f"{seen} of the {args.count} event(s) asked for came within --seconds {args.seconds:g}; "
                    "a larger --seconds waits longer"
                )


async def drift_report(connect_url: str | None, *, as_json: bool = False) -> str:
    """The pinned protocol against a browser's ``/json/protocol`` (a launched one unless ``connect_url``).

    The pinned side is the copy packaged with the engine, so this works from an install without a checkout.
    Each difference says its side: only in the browser, only in the pinned protocol, or in both but
    different.
    """
    if connect_url:
        live = await trio.to_thread.run_sync(_drift.fetch_live, connect_url)
        name = f"the browser at {connect_url}"
    else:
        async with launch(transport="websocket") as browser:
            assert browser.process is not None
            assert browser.process.ws_url is not None
            url = "http://" + browser.process.ws_url.split("/")[2]
            live = await trio.to_thread.run_sync(_drift.fetch_live, url)
            # Named by its build, not its port: the report is read after the browser is gone.
            name = f"{(await browser.version()).product} (launched for this report)"
    report = _drift.compare(_drift.load_pinned(), live)
    return "\n".join(drift_lines(report, browser=name, as_json=as_json))


async def _drift_command(args: argparse.Namespace) -> None:
    progress(args, "reading the browser's /json/protocol ...")
    emit(await drift_report(args.connect, as_json=args.json))


_NO_BENCHMARKS = """\
cdp-engine bench: the latency suite is not installed with the package; it runs from a checkout.
Clone the cdp-engine source repository, then run `make bench` in it (it sets up .venv with the
bench extra and runs `python -m benchmarks`)."""


def _bench(argv: Sequence[str]) -> int:
    try:
        from benchmarks.harness import main as bench_main  # noqa: PLC0415 - the suite loads only for bench
    except ModuleNotFoundError as exc:
        if exc.name not in ("benchmarks", "benchmarks.harness"):  # the suite is there but broken
            raise
        print(_NO_BENCHMARKS, file=sys.stderr)  # an install without a checkout (or someone else's benchmarks)
        return 1
    result: int = bench_main(list(argv), prog="cdp-engine bench")
    return result


# --- the command line -------------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error in one line that says where the help is."""

    commands: Mapping[str, argparse.ArgumentParser]
    json_wanted = False  # --json was given: a usage error prints its document too (set by parse_command)

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: {message} (see {self.prog} --help)", file=sys.stderr)
        if _Parser.json_wanted:
            _failure_document("UsageError", message, EXIT_USAGE)
        sys.exit(EXIT_USAGE)

    def parse_command(self, argv: Sequence[str]) -> argparse.Namespace:
        """parse_args, but an argument the command does not take is blamed on the command, whose --help
        lists what it does take (argparse blames the top level, whose help lists only the commands)."""
        _Parser.json_wanted = "--json" in argv
        args, extra = self.parse_known_args(argv)
        if extra:
            self.commands[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
        return args


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--count takes a whole number of events, not {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"--count {value}: give 0 or more events (0 means none)")
    return value


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a port number, not {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text}: give a port from 0 (a free one) to 65535")
    return port


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a number of seconds, not {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text}: give a finite number of seconds, 0 or more")
    return value


_ENDPOINTS = "http://host:port (what `cdp-engine launch` prints) or ws://host:port/devtools/browser/..."


def _endpoint(text: str) -> str:
    """--connect: a DevTools endpoint, checked here so that a typo is bad input (2), not a failure (1)."""
    parts = urlsplit(text)
    if parts.scheme in ("https", "wss"):
        raise argparse.ArgumentTypeError(
            f"{text!r}: TLS endpoints are not supported; reach the browser over http:// or ws://"
        )
    if "://" not in text and text.rpartition(":")[2].isdigit():  # host:port
        raise argparse.ArgumentTypeError(f"{text!r} has no scheme; did you mean 'http://{text}'?")
    if parts.scheme not in ("http", "ws") or not parts.hostname:
        raise argparse.ArgumentTypeError(f"{text!r} is not a browser endpoint; give {_ENDPOINTS}")
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0 or (port is None and parts.netloc.endswith(":")):
        raise argparse.ArgumentTypeError(f"{text!r}: the port must be a number from 1 to 65535")
    return text


_SCHEME = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*:")
_HOST_PORT = re.compile(r"[^/:?#]+:\d+(?:[/?#]|$)")


def _page_url(text: str) -> str:
    """A page to load, checked here so that a typo is bad input (2) before a browser starts, not a
    NavigationError (1) after."""
    if _HOST_PORT.match(text) or not _SCHEME.match(text):
        raise argparse.ArgumentTypeError(f"{text!r} has no scheme; did you mean 'http://{text}'?")
    if text[: len("javascript:")].lower() == "javascript:":
        raise argparse.ArgumentTypeError(
            f"{text!r}: a javascript: URL is a script, not a page; load the page, then use eval"
        )
    return text


def _positive_int(what: str) -> Any:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} is a whole number, not {text!r}") from None
        if value < 1:
            raise argparse.ArgumentTypeError(f"{what} {value}: give 1 or more")
        return value

    return parse


def build_parser() -> _Parser:
    common = _Parser(add_help=False)
    common.add_argument("--debug", action="store_true", help="print the traceback of a failure")
    common.add_argument(
        "--json",
        action="store_true",
        help='print JSON (one document) for scripts to parse; on failure {"ok": false, "error": {...}}',
    )
    browser = _Parser(add_help=False)
    browser.add_argument(
        "--connect",
        type=_endpoint,
        metavar="URL",
        help="use a running browser (http://host:port or ws://...) instead of launching",
    )
    browser.add_argument(
        "--progress", action="store_true", help="say what is happening on stderr, also in a pipe"
    )
    timed = _Parser(add_help=False)
    timed.add_argument(
        "--timeout-ms",
        type=_positive_int("--timeout-ms"),
        metavar="N",
        help="the whole command's deadline in milliseconds: browser start, page load and the work "
        "(as trio.fail_after around it in Python)",
    )
    both = [common, browser]

    parser = _Parser(
        prog="cdp-engine",
        description=(__doc__ or "").split("\n\n")[0],
        epilog="Each command has its own --help.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser(
        "launch", parents=[common], help="start a headless Chromium for --connect; Ctrl-C stops it"
    )
    p.add_argument("--seconds", type=_seconds, help="stop after this long instead of waiting for Ctrl-C")
    p.add_argument(
        "--port",
        type=_port,
        default=0,
        help="the DevTools port on 127.0.0.1 (default: a free one; 9222 is the usual for tools)",
    )

    p = sub.add_parser("snapshot", parents=[*both, timed], help="print a page's snapshot (refs to act on)")
    p.add_argument("url", metavar="URL", type=_page_url, help="the page to load")
    p.add_argument("--interactive", action="store_true", help="only the controls (interactive_only)")
    p.add_argument(
        "--format", choices=("yaml", "webarena"), default="yaml", help="the text format (default yaml)"
    )
    p.add_argument(
        "--max-chars", type=_positive_int("--max-chars"), metavar="N", help="cut the text at N characters"
    )

    p = sub.add_parser(
        "eval",
        parents=[*both, timed],
        help="evaluate JavaScript in a page, print the value",
        description="Evaluate JavaScript in a page and print its value: a string as it is (as JSON with "
        "--json), anything else as JSON. NaN, Infinity, -Infinity and -0, which JSON cannot hold, print as "
        'the strings "NaN", "Infinity", "-Infinity" and "-0" (CDP\'s unserializableValue spellings).',
    )
    p.add_argument("url", metavar="URL", type=_page_url, help="the page to load")
    p.add_argument("expression", metavar="EXPR", help="an expression, or function source such as '() => 1'")
    p.add_argument(
        "--ref", metavar="R", help="run the function with this element (a ref from `snapshot URL`)"
    )

    p = sub.add_parser("steps", parents=[*both, timed], help="run a steps file on a page, print the result")
    p.add_argument(
        "file",
        metavar="FILE.json",
        help='a list of steps, or {"steps": [...]} with options beside it ("return_mode": "all", ...); '
        "- reads stdin",
    )
    p.add_argument(
        "--url", type=_page_url, help="load this page first (and snapshot it, so its refs resolve)"
    )
    p.add_argument("--return-mode", choices=("final", "all", "delta"), help="which page output comes back")
    p.add_argument(
        "--keep-going",
        dest="fail_fast",
        action="store_const",
        const=False,
        help="run the later steps after a failure (fail_fast=False)",
    )
    p.add_argument(
        "--max-steps", type=_positive_int("--max-steps"), metavar="N", help="the most steps (default 10)"
    )
    p.add_argument(
        "--per-step-timeout-ms",
        type=_positive_int("--per-step-timeout-ms"),
        metavar="N",
        help="each step's limit",
    )

    p = sub.add_parser("screenshot", parents=[*both, timed], help="save a PNG of a page")
    p.add_argument("url", metavar="URL", type=_page_url, help="the page to load")
    p.add_argument(
        "-o", "--output", required=True, metavar="FILE.png", help="where to write the PNG (-: to stdout)"
    )
    p.add_argument("--full-page", action="store_true", help="the whole page, not only the viewport")

    p = sub.add_parser("call", parents=[*both, timed], help="send one command and print its raw result")
    p.add_argument("method", metavar="METHOD", help="Domain.method, e.g. Runtime.evaluate")
    p.add_argument("params", nargs="?", metavar="PARAMS_JSON", help="the params as a JSON object")
    p.add_argument("--url", type=_page_url, help="open this page first and send the command to its session")
    p.add_argument(
        "--seconds",
        type=_seconds,
        help=f"deadline for the answer alone (default {CALL_SECONDS:g} when --timeout-ms is not given)",
    )
    p.add_argument("--no-check", action="store_true", help="send a method or params the bindings do not know")

    p = sub.add_parser("listen", parents=both, help="print events of a fresh page as JSON lines")
    p.add_argument("events", nargs="+", metavar="EVENT", help="event methods, e.g. Runtime.consoleAPICalled")
    p.add_argument("--url", type=_page_url, help="load this page after subscribing")
    p.add_argument("--count", type=_count, help="stop after N events (0: none; default: until --seconds)")
    p.add_argument("--seconds", type=_seconds, default=10.0, help="stop after this long (default 10)")
    p.add_argument("--no-check", action="store_true", help="listen to events the bindings do not know")

    p = sub.add_parser(
        "protocol", parents=[common], help="search the bindings: domains, commands, events, types"
    )
    p.add_argument("query", nargs="?", metavar="QUERY", help="a name (Page.navigate) or words; any case")

    p = sub.add_parser("version", parents=[*both, timed], help="print the browser's version")
    p = sub.add_parser(
        "drift", parents=both, help="compare the pinned protocol with a browser's /json/protocol"
    )
    sub.add_parser("bench", help="the latency suite (see `cdp-engine bench --help`)")
    parser.commands = sub.choices
    return parser


class _Signalled(Exception):
    """SIGTERM or SIGHUP came: the command stops as Ctrl-C stops it."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


async def _stoppable(command: Callable[..., Awaitable[Any]], *args: Any) -> Any:
    """Run ``command``; SIGTERM and SIGHUP cancel it, so that its browser closes and its profile is removed
    (Python's default for SIGTERM is to die on the spot, leaving the profile to the next launch)."""
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGHUP) as signals:
        async with trio.open_nursery() as nursery:

            async def watch() -> None:
                async for signum in signals:
                    raise _Signalled(signum)

            nursery.start_soon(watch)
            result = await command(*args)
            nursery.cancel_scope.cancel()
    return result


def _run(args: argparse.Namespace) -> int:
    """Check what can be checked without a browser, then run the command."""
    command = args.command
    if command == "protocol":
        emit("\n".join(protocol_lines(args.query, as_json=args.json)))
        return 0
    if command == "call":
        params = _call_params(args)
        trio.run(_stoppable, _call, args, params)
        return 0
    if command == "listen":
        if not args.no_check:
            for event in args.events:
                check_event(event)
        if args.count == 0:
            return 0  # none asked for: nothing to start
        trio.run(_stoppable, _listen, args)
        return 0
    if command == "eval" and not args.expression.strip():  # evaluate() says so only after a launch
        raise UsageError("EXPR is empty; give an expression such as 'document.title' or '() => 1'")
    if command == "steps":
        steps, options = read_steps(args)
        status: int = trio.run(_stoppable, steps_command, args, steps, options)
        return status
    if command == "launch":  # it handles the signals itself: they are how it is meant to end
        trio.run(launch_command, args)
        return 0
    handlers: dict[str, Any] = {
        "snapshot": snapshot_command,
        "eval": eval_command,
        "screenshot": screenshot_command,
        "version": _version,
        "drift": _drift_command,
    }
    trio.run(_stoppable, handlers[command], args)
    return 0


def _one_line(exc: BaseException, args: argparse.Namespace | None = None) -> str:
    text = str(exc).strip() if args is None else _in_cli_terms(str(exc).strip(), args)
    first = text.splitlines()[0] if text else type(exc).__name__
    return first if len(first) <= 300 else first[:297] + "..."


# Only the limits a deadline of the caller's replaces (launch_timeout, max_inbound_bytes... stay as they are).
_PYTHON_LIMIT = re.compile(
    r"\(Settings\.(evaluate_timeout|navigation_timeout)(; no deadline of your own was set)?\)"
)
_PYTHON_ADVICE = re.compile(r"Set your own deadline with trio\.fail_after(, or raise the setting)?")


def _in_cli_terms(text: str, args: argparse.Namespace) -> str:
    """An engine message's advice for Python callers (Settings, trio.fail_after, page.snapshot()), said with
    the CLI's means (--timeout-ms, cdp-engine snapshot)."""
    text = in_shell_terms(text)
    if not hasattr(args, "timeout_ms"):
        return text
    text = _PYTHON_LIMIT.sub("(the limit without --timeout-ms)", text)
    return _PYTHON_ADVICE.sub("Give the command a deadline of its own with --timeout-ms", text)


def _failure(exc: BaseException, args: argparse.Namespace) -> tuple[int, str]:
    """The exit status and the one line for a failure."""
    # connect() closes the tabs it opened and leaves the browser running
    closed = "its tab was closed" if getattr(args, "connect", None) else "the browser was closed"
    if isinstance(exc, KeyboardInterrupt):
        if args.command == "launch":
            return 0, "stopped: its browser is closed"
        return EXIT_INTERRUPTED, f"interrupted (Ctrl-C); {closed}"
    if isinstance(exc, _Signalled):
        return 128 + exc.signum, f"stopped by {exc}; {closed}"
    if isinstance(exc, UsageError):
        return EXIT_USAGE, str(exc)
    if isinstance(exc, CommandFailed):
        return EXIT_FAILED, str(exc)
    if isinstance(exc, StepsValidationError):
        problems = "; ".join(in_shell_terms(str(p)) for p in exc.problems) or _one_line(exc)
        return EXIT_USAGE, f"{len(exc.problems)} problem(s) in the steps, nothing was run: {problems}"
    if isinstance(exc, CDPError):  # before TooSlowError: EvaluateTimeout is both, and says more
        return EXIT_FAILED, f"{type(exc).__name__}: {_one_line(exc, args)}"
    if isinstance(exc, trio.TooSlowError) and getattr(args, "timeout_ms", None) is not None:
        under_way = getattr(args, "doing", "starting")
        return (
            EXIT_FAILED,
            f"the deadline of --timeout-ms {args.timeout_ms} passed while {under_way} "
            "(a larger --timeout-ms gives it more time)",
        )
    if isinstance(exc, OSError):
        return EXIT_FAILED, f"{type(exc).__name__}: {_one_line(exc)}"
    return EXIT_FAILED, f"{type(exc).__name__}: {_one_line(exc)} (--debug shows where)"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["bench"]:
        return _bench(argv[1:])
    args = build_parser().parse_command(argv)
    try:
        return _run(args)
    except BaseException as raw:
        exc = unwrap_group(raw) if isinstance(raw, BaseExceptionGroup) else raw
        if isinstance(exc, SystemExit):
            raise
        if isinstance(exc, BrokenPipeError) or (
            isinstance(exc, OSError) and getattr(exc, "errno", None) == 32  # EPIPE
        ):
            # The reader went away (`| head`): stop quietly; point stdout at nothing so the interpreter's
            # last flush does not fail again.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            return EXIT_PIPE_CLOSED
        if not isinstance(exc, Exception | KeyboardInterrupt):
            raise
        status, line = _failure(exc, args)
        if args.debug:
            traceback.print_exception(exc)
        print(f"cdp-engine {args.command}: {line}", file=sys.stderr)
        if getattr(args, "json", False) and status:
            kind = "interrupted" if isinstance(exc, KeyboardInterrupt | _Signalled) else type(exc).__name__
            _failure_document(kind, line.removeprefix(f"{kind}: "), status)
        return status


def _failure_document(kind: str, message: str, status: int) -> None:
    """With --json, a failure's document on stdout, for a script that parses it (steps prints its own)."""
    with contextlib.suppress(OSError):
        emit(json.dumps({"ok": False, "error": {"kind": kind, "message": message, "status": status}}))


if __name__ == "__main__":
    sys.exit(main())
