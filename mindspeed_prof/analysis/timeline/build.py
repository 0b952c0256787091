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
from mindspeed_prof.analysis.timeline.writer import JsonWriter, Over, Writer
from mindspeed_prof.formats import NPU_OUTPUT

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
) -> Timeline:
    """Merge ``traces`` into the Chrome trace ``out`` (gzipped when it ends in ``.gz``).

    ``detail``: ranks whose operator and kernel events are added (None: every rank); none
    asked for (empty) and no capture with a stage or custom range: every rank's, within
    ``max_bytes``.
    ``max_bytes``: the most bytes of (uncompressed) JSON to write: short operators merged, then
    operators of the slowest rank-steps only, as ``budget`` plans; None: no limit.
    ``fmt``: ``json`` (Chrome's trace format) or ``perfetto`` (``perfetto``).
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
    if max_bytes is not None and _input_bytes(layout) > 2 * max_bytes:  # surely over
        stats = _stats(layout, result)
        plan = plan_budget(stats[0], stats[1], max_bytes)
    cap = max_bytes or 0
    for attempt in range(6):  # an estimate: written again, with less, until it fits
        try:
            written, tally = _write(out, layout, result, plan, fmt, max_bytes)
            break
        except OverflowError:  # Over, or the perfetto writer's
            if attempt == 5:
                raise BudgetError(f"over the budget of {cap / 1e6:,.1f} MB after 6 tries") from None
            stats = stats or _stats(layout, result)
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
) -> tuple[int, Tally]:
    """Write the trace (through a temporary file); its bytes (before gzip) and what the budget
    did."""
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    tally = Tally()
    try:
        with gzip.open(tmp, "wb") if out.name.endswith(".gz") else open(tmp, "wb") as f:
            w: Writer = (
                JsonWriter(f, limit) if fmt == "json" else PerfettoWriter(f, layout.origin, limit)
            )
            head = b'{"displayTimeUnit": "ms", "traceEvents": [\n' if fmt == "json" else b""
            f.write(head)
            emit(w, layout, plan, tally)
            w.flush()
            other = {
                "origin_wall_us": layout.origin,
                "tracks": result.tracks,
                "aligned_on_step_starts": result.aligned_on_steps,
                "warnings": result.warnings,
            }
            if plan is not None and plan.active:
                other["budget"] = budget_facts(plan, tally, None, layout.ranks())
            tail = b""
            if isinstance(w, PerfettoWriter):
                w.other_data(other)
                w.flush()
            else:  # json escapes what msgspec cannot write: a path's non-UTF-8
                tail = b'], "otherData": ' + json.dumps(other).encode() + b"}\n"
                f.write(tail)
            result.events, result.slices = w.count, w.slices
        if limit is not None and len(head) + w.bytes + len(tail) > limit:
            raise Over
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return len(head) + w.bytes + len(tail), tally


def _input_bytes(layout: Layout) -> float:
    """The size of the detail files (a db's: unknown, so infinite), a bound on their events."""
    total = 0.0
    for _, key, _, cs in layout.tracks:
        for c in cs if layout.with_detail(key) else ():
            for t in c.details:
                if t.kind == "db":
                    return float("inf")
                path = t.path / NPU_OUTPUT / "trace_view.json" if t.path.is_dir() else t.path
                total += path.stat().st_size if path.is_file() else 0
    return total


def _stats(layout: Layout, result: Timeline) -> tuple[Stats, int]:
    """The detail's statistics, and the bytes of everything else."""
    stats = Stats()
    counter = JsonWriter(None)
    emit(counter, layout, None, Tally(), stats)
    counter.flush()
    return stats, counter.bytes + 2_000 + len(json.dumps(result.tracks)) + 60 * len(result.warnings)
