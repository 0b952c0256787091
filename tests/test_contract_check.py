"""``scripts/check_torch_npu_contract.py`` on wheels built from the double: it passes an identical
one and names each difference in a changed one (CI runs it against the real wheel)."""

from __future__ import annotations

import runpy
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOUBLE = ROOT / "tests" / "doubles" / "torch_npu"
SCRIPT = ROOT / "scripts" / "check_torch_npu_contract.py"
FILES: list[str] = runpy.run_path(str(SCRIPT))["FILES"]  # the files the script checks


def wheel(tmp_path: Path, edit: tuple[str, str, str] | None = None) -> Path:
    path = tmp_path / "torch_npu-2.14.0-cp311-cp311-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for rel in FILES:
            text = (DOUBLE / rel).read_text()
            if edit and edit[0] == rel:
                assert edit[1] in text
                text = text.replace(edit[1], edit[2], 1)
            zf.writestr(f"torch_npu/{rel}", text)
        zf.writestr(
            "torch_npu/profiler/analysis/prof_common_func/_constant.py",
            "class Constant:\n    pass\n",
        )
    return path


def check(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), str(path)], capture_output=True, text=True, timeout=60
    )


def test_identical_wheel_passes(tmp_path: Path) -> None:
    proc = check(wheel(tmp_path))
    assert proc.returncode == 0 and proc.stdout.startswith("OK: "), proc.stdout


def test_changed_enum_value_is_named(tmp_path: Path) -> None:
    edit = ("profiler/experimental_config.py", 'Level1 = "Level1"', 'Level1 = "LEVEL1"')
    proc = check(wheel(tmp_path, edit))
    assert proc.returncode == 1 and "ProfilerLevel differs" in proc.stdout, proc.stdout


def test_missing_function_is_named(tmp_path: Path) -> None:
    proc = check(wheel(tmp_path, ("npu/mstx.py", "def mark(", "def mark_renamed(")))
    assert proc.returncode == 1 and "mark is not in the wheel" in proc.stdout, proc.stdout


def test_changed_default_is_named(tmp_path: Path) -> None:
    edit = (
        "npu/mstx.py",
        "def range_end(range_id: int, domain: str = 'default')",
        "def range_end(range_id: int, domain: str = 'other')",
    )
    proc = check(wheel(tmp_path, edit))
    assert proc.returncode == 1 and "range_end parameters differ" in proc.stdout, proc.stdout
