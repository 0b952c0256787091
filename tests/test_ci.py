"""CI runs exactly the test command that README.md gives a new user."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def readme_command(marker: str) -> str:
    lines = (ROOT / "README.md").read_text().splitlines()
    start = lines.index(f"<!-- {marker} -->")
    assert lines[start + 1] == "```bash"
    return lines[start + 2]


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert ci[-1] == readme_command("test-command")


def test_demo_command_runs_the_demo() -> None:
    assert readme_command("demo-command").endswith("mindspeed-prof demo")


@pytest.mark.slow  # a pytest session of its own, on two workers
def test_under_xdist_a_files_tests_run_in_one_worker() -> None:
    """The README's ``-n 2 --dist loadgroup`` keeps each file's tests (and every Ray test) on
    one worker, so a module fixture (a reference tool's runs, the Ray cluster) is set up once:
    conftest marks the groups and this pytest and xdist honour them."""
    import subprocess
    import sys

    files = ["tests/capture/test_naming.py", "tests/capture/test_lifecycle.py"]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            *files,
            "-n",
            "2",
            "--dist",
            "loadgroup",
            "-v",
            "-p",
            "no:cacheprovider",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:]
    workers: dict[str, set[str]] = {}
    for line in proc.stdout.splitlines():
        if " PASSED " in line and line.startswith("[gw"):
            worker, test = line.split("]", 1)[0], line.split(" PASSED ", 1)[1]
            workers.setdefault(test.split("::", 1)[0], set()).add(worker)
    assert set(workers) == set(files)
    assert all(len(w) == 1 for w in workers.values()), workers
