"""The public API: what README and docs/ name, typed for type checkers, imported lazily at run
time."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import mindspeed_prof

ROOT = Path(__file__).resolve().parents[1]


def test_documented_names_are_exported() -> None:
    readme = "\n".join(p.read_text() for p in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
    imported = {
        n.strip()
        for line in re.findall(r"from mindspeed_prof import ([\w, ]+)", readme)
        for n in line.split(",")
    }
    used = set(re.findall(r"mindspeed_prof\.(\w+)\(", readme))
    named = {"ProfilerError", "ConfigError"}
    assert imported | used | named <= set(mindspeed_prof.__all__)


def test_every_export_is_the_defining_modules_object() -> None:
    from mindspeed_prof.capture import profiler

    validate = importlib.import_module("mindspeed_prof.config.validate")
    assert mindspeed_prof.ProfilerError is profiler.ProfilerError
    assert mindspeed_prof.Profiler is profiler.Profiler
    assert mindspeed_prof.current is profiler.current
    assert mindspeed_prof.ConfigError is validate.ConfigError
    for name in mindspeed_prof.__all__:
        assert getattr(mindspeed_prof, name) is not None and name in dir(mindspeed_prof)


def test_type_checkers_see_every_export() -> None:
    """Names imported under ``if TYPE_CHECKING:`` are exactly ``__all__`` (no ``Any`` left to a
    module ``__getattr__``)."""
    tree = ast.parse((ROOT / "mindspeed_prof" / "__init__.py").read_text())
    (block,) = [
        n
        for n in tree.body
        if isinstance(n, ast.If) and getattr(n.test, "id", None) == "TYPE_CHECKING"
    ]
    seen = {
        a.asname or a.name for n in block.body if isinstance(n, ast.ImportFrom) for a in n.names
    }
    assert seen == set(mindspeed_prof.__all__)
    assert (ROOT / "mindspeed_prof" / "py.typed").is_file()


def test_importing_the_package_imports_nothing_heavy() -> None:
    code = (
        "import sys, mindspeed_prof; print(sorted(m for m in ('torch', 'omegaconf', 'ray') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_command_line_starts_without_config_or_capture_libraries() -> None:
    """``mindspeed-prof analyse`` and friends never need omegaconf, hydra, torch or ray at
    start (omegaconf alone was 50 ms of every command)."""
    code = (
        "import sys, mindspeed_prof.cli; print(sorted(m for m in ('torch', 'omegaconf', "
        "'hydra', 'ray', 'matplotlib') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_version_is_written_in_one_place() -> None:
    """``mindspeed_prof.__version__`` is the version: the build reads it (setuptools' ``attr``
    for the ``dynamic`` version), and no other file of the project writes it."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    project = pyproject.split("[project]", 1)[1].split("\n[", 1)[0]
    assert re.search(r'^dynamic = \["version"\]', project, re.M)
    assert not re.search(r"^version\s*=", project, re.M)
    assert 'version = { attr = "mindspeed_prof.__version__" }' in pyproject
    written = re.compile(rf"""version_*\s*[=:]\s*["']{re.escape(mindspeed_prof.__version__)}["']""")
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()  # the project's files, not build/
    copies = [
        name
        for name in tracked
        if Path(name).suffix in (".py", ".toml", ".cfg", ".md", ".yaml")
        and not name.startswith("tests/")
        and written.search((ROOT / name).read_text(errors="replace"))
    ]
    assert copies == ["mindspeed_prof/__init__.py"]
