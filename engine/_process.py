"""Find, start and stop a local Chromium, and hand back a connected transport.

:func:`open_chromium` owns everything the browser leaves on the machine: the process (in a session and
process group of its own), a fresh temporary profile directory, the DevTools pipe or websocket, and a
task that drains stderr into a bounded tail for error messages. Leaving the block, however it is left,
closes the link, stops the process (SIGTERM, then SIGKILL to its whole group) and removes the profile.

The protocol-level ``Browser.close`` is the caller's business; :meth:`ChromiumProcess.wait_exit` is there
to wait for its effect.
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Literal

import trio

from engine._errors import BrowserLaunchError, ConnectionClosed
from engine._settings import DEFAULT_SETTINGS, Settings
from engine._transport import PipeTransport, Transport, make_pipe_pair
from engine._util import reraise_unwrapped
from engine._websocket import open_websocket_transport

log = logging.getLogger("engine.process")

ENV_VAR = "CDP_ENGINE_CHROMIUM"
"""Environment variable naming the browser binary."""

_CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome")

BASE_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
"""Flags every launch gets (``--headless`` only when headless)."""

_LISTENING = "DevTools listening on "
_PROBE = b'{"id":0,"method":"Browser.getVersion"}'
_MAX_LINE = 4096
_EXIT_GRACE = 2.0


def _runnable(path: str) -> str | None:
    """``path`` itself if it names an executable file, else the PATH lookup of a bare name."""
    if os.sep in path:
        return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    return shutil.which(path)


def find_chromium(executable: str | None = None) -> str:
    """The browser binary to run: ``executable``, then $CDP_ENGINE_CHROMIUM, then the usual names.

    An explicit ``executable`` or environment variable that does not name a runnable file is an error;
    there is no silent fallback to another browser.

    Raises:
        BrowserLaunchError: nothing runnable was found; the message says how to get one.
    """
    for given, origin in ((executable, "executable argument"), (os.environ.get(ENV_VAR), f"${ENV_VAR}")):
        if given:
            found = _runnable(given)
            if found is None:
                raise BrowserLaunchError(f"the {origin} {given!r} is not an executable file")
            return found
    for name in _CANDIDATES:
        found = _runnable(name)
        if found is not None:
            return found
    raise BrowserLaunchError(
        "no Chromium found (looked for " + ", ".join(_CANDIDATES) + "). Install one "
        f"(Debian/Ubuntu: apt-get install -y chromium) or set ${ENV_VAR} to the browser binary."
    )


def chromium_command(
    executable: str,
    *,
    user_data_dir: str,
    transport: Literal["pipe", "websocket"] = "pipe",
    headless: bool = True,
    args: Sequence[str] = (),
) -> list[str]:
    """The command line for one browser: base flags, profile, DevTools endpoint, extra args, about:blank."""
    flags = [flag for flag in BASE_FLAGS if headless or flag != "--headless"]
    flags.append(f"--user-data-dir={user_data_dir}")
    if transport == "pipe":
        flags.append("--remote-debugging-pipe")
    else:
        flags += ["--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1"]
    return [executable, *flags, *args, "about:blank"]


class _StderrTail:
    """The last lines of a byte stream, never more than ``size`` lines of at most _MAX_LINE characters."""

    def __init__(self, size: int) -> None:
        self.lines: collections.deque[str] = collections.deque(maxlen=max(size, 1))
        self._partial = bytearray()

    def feed(self, data: bytes | bytearray) -> list[str]:
        """Take received bytes; return the lines they complete."""
        *complete, rest = (bytes(self._partial) + data).split(b"\n")
        self._partial = bytearray(rest[-_MAX_LINE:])
        lines = [line[:_MAX_LINE].decode("utf-8", "replace").rstrip("\r") for line in complete]
        self.lines.extend(lines)
        return lines

    def finish(self) -> None:
        """Keep an unterminated last line."""
        if self._partial:
            self.lines.append(self._partial.decode("utf-8", "replace"))
            self._partial.clear()


class ChromiumProcess:
    """A running Chromium with its DevTools transport; obtained from :func:`open_chromium`.

    Attributes:
        transport: the connected pipe or websocket.
        process: the browser process.
        user_data_dir: its temporary profile (removed on exit).
        ws_url: the browser websocket URL (websocket mode; None for the pipe).
    """

    transport: Transport

    def __init__(self, process: trio.Process, user_data_dir: str, settings: Settings) -> None:
        self.process = process
        self.user_data_dir = user_data_dir
        self.ws_url: str | None = None
        self._settings = settings
        self._tail = _StderrTail(settings.stderr_tail_lines)
        self._exited = trio.Event()
        self._stderr_done = trio.Event()
        self._news = trio.Event()

    def __repr__(self) -> str:
        return f"<ChromiumProcess pid={self.process.pid} returncode={self.process.returncode}>"

    @property
    def pid(self) -> int:
        """The browser's process id (also its process group id)."""
        return self.process.pid

    def stderr_tail(self) -> str:
        """The last ``settings.stderr_tail_lines`` lines the browser wrote to stderr."""
        return "\n".join(self._tail.lines)

    async def wait_exit(self, timeout: float) -> bool:  # noqa: ASYNC109 (a bounded wait the caller asked for)
        """Wait up to ``timeout`` seconds for the process to exit; True if it has."""
        with trio.move_on_after(timeout):
            await self.process.wait()
        return self.process.returncode is not None

    # -- background tasks (they never raise) ---------------------------------------------------------

    async def _watch_exit(self) -> None:
        await self.process.wait()
        self._exited.set()
        self._news.set()

    async def _drain_stderr(self) -> None:
        stream = self.process.stderr
        assert stream is not None
        try:
            while True:
                data = await stream.receive_some(65536)
                if not data:
                    break
                for line in self._tail.feed(data):
                    if self.ws_url is None and line.startswith(_LISTENING):
                        self.ws_url = line[len(_LISTENING) :].strip()
                        self._news.set()
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        except Exception:
            log.exception("reading the browser's stderr failed")
        finally:
            self._tail.finish()
            self._stderr_done.set()
            self._news.set()

    # -- start and stop ------------------------------------------------------------------------------

    async def _launch_error(self, what: str, *, grace: float = _EXIT_GRACE) -> BrowserLaunchError:
        """The error for a failed start, once the process had a moment to exit and flush stderr."""
        with trio.move_on_after(grace):
            await self._exited.wait()
            await self._stderr_done.wait()
        code = self.process.returncode
        if code is not None:
            what += f"; it exited with {_describe_exit(code)}"
        return BrowserLaunchError(what, stderr_tail=self.stderr_tail())

    async def _connect_pipe(self, ours: tuple[int, int]) -> None:
        transport = PipeTransport(*ours, max_outbound_bytes=self._settings.max_outbound_bytes)
        self.transport = transport
        try:
            await transport.send([_PROBE])
            while not any(_is_probe_reply(raw) for raw in await transport.receive_batch()):
                pass
        except ConnectionClosed as exc:
            raise await self._launch_error("Chromium closed the DevTools pipe before answering") from exc

    async def _connect_websocket(self) -> None:
        while self.ws_url is None and not self._stderr_done.is_set() and not self._exited.is_set():
            await self._news.wait()
            self._news = trio.Event()
        if self.ws_url is None:
            raise await self._launch_error("Chromium stopped before printing its DevTools websocket URL")
        try:
            self.transport = await open_websocket_transport(self.ws_url, self._settings)
        except ConnectionClosed as exc:
            raise await self._launch_error(
                f"could not connect to Chromium's DevTools websocket: {exc}"
            ) from exc

    async def _stop(self) -> None:
        """Close the link, stop the process and its group, wait for it; bounded by kill_timeout twice."""
        transport = getattr(self, "transport", None)
        if transport is not None:
            await transport.aclose()
        kill_timeout = self._settings.kill_timeout
        if self.process.returncode is None:
            self.process.terminate()
            if not await self.wait_exit(kill_timeout):
                log.warning("Chromium (pid %s) ignored SIGTERM for %s s; killing it", self.pid, kill_timeout)
                _kill_group(self.pid)
                if not await self.wait_exit(kill_timeout):
                    log.error("Chromium (pid %s) survived SIGKILL for %s s", self.pid, kill_timeout)
            # Its children normally follow it within a fraction of a second; leave no straggler. (Only
            # right after the exit we caused: long after, the group id could belong to someone else.)
            _kill_group(self.pid)
        if self.process.stderr is not None:
            await self.process.stderr.aclose()  # ends the drain even if a straggler still holds stderr


def _is_probe_reply(raw: bytes) -> bool:
    try:
        message = json.loads(raw)
    except ValueError:
        return False
    return isinstance(message, dict) and message.get("id") == 0


def _describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"status {code}"


def _kill_group(pgid: int) -> None:
    """SIGKILL the browser's process group (it is a session leader, so the group is its own)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


async def _remove_profile(path: str) -> None:
    await trio.to_thread.run_sync(lambda: shutil.rmtree(path, ignore_errors=True))


def _onto_3_and_4(child_read: int, child_write: int) -> Callable[[], None]:
    """A preexec_fn placing the child's pipe ends on fds 3 and 4 (both are 5 or above, so no clobbering)."""

    def place() -> None:
        os.dup2(child_read, 3)
        os.dup2(child_write, 4)

    return place


async def _spawn(
    command: list[str], pipe: bool, user_data_dir: str, settings: Settings
) -> tuple[ChromiumProcess, tuple[int, int] | None]:
    """Start the process; for the pipe, also return our two ends (read, write)."""
    ours: tuple[int, int] | None = None
    theirs: tuple[int, int] | None = None
    if pipe:
        ours, theirs = make_pipe_pair()
    try:
        process = await trio.lowlevel.open_process(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
            pass_fds=(3, 4) if theirs else (),
            preexec_fn=_onto_3_and_4(*theirs) if theirs else None,
        )
    except BaseException as exc:
        for fd in ours or ():
            os.close(fd)
        if isinstance(exc, OSError):
            raise BrowserLaunchError(f"could not run {command[0]}: {exc}") from exc
        raise
    finally:
        for fd in theirs or ():
            os.close(fd)
    return ChromiumProcess(process, user_data_dir, settings), ours


@asynccontextmanager
async def open_chromium(
    *,
    executable: str | None = None,
    transport: Literal["pipe", "websocket"] = "pipe",
    headless: bool = True,
    args: Sequence[str] = (),
    settings: Settings = DEFAULT_SETTINGS,
) -> AsyncIterator[ChromiumProcess]:
    """Start Chromium with a fresh profile and a connected DevTools transport; stop it on exit.

    The start (spawn to first answer) is bounded by ``settings.launch_timeout``; the stop by
    ``settings.kill_timeout`` after SIGTERM and again after SIGKILL. No exception group escapes: an error
    from the block comes out as itself.

    Args:
        executable: the browser binary; see :func:`find_chromium`.
        transport: ``"pipe"`` (``--remote-debugging-pipe``) or ``"websocket"`` (a loopback port).
        headless: False drops ``--headless`` (needs a display).
        args: extra command-line flags, after the engine's own.
        settings: the engine's limits.

    Raises:
        BrowserLaunchError: no browser, it could not run, it exited early or did not answer in time.
    """
    if transport not in ("pipe", "websocket"):
        raise ValueError(f"transport must be 'pipe' or 'websocket', not {transport!r}")
    binary = find_chromium(executable)
    user_data_dir = tempfile.mkdtemp(prefix="cdp-engine-profile-")
    try:
        async with trio.open_nursery() as nursery:
            command = chromium_command(
                binary, user_data_dir=user_data_dir, transport=transport, headless=headless, args=args
            )
            browser, ours = await _spawn(command, transport == "pipe", user_data_dir, settings)
            try:
                nursery.start_soon(browser._watch_exit)
                nursery.start_soon(browser._drain_stderr)
                with trio.move_on_after(settings.launch_timeout) as launching:
                    if ours is not None:
                        await browser._connect_pipe(ours)
                    else:
                        await browser._connect_websocket()
                if launching.cancelled_caught:
                    raise await browser._launch_error(
                        f"Chromium did not answer within {settings.launch_timeout} s "
                        "(Settings.launch_timeout)",
                        grace=0,
                    )
                yield browser
            finally:
                with trio.CancelScope(shield=True):
                    await browser._stop()
                    nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        reraise_unwrapped(group)
    finally:
        with trio.CancelScope(shield=True):
            await _remove_profile(user_data_dir)
