"""Renew the reference tools' kept outputs (``tests/fixtures/reference/*.json``).

Runs the reference tests (HTA's and msprof-analyze's, marker ``reference``) with every call of a
tool live (``MINDSPEED_PROF_REFERENCE=renew``): each call writes the figures the tests compare,
keyed by a digest of the tool's input, the call and the tool's version
(``tests/reference_store.py``).
Run it after changing a corpus set, the input a test prepares for a tool, or the pinned version
of HTA or msprof-analyze, and commit the JSON beside the change; the tests' exit status is this
script's. About 6 minutes of CPU (33 minutes on 2 cores at a load of 15-35).

    python scripts/reference_fixtures.py
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "reference"
#: The test files whose reference tools' outputs are kept.
TESTS = [
    "tests/analysis/readers/device/test_streams.py",
    "tests/analysis/readers/device/test_breakdown.py",
    "tests/analysis/findings/test_advisor_side_by_side.py",
    "tests/analysis/test_msprof_reference.py",
]


def main() -> int:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for old in FIXTURES.glob("*.json"):  # entries no test asks for any more go too
        old.unlink()
    env = {**os.environ, "MINDSPEED_PROF_REFERENCE": "renew"}
    code = subprocess.call(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-m", "reference", *TESTS],
        cwd=ROOT,
        env=env,
    )
    print(
        f"reference_fixtures: {'wrote' if code == 0 else 'tests failed; wrote'} "
        f"{', '.join(sorted(p.name for p in FIXTURES.glob('*.json')))}"
    )
    return code


if __name__ == "__main__":
    sys.exit(main())
