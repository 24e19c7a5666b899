"""Find, start and stop a local Chromium, and hand back a connected transport.

:func:`open_chromium` owns everything the browser leaves on the machine: the process (in a session and
process group of its own), one temporary directory holding a fresh profile and the browser's own TMPDIR,
the DevTools pipe or websocket, and a task that drains stderr into a bounded tail for error messages.
Leaving the block, however it is left (Ctrl-C included), closes the link, stops the process (SIGTERM,
then SIGKILL), SIGKILLs every process left in its session, waits until none is left and removes the
directory. A directory whose owner was killed before it could do that is removed by the next start.

The protocol-level ``Browser.close`` is the caller's business; :meth:`ChromiumProcess.wait_exit` is there
to wait for its effect.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import json
import logging
import os
import shutil
import signal
import stat
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Literal

import trio

from engine._errors import BrowserLaunchError, ConnectError, ConnectionClosed
from engine._settings import DEFAULT_SETTINGS, Settings
from engine._transport import PipeTransport, Transport, make_pipe_pair
from engine._util import in_a_hurry, reraise_unwrapped
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
    # A tab that is not the front one is "hidden": without these, Chromium 156 runs its timers about once
    # a second, then once a minute (measured: 100 nested 4 ms timeouts in a hidden tab took 100-295 s, a
    # 300 ms one fired after 1 s; 0.41 s and 300 ms with them). Automation acts on every tab at once.
    "--disable-background-timer-throttling",
    "--disable-renderer-backgrounding",
    "--disable-backgrounding-occluded-windows",
)
"""Flags every launch gets (``--headless`` only when headless)."""

_LISTENING = "DevTools listening on "
_PROBE = b'{"id":0,"method":"Browser.getVersion"}'
_MAX_LINE = 4096
_EXIT_GRACE = 2.0

_HURRIED_GRACE = 0.5
"""Seconds between SIGTERM and SIGKILL when the block is left by a cancellation or Ctrl-C (instead of
Settings.kill_timeout): the caller is gone, and the whole exit must stay under a second."""
_SWEEP_TIMEOUT = 2.0
"""Longest wait for the session's processes to die after SIGKILL. Measured: a headless Chromium's 8
children are all gone 40 ms after its main process is SIGKILLed."""
_SWEEP_POLL = 0.01
_REMOVE_ATTEMPTS = 5
"""rmtree passes: a process that outlived the sweep (uninterruptible sleep) may still add files."""
_HAVE_PROC = os.path.isdir("/proc/self")

# Chromium binds $TMPDIR/org.chromium.Chromium.XXXXXX/SingletonSocket and aborts ("Socket path too long")
# when that does not fit in sun_path (108 bytes on Linux, 104 elsewhere): measured, a 62-character TMPDIR
# works and a 63-character one aborts.
_SOCKET_TAIL = "/org.chromium.Chromium.XXXXXX/SingletonSocket"
_MAX_TMPDIR = (108 if sys.platform.startswith("linux") else 104) - 1 - len(_SOCKET_TAIL)
_TEMP_PREFIX = "cdp-engine-"
_SHORT_TEMP_DIRS = ("/tmp", "/var/tmp", "/dev/shm")


def _runnable(path: str) -> str | None:
    """``path`` itself if it names an executable file, else the PATH lookup of a bare name."""
    if os.sep in path:
        return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    return shutil.which(path)


def _check_executable(executable: object) -> str | None:
    """``executable`` as a str (or None); a misuse fails here, before anything is spawned."""
    if executable is None:
        return None
    if isinstance(executable, os.PathLike):
        executable = os.fspath(executable)
    if not isinstance(executable, str):
        raise TypeError(f"executable must be a str path or None, not {type(executable).__name__}")
    if not executable:
        raise ValueError(
            "executable is the empty string; pass None for the default browser "
            f"(${ENV_VAR}, then {', '.join(_CANDIDATES)})"
        )
    return executable


def _check_args(args: object) -> list[str]:
    """``args`` as a list of flags; a plain string would otherwise be split into one flag per character."""
    if isinstance(args, str | bytes):
        raise TypeError(f"args must be a list of flags, not one string: pass args=[{args!r}]")
    if not isinstance(args, Sequence):
        raise TypeError(f"args must be a list or tuple of str, not {type(args).__name__}")
    for index, arg in enumerate(args):
        if not isinstance(arg, str):
            raise TypeError(f"args[{index}] is a {type(arg).__name__}; every flag must be a str")
        if "\0" in arg:
            raise ValueError(f"args[{index}] contains a NUL character: {arg!r}")
    return list(args)


def find_chromium(executable: str | os.PathLike[str] | None = None) -> str:
    """The browser binary to run: ``executable``, then $CDP_ENGINE_CHROMIUM, then the usual names.

    An explicit ``executable`` or environment variable that does not name a runnable file is an error;
    there is no silent fallback to another browser.

    Raises:
        BrowserLaunchError: nothing runnable was found; the message says how to get one.
        TypeError: ``executable`` is not a path.
        ValueError: ``executable`` is the empty string (None means the default).
    """
    executable = _check_executable(executable)
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
    lifeline: bool = False,
) -> list[str]:
    """The command line for one browser: base flags, profile, DevTools endpoint, extra args, and no tab.

    ``lifeline`` (websocket only) also opens the DevTools pipe on fds 3 and 4, which the caller must
    provide: nothing is sent on it, but Chromium exits when the process holding its other ends dies.

    Raises:
        TypeError: ``args`` is a plain string or holds a non-string.
        ValueError: ``executable`` is empty, or a flag contains a NUL character.
    """
    binary = _check_executable(executable)
    if binary is None:
        raise TypeError("executable must be a str path, not None")
    extra = _check_args(args)
    flags = [flag for flag in BASE_FLAGS if headless or flag != "--headless"]
    flags.append(f"--user-data-dir={user_data_dir}")
    if transport == "pipe":
        flags.append("--remote-debugging-pipe")
    else:
        flags += ["--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1"]
        if lifeline:
            flags.append("--remote-debugging-pipe")
    # No start-up tab (as Playwright launches): pages come from new_page, and a tab nobody asked for is a
    # renderer Chromium starts before it answers. Measured (2-core VM, pipe, medians of two runs of 8-10
    # interleaved launches): launch() to a first reply 184-213 against 347-374 ms with about:blank, to a
    # new page's first evaluate 432-489 against 537-602 ms.
    return [binary, *flags, *extra, "--no-startup-window"]


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
        process: the process that was started (the browser, or a launcher script that started it).
        temp_dir: the engine's directory for this browser (removed on exit): ``profile/`` and ``tmp/``.
        user_data_dir: the browser's profile, ``temp_dir/profile``.
        ws_url: the browser websocket URL (websocket mode; None for the pipe).
    """

    transport: Transport

    def __init__(self, process: SpawnedProcess, temp_dir: str, settings: Settings) -> None:
        self.process = process
        self.temp_dir = temp_dir
        self.user_data_dir = os.path.join(temp_dir, "profile")
        self.ws_url: str | None = None
        self._settings = settings
        self._tail = _StderrTail(settings.stderr_tail_lines)
        self._exited = trio.Event()
        self._stderr_done = trio.Event()
        self._news = trio.Event()
        # Our ends of the DevTools pipe until a PipeTransport takes them. Over the websocket they stay
        # here unused until the stop: if this process dies first, the kernel closes them and Chromium
        # exits (without them, a SIGTERM of the Python process left the whole browser running).
        self._lifeline: tuple[int, int] | None = None

    def __repr__(self) -> str:
        return f"<ChromiumProcess pid={self.process.pid} returncode={self.process.returncode}>"

    @property
    def pid(self) -> int:
        """The started process's id; also the id of its process group and of its session."""
        return self.process.pid

    @property
    def stopped(self) -> bool:
        """Whether the process is stopped (SIGSTOP, a debugger, Ctrl-Z): it answers nothing until it is
        continued, so a polite close would only wait out its budget."""
        if not _HAVE_PROC or self.process.returncode is not None:
            return False
        try:
            with open(f"/proc/{self.pid}/stat", "rb") as stat:
                state = stat.read().rpartition(b")")[2].split()[0]
        except (OSError, IndexError):
            return False
        return state in (b"T", b"t")

    def stderr_tail(self) -> str:
        """The last ``settings.stderr_tail_lines`` lines the browser wrote to stderr."""
        return "\n".join(self._tail.lines)

    async def wait_exit(self, timeout: float) -> bool:  # noqa: ASYNC109 (a bounded wait the caller asked for)
        """Wait up to ``timeout`` seconds for the process to exit; True if it has."""
        with trio.move_on_after(timeout):
            await self.process.wait()
        return self.process.returncode is not None

    # -- background tasks (they never raise; KI-protected, so Ctrl-C reaches the main task instead) ---

    @trio.lowlevel.enable_ki_protection
    async def _watch_exit(self) -> None:
        await self.process.wait()
        self._exited.set()
        self._news.set()

    @trio.lowlevel.enable_ki_protection
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

    async def _connect_pipe(self) -> None:
        ours, self._lifeline = self._lifeline, None
        assert ours is not None
        transport = PipeTransport(
            *ours,
            max_outbound_bytes=self._settings.max_outbound_bytes,
            max_inbound_bytes=self._settings.max_inbound_bytes,
            busy_poll=self._settings.busy_poll,
        )
        self.transport = transport
        try:
            await transport.send([_PROBE])
            while not any(_is_probe_reply(raw) for raw in await transport.receive_batch()):
                pass
        except ConnectionClosed as exc:
            raise await self._launch_error("Chromium closed the DevTools pipe before answering") from exc

    async def _start(self, pipe: bool) -> None:
        """Connect over the pipe or the websocket, within Settings.launch_timeout."""
        with trio.move_on_after(self._settings.launch_timeout) as launching:
            if pipe:
                await self._connect_pipe()
            else:
                await self._connect_websocket()
        if launching.cancelled_caught:
            raise await self._launch_error(
                f"Chromium did not answer within {self._settings.launch_timeout} s (Settings.launch_timeout)",
                grace=0,
            )
        self._check_detached()

    def _failed(self) -> bool:
        """The started process exited with an error.

        A launcher that started the browser and exited with status 0 has not failed: the browser holds
        stderr and prints its URL there.
        """
        code = self.process.returncode
        return code is not None and code != 0

    async def _connect_websocket(self) -> None:
        while self.ws_url is None and not self._stderr_done.is_set() and not self._failed():
            await self._news.wait()
            self._news = trio.Event()
        if self.ws_url is None:
            raise await self._launch_error("Chromium stopped before printing its DevTools websocket URL")
        try:
            self.transport = await open_websocket_transport(self.ws_url, self._settings)
        except ConnectError as exc:
            raise await self._launch_error(
                f"could not connect to Chromium's DevTools websocket: {exc}"
            ) from exc

    def _check_detached(self) -> None:
        """Refuse a browser that left our session: nothing could stop it or wait for it on exit."""
        code = self.process.returncode
        if code is not None and _HAVE_PROC and not session_members(self.pid):
            raise BrowserLaunchError(
                f"the started process (pid {self.pid}) exited ({_describe_exit(code)}) and left no process "
                "in its session, yet DevTools answered: the browser was detached (setsid, daemon), so it "
                "could be neither stopped nor waited for. Point executable at the browser itself, or at a "
                "launcher that keeps it in its session (exec, a plain child, or '&' then exit).",
                stderr_tail=self.stderr_tail(),
            )

    async def _stop(self, grace: float, *, kill_at_once: bool = False) -> None:
        """Close the link, stop the process, then SIGKILL its session until none of it is left.

        Each wait is bounded by ``grace``; every step is idempotent, so a Ctrl-C can restart it. With
        ``kill_at_once`` (the block left by a cancellation or Ctrl-C) there is no SIGTERM: nobody waits for
        a graceful exit and the profile is thrown away, so it would only add its wait (0.4-0.5 s measured
        under load, which pushed the whole exit past a second).
        """
        transport = getattr(self, "transport", None)
        if transport is not None:
            with trio.move_on_after(grace):
                await transport.aclose()
        lifeline, self._lifeline = self._lifeline, None
        for fd in lifeline or ():
            os.close(fd)
        if self.process.returncode is None:
            if not kill_at_once:
                self.process.terminate()
                # A stopped browser acts on SIGTERM only once continued: it waited out the grace for it.
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.pid, signal.SIGCONT)
            if kill_at_once or not await self.wait_exit(grace):
                if not kill_at_once and grace >= self._settings.kill_timeout:
                    log.warning("Chromium (pid %s) ignored SIGTERM for %s s; killing it", self.pid, grace)
                # Not reaped yet (no checkpoint since returncode was read), so the group id is still ours.
                _kill_group(self.pid)
                if not await self.wait_exit(grace):
                    log.error("Chromium (pid %s) survived SIGKILL for %s s", self.pid, grace)
        # Its children (and a launcher's browser) outlive it and would write into the profile while it is
        # removed: before this sweep, 1 to 2 profiles in 10 were left after a SIGKILL of the browser.
        if not await _sweep_session(self.pid, min(grace, _SWEEP_TIMEOUT)):
            log.error("processes of Chromium's session %s survived SIGKILL for %s s", self.pid, grace)
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


# -- the session sweep ---------------------------------------------------------------------------------
#
# The browser is started with start_new_session=True, so its pid is the session id of everything it (or a
# launcher) starts. A session id cannot be handed to a new process while any process, zombies included,
# still carries it; the sweep stops as soon as it finds none, so it never reaches a stranger's session.


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name: state, ppid, pgrp, session, ..."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            raw = file.read()
    except OSError:
        return None
    return raw.rpartition(b")")[2].decode("ascii", "replace").split()


def session_members(sid: int) -> list[int]:
    """The live processes of session ``sid`` (none found without /proc).

    Zombies do not count: they write nothing, and where init does not reap them (this container) they
    stay forever.
    """
    if not _HAVE_PROC:
        return []
    members = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = _stat_fields(int(name))
            if fields is not None and len(fields) > 3 and fields[3] == str(sid) and fields[0] not in "ZX":
                members.append(int(name))
    return members


def _kill_member(pid: int, sid: int) -> None:
    """SIGKILL ``pid`` if it is still in session ``sid``.

    A pidfd pins the process between the check and the signal, so a reused pid is never hit.
    """
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except OSError:  # no pidfd (kernel < 5.3): the plain kill, right after the check
        fields = _stat_fields(pid)
        if fields is not None and fields[3] == str(sid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        return
    try:
        fields = _stat_fields(pid)
        if fields is not None and fields[3] == str(sid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    finally:
        os.close(pidfd)


async def _sweep_session(sid: int, timeout: float) -> bool:  # noqa: ASYNC109 (an internal bound)
    """SIGKILL every live process of session ``sid`` until none is left; False if some outlive ``timeout``.

    Without /proc, SIGKILL the process group once.
    """
    if not _HAVE_PROC:
        _kill_group(sid)
        return True
    with trio.move_on_after(timeout):
        while members := session_members(sid):
            for pid in members:
                _kill_member(pid, sid)
            await trio.sleep(_SWEEP_POLL)
    return not session_members(sid)


# -- the engine's directory ------------------------------------------------------------------------------


def _temp_parent() -> str:
    """Where the engine's directory goes: the temp folder, or a short one if need be.

    The browser's TMPDIR goes inside, and Chromium aborts when it is too long (see _MAX_TMPDIR): a pytest
    tmp_path, or macOS's $TMPDIR, is.
    """
    parent = tempfile.gettempdir()
    if len(os.path.join(parent, _TEMP_PREFIX + "12345678", "tmp")) <= _MAX_TMPDIR:
        return parent
    for short in _SHORT_TEMP_DIRS:
        if os.path.isdir(short) and os.access(short, os.W_OK | os.X_OK):
            log.debug("%s is too long a path for Chromium's TMPDIR; using %s", parent, short)
            return short
    return parent


def _make_temp_dir(parent: str) -> str:
    """One directory for the browser: ``profile/`` and ``tmp/`` (its TMPDIR), removed as a whole."""
    path = tempfile.mkdtemp(prefix=_TEMP_PREFIX, dir=parent)
    try:
        os.mkdir(os.path.join(path, "profile"))
        os.mkdir(os.path.join(path, "tmp"))
        # Downloads go here, removed with the rest (they went to ~/Downloads for good). A preference, not
        # Browser.setDownloadBehavior: that one's "allow" overwrote a file of the same name, where
        # Chromium's own saving adds " (1)".
        os.mkdir(os.path.join(path, "profile", "Default"))
        with open(os.path.join(path, "profile", "Default", "Preferences"), "w", encoding="utf-8") as prefs:
            json.dump({"download": {"default_directory": os.path.join(path, "downloads")}}, prefs)
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)
        raise
    return path


_OWNER_FILE = ".owner"
"""In the engine's directory: the pid namespace, pid and start time of the process that made it, and the
browser's pid (its session id). A launch removes the directories whose owner was killed before it could
(SIGTERM's default, SIGKILL, the OOM killer: before, each left 1-3 MB of profile in the temp folder)."""


def _start_time(pid: int) -> str | None:
    """When ``pid`` started (clock ticks since boot: it tells a process from a later one given the same
    pid); None if it is gone or a zombie."""
    fields = _stat_fields(pid)
    if fields is None or len(fields) < 20 or fields[0] in "ZX":
        return None
    return fields[19]


def _pid_namespace() -> str | None:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def mark_owner(temp_dir: str, browser_pid: int) -> None:
    """Say that this process owns ``temp_dir``, used by the browser whose session is ``browser_pid``, so
    that :func:`sweep_orphans` can remove it if this process is killed. Without /proc nothing is written,
    and a directory without a mark is never swept."""
    namespace, started = _pid_namespace(), _start_time(os.getpid())
    if namespace is None or started is None:
        return
    with contextlib.suppress(OSError), open(os.path.join(temp_dir, _OWNER_FILE), "x") as file:
        file.write(f"{namespace} {os.getpid()} {started} {browser_pid}\n")


def _orphaned(path: str, namespace: str) -> bool:
    """True if the mark in ``path`` names an owner that is dead and a browser session with nobody left.

    Anything it cannot be sure of keeps the directory: no mark, a garbled one or one that is not a regular
    file, another pid namespace (a container sharing the temp folder), an owner alive, a browser process
    still in its session.
    """
    try:
        # Non-blocking and not through a link: a FIFO or a symlink put there must not hang or redirect us.
        fd = os.open(os.path.join(path, _OWNER_FILE), os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        words = os.read(fd, 256).decode("ascii").split()
    except (OSError, ValueError):
        return False
    finally:
        os.close(fd)
    if len(words) != 4 or words[0] != namespace or not (words[1].isdigit() and words[3].isdigit()):
        return False
    if _start_time(int(words[1])) == words[2]:
        return False  # the owner lives
    return not session_members(int(words[3]))


def sweep_orphans(parent: str, prefix: str = _TEMP_PREFIX) -> list[str]:
    """Remove the directories in ``parent`` that a killed process left behind; the paths removed.

    Only this user's directories named ``prefix*`` with an owner's mark (:func:`mark_owner`) whose owner
    and browser are both gone. ``open_chromium`` runs it at every start (``cdp-engine-*``), in a worker
    thread.
    """
    namespace = _pid_namespace()
    if namespace is None:
        return []
    uid = os.getuid()
    removed: list[str] = []
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return []
    for entry in entries:
        if not entry.name.startswith(prefix):
            continue
        try:
            if not entry.is_dir(follow_symlinks=False) or entry.stat(follow_symlinks=False).st_uid != uid:
                continue
        except OSError:
            continue
        if _orphaned(entry.path, namespace) and _remove_now(entry.path):
            log.info("removed %s: its owner was killed before it could remove it", entry.path)
            removed.append(entry.path)
    return removed


def _remove_now(path: str) -> bool:
    """One rmtree pass; True if ``path`` is gone."""
    shutil.rmtree(path, ignore_errors=True)
    return not os.path.lexists(path)


async def _remove_tree(path: str) -> None:
    """Remove ``path``; again if files appeared meanwhile (rmtree leaves a directory that was refilled)."""
    for _ in range(_REMOVE_ATTEMPTS):
        if await trio.to_thread.run_sync(_remove_now, path):
            return
        await trio.sleep(_SWEEP_POLL)
    log.warning("could not remove %s", path)


# -- leaving, however it happens ----------------------------------------------------------------------------


def _stop_grace(leaving: BaseException | None, settings: Settings) -> float:
    """The SIGTERM-to-SIGKILL wait: kill_timeout, or _HURRIED_GRACE when leaving by cancellation or Ctrl-C.

    Never much past the caller's deadline either. Call it outside any shield: it reads that deadline.
    """
    if in_a_hurry(leaving):
        return min(settings.kill_timeout, _HURRIED_GRACE)
    left = trio.current_effective_deadline() - trio.current_time()
    return min(settings.kill_timeout, left + _HURRIED_GRACE)


async def _run_to_end(step: Callable[[float], Awaitable[None]], grace: float) -> KeyboardInterrupt | None:
    """Run ``step(grace)`` shielded to its end, restarting it (hurried) after each Ctrl-C.

    trio delivers KeyboardInterrupt to the main task at any checkpoint, shielded or not: before this,
    2 or 3 quick Ctrl-C during close left the profile 10 times out of 10.

    Returns:
        The last KeyboardInterrupt caught, for the caller to raise once the cleanup is done.
    """
    interrupted: KeyboardInterrupt | None = None
    done = False
    with trio.CancelScope(shield=True):
        while not done:
            try:
                await step(grace)
                done = True
            except KeyboardInterrupt as exc:
                interrupted = exc
                grace = min(grace, _HURRIED_GRACE)
    return interrupted


def _ctrl_c_wins(group: BaseExceptionGroup[BaseException]) -> BaseExceptionGroup[BaseException]:
    """The group's first KeyboardInterrupt alone, if it holds one; else the group.

    A Ctrl-C raised by the cleanup and another one the nursery caught while waiting for its tasks would
    otherwise come out as a group of two.
    """
    interrupts = group.subgroup(KeyboardInterrupt)
    if interrupts is None:
        return group
    first: BaseException = interrupts
    while isinstance(first, BaseExceptionGroup):
        first = first.exceptions[0]
    return BaseExceptionGroup("", [first])


class SpawnedProcess:
    """A child started by ``os.posix_spawnp``, with what the engine uses of ``trio.Process``: ``pid``,
    ``returncode`` (polled: reading it reaps an exited child), ``wait()``, ``send_signal``, ``terminate``,
    ``kill`` and the ``stderr`` stream.

    ``posix_spawn`` places the DevTools pipe on fds 3 and 4 with file actions, so no Python runs in the
    child. ``subprocess`` with the ``preexec_fn`` that did it before forks the whole parent and runs Python
    code in the copy of a threaded process. Measured (launch to spawned, medians of 6): 0.6 ms from any
    parent, against 6.8-6.9 ms from a small one and 54-64 ms from one holding 1 GiB.
    """

    def __init__(self, pid: int, stderr: trio.lowlevel.FdStream) -> None:
        self.pid = pid
        self.stderr = stderr
        self._returncode: int | None = None
        self._wait_lock = trio.Lock()
        self._pidfd: int | None
        try:
            self._pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):  # not Linux 5.3+: wait() polls
            self._pidfd = None

    def __repr__(self) -> str:
        return f"<SpawnedProcess pid={self.pid} returncode={self.returncode}>"

    @property
    def returncode(self) -> int | None:
        """The exit status (negative: the signal that ended it), or None while it runs."""
        if self._returncode is None:
            self._reap(os.WNOHANG)
        return self._returncode

    def _reap(self, flags: int) -> None:
        try:
            pid, status = os.waitpid(self.pid, flags)
        except ChildProcessError:  # reaped elsewhere (SIGCHLD ignored): status lost, 0 as subprocess says
            pid, status = self.pid, 0
        if pid:
            self._returncode = os.waitstatus_to_exitcode(status)
            self._close_pidfd()

    def _close_pidfd(self) -> None:
        if self._pidfd is not None:
            trio.lowlevel.notify_closing(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None

    async def wait(self) -> int:
        """Wait until the process exits; its exit status."""
        async with self._wait_lock:
            while self.returncode is None:
                if self._pidfd is None:
                    await trio.sleep(_EXIT_POLL)
                    continue
                with contextlib.suppress(trio.ClosedResourceError):  # closed: reaped meanwhile
                    await trio.lowlevel.wait_readable(self._pidfd)  # readable once it has exited
        assert self._returncode is not None
        return self._returncode

    def send_signal(self, signum: int) -> None:
        """Signal the process, unless it has been reaped (its pid may belong to another one by now)."""
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


_EXIT_POLL = 0.01
"""Seconds between checks for the exit of a process without a pidfd (not Linux 5.3+)."""


def _spawn(command: list[str], temp_dir: str, settings: Settings) -> ChromiumProcess:
    """Start the process in a session of its own with the DevTools pipe on its fds 3 and 4 (our ends are
    its ``_lifeline``), stdin and stdout on /dev/null and stderr on a pipe to us."""
    ours, theirs = make_pipe_pair()
    stderr_read, stderr_write = os.pipe()
    # Chromium's own temporary files (org.chromium.Chromium.*, left in the system temp folder by 43 of 50
    # cancelled start-ups before this) go where the engine removes them, and so do its crash reports,
    # which Debian's Chromium 156 writes under $XDG_CONFIG_HOME/chromium whatever the profile (about 125 KB
    # for each crashed renderer; --crash-dumps-dir and --disable-crash-reporter did not move them).
    env = {
        **os.environ,
        "TMPDIR": os.path.join(temp_dir, "tmp"),
        "XDG_CONFIG_HOME": os.path.join(temp_dir, "config"),
    }
    # Every fd Python opens is close-on-exec (PEP 446), ours included: the child gets 0-4 and what this
    # process made inheritable on purpose.
    try:
        pid = os.posix_spawnp(
            command[0],
            command,
            env,
            file_actions=[
                (os.POSIX_SPAWN_DUP2, theirs[0], 3),
                (os.POSIX_SPAWN_DUP2, theirs[1], 4),
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                (os.POSIX_SPAWN_DUP2, stderr_write, 2),
            ],
            setsid=True,
        )
    except BaseException as exc:
        for fd in (*ours, stderr_read):
            os.close(fd)
        if isinstance(exc, OSError):
            raise BrowserLaunchError(f"could not run {command[0]}: {exc}") from exc
        raise
    finally:
        for fd in (*theirs, stderr_write):
            os.close(fd)
    process = SpawnedProcess(pid, trio.lowlevel.FdStream(stderr_read))
    browser = ChromiumProcess(process, temp_dir, settings)
    browser._lifeline = ours
    return browser


@asynccontextmanager
@trio.lowlevel.enable_ki_protection  # Ctrl-C lands at our checkpoints only, where the cleanup catches it
async def open_chromium(
    *,
    executable: str | os.PathLike[str] | None = None,
    transport: Literal["pipe", "websocket"] = "pipe",
    headless: bool = True,
    args: Sequence[str] = (),
    settings: Settings = DEFAULT_SETTINGS,
) -> AsyncIterator[ChromiumProcess]:
    """Start Chromium with a fresh profile and a connected DevTools transport; stop it on exit.

    The start (spawn to first answer) is bounded by ``settings.launch_timeout``; the stop by
    ``settings.kill_timeout`` after SIGTERM and again after SIGKILL, or by half a second each when the
    block is left by a cancellation or Ctrl-C. No exception group escapes: an error from the block comes
    out as itself. Repeated Ctrl-C does not cut the cleanup short; the KeyboardInterrupt comes out after.

    A launcher script that starts the browser is fine if the browser stays in its session (``exec``, a
    plain child, or ``&`` then exit); one that detaches it (setsid) is refused.

    Args:
        executable: the browser binary; see :func:`find_chromium`.
        transport: ``"pipe"`` (``--remote-debugging-pipe``) or ``"websocket"`` (a loopback port).
        headless: False drops ``--headless`` (needs a display).
        args: extra command-line flags (a list of str), after the engine's own.
        settings: the engine's limits.

    Raises:
        BrowserLaunchError: no browser, it could not run, it exited early or did not answer in time.
        TypeError: ``args`` is a plain string or holds a non-string; ``executable`` is not a path.
        ValueError: a bad ``transport``, an empty ``executable``, a flag with a NUL character.
    """
    if transport not in ("pipe", "websocket"):
        raise ValueError(f"transport must be 'pipe' or 'websocket', not {transport!r}")
    _check_args(args)  # before anything is created
    binary = find_chromium(executable)
    parent = _temp_parent()
    await trio.to_thread.run_sync(sweep_orphans, parent)
    temp_dir = _make_temp_dir(parent)
    leaving: BaseException | None = None
    try:
        try:
            command = chromium_command(
                binary,
                user_data_dir=os.path.join(temp_dir, "profile"),
                transport=transport,
                headless=headless,
                args=args,
                lifeline=True,
            )
            async with trio.open_nursery() as nursery:
                browser = _spawn(command, temp_dir, settings)
                mark_owner(temp_dir, browser.pid)
                try:
                    nursery.start_soon(browser._watch_exit)
                    nursery.start_soon(browser._drain_stderr)
                    await browser._start(transport == "pipe")
                    yield browser
                except BaseException as exc:
                    leaving = exc
                    raise
                finally:
                    stop = functools.partial(browser._stop, kill_at_once=in_a_hurry(leaving))
                    interrupted = await _run_to_end(stop, _stop_grace(leaving, settings))
                    nursery.cancel_scope.cancel()
                    if interrupted is not None and not isinstance(leaving, KeyboardInterrupt):
                        raise interrupted
        except BaseExceptionGroup as group:
            reraise_unwrapped(_ctrl_c_wins(group))
    except BaseException as exc:
        leaving = exc
        raise
    finally:
        interrupted = await _run_to_end(lambda _: _remove_tree(temp_dir), 0.0)
        if interrupted is not None and not isinstance(leaving, KeyboardInterrupt):
            raise interrupted
