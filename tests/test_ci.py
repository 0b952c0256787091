"""CI runs exactly the test command that README.md gives a new user."""

from __future__ import annotations

from pathlib import Path

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
