"""The benchmark script runs and prints its table (its numbers are not asserted: no timed tests)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_quick_benchmark_prints_ratio_rows(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "benchmarks", "--quick", "--only", "db",
                           "--only", "markers", "--out", str(tmp_path / "r.md")], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "| db capture size | text capture of the same steps |" in proc.stdout
    assert "| one range, capture off | contextlib.nullcontext() |" in proc.stdout
