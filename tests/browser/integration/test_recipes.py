"""The nine recipes of the README, each run as a user runs it (``python -m engine.demo.recipes.<name>
URL``) against a real Chromium and a page served on 127.0.0.1, with a deadline."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

RECIPES = Path(__file__).parents[3] / "engine" / "demo" / "recipes"
OLD_LINES = {
    "screenshot": 23,
    "network": 33,
    "intercept": 52,
    "console": 31,
    "tabs": 28,
    "storage": 39,
    "frames": 35,
}
"""Lines of the scripts a new user wrote for these tasks before the recipes' helpers existed."""


def run(recipe: str, *args: str, cwd: Path | None = None, timeout: float = 90) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", f"engine.demo.recipes.{recipe}", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def shop(server: str) -> str:
    return f"{server}/scripting/shop.html"


def test_a_recipe_without_its_url_says_how_to_run_it() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "engine.demo.recipes.tabs"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1
    assert proc.stderr.startswith("usage: python -m engine.demo.recipes.tabs URL")


def test_each_recipe_is_shorter_than_the_script_it_replaces() -> None:
    for name, old in OLD_LINES.items():
        lines = len((RECIPES / f"{name}.py").read_text().splitlines())
        assert lines < old, (name, lines, old)


def test_screenshot_writes_a_png_and_a_pdf(shop: str, tmp_path: Path) -> None:
    out = run("screenshot", shop, cwd=tmp_path)
    assert (tmp_path / "page.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert (tmp_path / "page.pdf").read_bytes().startswith(b"%PDF-")
    assert f"page.png: {(tmp_path / 'page.png').stat().st_size:,} bytes" in out


def test_network_lists_every_request_with_status_type_and_size(shop: str, server: str) -> None:
    rows = {line.split()[-1]: line.split() for line in run("network", shop).splitlines()}
    assert rows[shop][:2] == ["200", "Document"]
    assert rows[f"{server}/scripting/items.json"][:2] == ["200", "Fetch"]
    assert rows[f"{server}/scripting/logo.svg"][:2] == ["200", "Image"]
    assert int(rows[f"{server}/scripting/logo.svg"][2].replace(",", "")) > 0


def test_intercept_blocks_answers_and_rewrites(shop: str, server: str) -> None:
    out = run("intercept", shop)
    assert f"Fetch.failRequest     {server}/scripting/logo.svg" in out
    assert f"Fetch.fulfillRequest  {server}/scripting/items.json" in out
    assert f"Fetch.fulfillRequest  {shop}" in out
    assert "Rewritten Recipe shop\nnew" in out  # the rewritten HTML and the answered fetch, in the page


def test_intercept_on_a_page_with_no_list_says_so_after_its_wait(server: str) -> None:
    """It waited for an <li> (the answered fetch makes one on the shop page) with no end, on any page."""
    out = run("intercept", f"{server}/steps/next.html", timeout=40)
    assert "(no <li> came within 3 s; the page as it is:)\nRewritten Next page\n" in out


def test_console_prints_messages_and_the_uncaught_exception_with_its_place(shop: str) -> None:
    lines = run("console", shop).splitlines()
    assert "console.log: 'shop ready' 3 {items: 2}" in lines
    assert "console.warning: 'low stock'" in lines
    assert "console.log: 'items' 2" in lines
    assert f"uncaught: TypeError: cart.total is not a function (at {shop}:19:30)" in lines


def test_ten_tabs_load_at_once(shop: str) -> None:
    lines = run("tabs", shop).splitlines()
    assert sorted(lines) == sorted(f"tab {n}: Recipe shop" for n in range(10))


def test_storage_sets_reads_and_clears_cookies_and_local_storage(shop: str, server: str) -> None:
    lines = run("storage", shop).splitlines()
    assert "cookie  session=abc123 (path /, httpOnly False)" in lines
    assert "cookie  visited=yes (path /, httpOnly False)" in lines
    assert {"storage theme=dark", "storage cart=2 items"} <= set(lines)
    assert lines[-1] == f"after clearing {server}: 0 cookies"


def test_frames_lists_same_and_cross_origin_frames_and_runs_a_script_in_each(shop: str, server: str) -> None:
    lines = run("frames", shop).splitlines()
    remote = server.replace("127.0.0.1", "localhost")
    assert lines[0] == f"{shop} (in the page's process): title 'Recipe shop'"
    assert f"{server}/scripting/inner.html (in the page's process): title 'inner frame'" in lines
    assert f"{remote}/scripting/inner.html (out of process): title 'inner frame'" in lines
    assert sum("(out of process)" in line for line in lines) == 2  # the remote frame and its nested one
    assert len(lines) == 5


def test_cli_runs_each_command(shop: str) -> None:
    out = run("cli", shop)
    assert "$ cdp-engine version" in out
    assert '"value": "Recipe shop"' in out
    assert out.count('"method": "Runtime.consoleAPICalled"') == 2
    assert "command  Fetch.fulfillRequest" in out


def test_agent_clicks_by_ref_waits_and_reads_the_page(server: str) -> None:
    out = run("agent", f"{server}/steps/index.html")  # its Go button shows "Clicked" 150 ms later
    assert "- paragraph: Clicked" in out, out
    assert '- button "Go" [ref=e2]' in out, out


def test_the_readme_table_gives_each_recipes_true_length() -> None:
    readme = (RECIPES.parents[2] / "README.md").read_text()
    section = readme.split("## Recipes", 1)[1].split("\n## ", 1)[0]  # other tables name scenarios too
    section_lines = section.splitlines()
    rows = [line.split("|") for line in section_lines if line.startswith("| ") and "recipe" not in line]
    stated = {
        cells[1].strip(): int(cells[3].split()[0])
        for cells in rows
        if (RECIPES / f"{cells[1].strip()}.py").exists()
    }
    assert set(stated) == set(OLD_LINES) | {"cli", "agent"}
    for name, lines in stated.items():
        assert lines == len((RECIPES / f"{name}.py").read_text().splitlines()), name
