"""Captures read in worker processes, through the cache, with progress: ``analyse --jobs``."""

from __future__ import annotations

import gc
import os
from collections.abc import Callable
from pathlib import Path

from mindspeed_prof.analysis import cache
from mindspeed_prof.analysis.kept import kept
from mindspeed_prof.analysis.readers import BadFile, TraceData, read
from mindspeed_prof.pool import next_result, workers

__all__ = [
    "MAX_JOBS",
    "POOL_MIN_BYTES",
    "Progress",
    "default_jobs",
    "read_all",
    "read_encoded",
    "read_one",
]

#: More processes than this rarely help: reading is bound by memory bandwidth and disk.
MAX_JOBS = 8

#: Below this many bytes to read, one process reads them: starting workers would cost more.
POOL_MIN_BYTES = 4 << 20

#: Called after each capture: files done, files in all, bytes done, bytes in all.
Progress = Callable[[int, int, int, int], None]


def default_jobs() -> int:
    """The CPUs this process may use, capped at ``MAX_JOBS``."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(cpus or 1, MAX_JOBS))


def read_one(
    path: Path, root: Path | None, use_cache: bool = True, comm_kernels: str = ""
) -> TraceData | str:
    """One capture, or the one line saying why it cannot be read. The cache holds captures
    classified by the built-in table and their own patterns: with the user's
    ``comm_kernels`` a capture is read again."""
    try:
        if use_cache and not comm_kernels:
            return cache.read_cached(path, root)
        return read(path, root, comm_kernels)
    except BadFile as err:
        return str(err)


def read_encoded(
    path: Path, root: Path | None, use_cache: bool = True, comm_kernels: str = ""
) -> bytes | TraceData | str:
    """``read_one`` for another process: msgpack travels 20x faster than a pickled TraceData
    (which is sent only when msgpack cannot hold a value, such as an int past 64 bits)."""
    data = read_one(path, root, use_cache, comm_kernels)
    if isinstance(data, str):
        return data
    try:
        return cache.encode(data)
    except (OverflowError, TypeError, NotImplementedError, ValueError):
        return data  # ValueError: a name that is not UTF-8 (a file name's raw bytes)


def read_all(
    paths: list[Path],
    root: Path | None,
    jobs: int = 1,
    use_cache: bool = True,
    progress: Progress | None = None,
    comm_kernels: str = "",
) -> list[TraceData | str]:
    """Every capture read (or its one-line error), in the order given, whatever ``jobs`` is.

    Cache hits are served here; only the rest go to ``jobs`` worker processes. With the user's
    ``comm_kernels`` (``readers.classify``) every capture is read again, past the cache. Each
    is kept as the analysis keeps it (``kept``) as it comes: not all of them whole at once.
    """
    enabled = gc.isenabled()
    gc.disable()  # decoded captures are acyclic: collections would rescan them all, per capture
    try:
        return _read_all(paths, root, jobs, use_cache, progress, comm_kernels)
    finally:
        if enabled:
            gc.enable()


def _read_all(
    paths: list[Path],
    root: Path | None,
    jobs: int,
    use_cache: bool,
    progress: Progress | None,
    comm_kernels: str,
) -> list[TraceData | str]:
    use_cache = use_cache and not comm_kernels
    keys = [cache.fingerprint(p) for p in paths]
    sizes = [k.size if k else 0 for k in keys]
    results: list[TraceData | str | None] = [None] * len(paths)
    done = [0, 0]

    def finish(i: int, result: TraceData | str) -> None:
        results[i] = result if isinstance(result, str) else kept(result)
        done[0] += 1
        done[1] += sizes[i]
        if progress is not None:
            progress(done[0], len(paths), done[1], sum(sizes))

    todo = []
    for i, path in enumerate(paths):
        hit = cache.load(path, keys[i]) if use_cache else None
        if hit is not None:
            finish(i, hit)
        else:
            todo.append(i)
    if jobs <= 1 or len(todo) <= 1 or sum(sizes[i] for i in todo) < POOL_MIN_BYTES:
        for i in todo:
            finish(i, read_one(paths[i], root, use_cache, comm_kernels))
    else:
        _in_pool(paths, root, use_cache, todo, min(jobs, len(todo)), finish, comm_kernels)
    return [r for r in results if r is not None]


def _in_pool(
    paths: list[Path],
    root: Path | None,
    use_cache: bool,
    todo: list[int],
    jobs: int,
    finish: Callable[[int, TraceData | str], None],
    comm_kernels: str = "",
) -> None:
    """Read ``todo`` in ``jobs`` processes; Ctrl-C terminates them."""
    try:
        with workers(jobs) as (pool, stop):
            results = pool.imap_unordered(
                _indexed, [(i, paths[i], root, use_cache, comm_kernels) for i in todo]
            )
            for _ in todo:
                i, result = next_result(results, stop)
                finish(i, _decoded(result, paths[i]) if isinstance(result, bytes) else result)
    except BaseException:
        for i in todo:  # writes stopped before their rename
            cache.discard_partial(paths[i])
        raise


def _indexed(job: tuple[int, Path, Path | None, bool, str]) -> tuple[int, bytes | TraceData | str]:
    i, path, root, use_cache, comm_kernels = job
    return i, read_encoded(path, root, use_cache, comm_kernels)


def _decoded(raw: bytes, path: Path) -> TraceData:
    data = cache.decode(raw)
    data.path = path
    return data
