"""The timeline written: the captures laid out on tracks, aligned on one clock, planned to
the size budget and emitted through a JSON or Perfetto writer (see the package)."""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from mindspeed_prof.analysis.readers import TraceData
from mindspeed_prof.analysis.timeline.budget import (
    BudgetError,
    BudgetFacts,
    Plan,
    Stats,
    Tally,
    budget_facts,
)
from mindspeed_prof.analysis.timeline.budget import plan as plan_budget
from mindspeed_prof.analysis.timeline.clock import align as _align
from mindspeed_prof.analysis.timeline.emit import emit
from mindspeed_prof.analysis.timeline.perfetto import PerfettoWriter
from mindspeed_prof.analysis.timeline.tracks import Layout, captures, duplicates, lanes
from mindspeed_prof.analysis.timeline.window import EVERY_STEP, StepWindow
from mindspeed_prof.analysis.timeline.workers import count_tracks, write_tracks
from mindspeed_prof.analysis.timeline.writer import Over

__all__ = ["Timeline", "write_timeline"]


@dataclass
class Timeline:
    """What was written: tracks, event count (``slices``: the slices among them, the rest are
    names), bytes, and the problems worth a line each; ``all_detail``: no capture had ranges,
    so every rank's operators and kernels were added without being asked for (steps alone
    are not ranges that tell what ran)."""

    path: Path
    tracks: list[str] = field(default_factory=list)
    events: int = 0
    slices: int = 0
    all_detail: bool = False
    bytes: int = 0
    warnings: list[str] = field(default_factory=list)
    aligned_on_steps: list[str] = field(default_factory=list)
    json_bytes: int = 0
    budget: BudgetFacts | None = None


def write_timeline(
    traces: Iterable[TraceData],
    out: Path,
    detail: frozenset[int] | None = frozenset(),
    steps: StepWindow = EVERY_STEP,
    max_bytes: int | None = None,
    fmt: str = "json",
    jobs: int = 1,
) -> Timeline:
    """Merge ``traces`` into the Chrome trace ``out`` (gzipped when it ends in ``.gz``).

    ``detail``: ranks whose operator and kernel events are added (None: every rank); none
    asked for (empty) and no capture with a stage or custom range: every rank's, within
    ``max_bytes``.
    ``max_bytes``: the most bytes of (uncompressed) JSON to write: short operators merged, then
    operators of the slowest rank-steps only, as ``budget`` plans; None: no limit.
    ``fmt``: ``json`` (Chrome's trace format) or ``perfetto`` (``perfetto``).
    ``jobs``: processes that write the tracks that read captures again (``workers``; JSON
    only: the Perfetto writer shares its strings across tracks).
    """
    out = Path(out)
    result = Timeline(out)
    traces = list(traces)
    if detail is not None and not detail and not any(_told(t) for t in traces):
        detail, result.all_detail = None, True  # else it holds little more than names
    offsets, on_steps = _align(traces)
    tracks = lanes(captures(traces), offsets)
    marked = {id(t) for t in on_steps}
    result.aligned_on_steps = [str(t.path) for t in on_steps]
    result.warnings.extend(duplicates(tracks))
    origin = min(
        (
            r.ts + offsets[id(t)]
            for cs in tracks.values()
            for c in cs
            for t in c.ranges
            for r in t.ranges
            if steps.everything or r.step in steps
        ),
        default=0.0,
    )
    layout = Layout([], offsets, origin, steps, detail)
    for pid, key in enumerate(sorted(tracks), start=1):
        label = key.label()
        if any(id(t) in marked for c in tracks[key] for t in c.ranges + c.details):
            label += " (clock: aligned on step starts)"
        result.tracks.append(label)
        layout.tracks.append((pid, key, label, tracks[key]))
    plan, stats = None, None
    if max_bytes is not None and layout.detail_bytes() > 2 * max_bytes:  # surely over
        stats = _stats(layout, result, jobs, _scratch(out))
        plan = plan_budget(stats[0], stats[1], max_bytes)
    cap = max_bytes or 0
    for attempt in range(6):  # an estimate: written again, with less, until it fits
        try:
            written, tally = _write(out, layout, result, plan, fmt, max_bytes, jobs)
            break
        except OverflowError:  # Over, or the perfetto writer's
            if attempt == 5:
                raise BudgetError(f"over the budget of {cap / 1e6:,.1f} MB after 6 tries") from None
            stats = stats or _stats(layout, result, jobs, _scratch(out))
            plan = plan_budget(*stats, cap if plan is None else int(cap * 0.85 ** (attempt + 1)))
    if plan is not None and plan.active:
        result.budget = budget_facts(plan, tally, max_bytes, layout.ranks())
    for path in result.aligned_on_steps:
        result.warnings.append(f"{path}: no clock record; aligned on step starts (track marked)")
    result.bytes = out.stat().st_size
    result.json_bytes = written
    return result


def _told(data: TraceData) -> bool:
    """Whether a capture's ranges tell what ran (stages, custom ranges); steps alone do not."""
    return any(r.kind != "step" for r in data.ranges)


def _write(
    out: Path,
    layout: Layout,
    result: Timeline,
    plan: Plan | None,
    fmt: str = "json",
    limit: int | None = None,
    jobs: int = 1,
) -> tuple[int, Tally]:
    """Write the trace (through a temporary file); its bytes (before gzip) and what the budget
    did."""
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        with gzip.open(tmp, "wb") if out.name.endswith(".gz") else open(tmp, "wb") as f:
            warnings = list(result.warnings)  # and the tracks' own, in otherData after them
            other = {
                "origin_wall_us": layout.origin,
                "tracks": result.tracks,
                "aligned_on_step_starts": result.aligned_on_steps,
                "warnings": warnings,
            }
            if fmt == "json":
                head = b'{"displayTimeUnit": "ms", "traceEvents": [\n'
                f.write(head)
                done = write_tracks(f, layout, plan, jobs, limit, _scratch(out))
                tally, size = done.tally, done.bytes
                warnings += done.problems
                if plan is not None and plan.active:
                    other["budget"] = budget_facts(plan, tally, None, layout.ranks())
                # json escapes what msgspec cannot write: a path's non-UTF-8
                tail = b'], "otherData": ' + json.dumps(other).encode() + b"}\n"
                f.write(tail)
                result.events, result.slices = done.count, done.slices
            else:
                head = tail = b""
                tally = Tally()
                w = PerfettoWriter(f, layout.origin, limit)
                warnings += emit(w, layout, plan, tally)
                w.flush()
                if plan is not None and plan.active:
                    other["budget"] = budget_facts(plan, tally, None, layout.ranks())
                w.other_data(other)
                w.flush()
                result.events, result.slices, size = w.count, w.slices, w.bytes
        if limit is not None and len(head) + size + len(tail) > limit:
            raise Over
        os.replace(tmp, out)
        result.warnings = warnings
    finally:
        tmp.unlink(missing_ok=True)
    return len(head) + size + len(tail), tally


def _scratch(out: Path) -> Path:
    """Where workers' files go: beside ``out``, hidden, named after it and this process."""
    return out.with_name(f".{out.name}.{os.getpid()}")


def _stats(layout: Layout, result: Timeline, jobs: int, scratch: Path) -> tuple[Stats, int]:
    """The detail's statistics, and the bytes of everything else."""
    counted = count_tracks(layout, jobs, scratch)
    assert counted.stats is not None
    return counted.stats, (
        counted.bytes + 2_000 + len(json.dumps(result.tracks)) + 60 * len(result.warnings)
    )
