"""``compare A B``: two runs side by side (stages, ranges, device, memory), regressions flagged."""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

import msgspec

from mindspeed_prof.analysis.analyse import Analysis, stage_rows
from mindspeed_prof.analysis.ranges import range_rows
from mindspeed_prof.analysis.readers.model import rank_order, ranks_text
from mindspeed_prof.analysis.rows import Change, DeviceMeans, DeviceRow, Peaks, SideBySide, to_json
from mindspeed_prof.analysis.stragglers import noise_floor, step_times
from mindspeed_prof.jsonio import read_json

__all__ = ["DEFAULT_THRESHOLD", "Comparison", "captured", "compare", "compare_runs",
           "slower_than"]

#: B is a regression when its mean time exceeds A's by more than this fraction.
DEFAULT_THRESHOLD = 0.1


class Comparison(msgspec.Struct, kw_only=True):
    """Everything ``compare A B`` reports: stages (``rows``) and custom ranges side by side,
    device means and memory peaks per rank, what the runs captured and how they differ."""

    rows: list[Change]
    ranges: list[Change]
    device: list[SideBySide]
    memory: list[SideBySide]
    warnings: list[str]
    captured: dict[str, dict[str, list[Any]]]
    #: A change per execution under this many ms is noise (the larger of ``noise_ms`` and 1%
    #: of A's step).
    floor_ms: float = 0.0

    def json(self) -> dict[str, Any]:
        return {"rows": to_json(self.rows), "ranges": to_json(self.ranges),
                "device": to_json(self.device), "memory": to_json(self.memory),
                "warnings": self.warnings, "captured": self.captured,
                "floor_ms": self.floor_ms}


def _changes(kind: str, a: dict[tuple[str, int | None], tuple[float, int]],
             b: dict[tuple[str, int | None], tuple[float, int]], threshold: float,
             floor: float) -> list[Change]:
    """One row per (name, rank) of either run, the costliest change first."""
    out = []
    for key in a.keys() | b.keys():
        (ma, na), (mb, nb) = a.get(key, (None, 0)), b.get(key, (None, 0))
        change = (mb - ma) / ma if ma and mb is not None else None
        diff = None if ma is None or mb is None else mb - ma
        real = diff is not None and abs(diff) >= floor
        out.append(Change(kind=kind, name=key[0], rank=key[1], a_mean_ms=ma, b_mean_ms=mb,
                          change=change, count=nb or na,
                          impact_ms=None if diff is None else diff * (nb or na),
                          regression=real and change is not None and change > threshold,
                          improvement=real and change is not None and change < -threshold))
    return sorted(out, key=lambda r: (-(abs(r.impact_ms) if r.impact_ms is not None else -1),
                                      r.name, rank_order(r.rank)))


def _floor(x: Analysis) -> float:
    steps = step_times(x.counted())
    return noise_floor(x.noise_ms, statistics.median(steps.values()) if steps else None)


def compare(a: Analysis, b: Analysis, threshold: float = DEFAULT_THRESHOLD) -> list[Change]:
    """One row per (stage, rank) present in either run: mean ms in A and B, change, flag.

    Warmup steps are left out unless the analyses were made with ``include_warmup``.
    """
    def means(x: Analysis) -> dict[tuple[str, int | None], tuple[float, int]]:
        return {(r.stage, r.rank): (r.mean_ms, r.count) for r in stage_rows(x.counted())}
    return _changes("stage", means(a), means(b), threshold, _floor(a))


def _range_means(x: Analysis) -> dict[tuple[str, int | None], tuple[float, int]]:
    return {(r.name, r.rank): (r.mean_ms, r.count) for r in range_rows(x.counted())}


def _mean(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _device_means(x: Analysis) -> dict[int | None, DeviceMeans]:
    """Per rank: mean ms per step of each device component (whole steps, warmup left out)."""
    per: dict[int | None, list[DeviceRow]] = defaultdict(list)
    for r in x.device():
        if r.stage is None and r.step is not None and (x.include_warmup or not r.warmup):
            per[r.rank].append(r)
    return {rank: DeviceMeans(compute_ms=_mean([r.compute_ms for r in rows]),
                              comm_ms=_mean([r.comm_ms for r in rows]),
                              overlap_ms=_mean([r.overlap_ms for r in rows]),
                              memcpy_ms=_mean([r.memcpy_ms for r in rows]),
                              idle_ms=_mean([r.idle_ms for r in rows]))
            for rank, rows in per.items()}


def _memory_peaks(x: Analysis) -> dict[int | None, Peaks]:
    out: dict[int | None, Peaks] = {}
    for r in x.memory():
        if r.stage is None:
            mine = out.setdefault(r.rank, Peaks())
            mine.peak_allocated_bytes = _higher(mine.peak_allocated_bytes,
                                                r.peak_allocated_bytes)
            mine.peak_reserved_bytes = _higher(mine.peak_reserved_bytes, r.peak_reserved_bytes)
    return out


def _higher(a: float | None, b: float | None) -> float | None:
    return a if b is None else b if a is None else max(a, b)


def captured(x: Analysis) -> dict[str, list[Any]]:
    """What a run captured: steps, levels, presets, backends, ranks and stages."""
    presets: set[str] = set()
    backends: set[str] = {t.kind for t in x.traces}
    for path in sorted(x.root.rglob("manifest*.json")) if x.root.is_dir() else []:
        try:
            doc = read_json(path)  # bounded, never through a link
        except (OSError, ValueError):
            continue
        if not isinstance(doc, dict):
            continue
        overrides = (doc.get("job") or {}).get("overrides") or []
        presets.update(o.partition("=")[2] for o in overrides  # the group, or its old name
                       if isinstance(o, str) and o.startswith(("profiler=", "profiler_config=")))
        backends.update(str(c["backend"]) for c in doc.get("captures") or []
                        if isinstance(c, dict) and c.get("backend"))
    return {"steps": sorted({r.step for r in x.ranges if r.step is not None}),
            "level": sorted({str(t.meta["level"]) for t in x.traces if t.meta.get("level")}),
            "preset": sorted(presets), "backend": sorted(str(b) for b in backends),
            "ranks": x.ranks,
            "stages": sorted({r.name for r in x.ranges if r.kind == "stage"})}


def compare_runs(a: Analysis, b: Analysis, threshold: float = DEFAULT_THRESHOLD) -> Comparison:
    """Everything ``compare`` reports: stages, ranges, device, memory and what differs."""
    ca, cb = captured(a), captured(b)
    warnings = [f"runs differ in {k}: A {_values(ca[k])}; B {_values(cb[k])}"
                for k in ca if ca[k] != cb[k]]
    da, db = _device_means(a), _device_means(b)
    ma, mb = _memory_peaks(a), _memory_peaks(b)
    return Comparison(
        rows=compare(a, b, threshold),
        ranges=_changes("range", _range_means(a), _range_means(b), threshold, _floor(a)),
        device=[SideBySide(rank=rank, a=da.get(rank) or DeviceMeans(),
                           b=db.get(rank) or DeviceMeans())
                for rank in sorted(da.keys() | db.keys(), key=rank_order)],
        memory=[SideBySide(rank=rank, a=ma.get(rank) or Peaks(), b=mb.get(rank) or Peaks())
                for rank in sorted(ma.keys() | mb.keys(), key=rank_order)],
        warnings=warnings, captured={"a": ca, "b": cb}, floor_ms=_floor(a))


#: Past this many characters, a list of steps or ranks in a warning is given by its bounds.
_LIST_CHARS = 24


def _values(values: list[Any]) -> str:
    """``5-10, 16-21``, ``level0, level1``, ``none``; a long list of numbers as its count and
    bounds (``200 from 2 to 400``), so that one warning stays one short line."""
    if not values:
        return "none"
    if all(v is None or (isinstance(v, int) and not isinstance(v, bool)) for v in values):
        text = ranks_text(values)
        known = [v for v in values if v is not None]
        if len(text) > _LIST_CHARS and known:
            unknown = ", ?" if None in values else ""
            return f"{len(known)} from {min(known)} to {max(known)}{unknown}"
        return text
    return ", ".join(map(str, values))


def slower_than(result: Comparison, fraction: float) -> list[str]:
    """One line per stage or range whose mean in B exceeds A's by more than ``fraction`` and
    by more than the noise floor (``result.floor_ms`` per execution), costliest first."""
    return [f"{r.kind} {r.name!r} rank {r.rank}: {r.a_mean_ms:.3f} ms -> {r.b_mean_ms:.3f} ms "
            f"({r.change:+.1%}, over {fraction:.1%}; {r.impact_ms:+,.1f} ms over {r.count} "
            f"run{'s' * (r.count != 1)})"
            for r in (*result.rows, *result.ranges)
            if r.change is not None and r.change > fraction and r.a_mean_ms is not None
            and r.b_mean_ms is not None and r.impact_ms is not None
            and r.b_mean_ms - r.a_mean_ms >= result.floor_ms]
