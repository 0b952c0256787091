"""Cache key: what telling a capture's entry is its own costs, against reading the capture.

Four rank files (copies of the level1 torch trace of ``workload``, about 26 MB each; 2 MB in
``--quick``) in one root. Baseline: a first analysis, ``analyse(root, jobs=1, cache=False)`` in
this process. Against it: the fingerprint the cache keys on (size, mtime, ctime, inode and a
BLAKE2b digest of each file's first and last 4 KiB: ``cache.fingerprint``), a full BLAKE2b
hash of every byte instead (the alternative considered), and a second analysis served from
the cache (fingerprint, bounded read and checksum of each entry included). Files are in the page
cache for all of them, so the full hash is a lower bound of what it costs on a cold disk, where
it reads every byte again. Medians over repeats.
"""

from __future__ import annotations

import hashlib
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.report import Report
from benchmarks.workload import level1_trace

__all__ = ["run"]

_RANKS = 4


def _seconds(fn: Callable[[], object], reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _full_hash(paths: list[Path]) -> None:
    for path in paths:
        digest = hashlib.blake2b(digest_size=16)
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)


def run(report: Report) -> None:
    from mindspeed_prof.analysis import cache
    from mindspeed_prof.analysis.analyse import analyse

    trace = level1_trace(20 if report.quick else 300)
    reps = 1 if report.quick else 5
    tmp = Path(tempfile.mkdtemp())
    try:
        paths = []
        for rank in range(_RANKS):
            paths.append(
                Path(shutil.copy(trace, tmp / trace.name.replace("rank0_", f"rank{rank}_")))
            )
        size = sum(p.stat().st_size for p in paths)
        cold = _seconds(lambda: analyse(tmp, jobs=1, cache=False), reps)
        key = _seconds(lambda: [cache.fingerprint(p) for p in paths], max(reps, 20))
        full = _seconds(lambda: _full_hash(paths), max(reps, 5))
        analyse(tmp, jobs=1)  # writes the entries
        warm = _seconds(lambda: analyse(tmp, jobs=1), max(reps, 5))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    what = f"{_RANKS} files, {size / 1e6:.0f} MB"
    report.add(
        "cache key: fingerprint of every capture (stat + first/last 4 KiB hashed)",
        "a first analysis (cache off)",
        key / cold,
        0.01,
        f"{key * 1e3:.2f} ms vs {cold:.2f} s; {what}",
    )
    report.add(
        "cache key alternative: a full BLAKE2b hash of every capture",
        "a first analysis (cache off)",
        full / cold,
        None,
        f"{full * 1e3:.0f} ms vs {cold:.2f} s; {what} (page cache warm: a lower bound)",
    )
    report.add(
        "analyse served from the cache (fingerprints, checked entries)",
        "a first analysis (cache off)",
        warm / cold,
        0.1,
        f"{warm * 1e3:.1f} ms vs {cold:.2f} s; {what}",
    )
