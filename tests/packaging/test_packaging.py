"""What ``pip install cdp-engine`` gives a user: the wheel's contents, its dependencies, and types they see.

The wheel is built once per run from a copy of the working tree (a build writes ``build/`` and
``*.egg-info`` next to its sources), without build isolation so it needs no network.
"""

from __future__ import annotations

import ast
import gzip
import http.server
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

from engine import drift as _drift

ROOT = Path(__file__).resolve().parents[2]
PROTOCOL_JSON = ROOT / "protocol-json"
PACKAGED = ROOT / "engine" / "_protocol"
FIRST_PARTY = {"cdp", "engine"}
CHECKOUT_ONLY = {"benchmarks", "codegen"}  # run from a checkout, never installed


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# --- the packaged protocol ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", _drift.FILES)
def test_packaged_protocol_is_the_pinned_json(name: str) -> None:
    packaged = gzip.decompress((PACKAGED / f"{name}.gz").read_bytes())
    assert packaged == (PROTOCOL_JSON / name).read_bytes(), f"{name}: run `make protocol-data`"


def test_packaged_protocol_version_is_the_pinned_version() -> None:
    assert (PACKAGED / "VERSION").read_bytes() == (PROTOCOL_JSON / "VERSION").read_bytes()
    assert _drift.packaged_version() == (PROTOCOL_JSON / "VERSION").read_text().strip()


# --- the wheel ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("source") / "cdp-engine"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", ".*_cache", ".hypothesis", "__pycache__", "build", "dist", "*.egg-info"
        ),
    )
    out = tmp_path_factory.mktemp("dist")
    build = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation"]
    subprocess.run(
        [*build, "--wheel-dir", str(out), str(source)],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("cdp_engine-*.whl")
    return built


def _requires(wheel: Path) -> list[Requirement]:
    """The wheel's ``Requires-Dist`` lines."""
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        lines = z.read(name).decode().splitlines()
    prefix = "Requires-Dist: "
    return [Requirement(line.removeprefix(prefix)) for line in lines if line.startswith(prefix)]


def _runtime(requires: list[Requirement]) -> set[str]:
    return {_canonical(r.name) for r in requires if r.marker is None}


def test_wheel_installs_only_cdp_and_engine_with_their_data(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        top = {n.split("/")[0] for n in names}
        assert top == {"cdp", "engine", f"{wheel.name.split('-py3')[0]}.dist-info"}
        assert {"cdp/py.typed", "engine/py.typed", "engine/_protocol/VERSION"} <= set(names)
        for name in _drift.FILES:
            packaged = gzip.decompress(z.read(f"engine/_protocol/{name}.gz"))
            assert packaged == (PROTOCOL_JSON / name).read_bytes()
        entry_points = z.read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "cdp-engine = engine.cli:main" in entry_points


def test_generator_and_benchmark_dependencies_are_extras_only(wheel: Path) -> None:
    requires = _requires(wheel)
    assert _runtime(requires) == {"trio", "outcome", "h11", "attrs", "cattrs", "orjson", "websockets"}
    extras = {_canonical(r.name): str(r.marker) for r in requires if r.marker is not None}
    assert extras["jinja2"] == 'extra == "codegen"'
    assert extras["trio-websocket"] == 'extra == "bench"'


def _imports(tree: ast.Module) -> tuple[set[str], set[str]]:
    """Top-level names imported when the module loads, and those imported only inside functions."""
    eager: set[str] = set()
    lazy: set[str] = set()

    def visit(node: ast.AST, inside_function: bool) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return  # only for type checkers
        if isinstance(node, ast.Import | ast.ImportFrom):
            if isinstance(node, ast.ImportFrom):
                modules = [node.module or ""] if node.level == 0 else []
            else:
                modules = [alias.name for alias in node.names]
            (lazy if inside_function else eager).update(m.split(".")[0] for m in modules)
        function = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        for child in ast.iter_child_nodes(node):
            visit(child, inside_function or function)

    visit(tree, False)
    return eager, lazy


def test_runtime_dependencies_are_what_cdp_and_engine_import(wheel: Path) -> None:
    eager: set[str] = set()
    lazy: set[str] = set()
    for package in FIRST_PARTY:
        for path in (ROOT / package).rglob("*.py"):
            e, la = _imports(ast.parse(path.read_text()))
            eager |= e
            lazy |= la
    third_party = {name for name in eager | lazy if name not in sys.stdlib_module_names | FIRST_PARTY}
    assert not eager & CHECKOUT_ONLY, "cdp and engine must load without codegen and benchmarks"
    providers = importlib.metadata.packages_distributions()
    dists = {name: {_canonical(d) for d in providers.get(name, [])} for name in third_party - CHECKOUT_ONLY}
    assert all(dists.values()), f"imports that no installed distribution provides: {dists}"

    requires = _requires(wheel)
    runtime = _runtime(requires)
    declared = {_canonical(r.name) for r in requires}
    imported = set().union(*dists.values())
    assert runtime <= imported, f"declared but never imported: {runtime - imported}"
    for name, provided_by in dists.items():
        if name in eager:
            assert provided_by & runtime, f"{name} is imported when cdp or engine loads but is not required"
        else:  # imported inside a function: a runtime dependency (cattrs) or an extra's (playwright)
            assert provided_by & declared, f"{name} is imported lazily but is in no extra"


# --- the installed wheel, outside a checkout ---------------------------------------------------------------


@pytest.fixture
def protocol_endpoint() -> Iterator[tuple[str, str]]:
    """A local ``/json/protocol`` that speaks the pinned protocol minus its last domain (and that name)."""
    domains = _drift.load_pinned(PROTOCOL_JSON)
    body = json.dumps({"domains": domains[:-1]}).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", domains[-1]["domain"]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_installed_wheel_runs_protocol_and_drift_and_says_where_bench_is(
    wheel: Path, tmp_path: Path, protocol_endpoint: tuple[str, str]
) -> None:
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
    )
    # -S: no site processing, so the editable install's path entry (the checkout) is not on sys.path; the
    # runtime dependencies come from this venv's site-packages, named explicitly.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), sysconfig.get_paths()["purelib"]])}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-S", *args], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
        )

    where = run("-c", "import importlib.util as u, engine; print(engine.__file__, u.find_spec('codegen'))")
    assert where.stdout.split() == [str(site / "engine" / "__init__.py"), "None"], where.stderr

    summary = run("-m", "engine.cli", "protocol")
    assert summary.returncode == 0, summary.stderr
    assert f"{len(_drift.load_pinned(PROTOCOL_JSON))} domains" in summary.stdout

    url, missing = protocol_endpoint
    drift = run("-m", "engine.cli", "drift", "--connect", url)
    assert drift.returncode == 0, drift.stderr
    assert f"  pinned   {missing}" in drift.stdout.splitlines()

    bench = run("-m", "engine.cli", "bench", "--quick")
    assert bench.returncode == 1
    assert "runs from a checkout" in bench.stderr
    assert "make bench" in bench.stderr
    assert "Traceback" not in bench.stderr


# --- types in a user's project -----------------------------------------------------------------------------

USER_SCRIPT = """\
from typing import reveal_type

import cdp
import engine


async def main() -> None:
    async with engine.launch() as browser:
        reveal_type(browser)
        page = await browser.new_page()
        result = await page.session.execute(cdp.page.navigate(url="about:blank"))
        reveal_type(result)
        wrong: int = result
"""


@pytest.fixture
def user_project(tmp_path: Path) -> Path:
    """A project outside the repository that uses the editable install (``make setup``) of cdp-engine."""
    (tmp_path / "user.py").write_text(textwrap.dedent(USER_SCRIPT))
    return tmp_path


def test_mypy_in_a_user_project_sees_the_types(user_project: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "MYPYPATH"}
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "user.py"],
        cwd=user_project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert re.search(r'Revealed type is "engine\.[\w.]*Browser"', done.stdout), done.stdout
    assert 'Revealed type is "cdp.page.NavigateResult"' in done.stdout
    assert 'expression has type "NavigateResult", variable has type "int"' in done.stdout
    assert "Found 1 error in 1 file" in done.stdout


@pytest.mark.skipif(shutil.which("node") is None, reason="pyright needs node (without it, it downloads one)")
def test_pyright_in_a_user_project_sees_the_types(user_project: Path) -> None:
    pytest.importorskip("pyright")
    env = {**os.environ, "PYRIGHT_PYTHON_IGNORE_WARNINGS": "1"}  # no version check against PyPI
    done = subprocess.run(
        [sys.executable, "-m", "pyright", "--pythonpath", sys.executable, "user.py"],
        cwd=user_project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert 'Type of "browser" is "Browser"' in done.stdout, done.stdout
    assert 'Type of "result" is "NavigateResult"' in done.stdout
    assert '"NavigateResult" is not assignable to declared type "int"' in done.stdout
    assert "1 error" in done.stdout
