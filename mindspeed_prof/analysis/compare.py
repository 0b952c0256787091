"""``compare A B``: two runs side by side (stages, ranges, device, memory), regressions flagged."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from mindspeed_prof.analysis.analyse import Analysis
from mindspeed_prof.analysis.readers.model import rank_order, ranks_text

__all__ = ["DEFAULT_THRESHOLD", "captured", "compare", "compare_runs", "slower_than"]

#: B is a regression when its mean time exceeds A's by more than this fraction.
DEFAULT_THRESHOLD = 0.1
_DEVICE = ("compute_ms", "comm_ms", "overlap_ms", "memcpy_ms", "idle_ms")


def _rows(a: dict[tuple[str, int | None], float], b: dict[tuple[str, int | None], float],
          key: str,
          threshold: float) -> list[dict[str, Any]]:
    out = []
    for name, rank in sorted(a.keys() | b.keys(), key=lambda k: (k[0], rank_order(k[1]))):
        ma, mb = a.get((name, rank)), b.get((name, rank))
        change = (mb - ma) / ma if ma and mb is not None else None
        out.append({key: name, "rank": rank, "a_mean_ms": ma, "b_mean_ms": mb, "change": change,
                    "regression": change is not None and change > threshold,
                    "improvement": change is not None and change < -threshold})
    return out


def compare(a: Analysis, b: Analysis, threshold: float = DEFAULT_THRESHOLD) -> list[dict[str, Any]]:
    """One row per (stage, rank) present in either run: mean ms in A and B, change, flag.

    Warmup steps are left out unless the analyses were made with ``include_warmup``.
    """
    def means(x: Analysis) -> dict[tuple[str, int | None], float]:
        return {(r["stage"], r["rank"]): r["mean_ms"]
                for r in x.stage_rank(include_warmup=x.include_warmup)}
    return _rows(means(a), means(b), "stage", threshold)


def _range_means(x: Analysis) -> dict[tuple[str, int | None], float]:
    return {(r["name"], r["rank"]): r["mean_ms"]
            for r in x.range_table(include_warmup=x.include_warmup)}


def _mean(values: list[Any]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _device_means(x: Analysis) -> dict[int | None, dict[str, float | None]]:
    """Per rank: mean ms per step of each device component (whole steps, warmup left out)."""
    per: dict[int | None, list[dict[str, Any]]] = defaultdict(list)
    for r in x.device():
        if r["stage"] is None and r["step"] is not None and (x.include_warmup or not r["warmup"]):
            per[r["rank"]].append(r)
    return {rank: {k: _mean([r.get(k) for r in rows]) for k in _DEVICE}
            for rank, rows in per.items()}


def _memory_peaks(x: Analysis) -> dict[int | None, dict[str, float | None]]:
    out: dict[int | None, dict[str, float | None]] = {}
    for r in x.memory():
        if r["stage"] is None:
            mine = out.setdefault(r["rank"], {"peak_allocated_bytes": None,
                                              "peak_reserved_bytes": None})
            for k in mine:
                if r[k] is not None:
                    mine[k] = max(mine[k] or 0, r[k])
    return out


def captured(x: Analysis) -> dict[str, list[Any]]:
    """What a run captured: steps, levels, presets, backends, ranks and stages."""
    presets: set[str] = set()
    backends: set[str] = {t.kind for t in x.traces}
    for path in sorted(x.root.rglob("manifest*.json")) if x.root.is_dir() else []:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(doc, dict):
            continue
        overrides = (doc.get("job") or {}).get("overrides") or []
        presets.update(o.removeprefix("profiler=") for o in overrides
                       if isinstance(o, str) and o.startswith("profiler="))
        backends.update(str(c["backend"]) for c in doc.get("captures") or []
                        if isinstance(c, dict) and c.get("backend"))
    return {"steps": sorted({r.step for r in x.ranges if r.step is not None}),
            "level": sorted({str(t.meta["level"]) for t in x.traces if t.meta.get("level")}),
            "preset": sorted(presets), "backend": sorted(str(b) for b in backends),
            "ranks": x.ranks,
            "stages": sorted({r.name for r in x.ranges if r.kind == "stage"})}


def compare_runs(a: Analysis, b: Analysis, threshold: float = DEFAULT_THRESHOLD) -> dict[str, Any]:
    """Everything ``compare`` reports: stages, ranges, device, memory and what differs."""
    ca, cb = captured(a), captured(b)
    warnings = [f"runs differ in {k}: A {_values(ca[k])}; B {_values(cb[k])}"
                for k in ca if ca[k] != cb[k]]
    da, db = _device_means(a), _device_means(b)
    device = [{"rank": rank, **{f"a_{k}": (da.get(rank) or {}).get(k) for k in _DEVICE},
               **{f"b_{k}": (db.get(rank) or {}).get(k) for k in _DEVICE}}
              for rank in sorted(da.keys() | db.keys(), key=rank_order)]
    ma, mb = _memory_peaks(a), _memory_peaks(b)
    memory = [{"rank": rank, **{f"{side}_{k}": (m.get(rank) or {}).get(k)
                                for side, m in (("a", ma), ("b", mb))
                                for k in ("peak_allocated_bytes", "peak_reserved_bytes")}}
              for rank in sorted(ma.keys() | mb.keys(), key=rank_order)]
    return {"rows": compare(a, b, threshold),
            "ranges": _rows(_range_means(a), _range_means(b), "name", threshold),
            "device": device, "memory": memory, "warnings": warnings,
            "captured": {"a": ca, "b": cb}}


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


def slower_than(result: dict[str, Any], fraction: float) -> list[str]:
    """One line per stage or range whose mean in B exceeds A's by more than ``fraction``."""
    out = []
    for kind, rows, key in (("stage", result["rows"], "stage"),
                            ("range", result["ranges"], "name")):
        for r in rows:
            if r["change"] is not None and r["change"] > fraction:
                out.append(f"{kind} {r[key]!r} rank {r['rank']}: {r['a_mean_ms']:.3f} ms -> "
                           f"{r['b_mean_ms']:.3f} ms ({r['change']:+.1%}, over {fraction:.1%})")
    return out
