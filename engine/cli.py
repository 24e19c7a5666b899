"""``cdp-engine``: script the protocol from the shell.

    cdp-engine version [--connect URL]
    cdp-engine call METHOD [PARAMS_JSON] [--url PAGE_URL] [--connect URL]
    cdp-engine listen EVENT [EVENT ...] [--url PAGE_URL] [--count N] [--seconds S]
    cdp-engine protocol [DOMAIN]
    cdp-engine drift [--connect URL]
    cdp-engine bench [--quick] [--json PATH] [--connect URL]      (from a checkout of the repository)

Without --connect, a headless Chromium is launched for the command and closed after it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import trio

import cdp
from engine import drift as _drift
from engine._browser import Browser, connect, launch
from engine._errors import CDPError
from engine._session import Session


@asynccontextmanager
async def _browser(url: str | None) -> AsyncIterator[Browser]:
    if url:
        async with connect(url) as browser:
            yield browser
    else:
        async with launch() as browser:
            yield browser


async def _target(browser: Browser, method: str, page_url: str | None) -> Session:
    """Browser-level methods go to the browser session; everything else to a fresh page."""
    if page_url is None and method.split(".", maxsplit=1)[0] in (
        "Browser",
        "Target",
        "SystemInfo",
        "Storage",
    ):
        return browser.session
    page = await browser.new_page(page_url)
    return page.session


async def _version(args: argparse.Namespace) -> None:
    async with _browser(args.connect) as browser:
        version = await browser.version()
        print(json.dumps(cdp.converter.unstructure(version), indent=2))


async def _call(args: argparse.Namespace) -> None:
    params = json.loads(args.params) if args.params else {}
    if not isinstance(params, dict):
        raise SystemExit(f"PARAMS_JSON must be a JSON object, not {args.params!r}")
    async with _browser(args.connect) as browser:
        session = await _target(browser, args.method, args.url)
        with trio.fail_after(args.seconds):
            result = await session.execute_raw(args.method, params)
        print(json.dumps(result, indent=2))


async def _listen(args: argparse.Namespace) -> None:
    async with _browser(args.connect) as browser:
        page = await browser.new_page()
        domains = {name.split(".")[0] for name in args.events}
        async with page.session.listen(*args.events, buffer_size=10_000, typed=False) as events:
            for domain in sorted(domains):
                with contextlib.suppress(CDPError):  # not every domain has enable()
                    await page.session.execute_raw(f"{domain}.enable")
            if args.url:
                await page.goto(args.url)
            seen = 0
            with trio.move_on_after(args.seconds):
                async for event in events:
                    print(json.dumps({"method": event.method, "params": event.params}))
                    seen += 1
                    if args.count and seen >= args.count:
                        break


def _protocol(args: argparse.Namespace) -> None:
    from cdp import _registry  # noqa: PLC0415 - only this subcommand needs the registry

    if args.domain:
        module = _registry.DOMAINS.get(args.domain)
        if module is None:
            raise SystemExit(f"no domain {args.domain!r}; known: {', '.join(sorted(_registry.DOMAINS))}")
        for kind, table in (("command", _registry.COMMANDS), ("event", _registry.EVENTS)):
            for method in table:
                if method.split(".")[0] == args.domain:
                    flags = cdp.flags(method)
                    mark = " (experimental)" if flags.experimental else ""
                    mark += " (deprecated)" if flags.deprecated else ""
                    print(f"{kind:8} {method}{mark}")
        return
    print(f"devtools-protocol {cdp.PROTOCOL_VERSION}: {len(_registry.DOMAINS)} domains, ", end="")
    print(f"{len(_registry.COMMANDS)} commands, {len(_registry.EVENTS)} events")
    for name in sorted(_registry.DOMAINS):
        print(f"  {name}")


async def drift_report(connect_url: str | None) -> str:
    """The pinned protocol against a browser's ``/json/protocol`` (a launched one unless ``connect_url``).

    The pinned side is the copy packaged with the engine, so this works from an install without a checkout.
    """
    if connect_url:
        url = connect_url
        live = await trio.to_thread.run_sync(_drift.fetch_live, url)
    else:
        async with launch(transport="websocket") as browser:
            assert browser.process is not None
            assert browser.process.ws_url is not None
            url = "http://" + browser.process.ws_url.split("/")[2]
            live = await trio.to_thread.run_sync(_drift.fetch_live, url)
    report = _drift.compare(_drift.load_pinned(), live)
    return _drift.format_report(report)


async def _drift_command(args: argparse.Namespace) -> None:
    print(await drift_report(args.connect))


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
    result: int = bench_main(list(argv))
    return result


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["bench"]:
        return _bench(argv[1:])
    parser = argparse.ArgumentParser(prog="cdp-engine", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("version", help="print the browser's version")
    p.add_argument("--connect", metavar="URL")
    p = sub.add_parser("call", help="send one command and print its raw result")
    p.add_argument("method")
    p.add_argument("params", nargs="?")
    p.add_argument("--url", help="open this page first and send the command to its session")
    p.add_argument("--connect", metavar="URL")
    p.add_argument("--seconds", type=float, default=30.0, help="deadline for the command")
    p = sub.add_parser("listen", help="print events of a fresh page as JSON lines")
    p.add_argument("events", nargs="+", help="event methods, e.g. Runtime.consoleAPICalled")
    p.add_argument("--url")
    p.add_argument("--connect", metavar="URL")
    p.add_argument("--count", type=int, default=0)
    p.add_argument("--seconds", type=float, default=10.0)
    p = sub.add_parser("protocol", help="summarise the bindings, or list one domain's methods")
    p.add_argument("domain", nargs="?")
    p = sub.add_parser("drift", help="compare the pinned protocol with a browser's /json/protocol")
    p.add_argument("--connect", metavar="URL")
    sub.add_parser("bench", help="the latency suite (see `cdp-engine bench --help`)")
    args = parser.parse_args(argv)
    try:
        if args.command == "protocol":
            _protocol(args)
        else:
            handlers: dict[str, Any] = {
                "version": _version,
                "call": _call,
                "listen": _listen,
                "drift": _drift_command,
            }
            trio.run(handlers[args.command], args)
    except CDPError as exc:
        print(f"cdp-engine: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
