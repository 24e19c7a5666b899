"""Load the pinned protocol, render every module with jinja2, and format the result with ruff."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import jinja2

from codegen import fixups
from codegen._ir import Field, Protocol, build

ROOT = Path(__file__).resolve().parent.parent
PROTOCOL_DIR = ROOT / "protocol-json"
OUTPUT_DIR = ROOT / "cdp"
FILES = ("browser_protocol.json", "js_protocol.json")


def load(protocol_dir: Path = PROTOCOL_DIR) -> Protocol:
    """Read the pinned JSON files and the VERSION file, apply the fixups, build the IR."""
    domains: list[dict[str, Any]] = []
    for name in FILES:
        path = protocol_dir / name
        if path.exists():
            domains.extend(json.loads(path.read_text())["domains"])
    version = (protocol_dir / "VERSION").read_text().strip()
    fixups.apply(domains)
    return build(version, domains)


def _escape(text: str) -> str:
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    if text.endswith('"'):
        text = text[:-1] + '\\"'
    return text


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line if line.strip() else "" for line in text.splitlines())


def _doc(text: str) -> str:
    return _escape(text.strip())


def _summary(item: Any) -> str:
    """First docstring lines: the flags, then the description (or a plain sentence if there is none)."""
    marks = [
        word for word, on in (("Experimental.", item.experimental), ("Deprecated.", item.deprecated)) if on
    ]
    name = getattr(item, "name", "")
    text = _escape(item.description.strip()) or f"{name}."
    body = " ".join([*marks, text]) if marks else text
    first, _, rest = body.partition("\n")
    if not rest:
        return first
    return first + "\n" + _indent(textwrap.dedent(rest), "    ")


def _attributes(fields: tuple[Field, ...], header: str = "Attributes") -> str:
    if not fields:
        return ""
    lines = ["", "", f"    {header}:"]
    for f in fields:
        marks = [w for w, on in (("Experimental.", f.experimental), ("Deprecated.", f.deprecated)) if on]
        parts = [*marks, _escape(" ".join(f.description.split()))]
        if f.values:
            parts.append("Values: " + ", ".join(_escape(repr(v)) for v in f.values) + ".")
        text = " ".join(p for p in parts if p) or "-"
        lines.append(f"        {f.py}: {text}")
    return "\n".join(lines) + "\n    "


def _string_literal(value: str) -> str:
    """A double-quoted Python literal for any string (a JSON string literal is also a Python one)."""
    return json.dumps(value)


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters["doc"] = _doc
    env.filters["summary"] = _summary
    env.filters["attributes"] = _attributes
    env.filters["pyrepr"] = _string_literal
    return env


def render(protocol: Protocol) -> dict[str, str]:
    """Every file of the ``cdp`` package, by relative path, before formatting."""
    env = environment()
    version = protocol.version
    files = {
        "__init__.py": env.get_template("init.py.j2").render(version=version, domains=protocol.domains),
        "_base.py": env.get_template("_base.py.j2").render(version=version),
        "_registry.py": env.get_template("registry.py.j2").render(version=version, domains=protocol.domains),
        "py.typed": "",
    }
    domain_template = env.get_template("domain.py.j2")
    for d in protocol.domains:
        files[f"{d.module}.py"] = domain_template.render(version=version, d=d)
    return files


def format_tree(directory: Path) -> None:
    """Sort imports and ``ruff format`` the generated files, with the project's config."""
    config = ["--config", str(ROOT / "pyproject.toml")]
    ruff = [sys.executable, "-m", "ruff"]
    subprocess.run(
        [*ruff, "check", "--quiet", "--fix-only", "--select", "I", *config, str(directory)],
        check=True,
    )
    subprocess.run([*ruff, "format", "--quiet", *config, str(directory)], check=True)


def write(protocol: Protocol, directory: Path) -> dict[str, str]:
    """Render into ``directory`` (stale files removed), format, and return the formatted contents."""
    files = render(protocol)
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.iterdir():
        if old.is_file() and old.name not in files:
            old.unlink()
    for name, text in files.items():
        (directory / name).write_text(text)
    format_tree(directory)
    return {name: (directory / name).read_text() for name in files}


def check(protocol: Protocol, directory: Path = OUTPUT_DIR) -> list[str]:
    """Files in ``directory`` that differ from the generator's output (missing and extra ones too)."""
    with tempfile.TemporaryDirectory() as tmp:
        # Render under a folder named like the package so ruff's first-party import rules match.
        fresh = write(protocol, Path(tmp) / directory.name)
    present = {p.name for p in directory.iterdir() if p.is_file()} if directory.exists() else set()
    differ = [
        name
        for name, text in fresh.items()
        if not (directory / name).exists() or (directory / name).read_text() != text
    ]
    differ.extend(sorted(present - set(fresh)))
    return sorted(differ)
