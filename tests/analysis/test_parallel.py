"""``analyse --jobs``: the same answer from worker processes, progress, a vanishing capture."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from capture_fixtures import make_run

from mindspeed_prof.analysis import cache, parallel
from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.readers import discover
from mindspeed_prof.analysis.report.report import document
from mindspeed_prof.cli import main


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four ranks (torch traces and range files), rank 2 slow, and one file that is no trace."""
    root = make_run(
        tmp_path_factory.mktemp("par"),
        ranks=(0, 1, 2, 3),
        steps=2,
        profile_level="level0",
        slow={(2, "actor_update"): 1},
    )
    (root / "integrated" / "rank9_broken.pt.trace.json").write_text('{"traceEvents": [')
    return root


def as_json(root: Path, jobs: int, cache: bool) -> str:
    return json.dumps(document(analyse(root, jobs=jobs, cache=cache)), sort_keys=True, default=str)


def test_jobs_give_the_same_json_as_one_process(
    run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parallel, "POOL_MIN_BYTES", 0)
    root = Path(shutil.copytree(run, tmp_path / "run"))
    one = as_json(root, 1, cache=False)
    assert not list(root.rglob(".*"))  # no cache asked for, none written
    assert as_json(root, 2, cache=False) == one
    assert as_json(root, 3, cache=True) == one  # workers fill the cache...
    assert len(list(root.rglob(".*"))) == 8
    assert as_json(root, 2, cache=True) == one  # ...and the next run reads it
    assert '"stragglers": [{' in one and "rank9_broken" in one


def test_progress_counts_files_and_bytes(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "POOL_MIN_BYTES", 0)
    paths = list(discover(run))
    seen: list[tuple[int, int, int, int]] = []
    parallel.read_all(paths, run, jobs=2, use_cache=False, progress=lambda *a: seen.append(a))
    total = sum(p.stat().st_size for p in paths)
    assert [s[0] for s in seen] == list(range(1, len(paths) + 1))
    assert seen[-1] == (len(paths), len(paths), total, total)
    assert all(a[2] <= b[2] for a, b in zip(seen, seen[1:]))


def test_a_capture_that_disappears_is_named_and_the_rest_read(run: Path, tmp_path: Path) -> None:
    root = Path(shutil.copytree(run, tmp_path / "run"))
    paths = list(discover(root))
    gone = paths[1]
    gone.unlink()
    results = parallel.read_all(paths, root, jobs=2, use_cache=True)
    assert isinstance(results[1], str) and str(gone) in results[1]
    assert sum(isinstance(r, str) for r in results) == 2  # it and the broken file


def test_default_jobs_is_capped() -> None:
    assert 1 <= parallel.default_jobs() <= parallel.MAX_JOBS


def test_cli_jobs_and_ctrl_c(
    run: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(["analyse", str(run), "--jobs", "0"])
    assert "--jobs" in capsys.readouterr().err

    def interrupted(*_: object, **__: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("mindspeed_prof.analysis.analyse.read_all", interrupted)
    assert main(["analyse", str(run), "--jobs", "2"]) == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "interrupted" in err


def test_ctrl_c_stops_workers_and_leaves_only_whole_cache_entries(tmp_path: Path) -> None:
    events = [
        {
            "ph": "X",
            "cat": "stage",
            "name": "actor_update",
            "ts": i * 10.0,
            "dur": 5.0,
            "pid": 1,
            "tid": 1,
            "args": {"step": i},
        }
        for i in range(20_000)
    ]
    text = json.dumps({"mindspeed_prof": {"kind": "spans"}, "traceEvents": events})
    for rank in range(32):
        (tmp_path / f"rank{rank}_h_1_step1.mstx.trace.json").write_text(text)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mindspeed_prof.cli",
            "analyse",
            str(tmp_path),
            "--jobs",
            "2",
            "--json",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob(".*")) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == [
        "mindspeed-prof: interrupted (no partial output or cache entry left)"
    ]
    entries = list(tmp_path.glob(".*"))
    assert entries and len(entries) < 32
    for entry in entries:  # no temporary file left; every entry whole
        assert entry.name.endswith(".analysis-cache")
        capture = entry.with_name(entry.name[1 : -len(".analysis-cache")])
        assert cache.load(capture, cache.fingerprint(capture)) is not None


@pytest.mark.parametrize("affinity,expected", [({0, 1, 2}, 3), (set(range(20)), 8), ({5}, 1)])
def test_default_jobs_counts_the_cpus_this_process_may_use(
    affinity: set[int], expected: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: affinity, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 6)  # the machine's: not what may be used
    assert parallel.default_jobs() == expected


@pytest.mark.parametrize("cpus,expected", [(5, 5), (None, 1), (1, 1), (64, 8)])
def test_default_jobs_without_affinity_counts_the_machines_cpus(
    cpus: int | None, expected: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where ``os.sched_getaffinity`` is missing (macOS, Windows); an unknown count is 1."""
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: cpus)
    assert parallel.default_jobs() == expected


@pytest.fixture
def pool_sizes(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The process counts the pools ``read_all`` starts are asked for."""
    sizes: list[object] = []
    real = multiprocessing.Pool

    def pool(*args: Any, **kwargs: Any) -> Any:
        sizes.append(args[0] if args else kwargs.get("processes"))
        return real(*args, **kwargs)

    monkeypatch.setattr(multiprocessing, "Pool", pool)
    monkeypatch.setattr(parallel, "POOL_MIN_BYTES", 0)
    return sizes


@pytest.mark.parametrize("jobs,expected", [(2, 2), (7, 3)])
def test_the_pool_has_jobs_workers_and_no_more_than_captures(
    run: Path, pool_sizes: list[object], jobs: int, expected: int
) -> None:
    paths = list(discover(run))[:3]
    one = parallel.read_all(paths, run, jobs=1, use_cache=False)
    assert parallel.read_all(paths, run, jobs=jobs, use_cache=False) == one
    assert pool_sizes == [expected]


def test_a_pool_from_another_thread_reads_and_leaves_sigint_alone(
    run: Path, pool_sizes: list[object]
) -> None:
    """Only the main thread may set a signal handler: from another thread the pool runs
    without one; from the main thread the handler in place before is put back."""
    paths = list(discover(run))[:3]
    one = parallel.read_all(paths, run, jobs=1, use_cache=False)
    before = signal.getsignal(signal.SIGINT)
    assert parallel.read_all(paths, run, jobs=2, use_cache=False) == one
    assert signal.getsignal(signal.SIGINT) is before
    got: list[object] = []

    def in_thread() -> None:
        try:
            got.append(parallel.read_all(paths, run, jobs=2, use_cache=False))
        except BaseException as err:  # noqa: BLE001 - shown by the assertion below
            got.append(err)

    thread = threading.Thread(target=in_thread)
    thread.start()
    thread.join(timeout=120)
    assert got == [one] and signal.getsignal(signal.SIGINT) is before
    assert pool_sizes == [2, 2]
