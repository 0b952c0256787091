"""The analysis tests' shared run: two ranks, three steps, rank 1 slow in actor_update."""

from __future__ import annotations

from pathlib import Path

import pytest
from capture_fixtures import make_run


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two ranks, three steps, rank 1 slow in actor_update (90 ms: with two ranks it is a
    straggler unless rank 0's stage takes 60 ms, which a loaded machine's stall did reach at 30)."""
    return make_run(tmp_path_factory.mktemp("run"), slow={(1, "actor_update"): 3})
