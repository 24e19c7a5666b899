"""The CLI's page commands: ``launch``, ``snapshot``, ``eval``, ``steps`` and ``screenshot``.

Each opens a fresh tab (in a browser it launches, or the one ``--connect`` names), loads the URL, and does
its one thing. ``--timeout-ms`` bounds all of it, as ``trio.fail_after`` around the Python calls would: a
deadline that let the page load run on (up to its 30 s default) was no deadline to a script.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

from engine import steps as _steps
from engine._browser import Browser, connect, launch
from engine._cli_protocol import CommandFailed, UsageError, in_shell_terms
from engine._errors import JavaScriptError
from engine._evaluate import NOT_A_FUNCTION
from engine._page import Page
from engine._process import ChromiumProcess, _describe_exit


def progress(args: argparse.Namespace, message: str) -> None:
    """A line on stderr about long work, when a person watches (stderr is a terminal)."""
    if getattr(args, "progress", None) or (sys.stderr.isatty() and not getattr(args, "json", False)):
        print(f"cdp-engine: {message}", file=sys.stderr, flush=True)


def doing(args: argparse.Namespace, what: str) -> None:
    """What the command does now: said as progress, and kept for the line of a passed --timeout-ms."""
    args.doing = what
    progress(args, f"{what} ...")


@asynccontextmanager
async def open_browser(args: argparse.Namespace) -> AsyncIterator[Browser]:
    if getattr(args, "connect", None):
        doing(args, f"connecting to {args.connect}")
        async with connect(args.connect) as browser:
            yield browser
            _work_done(args)
    else:
        doing(args, "launching a headless Chromium")
        async with launch() as browser:
            yield browser
            _work_done(args)


def _work_done(args: argparse.Namespace) -> None:
    """The work is done: --timeout-ms no longer applies, so the close that follows (bounded by its own
    budget) cannot run into it and lose the result."""
    scope: trio.CancelScope | None = getattr(args, "deadline_scope", None)
    if scope is not None:
        scope.deadline = math.inf


async def open_page(
    browser: Browser, args: argparse.Namespace, url: str | None, *, refs: bool = False
) -> Page:
    """A new tab at ``url``; with ``refs``, after the snapshot that hands out refs (as `cdp-engine snapshot
    URL` would), so that refs from that command's output resolve."""
    doing(args, "opening a tab")
    page = await browser.new_page()
    if url:
        doing(args, f"loading {url}")
        await page.goto(url)
    if refs:
        doing(args, "taking the snapshot that gives the refs")
        await page.snapshot()
    return page


@contextlib.contextmanager
def deadline(args: argparse.Namespace) -> Iterator[trio.CancelScope]:
    """The whole command's deadline (--timeout-ms), as trio.fail_after around the Python calls, until the
    work is done (see open_browser)."""
    ms = getattr(args, "timeout_ms", None)
    with trio.fail_after(ms / 1000) if ms is not None else trio.CancelScope() as scope:
        args.deadline_scope = scope
        yield scope


def emit(text: str) -> None:
    """``text`` as a line on stdout; a closed pipe raises here, inside the command's error handling."""
    line = text if text.endswith("\n") else text + "\n"
    write_out(line.encode(sys.stdout.encoding or "utf-8", sys.stdout.errors or "strict"))


def write_out(data: bytes) -> None:
    """``data`` on stdout, whole, or BrokenPipeError. Not through ``sys.stdout.buffer``: CPython's buffered
    write of a large block returns without error when the pipe's reader leaves after part of it went
    out, so ``eval ... | head -c 3`` of a 40 MB value exited 0 instead of 141."""
    sys.stdout.flush()
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # a replaced stdout (a test's capture, an IDE's console)
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


# --- launch ------------------------------------------------------------------------------------------------


async def launch_command(args: argparse.Namespace) -> None:
    """Start a headless Chromium on a loopback websocket, print its endpoint, run until Ctrl-C."""
    if args.port:
        # Chromium would listen on [::1] instead, where a tool told 127.0.0.1 does not look.
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Chromium's: past TIME_WAIT
            try:
                probe.bind(("127.0.0.1", args.port))
            except OSError as exc:
                raise UsageError(
                    f"--port {args.port}: 127.0.0.1:{args.port} is taken ({exc.strerror}); choose another "
                    "port, or --port 0 for a free one"
                ) from None
    # Chromium takes the last of a repeated flag: this one, after launch()'s own port 0.
    port = [f"--remote-debugging-port={args.port}"] if args.port else []
    async with launch(transport="websocket", args=port) as browser:
        # A tab for tools that attach to an existing page (chrome-remote-interface, /json/list): a launch
        # opens none of its own.
        await browser.new_page()
        assert browser.process is not None
        assert browser.process.ws_url is not None
        ws = browser.process.ws_url
        http = "http://" + ws.split("/")[2]
        if args.json:
            emit(json.dumps({"http": http, "ws": ws, "pid": browser.process.pid}))
        else:
            emit(f"{http}\n{ws}")
            print(
                f"cdp-engine: Chromium is listening on 127.0.0.1; use it with --connect {http}. "
                "Ctrl-C stops it.",
                file=sys.stderr,
                flush=True,
            )
        ended = await _serve(browser, browser.process, args.seconds)
        if ended is not None:
            until = "Ctrl-C" if args.seconds is None else f"Ctrl-C or --seconds {args.seconds}"
            how = (
                f"exited, with {_describe_exit(ended)}"
                if ended != _STILL_RUNNING
                else "closed its DevTools link"
            )
            raise CommandFailed(
                f"the browser {how} before {until} (a client's Browser.close, a kill or a crash); nothing "
                f"listens at {http} any more"
            )
    # SIGTERM, SIGHUP or --seconds: said as Ctrl-C's end is (cli._failure), once the browser is closed.
    print("cdp-engine launch: stopped: its browser is closed", file=sys.stderr, flush=True)


async def _serve(browser: Browser, process: ChromiumProcess, seconds: float | None) -> int | None:
    """Wait for Ctrl-C, SIGTERM or SIGHUP, ``seconds``, or the browser's own end; its exit status then.

    Without the last, a browser closed by a client (Browser.close) or killed left launch silent and
    "serving" nothing until --seconds ran out. The end is the link to the browser closing, not the
    process started exiting: that can be a launcher script that forked the browser and left.
    """
    exited: list[int] = []
    # SIGTERM and SIGHUP end it as Ctrl-C does: the browser closes and its profile is removed.
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGHUP) as signals:
        async with trio.open_nursery() as nursery:

            async def on_signal() -> None:
                async for signum in signals:
                    name = signal.Signals(signum).name
                    print(f"cdp-engine launch: {name}: closing the browser", file=sys.stderr)
                    nursery.cancel_scope.cancel()

            async def on_exit() -> None:
                await browser.connection.wait_closed()
                await process.wait_exit(EXIT_GRACE)
                code = process.process.returncode
                exited.append(_STILL_RUNNING if code is None else code)
                nursery.cancel_scope.cancel()

            nursery.start_soon(on_signal)
            nursery.start_soon(on_exit)
            await trio.sleep(math.inf if seconds is None else seconds)
            nursery.cancel_scope.cancel()
    return exited[0] if exited else None


_STILL_RUNNING = 1 << 16  # not an exit status: the link closed, the process did not exit (in EXIT_GRACE)

EXIT_GRACE = 2.0
"""Seconds ``launch`` waits, once its link to the browser closed, for the browser's exit status."""


# --- snapshot ----------------------------------------------------------------------------------------------


async def snapshot_command(args: argparse.Namespace) -> None:
    with deadline(args):
        async with open_browser(args) as browser:
            page = await open_page(browser, args, args.url)
            doing(args, "taking the snapshot")
            snap = await page.snapshot(
                interactive_only=args.interactive, format=args.format, max_chars=args.max_chars
            )
    if args.json:
        # As the Python API's Ref and SnapshotStats have them (nth and frame_id tell equal names apart).
        refs = {
            ref: {
                "role": r.role,
                "name": r.name,
                "nth": r.nth,
                "backend_node_id": r.backend_node_id,
                "frame_id": r.frame_id,
            }
            for ref, r in snap.refs.items()
        }
        stats = {
            "refs": snap.stats.refs,
            "nodes_seen": snap.stats.nodes_seen,
            "nodes_rendered": snap.stats.nodes_rendered,
            "bytes": snap.stats.bytes,
            "frames": snap.stats.frames,
            "duration_ms": snap.stats.duration_ms,
            "truncated": snap.stats.truncated,
        }
        emit(json.dumps({"url": args.url, "text": snap.text, "refs": refs, "stats": stats}))
    else:
        emit(snap.text)


# --- eval --------------------------------------------------------------------------------------------------


async def eval_command(args: argparse.Namespace) -> None:
    with deadline(args):
        async with open_browser(args) as browser:
            page = await open_page(browser, args, args.url, refs=bool(args.ref))
            doing(args, "evaluating the expression")
            value = await _evaluate(page, args.expression, args.ref)
    value = json_ready(value)
    if isinstance(value, str) and not args.json:
        emit(value)
    else:
        emit(json.dumps(value, ensure_ascii=False, allow_nan=False))


def json_ready(value: Any) -> Any:
    """``value`` with NaN, Infinity, -Infinity and -0 as those strings (CDP's own ``unserializableValue``
    spellings), at any depth: JSON has no such numbers, and Python's NaN in the output broke JSON readers."""
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        if value == 0 and math.copysign(1.0, value) < 0:
            return "-0"
        return value
    if isinstance(value, list | tuple):
        return [json_ready(item) for item in value]
    if isinstance(value, dict):
        return {key: json_ready(item) for key, item in value.items()}
    return value


async def _evaluate(page: Page, expression: str, ref: str | None) -> Any:
    if not ref:
        return await page.evaluate(expression)
    try:
        return await page.evaluate(expression, ref=ref)
    except JavaScriptError as exc:
        if NOT_A_FUNCTION not in str(exc):
            raise
        # Bad input, not a page error: only the page can tell (a name like myFn may hold a function).
        raise UsageError(
            f"with --ref, EXPR must be a function that takes the element, like '(el) => el.textContent'; "
            f"{expression!r} evaluated to something else (nothing was called)"
        ) from None


# --- steps -------------------------------------------------------------------------------------------------

_STEP_OPTIONS = ("fail_fast", "return_mode", "max_steps", "per_step_timeout_ms")


def read_steps(args: argparse.Namespace) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The steps file (a list of steps, or {"steps": [...], options}), validated before any browser starts.

    Raises:
        UsageError: the file is missing, not UTF-8, not JSON, nested too deep to read, or an object
            without a ``steps`` key.
        StepsValidationError: the steps are invalid (every problem listed).
    """
    name = args.file
    try:
        raw = sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read the steps file {name}: {exc.strerror or exc}") from None
    try:  # JSON is UTF-8 (RFC 8259), whatever the locale; "-sig" forgives an editor's BOM
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"{name} is not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
            "save it as UTF-8 JSON"
        ) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"{'stdin' if name == '-' else name} is not valid JSON: {exc.msg} at line {exc.lineno} "
            f"column {exc.colno}"
        ) from None
    except RecursionError:  # json's C reader recurses per level; a steps file needs three or four
        raise UsageError(
            f"{name}: its JSON nests too deep to read (a steps file needs a few levels)"
        ) from None
    options: dict[str, Any] = {}
    if isinstance(data, dict):
        unknown = sorted(set(data) - {"steps", *_STEP_OPTIONS})
        if unknown:
            raise UsageError(
                f"{name}: unknown key(s) {', '.join(unknown)}; an object there holds steps and "
                f"optionally {', '.join(_STEP_OPTIONS)}"
            )
        if "steps" not in data:
            raise UsageError(
                f'{name}: the object has no "steps" key; give a list of steps, or {{"steps": [...]}} '
                f"with optionally {', '.join(_STEP_OPTIONS)}"
            )
        options = {k: data[k] for k in _STEP_OPTIONS if k in data}
        data = data["steps"]
    for key in _STEP_OPTIONS:
        given = getattr(args, key, None)
        if given is not None:
            options[key] = given
    steps = _steps.validate(
        data,
        max_steps=options.get("max_steps", _steps.DEFAULT_MAX_STEPS),
        return_mode=options.get("return_mode", "final"),
        per_step_timeout_ms=options.get("per_step_timeout_ms", _steps.DEFAULT_PER_STEP_TIMEOUT_MS),
        fail_fast=options.get("fail_fast", True),
    )
    return steps, options


async def steps_command(
    args: argparse.Namespace, steps: list[dict[str, Any]], options: dict[str, Any]
) -> int:
    with deadline(args):
        async with open_browser(args) as browser:
            page = await open_page(browser, args, args.url, refs=bool(args.url))
            doing(args, f"running {len(steps)} step(s)")
            result = await page.run_steps(steps, **options)
    data = result.to_json()
    for step in data["steps"]:  # the steps' advice as said on the command line, as on stderr below
        if step["error"] and "message" in step["error"]:
            step["error"] = {**step["error"], "message": in_shell_terms(step["error"]["message"])}
    if args.json:
        emit(json.dumps(data, ensure_ascii=False, separators=(",", ":")))
    else:
        emit(json.dumps(data, indent=2, ensure_ascii=False))
    if result.ok:
        return 0
    failed = result.steps[result.failed_step or 0]
    error = failed.error or {}
    print(
        f"cdp-engine: step {failed.index} ({failed.type}) failed: {error.get('kind')}: "
        f"{in_shell_terms(error.get('message', '').splitlines()[0]) if error.get('message') else ''}",
        file=sys.stderr,
    )
    return 1


# --- screenshot --------------------------------------------------------------------------------------------


async def screenshot_command(args: argparse.Namespace) -> None:
    to_stdout = args.output == "-"
    out = Path(args.output)
    if to_stdout:
        if args.json:
            raise UsageError("-o - writes the PNG to stdout, where --json would write too: choose one")
        if sys.stdout.isatty():
            raise UsageError("-o - writes the PNG to stdout, which is a terminal: redirect it (> page.png)")
    elif await trio.Path(out).is_dir():
        raise UsageError(f"cannot write {out}: it is a folder; name a file in it (-o {out / 'page.png'})")
    elif out.suffix.lower() not in ("", ".png"):
        raise UsageError(f"cannot write {out}: a screenshot is a PNG; name the file .png")
    elif not await trio.Path(out.parent).is_dir():
        raise UsageError(f"cannot write {out}: the folder {out.parent} does not exist")
    made = False
    if not to_stdout:
        # Tried now, before a browser starts (a folder that takes no files, /proc: it failed at the end).
        made = not await trio.Path(out).exists()
        try:
            await (await trio.open_file(out, "ab")).aclose()
        except OSError as exc:
            raise UsageError(f"cannot write {out}: {exc.strerror or exc}") from None
    try:
        with deadline(args):
            async with open_browser(args) as browser:
                page = await open_page(browser, args, args.url)
                doing(args, "taking the screenshot")
                png = await page.screenshot(full_page=args.full_page)
    except BaseException:
        if made:  # the empty file of the check above
            with contextlib.suppress(OSError):
                await trio.Path(out).unlink()
        raise
    width, height = png_size(png)
    if to_stdout:
        write_out(png)
        return
    await trio.Path(out).write_bytes(png)
    if args.json:
        emit(json.dumps({"path": str(out), "bytes": len(png), "width": width, "height": height}))
    else:
        emit(f"wrote {out}: {width}x{height} px, {len(png):,} bytes")


def png_size(png: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk (bytes 16-24)."""
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
