"""``doctor``: a health check of a run's captures before anyone opens a trace.

Our own files are checked cheaply first (empty, cut mid-write, temporary names left behind);
then every capture ``analyse`` would read (torch_npu folders, any Kineto trace) goes through
the same readers, and their per-capture cache, so every file ``analyse`` cannot read whole is a
finding, and the captures found per rank are counted from what the captures themselves say.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from mindspeed_prof.analysis import analyse as _analyse
from mindspeed_prof.analysis import parallel
from mindspeed_prof.analysis.cluster import answered
from mindspeed_prof.analysis.doctor.files import (
    check_capture,
    check_skew,
    first_steps,
    refused,
)
from mindspeed_prof.analysis.doctor.health import Health, Problem
from mindspeed_prof.analysis.doctor.killed import (
    check_elsewhere,
    check_killed,
    unfinished_rename,
)
from mindspeed_prof.analysis.doctor.ranks import check_ranks, check_windows, check_workers
from mindspeed_prof.analysis.doctor.readable import check_readable
from mindspeed_prof.analysis.runs import ALL, LEGACY, manifest_run
from mindspeed_prof.formats import CLUSTER_SUMMARY, SPANS, is_capture_file
from mindspeed_prof.formats.cluster import read_cluster_summary
from mindspeed_prof.formats.manifest import Manifest, find_manifests
from mindspeed_prof.formats.stem import rank_of
from mindspeed_prof.jsonio import within

__all__ = ["doctor"]


def doctor(root: Path, skew_ms: float = 500.0) -> Health:
    """Check every capture under ``root`` (a save root), of every run there: file tails,
    manifests and the first step range of each range file, then each capture through the
    readers (cached); ranks are expected run by run."""
    health = Health(root)
    files = [p for p in sorted(root.rglob("*")) if p.is_file() and within(p, root)]
    manifests = find_manifests(root, refused=lambda err: refused(health, err))
    named: dict[Path, int] = {}  # capture files named rank<r>_...
    first_step: dict[tuple[str, int], float] = {}  # (host, step) -> earliest start, us
    for path in files:
        rel = str(path.relative_to(root))
        rank = rank_of(path.name)
        if rank is not None:
            health.disk_per_rank[rank] = health.disk_per_rank.get(rank, 0) + path.stat().st_size
        if path.name.endswith(".tmp") or ".tmp." in path.name:
            health.findings.append(
                unfinished_rename(path, root, check_capture(path) is None)
                or Problem(
                    "temp_file", rel, f"{rel}: temporary file left behind by an interrupted write"
                )
            )
            continue
        if not is_capture_file(path.name):
            continue
        if rank is not None:
            named[path] = rank
        problem = check_capture(path)
        if problem:
            kind, why = problem
            health.findings.append(Problem(kind, rel, f"{rel}: {why}"))
        elif path.name.endswith(SPANS):
            first_steps(path, first_step)
    flagged = {root / f.where for f in health.findings}
    # every run, read with as many processes as analyse uses
    results = _analyse.analyse_runs(health.root, jobs=parallel.default_jobs(), run=ALL)
    own, read, own_triggered = check_readable(health, flagged, results)
    # a file analyse could not read still says its rank ran: in every run (none is known)
    read_paths = {t.path for r in results for t in r.traces}
    found = {rank for path, rank in named.items() if path not in read_paths}
    health.ranks_found = sorted(set(named.values()) | set().union(*read.values()))
    runs = [r.run for r in results if r.run is not None]
    health.runs = [r.json() for r in runs]
    folders = {p.parent for p, _ in manifests}
    by_run: dict[str, list[Manifest]] = defaultdict(list)
    for path, m in manifests:
        by_run[manifest_run(path, m, root, folders)].append(m)
    summary = read_cluster_summary(root / CLUSTER_SUMMARY, lambda err: refused(health, err))
    workers = summary.workers if summary is not None else []
    newest = runs[0].id if runs else LEGACY
    every = [*read, *(r for r in by_run if r not in read)]
    for run in every:
        mine = [w for w in answered(workers) if (w.run or newest) == run]
        seen = found | own.get(run, set()) | read.get(run, set())
        check_ranks(
            health,
            by_run.get(run, []),
            mine,
            found | own.get(run, set()),
            seen,
            run if len(every) > 1 else None,
        )
    health.ranks_expected = sorted(set(health.ranks_expected))
    for run in every:
        check_windows(
            health, by_run.get(run, []), found | own.get(run, set()) | read.get(run, set())
        )
    if not health.captures_per_rank and not any(
        f.kind == "nothing_captured" for f in health.findings
    ):
        health.findings.append(
            Problem(
                "no_captures",
                ".",
                f"{root}: no captures found (no trace, range file or torch_npu "
                "folder that analyse reads)",
            )
        )
    check_killed(health, by_run, results)
    check_skew(health, first_step, skew_ms)
    check_workers(health, workers)
    check_elsewhere(health, workers, read_paths)
    records = [c for _, m in manifests for c in m.captures or []] + [
        c for w in workers for c in w.captures
    ]
    health.triggered = [
        {
            k: getattr(c, k)
            for k in (
                "rank",
                "step",
                "steps",
                "trigger_step",
                "stage",
                "trigger",
                "reason",
                "files",
            )
        }
        for c in records
        if c.trigger
    ]
    listed = {
        (t["rank"], t["trigger"], t["trigger_step"] if t["trigger_step"] is not None else t["step"])
        for t in health.triggered
    }
    health.triggered += [  # captures no manifest lists (a Profiler without the Hydra callback)
        {
            "rank": t.rank,
            "step": t.step,
            "steps": t.steps,
            "trigger_step": t.step,
            "stage": None,
            "trigger": t.trigger,
            "reason": t.reason,
            "files": [t.file],
        }
        for t in own_triggered
        if (t.rank, t.trigger, t.step) not in listed
    ]
    return health
