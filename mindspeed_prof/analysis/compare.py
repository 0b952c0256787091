"""``compare A B``: two runs side by side (stages, ranges, device, memory), regressions flagged."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from typing import NamedTuple

import msgspec

from mindspeed_prof.analysis.device_scope import counted, scope
from mindspeed_prof.analysis.gate import asked, shift, slower, steps_needed
from mindspeed_prof.analysis.judgement.noise import noise_floor
from mindspeed_prof.analysis.ranges import range_rows, stage_rows
from mindspeed_prof.analysis.readers.labels import rank_order, ranks_text
from mindspeed_prof.analysis.readers.ratio import ratio
from mindspeed_prof.analysis.report.captures import Captures
from mindspeed_prof.analysis.report.settings import Settings
from mindspeed_prof.analysis.report.tables import Tables, tables
from mindspeed_prof.analysis.rows import (
    Change,
    DeviceMeans,
    DevicePer,
    DeviceRow,
    Peaks,
    SideBySide,
    StageOrRange,
    to_json,
)
from mindspeed_prof.analysis.runs import manifest_run
from mindspeed_prof.formats.manifest import find_manifests
from mindspeed_prof.jsonio import JsonableObject

__all__ = [
    "DEFAULT_THRESHOLD",
    "Comparison",
    "Side",
    "captured",
    "compare",
    "compare_runs",
    "few_steps",
    "per_step",
    "side_of",
    "slower_than",
]

#: B is a regression when its steps' times shift by more than this fraction of A's (and the
#: shift is real: ``gate``).
DEFAULT_THRESHOLD = 0.1


#: One thing a run captured (``captured``): a step, level, preset, backend, rank or stage.
Fact = int | str | None


class Side(NamedTuple):
    """One run compared: what was read, its tables, and the settings they were made under."""

    captures: Captures
    tables: Tables
    settings: Settings


def side_of(captures: Captures, settings: Settings | None = None) -> Side:
    """``captures`` with its tables under ``settings`` (default: the CLI's)."""
    s = settings or Settings()
    return Side(captures, tables(captures, s), s)


class Comparison(msgspec.Struct, kw_only=True):
    """Everything ``compare A B`` reports: stages (``rows``) and custom ranges side by side,
    device means and memory peaks per rank, what the runs captured and how they differ."""

    rows: list[Change]
    ranges: list[Change]
    device: list[SideBySide]
    memory: list[SideBySide]
    warnings: list[str]
    captured: dict[str, dict[str, Sequence[Fact]]]
    #: What A's and B's device means are per: ``step``, or ``capture`` (no steps).
    device_per: dict[str, DevicePer] = {}
    #: A change per execution under this many ms is noise (the larger of ``noise_ms`` and 1%
    #: of A's step).
    floor_ms: float = 0.0

    def json(self) -> JsonableObject:
        return {
            "rows": to_json(self.rows),
            "ranges": to_json(self.ranges),
            "device": to_json(self.device),
            "memory": to_json(self.memory),
            "warnings": self.warnings,
            "captured": self.captured,
            "floor_ms": self.floor_ms,
            "device_per": self.device_per,
        }


Means = dict[tuple[str, int | None], tuple[float, int]]
Steps = dict[tuple[str, int | None], list[float]]


def _changes(
    kind: StageOrRange,
    a: Means,
    b: Means,
    threshold: float,
    floor: float,
    steps: tuple[Steps, Steps] = ({}, {}),
) -> list[Change]:
    """One row per (name, rank) of either run, the costliest change first; flagged by the
    gate (``gate.shift`` of the per-step times ``steps``) at ``threshold``."""
    out = []
    for key in a.keys() | b.keys():
        (ma, na), (mb, nb) = a.get(key, (None, 0)), b.get(key, (None, 0))
        change = ratio(mb - ma, ma, None) if ma is not None and mb is not None else None
        diff = None if ma is None or mb is None else mb - ma
        sa, sb = steps[0].get(key, []), steps[1].get(key, [])
        row = Change(
            kind=kind,
            name=key[0],
            rank=key[1],
            a_mean_ms=ma,
            b_mean_ms=mb,
            change=change,
            count=nb or na,
            impact_ms=None if diff is None else diff * (nb or na),
            a_steps_ms=sa,
            b_steps_ms=sb,
        )
        if sa and sb:
            up = shift(sa, sb)
            row.shift_ms, row.p = up.shift_ms, up.p
        out.append(row)
    flag(out, threshold, floor)
    return sorted(
        out,
        key=lambda r: (
            -(abs(r.impact_ms) if r.impact_ms is not None else -1),
            r.name,
            rank_order(r.rank),
        ),
    )


def flag(rows: list[Change], threshold: float, floor: float) -> None:
    """Mark the ``rows`` B runs slower (``regression``) or faster (``improvement``) than A:
    the gate over every row at once (``gate.slower``)."""
    pairs = [(r.a_steps_ms, r.b_steps_ms) for r in rows]
    bases = [statistics.median(a) if a else 0.0 for a, _ in pairs]  # A's: both ways
    up = slower(pairs, threshold, floor, bases)
    down = slower([(b, a) for a, b in pairs], threshold, floor, bases)
    for r, u, d in zip(rows, up, down, strict=True):
        r.regression, r.improvement = u, d


def per_step(x: Side, kind: StageOrRange) -> Steps:
    """Per (name, rank): its time in each counted step (executions in one step add up)."""
    per: dict[tuple[str, int | None], dict[int, float]] = defaultdict(lambda: defaultdict(float))
    for r in x.tables.counted:
        if r.kind == kind and r.step is not None:
            per[(r.name, r.rank)][r.step] += r.dur / 1000.0
    return {key: [ms for _, ms in sorted(steps.items())] for key, steps in per.items()}


def _floor(x: Side) -> float:
    step = x.tables.step_time
    return noise_floor(x.settings.noise_ms, step.median_ms if step else None)


def compare(a: Side, b: Side, threshold: float = DEFAULT_THRESHOLD) -> list[Change]:
    """One row per (stage, rank) present in either run: mean ms in A and B, change, flag.

    Warmup steps are left out unless the analyses were made with ``include_warmup``.
    """

    def means(x: Side) -> Means:
        return {(r.stage, r.rank): (r.mean_ms, r.count) for r in stage_rows(x.tables.counted)}

    return _changes(
        "stage",
        means(a),
        means(b),
        threshold,
        _floor(a),
        (per_step(a, "stage"), per_step(b, "stage")),
    )


def _range_means(x: Side) -> Means:
    return {(r.name, r.rank): (r.mean_ms, r.count) for r in range_rows(x.tables.counted)}


def _mean(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _device_means(x: Side) -> dict[int | None, DeviceMeans]:
    """Per rank: mean ms per step of each device component, of the rows the device verdict
    reads (``device_scope.counted``: whole steps, warmup left out; where no capture has
    steps, per capture)."""
    per: dict[int | None, list[DeviceRow]] = defaultdict(list)
    for r in counted(x.captures, x.tables, x.settings):
        per[r.rank].append(r)
    return {
        rank: DeviceMeans(
            compute_ms=_mean([r.compute_ms for r in rows]),
            comm_ms=_mean([r.comm_ms for r in rows]),
            overlap_ms=_mean([r.overlap_ms for r in rows]),
            memcpy_ms=_mean([r.memcpy_ms for r in rows]),
            idle_ms=_mean([r.idle_ms for r in rows]),
        )
        for rank, rows in per.items()
    }


def _memory_peaks(x: Side) -> dict[int | None, Peaks]:
    out: dict[int | None, Peaks] = {}
    for r in x.tables.memory:
        if r.stage is None:
            mine = out.setdefault(r.rank, Peaks())
            mine.peak_allocated_bytes = _higher(mine.peak_allocated_bytes, r.peak_allocated_bytes)
            mine.peak_reserved_bytes = _higher(mine.peak_reserved_bytes, r.peak_reserved_bytes)
    return out


def _higher(a: float | None, b: float | None) -> float | None:
    return a if b is None else b if a is None else max(a, b)


def captured(x: Side) -> dict[str, Sequence[Fact]]:
    """What a run captured: steps, levels, presets, backends (its own manifests'), ranks and
    stages."""
    c = x.captures
    presets: set[str] = set()
    backends: set[str] = {t.kind for t in c.traces}
    manifests = find_manifests(c.root) if c.root.is_dir() else []
    folders = {p.parent for p, _ in manifests}
    for path, m in manifests:
        if c.run is not None and manifest_run(path, m, c.root, folders) != c.run.id:
            continue  # another run's
        presets.update(
            o.partition("=")[2]
            for o in m.job.overrides  # the group, or its old name
            if o.startswith(("profiler=", "profiler_config="))
        )
        backends.update(c.backend for c in m.captures or [] if c.backend)
    return {
        "steps": sorted({r.step for r in x.tables.ranges if r.step is not None}),
        "level": sorted({t.meta.level for t in c.traces if t.meta.level}),
        "preset": sorted(presets),
        "backend": sorted(str(b) for b in backends),
        "ranks": x.tables.ranks,
        "stages": sorted({r.name for r in x.tables.ranges if r.kind == "stage"}),
    }


def compare_runs(a: Side, b: Side, threshold: float = DEFAULT_THRESHOLD) -> Comparison:
    """Everything ``compare`` reports: stages, ranges, device, memory and what differs."""
    ca, cb = captured(a), captured(b)
    warnings = [
        f"runs differ in {k}: A {_values(ca[k])}; B {_values(cb[k])}" for k in ca if ca[k] != cb[k]
    ]
    da, db = _device_means(a), _device_means(b)
    per = {"a": scope(a.captures).per, "b": scope(b.captures).per}
    if da and db and per["a"] != per["b"]:
        warnings.append(
            f"device time is per {per['a']} in A and per {per['b']} in B (a "
            "capture without steps is one whole): its table compares unlike "
            "things"
        )
    ma, mb = _memory_peaks(a), _memory_peaks(b)
    return Comparison(
        rows=compare(a, b, threshold),
        ranges=_changes(
            "range",
            _range_means(a),
            _range_means(b),
            threshold,
            _floor(a),
            (per_step(a, "range"), per_step(b, "range")),
        ),
        device=[
            SideBySide(rank=rank, a=da.get(rank) or DeviceMeans(), b=db.get(rank) or DeviceMeans())
            for rank in sorted(da.keys() | db.keys(), key=rank_order)
        ],
        memory=[
            SideBySide(rank=rank, a=ma.get(rank) or Peaks(), b=mb.get(rank) or Peaks())
            for rank in sorted(ma.keys() | mb.keys(), key=rank_order)
        ],
        warnings=warnings,
        captured={"a": ca, "b": cb},
        floor_ms=_floor(a),
        device_per=per,
    )


#: Past this many characters, a list of steps or ranks in a warning is given by its bounds.
_LIST_CHARS = 24


def _values(values: Sequence[Fact]) -> str:
    """``5-10, 16-21``, ``level0, level1``, ``none``; a long list of numbers as its count and
    bounds (``200 from 2 to 400``), a long list of names as its count (``8 (see --json)``),
    so that one warning stays one short line."""
    if not values:
        return "none"
    numbers = [v for v in values if v is None or (isinstance(v, int) and not isinstance(v, bool))]
    if len(numbers) == len(values):
        text = ranks_text(numbers)
        known = [v for v in numbers if v is not None]
        if len(text) > _LIST_CHARS and known:
            unknown = ", ?" if None in numbers else ""
            return f"{len(known)} from {min(known)} to {max(known)}{unknown}"
        return text
    text = ", ".join(map(str, values))
    if len(text) > _LIST_CHARS and len(values) > 1:  # named in full in --json's "captured"
        return f"{len(values)} (see --json)"
    return text


def slower_than(result: Comparison, fraction: float) -> list[str]:
    """The gate: one line per stage or range that B runs slower than A (``gate.slower``: a
    shift of its per-step times over ``fraction`` of A's median and the noise floor
    ``result.floor_ms``, which a rank test finds real over every row with enough steps),
    costliest
    first."""
    rows = [
        r
        for r in (*result.rows, *result.ranges)
        if r.a_steps_ms and r.b_steps_ms and r.a_mean_ms is not None and r.b_mean_ms is not None
    ]
    pairs = [(r.a_steps_ms, r.b_steps_ms) for r in rows]
    flags = slower(pairs, fraction, result.floor_ms)
    family = len(asked(pairs, fraction, result.floor_ms))
    out = []
    for r, flagged in zip(rows, flags, strict=True):
        if not flagged or r.a_mean_ms is None or r.b_mean_ms is None:
            continue
        found = shift(r.a_steps_ms, r.b_steps_ms)
        base = statistics.median(r.a_steps_ms)
        impact = f"{r.impact_ms:+,.1f} ms" if r.impact_ms is not None else "?"
        out.append(
            f"{r.kind} {r.name!r} rank {r.rank}: {r.a_mean_ms:.3f} ms -> {r.b_mean_ms:.3f} ms "
            f"({found.shift_ms / base:+.1%} a step, over {fraction:.1%}; {impact} over "
            f"{r.count} run{'s' * (r.count != 1)}; p={found.p:.3g} over "
            f"{len(r.a_steps_ms)} and {len(r.b_steps_ms)} steps, {family} rows asked)"
        )
    return out


def few_steps(result: Comparison, fraction: float) -> str | None:
    """One line when the runs hold too few steps for the gate's rank test to tell one row's
    change among every row it asks about at ``fraction`` (a change in many rows at once can
    still show): the steps it needs in each run."""
    rows = [r for r in (*result.rows, *result.ranges) if r.a_steps_ms and r.b_steps_ms]
    pairs = [(r.a_steps_ms, r.b_steps_ms) for r in rows]
    if not rows:
        return None
    family = max(len(asked(pairs, fraction, result.floor_ms)), 1)
    na = min(len(a) for a, _ in pairs)
    nb = min(len(b) for _, b in pairs)
    need = steps_needed(family)
    if min(na, nb) >= need:
        return None
    return (
        f"A holds {na} step{'s' * (na != 1)}, B {nb}: too few for the gate to tell one of "
        f"{family} row{'s' * (family != 1)} changing from step-to-step noise, so it may "
        f"call nothing slower there; capture {need} steps or more in each run"
    )
