"""The arrows point down: the engine's core never imports the rooms above it, and only engine/playwright*
imports playwright (ARCHITECTURE.md, "Invariants"). Read from the source, so a new import can't slip in."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = {
    "_connection", "_errors", "_framing", "_http", "_params", "_process", "_session", "_sessions",
    "_settings", "_transport", "_util", "_websocket", "_ws_codec",
}  # fmt: skip
UPPER = {
    "_refs",
    "_axrender",
    "_snapshot",
    "_evaluate",
    "_actions",
    "_steps",
    "_page",
    "_browser",
    "playwright",
}


def _imports(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
    return out


def test_cdp_never_imports_trio_or_the_engine() -> None:
    for path in (ROOT / "cdp").rglob("*.py"):
        bad = {m for m in _imports(path) if m.split(".")[0] in ("trio", "engine")}
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


def test_the_engine_core_never_imports_the_upper_rooms() -> None:
    for name in CORE:
        path = ROOT / "engine" / f"{name}.py"
        assert path.exists(), f"{path} is gone: update CORE in this test"
        upper = {
            m
            for m in _imports(path)
            if m.startswith("engine.") and m.split(".")[1].lstrip("_") in {u.lstrip("_") for u in UPPER}
        }
        assert not upper, f"engine/{name}.py imports {upper}"


def test_only_engine_playwright_imports_playwright() -> None:
    for path in (ROOT / "engine").rglob("*.py"):
        if "playwright" in path.relative_to(ROOT / "engine").parts[0]:
            continue
        bad = {m for m in _imports(path) if m.split(".")[0] == "playwright"}
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


def test_import_engine_does_not_load_playwright() -> None:
    import subprocess
    import sys

    code = "import engine, sys; print(sorted(m for m in sys.modules if m.startswith('playwright')))"
    argv = [sys.executable, "-c", code]
    done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr
