"""Runs under a root: which job instance each capture belongs to, so one answer is one run's.

Every run of an app writes into the same save root by default, and containers may share host
names and pids, so ranks of two runs are told apart by the run id their captures carry, never by
their names. A capture's run is, first that answers:

1. the run id in its own header (``mindspeed_prof.run``: range files, torch traces);
2. the run of another file of the same capture (its stem, in its folder) that carries one: a
   torch trace written beside the capture's db, a memory timeline;
3. the run of a manifest whose own capture records list it;
4. for captures from before run ids: the folder of the manifest they came with (the nearest
   folder above them, up to the root, holding a manifest), else the root itself: the run
   ``legacy`` (``legacy:<folder>`` below the root). One such group may still hold two old runs;
   their ranks then clash, and are reported apart as before.

A run's start is its manifests' earliest ``start_time``, else its captures' earliest clock (or
file time), else the time in its id. ``analyse`` answers for the newest run unless told which
(the newest with a run id, where any has one).
"""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path

from mindspeed_prof.analysis.readers.labels import rank_order, ranks_text
from mindspeed_prof.analysis.readers.model import TraceData
from mindspeed_prof.analysis.rows import Row
from mindspeed_prof.formats import capture_stem
from mindspeed_prof.formats.manifest import Manifest, find_manifests
from mindspeed_prof.formats.run import run_started

__all__ = [
    "ALL",
    "LEGACY",
    "RunInfo",
    "UnknownRun",
    "choose",
    "describe",
    "group",
    "infos",
    "manifest_run",
    "runs_line",
    "split",
]

#: ``--run all``: every run, each analysed apart.
ALL = "all"
#: The run of captures from before run ids that no manifest folder below the root holds.
LEGACY = "legacy"


class UnknownRun(ValueError):
    """``--run ID`` names no run under the root; the message lists those there are."""


class RunInfo(Row, kw_only=True):
    """One run under a root: its ``id``, ``started`` (epoch seconds, None: unknown), its
    ``ranks`` and ``captures``, and whether it is ``legacy`` (captures without a run id)."""

    id: str
    started: float | None
    ranks: list[int | None]
    captures: int
    legacy: bool = False


def _legacy_key(path: Path, root: Path, folders: set[Path]) -> str:
    """``legacy:<folder>``: the nearest folder above ``path`` (up to ``root``) that holds a
    manifest; ``legacy`` for the root or none."""
    for folder in path.parents:
        if folder in folders and folder != root:
            try:
                return f"{LEGACY}:{folder.relative_to(root)}"
            except ValueError:
                break
        if folder == root:
            break
    return LEGACY


def manifest_run(path: Path, manifest: Manifest, root: Path, folders: set[Path]) -> str:
    """A manifest's run: its id, or for one from before run ids its folder's legacy run."""
    return manifest.run or _legacy_key(path, root, folders)


def group(
    traces: list[TraceData], root: Path, manifests: list[tuple[Path, Manifest]]
) -> dict[str, list[TraceData]]:
    """The traces of each run (by ``run`` id), in the order they came."""
    folders = {p.parent for p, _ in manifests}
    listed: dict[Path, str] = {}
    for _, m in manifests:
        if m.run:
            for capture in m.captures or []:
                for f in capture.files:
                    listed[_resolved(Path(f))] = m.run
    stems: dict[tuple[Path, str], str] = {}  # a capture's files: one run
    for t in traces:
        run = t.meta.run
        if run:
            stems.setdefault((t.path.parent, capture_stem(t.path)), run)
    out: dict[str, list[TraceData]] = defaultdict(list)
    for t in traces:
        run = t.meta.run
        if not run:
            run = (
                stems.get((t.path.parent, capture_stem(t.path)))
                or listed.get(_resolved(t.path))
                or _legacy_key(t.path, root, folders)
            )
        out[run].append(t)
    return dict(out)


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path


def _trace_time(t: TraceData) -> float | None:
    """When a capture began, as its own clock says, else its file's time (epoch seconds)."""
    clock = t.meta.clock
    if clock is not None and isinstance(clock.wall_ns, int):
        return float(clock.wall_ns) / 1e9
    base = t.meta.base_time_ns
    if base is not None and base > 0:
        return base / 1e9
    try:
        return t.path.stat().st_mtime
    except OSError:
        return None


def infos(
    groups: dict[str, list[TraceData]], root: Path, manifests: list[tuple[Path, Manifest]]
) -> list[RunInfo]:
    """Each run's facts, newest first (unknown starts last, then by id)."""
    folders = {p.parent for p, _ in manifests}
    starts: dict[str, list[float]] = defaultdict(list)
    for path, m in manifests:
        if m.start_time is not None:
            starts[manifest_run(path, m, root, folders)].append(m.start_time)
    out = []
    for run, traces in groups.items():
        started = min(starts[run], default=None)
        if started is None:  # the captures' own clocks, else the time in the id
            started = min(
                (x for x in map(_trace_time, traces) if x is not None), default=run_started(run)
            )
        captures = len({(str(t.path.parent), capture_stem(t.path)) for t in traces})
        out.append(
            RunInfo(
                id=run,
                started=started,
                captures=captures,
                ranks=sorted({t.rank for t in traces}, key=rank_order),
                legacy=run == LEGACY or run.startswith(f"{LEGACY}:"),
            )
        )
    return sorted(out, key=lambda r: (r.started is None, -(r.started or 0.0), r.id))


def choose(runs: list[RunInfo], wanted: str | None) -> list[RunInfo]:
    """The runs to answer for: the newest (``wanted`` None; of the runs with an id, where any
    has one: captures without one are older tools' or another program's), every one
    (``all``), or the one named (an id, or its first characters when they name one run
    only)."""
    if not runs or wanted is None:
        return [next((r for r in runs if not r.legacy), runs[0])] if runs else []
    if wanted == ALL:
        return runs
    exact = [r for r in runs if r.id == wanted]
    found = exact or [r for r in runs if r.id.startswith(wanted)]
    if len(found) == 1:
        return found
    listed = ", ".join(r.id for r in runs)
    why = "names several runs" if found else "is no run here"
    raise UnknownRun(f"--run {wanted}: {why}; runs here, newest first: {listed} (or --run all)")


def started_text(started: float | None) -> str:
    """``2026-11-30 10:00:00 UTC``, or ``at an unknown time``."""
    if started is None:
        return "at an unknown time"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(started))


def describe(run: RunInfo) -> str:
    """``RUN (started ..., ranks 0-3)``; a legacy run says it has no run id."""
    name = f"{run.id} (captures without a run id{_below(run.id)}, " if run.legacy else f"{run.id} ("
    return (
        f"{name}started {started_text(run.started)}, rank{'s' * (len(run.ranks) != 1)} "
        f"{ranks_text(run.ranks) or '-'})"
    )


def _below(run_id: str) -> str:
    folder = run_id.partition(":")[2]
    return f" in {folder}" if folder else ""


def runs_line(root: Path, runs: list[RunInfo], chosen: RunInfo) -> str | None:
    """The first line of an answer for one run of several: ``3 runs under DIR; this is the
    newest, RUN (started ...); --run ID|all``. None for a root of one run."""
    if len(runs) < 2:
        return None
    first = choose(runs, None)[0]
    which = (
        "the newest"
        if chosen.id == runs[0].id
        else "the newest with a run id"
        if chosen.id == first.id
        else f"not the newest ({first.id})"
    )
    return f"{len(runs)} runs under {root}; this is {which}, {describe(chosen)}; --run ID|all"


def split(
    traces: list[TraceData], root: Path, wanted: str | None = None
) -> tuple[list[RunInfo], list[tuple[RunInfo, list[TraceData]]]]:
    """Every run of ``traces`` under ``root`` (newest first), and the runs ``wanted``
    (``choose``) each with its own traces."""
    manifests = find_manifests(root) if root.is_dir() else []
    groups = group(traces, root, manifests)
    runs = infos(groups, root, manifests)
    return runs, [(run, groups[run.id]) for run in choose(runs, wanted)]
