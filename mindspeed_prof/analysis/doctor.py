"""``doctor``: a health check of a run's captures before anyone opens a trace.

Our own files are checked cheaply first (empty, cut mid-write, temporary names left behind);
then every capture ``analyse`` would read (torch_npu folders, any Kineto trace) goes through
the same readers, and their per-capture cache, so every file ``analyse`` cannot read whole is a
finding, and the captures found per rank are counted from what the captures themselves say.
"""

from __future__ import annotations

import dataclasses
import os
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from mindspeed_prof.analysis import analyse as _analyse
from mindspeed_prof.analysis import parallel
from mindspeed_prof.analysis.readers.kineto.chrome import INTERRUPTED
from mindspeed_prof.analysis.runs import ALL, LEGACY, manifest_run
from mindspeed_prof.analysis.triggered import Triggered, triggered
from mindspeed_prof.formats import CLUSTER_SUMMARY, SPANS, capture_stem, is_capture_file
from mindspeed_prof.formats.manifest import Manifest, find_manifests
from mindspeed_prof.formats.stem import rank_of
from mindspeed_prof.jsonio import JsonableObject, Refused, open_regular, read_json, within

__all__ = ["Health", "Problem", "ProblemKind", "doctor"]

_TAIL_BYTES = 64


#: What a problem is: ``unreadable``: analyse skips the capture, or a manifest or summary was
#: refused; ``worker_*``: a Ray worker gave no summary (``_LOST``); ``partly_read``: analyse
#: skips part of it; ``no_captures``: nothing under the root that analyse would read;
#: ``interrupted``: a range file never closed (its process was killed, or is still writing).
ProblemKind = Literal[
    "missing_rank",
    "empty",
    "truncated",
    "temp_file",
    "nothing_captured",
    "clock_skew",
    "unreadable",
    "worker_died",
    "worker_timeout",
    "worker_failed",
    "partly_read",
    "no_captures",
    "interrupted",
]
#: What a worker whose summary the Ray driver did not get is said to have done, by ``status``.
_LOST: dict[str, tuple[ProblemKind, str]] = {
    "died": ("worker_died", "died before its summary was collected"),
    "timeout": ("worker_timeout", "gave no summary in time"),
    "failed": ("worker_failed", "failed to give its summary"),
}


@dataclass(frozen=True)
class Problem:
    """One problem ``doctor`` found (a finding, in its output): what kind, the file or rank
    it concerns, and one line for people."""

    kind: ProblemKind
    where: str
    message: str


@dataclass
class Health:
    """Problems (``findings``) and facts worth a line: captures and disk per rank, triggered
    captures, notes on how captures were read (a trace without ProfilerStep ranges...)."""

    root: Path
    findings: list[Problem] = field(default_factory=list)
    ranks_expected: list[int] = field(default_factory=list)
    ranks_found: list[int] = field(default_factory=list)
    #: Captures per rank as ``analyse`` reads them ("?" for a capture that names no rank).
    captures_per_rank: dict[str, int] = field(default_factory=dict)
    disk_per_rank: dict[int, int] = field(default_factory=dict)
    triggered: list[JsonableObject] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: The world sizes the captures record and the ranks captured of each
    #: (``{"world_size": 64, "ranks": [0]}``).
    worlds: list[dict[str, Any]] = field(default_factory=list)
    #: Every run under the root, newest first (``runs.RunInfo`` as JSON).
    runs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return not self.findings

    def to_json(self) -> JsonableObject:
        out: JsonableObject = asdict(self)
        out["root"] = str(self.root)
        out["healthy"] = self.healthy
        return out


def doctor(root: Path, skew_ms: float = 500.0) -> Health:
    """Check every capture under ``root`` (a save root), of every run there: file tails,
    manifests and the first step range of each range file, then each capture through the
    readers (cached); ranks are expected run by run."""
    health = Health(root)
    files = [p for p in sorted(root.rglob("*")) if p.is_file() and within(p, root)]
    manifests = find_manifests(root, refused=lambda err: _refused(health, err))
    named: dict[Path, int] = {}  # capture files named rank<r>_...
    first_step: dict[tuple[str, int], float] = {}  # (host, step) -> earliest start, us
    for path in files:
        rel = str(path.relative_to(root))
        rank = rank_of(path.name)
        if rank is not None:
            health.disk_per_rank[rank] = health.disk_per_rank.get(rank, 0) + path.stat().st_size
        if path.name.endswith(".tmp") or ".tmp." in path.name:
            health.findings.append(
                Problem(
                    "temp_file", rel, f"{rel}: temporary file left behind by an interrupted write"
                )
            )
            continue
        if not is_capture_file(path.name):
            continue
        if rank is not None:
            named[path] = rank
        problem = _check_capture(path)
        if problem:
            kind, why = problem
            health.findings.append(Problem(kind, rel, f"{rel}: {why}"))
        elif path.name.endswith(SPANS):
            _first_steps(path, first_step)
    flagged = {root / f.where for f in health.findings}
    # every run, read with as many processes as analyse uses
    results = _analyse.analyse_runs(health.root, jobs=parallel.default_jobs(), run=ALL)
    own, read, own_triggered = _check_readable(health, flagged, results)
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
    summary = _load(root / CLUSTER_SUMMARY, health)
    workers = summary.get("workers", []) if isinstance(summary, dict) else []
    newest = runs[0].id if runs else LEGACY
    every = [*read, *(r for r in by_run if r not in read)]
    for run in every:
        mine = [w for w in workers if isinstance(w, dict) and (w.get("run") or newest) == run]
        seen = found | own.get(run, set()) | read.get(run, set())
        _check_ranks(
            health,
            by_run.get(run, []),
            mine,
            found | own.get(run, set()),
            seen,
            run if len(every) > 1 else None,
        )
    health.ranks_expected = sorted(set(health.ranks_expected))
    for run in every:
        _check_windows(
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
    _check_skew(health, first_step, skew_ms)
    _check_workers(health, [w for w in workers if isinstance(w, dict)])
    records = [c for _, m in manifests for c in m.captures or []] + [
        c for w in workers if isinstance(w, dict) for c in w.get("captures", [])
    ]
    health.triggered = [
        {
            k: c.get(k)
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
        if isinstance(c, dict) and c.get("trigger")
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


def _check_readable(
    health: Health, flagged: set[Path], results: list[_analyse.Analysis]
) -> tuple[dict[str, set[int]], dict[str, set[int]], list[Triggered]]:
    """Every capture as ``analyse`` reads it, run by run (``results``): each one it skips,
    whole or in part, is a finding (unless the cheap checks already named its file); its
    captures and their ranks are counted. Returns, per run, the ranks of captures named as ours
    (``rank<r>_...``) and of every capture, and the unplanned captures their metadata names."""
    from mindspeed_prof.analysis.capture_facts import worlds
    from mindspeed_prof.analysis.readers.labels import rank_label

    result = dataclasses.replace(
        results[0],
        traces=[t for r in results for t in r.traces],
        bad=list(dict.fromkeys(b for r in results for b in r.bad)),
    )
    partial = {line for t in result.traces for line in t.problems}
    for line in result.bad:
        if any(line.startswith(f"{path}:") for path in flagged):
            continue  # an empty or truncated file already has its finding
        where = result.shown(line).split(": ", 1)[0]
        kind: ProblemKind = (
            "interrupted"
            if INTERRUPTED in line
            else "partly_read"
            if line in partial
            else "unreadable"
        )
        health.findings.append(Problem(kind, where, result.shown(line)))
    for t in result.traces:
        if t.holds_nothing and t.path not in flagged:
            where = result.shown(str(t.path))
            health.findings.append(
                Problem(
                    "empty",
                    where,
                    f"{where}: captured nothing (no "
                    "ranges, no ops): analyse counts it but has nothing "
                    "to show",
                )
            )
    health.notes = [result.shown(n) for n in result.notes()]
    health.worlds = [w.json() for w in worlds(result.traces)]
    stems: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for t in result.traces:
        stems[rank_label(t.rank)].add((str(t.path.parent), capture_stem(t.path)))
        if t.rank is not None and (t.path.is_dir() or rank_of(t.path.name) is None):
            # a torch_npu folder, or a file not named rank<r>_...: its bytes not counted yet
            health.disk_per_rank[t.rank] = health.disk_per_rank.get(t.rank, 0) + t.size
    health.captures_per_rank = {
        rank: len(s)
        for rank, s in sorted(
            stems.items(), key=lambda kv: (kv[0] == "?", int(kv[0]) if kv[0] != "?" else 0)
        )
    }
    ranks: dict[str, set[int]] = defaultdict(set)
    own: dict[str, set[int]] = defaultdict(set)
    for r in results:
        run = r.run.id if r.run is not None else LEGACY
        ranks[run].update(t.rank for t in r.traces if t.rank is not None)
        own[run].update(n for t in r.traces if (n := rank_of(t.path.name)) is not None)
    return own, ranks, triggered(result)


def _load(path: Path, health: Health | None = None, follow: bool = False) -> object:
    """A JSON file (bounded; through a link only when ``follow``, as for a capture); None when
    it is missing or not JSON. One refused (a link, a FIFO, a device, too large) is a finding
    in ``health``."""
    try:
        return read_json(path, follow=follow)
    except Refused as err:
        if health is not None:
            _refused(health, err)
        return None
    except (OSError, ValueError):
        return None


def _refused(health: Health, err: Refused) -> None:
    rel = str(Path(err.path).relative_to(health.root))
    health.findings.append(Problem("unreadable", rel, f"{rel}: not read: {err.reason}"))


def _check_capture(path: Path) -> tuple[ProblemKind, str] | None:
    size = path.stat().st_size
    if size == 0:
        return "empty", "empty file"
    if path.name.endswith(".gz") or path.name.endswith(".db"):
        return None  # binary: their readers say what is wrong
    try:
        fd = open_regular(path, follow=True)  # no FIFO put there since it was listed
    except (OSError, Refused) as err:
        return "unreadable", str(getattr(err, "reason", err))
    try:
        tail = os.pread(fd, _TAIL_BYTES, max(0, size - _TAIL_BYTES)).rstrip()
    finally:
        os.close(fd)
    if not tail.endswith(b"}"):
        return "truncated", "truncated (the file does not end a JSON document; killed mid-write?)"
    if path.name.endswith(SPANS) and size < 4096:
        data = _load(path, follow=True)
        if (
            isinstance(data, dict)
            and not data.get("traceEvents")
            and (data.get("closed") or "format" not in (data.get("mindspeed_prof") or {}))
        ):
            return "empty", "no ranges recorded (did the window's steps run?)"
    return None


def _first_steps(path: Path, out: dict[tuple[str, int], float]) -> None:
    data = _load(path, follow=True)
    if not isinstance(data, dict):
        return
    host = str(data.get("mindspeed_prof", {}).get("host", "?"))
    for event in data.get("traceEvents", []):
        if event.get("cat") == "step":
            step = event.get("args", {}).get("step")
            if isinstance(step, int):
                key = (host, step)
                out[key] = min(out.get(key, float("inf")), float(event.get("ts", 0)))


def _check_workers(health: Health, workers: list[dict[str, object]]) -> None:
    """Each Ray worker of the cluster summary whose summary did not come back (``collect``'s
    ``died``, ``timeout`` and ``failed`` entries) is a finding naming its rank and actor."""
    for w in workers:
        lost = _LOST.get(str(w.get("status")))
        if lost is None:
            continue
        kind, what = lost
        rank = w.get("rank")
        who = f"rank {rank}" if isinstance(rank, int) else f"worker {w.get('worker', '?')}"
        actor = f" (actor {str(w.get('actor'))[:12]})" if w.get("actor") else ""
        health.findings.append(
            Problem(
                kind,
                who,
                f"{who}{actor}: {what} ({w.get('error', '')}); "
                "whatever it wrote stays on its node's disk",
            )
        )


def _check_ranks(
    health: Health,
    manifests: list[Manifest],
    workers: list[dict[str, object]],
    own: set[int],
    found: set[int],
    run: str | None,
) -> None:
    """Ranks expected of one run: its manifests, ``profile_ranks``, its workers in the cluster
    summary, else every rank up to the highest of our own captures (another tool's captures
    say nothing of the ranks left out); each one without a capture is a finding (naming the
    run where the root holds several)."""
    expected = {m.rank for m in manifests if isinstance(m.rank, int)}
    listed = False
    for m in manifests:
        ranks = (m.profiler_config.get("integrated") or {}).get("profile_ranks")
        if isinstance(ranks, list):
            expected.update(r for r in ranks if isinstance(r, int))
            listed = True
    for worker in workers:
        if worker.get("enabled") and isinstance(rank := worker.get("rank"), int):
            expected.add(rank)
    if own and not listed:  # profile_ranks: all: every rank up to the highest seen
        expected.update(range(max(own) + 1))
    health.ranks_expected += sorted(expected)
    where = (
        ""
        if run is None
        else (
            " among the captures without a run id" if run.startswith(LEGACY) else f" in run {run}"
        )
    )
    for rank in sorted(expected - found):
        health.findings.append(
            Problem(
                "missing_rank",
                f"rank {rank}",
                f"rank {rank}: expected{where}, but no capture file found",
            )
        )


def _check_windows(health: Health, manifests: list[Manifest], found: set[int]) -> None:
    for m in manifests:
        window = m.profiler_config.get("integrated") or {}
        if (
            m.status in ("completed", "exited")
            and not m.captures
            and window.get("profile")
            and m.rank not in found
        ):
            start, end = window.get("profile_step_start"), window.get("profile_step_end")
            health.findings.append(
                Problem(
                    "nothing_captured",
                    f"rank {m.rank}",
                    f"rank {m.rank}: the job {m.status} but captured nothing (window "
                    f"[{start}, {end}): did the run reach step {start}? were the hooks called?)",
                )
            )


def _check_skew(health: Health, first_step: dict[tuple[str, int], float], skew_ms: float) -> None:
    by_step: dict[int, dict[str, float]] = defaultdict(dict)
    for (host, step), ts in first_step.items():
        by_step[step][host] = ts
    for step in sorted(by_step):
        hosts = by_step[step]
        if len(hosts) < 2:
            continue
        early, late = min(hosts, key=hosts.__getitem__), max(hosts, key=hosts.__getitem__)
        gap_ms = (hosts[late] - hosts[early]) / 1000
        if gap_ms > skew_ms:
            health.findings.append(
                Problem(
                    "clock_skew",
                    f"{early}, {late}",
                    f"hosts {early} and {late}: step {step} starts {gap_ms:.0f} ms apart (over "
                    f"{skew_ms:g} ms): clocks out of sync, so cross-host timelines are shifted",
                )
            )
        return  # the first step seen on several hosts is enough
