"""``timeline --jobs``: the tracks that read captures again are written in worker processes,
and the file is the one a single process writes, byte for byte."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import mindspeed_prof.pool as pool
from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.readers import TraceData
from mindspeed_prof.analysis.timeline import workers as timeline_workers
from mindspeed_prof.analysis.timeline import write_timeline
from mindspeed_prof.analysis.timeline.budget import BudgetError
from mindspeed_prof.testing.kineto import write_cuda_trace


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> list[TraceData]:
    """Four ranks of level1 CUDA traces, two steps each, rank 2 the slowest."""
    root = tmp_path_factory.mktemp("workers")
    for rank in range(4):
        write_cuda_trace(
            root / f"rank{rank}_host_{100 + rank}.pt.trace.json",
            rank=rank,
            steps=2,
            kernels_per_stage=60 if rank == 2 else 40,
        )
    return analyse(root, jobs=1, cache=False).traces


@pytest.fixture
def pools(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Any bytes to read go to workers; the size of each pool started is recorded."""
    monkeypatch.setattr(timeline_workers, "POOL_MIN_BYTES", 0)
    started: list[int] = []
    real = pool.workers

    @contextmanager
    def spy(jobs: int) -> Iterator[Any]:
        started.append(jobs)
        with real(jobs) as got:
            yield got

    monkeypatch.setattr(pool, "workers", spy)
    return started


def _bytes(path: Path) -> bytes:
    raw = path.read_bytes()
    return gzip.decompress(raw) if path.name.endswith(".gz") else raw


@pytest.mark.parametrize(
    "name, share", [("t.json", None), ("t.json.gz", None), ("t.json", 0.4), ("t.json", 0.15)]
)
def test_workers_write_the_file_one_process_writes(
    traces: list[TraceData], tmp_path: Path, pools: list[int], name: str, share: float | None
) -> None:
    """Whole, gzipped, and under budgets that merge short operators or keep only the slowest
    rank-steps' (the statistics counted in workers, merged in track order)."""
    budget = None
    if share is not None:
        whole = write_timeline(traces, tmp_path / "whole.json", detail=None, jobs=1)
        budget = int(whole.json_bytes * share)
    got = {}
    for jobs in (1, 2):
        folder = tmp_path / f"jobs{jobs}"
        folder.mkdir()
        result = write_timeline(traces, folder / name, detail=None, max_bytes=budget, jobs=jobs)
        got[jobs] = (_bytes(folder / name), result)
        assert [p.name for p in folder.iterdir()] == [name]  # no worker's file left
    (one, a), (two, b) = got[1], got[2]
    assert pools == [2] * len(pools) and pools  # the second went through a pool of two
    assert one == two
    assert (a.events, a.slices, a.json_bytes, a.budget) == (
        b.events,
        b.slices,
        b.json_bytes,
        b.budget,
    )
    trace = json.loads(one)
    assert len(trace["traceEvents"]) == a.events and a.json_bytes == len(one)
    if budget is not None:
        assert a.json_bytes <= budget and a.budget is not None
        assert a.budget["merged_operators"] > 0 or a.budget["left_out_operators"] > 0


def test_a_budget_no_track_fits_is_refused_by_workers_with_nothing_left(
    traces: list[TraceData], tmp_path: Path, pools: list[int]
) -> None:
    with pytest.raises(BudgetError):
        write_timeline(traces, tmp_path / "t.json", detail=None, max_bytes=3_000, jobs=2)
    assert pools and list(tmp_path.iterdir()) == []


def test_few_bytes_to_read_stay_in_one_process(
    traces: list[TraceData], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Starting workers costs more than reading a few MB again."""
    started: list[int] = []
    monkeypatch.setattr(pool, "workers", lambda jobs: started.append(jobs))
    write_timeline(traces, tmp_path / "t.json", detail=None, jobs=2)
    assert started == []


def test_ctrl_c_while_workers_write_leaves_no_file(tmp_path: Path) -> None:
    """``timeline --jobs 2`` interrupted once a worker has begun a track's file: one line,
    exit 130, and neither the output, its temporary nor a track's file is left."""
    import signal
    import subprocess
    import sys
    import time

    root = tmp_path / "root"
    for rank in range(16):  # 37 MB to read again: over POOL_MIN_BYTES
        write_cuda_trace(root / f"rank{rank}_h_{rank}.pt.trace.json", rank=rank, steps=4,
                         kernels_per_stage=200)  # fmt: skip
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mindspeed_prof.cli", "timeline", str(root), "-o",
         str(out / "t.json"), "--detail", "all", "--jobs", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not list(out.glob(".t.json.*.track*.tmp")) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert list(out.glob(".t.json.*.track*.tmp")), "no worker began a track"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == (
        "mindspeed-prof: interrupted (no partial output or cache entry left)"
    )
    assert list(out.iterdir()) == []
