"""The tables that have no module of their own, each a function of the captures (or of the
tables before it): what ``tables`` calls."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import msgspec

from mindspeed_prof.analysis.counts import CounterRow
from mindspeed_prof.analysis.ranges import stage_order, with_bare
from mindspeed_prof.analysis.readers import Range, TraceData
from mindspeed_prof.analysis.readers.labels import rank_label, rank_order, ranks_text
from mindspeed_prof.analysis.readers.model import Tally, merge_tallies
from mindspeed_prof.analysis.readers.range_cols import columns, steps_in
from mindspeed_prof.analysis.readers.range_table import RangeTable, as_table
from mindspeed_prof.analysis.report.captures import Captures, relative, stem_key
from mindspeed_prof.analysis.rows import (
    CommRow,
    DeviceRow,
    InventoryRow,
    KernelRow,
    MemoryRow,
    OpRow,
    RuntimeRow,
)

__all__ = [
    "Warmup",
    "comm_rows",
    "counted",
    "counted_counters",
    "device_rows",
    "inventory",
    "memory_rows",
    "merged_ranges",
    "top_kernels",
    "top_ops",
    "top_runtime",
    "unread_device",
    "warmup_of",
    "warnings",
]

#: (rank, source, step) of warmup steps: a role's warmup is not another's at its rank.
Warmup = set[tuple[int | None, str, int]]


def merged_ranges(traces: list[TraceData]) -> RangeTable:
    """Step, stage and custom ranges, each counted once (span files win over op traces)."""
    by_stem: dict[tuple[str, str], list[TraceData]] = defaultdict(list)
    for t in traces:
        by_stem[stem_key(t.path)].append(t)
    if len(traces) == 1:  # (no copy of a range file's columns)
        return as_table(traces[0].ranges)
    out = RangeTable()
    for group in by_stem.values():
        spans = [t.ranges for t in group if t.kind == "spans"]
        ops = [t.ranges for t in group if t.kind != "spans"]
        if spans and any(ops):  # op traces know bare times
            out.extend(with_bare([r for rs in spans for r in rs], [r for rs in ops for r in rs]))
        else:
            for ranges in spans or ops:
                out.extend(ranges)
    return out


def warmup_of(traces: list[TraceData]) -> Warmup:
    """(rank, source, step) of the steps captured as warmup (``warmup_steps``, the ``dpo``
    preset): the steps just before the window (MindSpeed-LLM's DPO warmup)."""
    out: Warmup = set()
    for t in traces:
        window, n = t.meta.window, t.meta.warmup_steps
        if window and window[0] is not None and n is not None and n > 0:
            out.update((t.rank, t.clash_label, s) for s in range(window[0] - n, window[0]))
    return out


def counted(ranges: RangeTable, warmup: Warmup, include_warmup: bool) -> RangeTable:
    """What stragglers and ``compare`` count: ``ranges`` less warmup steps, unless
    ``include_warmup``. (The tables show every step, warmup steps marked.)"""
    skip = set() if include_warmup else warmup
    if not skip:
        return ranges
    return ranges.select((r.rank, r.source, r.step) not in skip for r in ranges)


def counted_counters(
    counters: list[CounterRow], warmup: Warmup, include_warmup: bool
) -> list[CounterRow]:
    """``counters`` less warmup steps, unless ``include_warmup`` (as ``counted``)."""
    skip = set() if include_warmup else warmup
    return [c for c in counters if (c.rank, c.source, c.step) not in skip]


def device_rows(traces: list[TraceData], warmup: Warmup) -> list[DeviceRow]:
    """Device breakdown rows of ``traces`` per rank and step (and stage), warmup steps
    marked."""
    return [
        msgspec.structs.replace(row, rank=t.rank, warmup=(t.rank, row.source, row.step) in warmup)
        for t in traces
        for row in t.device
    ]


def comm_rows(traces: list[TraceData]) -> list[CommRow]:
    """Communication per rank, step, kind and op type (torch_npu captures), as each reader
    folds it; ``source`` names the capture where two claim the same rank and step. The
    captures' own rows, their ``rank`` and ``source`` set (the analysis's fields): a copy of
    each would hold every rank's rows twice."""
    out = []
    for t in traces:
        for row in t.comm:
            row.rank, row.source = t.rank, t.clash_label
            out.append(row)
    return out


def _top(traces: list[TraceData], field_name: str, n: int) -> list[tuple[str, Tally]]:
    total: dict[str, Tally] = {}
    for t in traces:
        merge_tallies(total, getattr(t, field_name))
    return sorted(total.items(), key=lambda kv: -kv[1].total)[:n]


def top_kernels(traces: list[TraceData], n: int) -> list[KernelRow]:
    """Device kernels, copies and sets by device time."""
    return [
        KernelRow(name=k, count=t.count, device_ms=t.total / 1000.0)
        for k, t in _top(traces, "kernels", n)
    ]


def top_runtime(traces: list[TraceData], n: int) -> list[RuntimeRow]:
    """Runtime and launch calls (``cudaLaunchKernel``...) by host time."""
    return [
        RuntimeRow(name=k, count=t.count, ms=t.total / 1000.0)
        for k, t in _top(traces, "runtime", n)
    ]


def top_ops(traces: list[TraceData], n: int) -> list[OpRow]:
    """Host operators with the most self time, summed over every capture."""
    return [OpRow(op=k, count=t.count, self_ms=t.total / 1000.0) for k, t in _top(traces, "ops", n)]


def memory_rows(traces: list[TraceData], root: Path) -> list[MemoryRow]:
    """Peak allocated/reserved bytes per capture (rank), then per stage where known."""
    out = []
    for t in traces:
        m = t.memory
        if m is None:
            continue
        file = relative(t.path, root)
        out.append(
            MemoryRow(
                rank=t.rank,
                file=file,
                source=m.source,
                peak_allocated_bytes=m.peak_allocated_bytes,
                peak_reserved_bytes=m.peak_reserved_bytes,
                top_ops=m.top_ops,
                timeline=m.timeline,
            )
        )
        for stage, peak in sorted(m.by_stage.items(), key=lambda kv: stage_order(kv[0])):
            out.append(
                MemoryRow(
                    rank=t.rank, file=file, source=m.source, stage=stage, peak_allocated_bytes=peak
                )
            )
    return out


def unread_device(traces: list[TraceData]) -> dict[str, int]:
    """Device events recorded but not read as device time, per Kineto category."""
    out: dict[str, int] = defaultdict(int)
    for t in traces:
        for cat, count in (t.meta.unread_device or {}).items():
            out[cat] += count
    return dict(out)


def inventory(traces: list[TraceData], root: Path) -> list[InventoryRow]:
    """Every capture read: its file, kind, rank, size, events and steps."""
    return [
        InventoryRow(
            file=relative(t.path, root),
            kind=t.kind,
            rank=t.rank,
            source=t.clash_label,
            group=t.group,
            bytes=t.size,
            events=t.events,
            steps=sorted(steps_in(t.ranges)),
            level=t.meta.level,
        )
        for t in traces
    ]


def warnings(captures: Captures, ranges: Sequence[Range]) -> list[str]:
    """Captures that hold nothing, clashes, ranks with no step in common, an empty root."""
    out = [
        f"{relative(t.path, captures.root)}: captured nothing (no ranges, no ops)"
        for t in captures.traces
        if t.holds_nothing
    ]
    out += captures.clashes
    out += _unshared_steps(ranges)
    if not captures.traces and not captures.bad:
        out.append(
            f"{captures.root}: no captures found (is profile: true, and does the window "
            "[profile_step_start, profile_step_end) contain steps that ran?)"
        )
    return out


def _unshared_steps(ranges: Sequence[Range]) -> list[str]:
    """One line when ranks captured no step in common: their times cannot be compared
    (an on-demand capture that ranks took at different steps, say)."""
    steps: dict[tuple[int | None, str], set[int]] = defaultdict(set)
    cols = columns(ranges, "step", "stage", stepped=True)
    for rank, source, step in cols.rows("ranks", "sources", "steps"):
        steps[(rank, source)].add(step)
    if len(steps) < 2 or set.intersection(*steps.values()):
        return []
    held = "; ".join(
        f"rank {rank_label(*k)}: {ranks_text(sorted(v))}"
        for k, v in sorted(steps.items(), key=lambda kv: (rank_order(kv[0][0]), kv[0][1]))
    )
    return [
        f"the ranks captured no step in common ({held}): stragglers compare ranks at "
        "the same step, so none can be named"
    ]
