"""The Node peers: Puppeteer over its pipe and over a websocket, and chrome-remote-interface.

Each runs in a Node process of its own (``benchmarks/node/peer.mjs``), which launches its own Chromium
(same binary, same flags) and speaks the suite's scenario protocol: one JSON line per request on its
stdin, one per reply on its stdout. Timing and CPU time are taken inside Node, so the pipe between the
two processes is never measured. The packages live in ``benchmarks/node/node_modules`` (``make setup``
installs them there, never globally); a missing ``node`` or package skips the client with the reason.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import IO, Any, ClassVar

from benchmarks.chromium import REMOVE_TIMEOUT_S
from benchmarks.clients.base import CALL_TIMEOUT_S, Client, Env, Sample, SkipClient
from benchmarks.scenarios import Scenario, flood_start_expression, flood_stop_expression, small_page_url

NODE_DIR = Path(__file__).resolve().parent.parent / "node"
PEER = NODE_DIR / "peer.mjs"
PACKAGES = {"puppeteer": "puppeteer-core", "cri": "chrome-remote-interface"}


def _running_in(folder: str) -> list[int]:
    """Live processes whose command line names ``folder`` (a zombie's is empty)."""
    mark = folder.encode()
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                if mark in f.read():
                    pids.append(int(name))
        except OSError:
            continue  # gone meanwhile
    return pids


def _kill_browsers_in(folder: str) -> None:
    """SIGKILL every process whose command line names ``folder`` (with its process group if it leads one),
    until none is left or REMOVE_TIMEOUT_S passed: one still dying may write into the folder.

    The peer's browsers take their profiles from its TMPDIR, so this finds them even when the Node process
    that started them was killed before it could stop them (they run detached and outlive it).
    """
    deadline = time.monotonic() + REMOVE_TIMEOUT_S
    while (pids := _running_in(folder)) and time.monotonic() < deadline:
        for pid in pids:
            with contextlib.suppress(OSError):
                if os.getpgid(pid) == pid:
                    os.killpg(pid, signal.SIGKILL)
                else:
                    os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)


def scenario_json(scenario: Scenario) -> dict[str, Any]:
    """What peer.mjs needs to know about a scenario."""
    return {
        "name": scenario.name,
        "kind": scenario.kind.value,
        "pages": scenario.pages,
        "big_page": scenario.big_page,
        "method": scenario.method,
        "params": scenario.params_dict,
        "flood_start": flood_start_expression(),
        "flood_stop": flood_stop_expression(),
    }


class NodePeer(Client):
    """A blocking client whose every call is one request to the Node process."""

    lib: ClassVar[str]
    own_browser = True

    def __init__(self) -> None:
        self._process: subprocess.Popen[str] | None = None
        self._tmp: str | None = None
        self._log: IO[str] | None = None
        self._env: Env | None = None
        self._in_flight = False  # a request sent whose reply was not read (cut short by Ctrl-C)

    def _request(self, op: str, **fields: Any) -> dict[str, Any]:
        process = self._process
        if process is None or process.stdin is None or process.stdout is None:
            raise RuntimeError(f"{self.name} is not running")
        self._in_flight = True
        process.stdin.write(json.dumps({"op": op, **fields}) + "\n")
        process.stdin.flush()
        line = process.stdout.readline()
        self._in_flight = False
        if not line:
            raise RuntimeError(f"the Node peer exited (code {process.poll()}); see {self._log_path()}")
        reply: dict[str, Any] = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"{op}: {reply['error']}")
        return reply

    @property
    def rss_pid(self) -> int:
        """The Node process: its peak RSS is this client's own (the browser's is not counted)."""
        return self._process.pid if self._process is not None else os.getpid()

    @property
    def rss_shared(self) -> bool:
        return self._process is None

    def _log_path(self) -> str:
        return getattr(self, "_log_name", "?")

    def start(self, env: Env) -> None:
        node = shutil.which("node")
        if node is None:
            raise SkipClient("node is not installed (make setup installs Debian's nodejs)")
        package = PACKAGES[self.lib]
        if not (NODE_DIR / "node_modules" / package).is_dir():
            raise SkipClient(f"{package} is not installed in {NODE_DIR} (run make setup)")
        self._env = env
        self._log = tempfile.NamedTemporaryFile(  # noqa: SIM115 (closed in stop)
            "w", prefix=f"bench-{self.name}-", suffix=".log", delete=False
        )
        # The peer's browsers leave their org.chromium.Chromium.* folders in TMPDIR: one of its own, removed
        # in stop() (they piled up in /tmp, several per run).
        self._tmp = tempfile.mkdtemp(prefix=f"bench-{self.name}-tmp-")
        self._process = subprocess.Popen(
            [node, str(PEER)],
            cwd=NODE_DIR,
            env={**os.environ, "TMPDIR": self._tmp},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            bufsize=1,
            # Out of the terminal's process group: a Ctrl-C reaches the harness alone, whose stop() then
            # stops the peer in order, instead of killing the peer in the middle of a request.
            start_new_session=True,
        )
        args = list(env.chromium_args)
        self._request("start", lib=self.lib, transport=self.transport, chromium=env.chromium, args=args)

    def setup(self, scenario: Scenario) -> None:
        assert self._env is not None
        self._request(
            "setup",
            scenario=scenario_json(scenario),
            url=self._env.big_page_url,
            small_url=small_page_url(self._env.page_server),
        )

    def run(self, scenario: Scenario, size: int) -> Sample:
        got = self._request("run", scenario=scenario_json(scenario), size=size)
        return Sample(
            got["latencies_us"],
            got["ops"],
            got["elapsed_ns"],
            got.get("nbytes"),
            got["cpu_ns"],
            got.get("events"),
        )

    def teardown(self, scenario: Scenario) -> None:
        self._request("teardown")

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        try:
            # A request cut short still has its reply to come, which would be read as stop's: the peer is
            # told by its stdin closing instead (it exits at once, and its exit handler kills its browsers).
            if process.poll() is None and not self._in_flight:
                self._process = process
                try:
                    self._request("stop")
                finally:
                    self._process = None
            if process.stdin is not None:
                process.stdin.close()
            process.wait(timeout=CALL_TIMEOUT_S / 10)
        except BaseException as exc:  # a second Ctrl-C too: the peer is not left running
            process.kill()
            process.wait()
            if not isinstance(exc, Exception):
                raise
        finally:
            for pipe in (process.stdin, process.stdout):
                if pipe is not None:
                    pipe.close()
            if self._tmp is not None:
                _kill_browsers_in(self._tmp)  # left running if the peer died without stopping them
                shutil.rmtree(self._tmp, ignore_errors=True)
                self._tmp = None
            if self._log is not None:
                self._log.close()
                # Kept only if the peer said something (an error to read); empty ones piled up in /tmp.
                with contextlib.suppress(OSError):
                    if os.path.getsize(self._log.name) == 0:
                        os.unlink(self._log.name)


class PuppeteerPipe(NodePeer):
    name: ClassVar[str] = "puppeteer.pipe"
    transport: ClassVar[str] = "pipe"
    lib: ClassVar[str] = "puppeteer"


class PuppeteerWebSocket(NodePeer):
    name: ClassVar[str] = "puppeteer.ws"
    transport: ClassVar[str] = "websocket"
    lib: ClassVar[str] = "puppeteer"


class ChromeRemoteInterface(NodePeer):
    name: ClassVar[str] = "chrome-remote-interface"
    transport: ClassVar[str] = "websocket"
    lib: ClassVar[str] = "cri"
