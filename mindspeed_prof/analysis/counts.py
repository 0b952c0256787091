"""Counters of a run as typed rows, one per (run, rank, step, stage, name), and what the
throughput and the RL ledger read from them: counts per rank, step and stage, the model's
FLOPs per token and peak, percentiles.

A capture's range file and its op trace (or db export) share a stem: where the range file
holds counters, only its own are counted (never the same call twice).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable

from mindspeed_prof.analysis.readers.counters import Count
from mindspeed_prof.analysis.readers.kineto.device_peak import peak_tflops as device_peak
from mindspeed_prof.analysis.readers.labels import rank_order
from mindspeed_prof.analysis.readers.model import TraceData
from mindspeed_prof.analysis.rows import Row
from mindspeed_prof.formats import capture_stem
from mindspeed_prof.formats.counters import DISTRIBUTIONS, names
from mindspeed_prof.jsonio import JsonableObject

__all__ = [
    "DISTRIBUTIONS",
    "GENERATE",
    "MAX_PEAK_TFLOPS",
    "STANDARD",
    "CounterRow",
    "Model",
    "counter_rows",
    "is_update",
    "model_facts",
    "model_problem",
    "percentile",
]

#: The generation stage.
GENERATE = "actor_generate"
#: The names the analysis knows (any other is shown as a plain counter), and those whose
#: values are a distribution (each value one observation): ``formats.counters``.
STANDARD = names()
#: A peak over this (TFLOPS per device) is no device's: refused as input.
MAX_PEAK_TFLOPS = 1e5


def is_update(stage: str) -> bool:
    """A training stage (``actor_update``, ``critic_update``): forward and backward, 3x."""
    return stage.endswith("_update")


class CounterRow(Row, kw_only=True):
    """One counter on one rank in one step and stage of ``run``: ``value`` the sum of its
    scalar calls (None: none), ``calls`` their number, ``values`` its distributions'
    values concatenated (None: none). ``--json`` writes a distribution as its size, sum,
    min, p50, p99 and max, not every value."""

    run: str = ""
    rank: int | None
    source: str = ""
    step: int | None = None
    stage: str | None = None
    name: str
    value: float | None = None
    calls: int = 0
    values: list[float] | None = None

    @property
    def total(self) -> float:
        """Every value recorded: the scalar sum plus the distribution's values."""
        return (self.value or 0.0) + (math.fsum(self.values) if self.values else 0.0)

    def json(self) -> JsonableObject:
        out: JsonableObject = {
            "run": self.run,
            "rank": self.rank,
            "source": self.source,
            "step": self.step,
            "stage": self.stage,
            "name": self.name,
            "value": self.value,
            "calls": self.calls,
        }
        if self.values:
            v = sorted(self.values)
            out["values"] = {
                "n": len(v),
                "sum": math.fsum(v),
                "min": v[0],
                "p50": percentile(v, 50),
                "p99": percentile(v, 99),
                "max": v[-1],
            }
        else:
            out["values"] = None
        return out


def percentile(ordered: list[float], q: float) -> float:
    """The ``q``-th percentile of sorted values, linear between the closest ranks (numpy's
    default)."""
    if not ordered:
        raise ValueError("percentile of no values")
    pos = (len(ordered) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def _preferred(traces: list[TraceData]) -> list[TraceData]:
    """Of each capture (traces of one stem), the traces whose counters count: the range
    file's where it holds any, else every one's."""
    by_stem: dict[tuple[str, str], list[TraceData]] = defaultdict(list)
    for t in traces:
        if t.counters:
            by_stem[(str(t.path.parent), capture_stem(t.path))].append(t)
    out = []
    for group in by_stem.values():
        spans = [t for t in group if t.kind == "spans"]
        out.extend(spans or group)
    return out


def counter_rows(traces: list[TraceData], run: str = "") -> list[CounterRow]:
    """Every counter of ``traces`` (of the run ``run``), one row per (rank, source, step,
    stage, name), warmup steps included; by rank, step, stage and name."""
    merged: dict[tuple[int | None, str, int | None, str | None, str], CounterRow] = {}
    for t in _preferred(traces):
        source = t.clash_label
        source = source if isinstance(source, str) else ""
        for c in t.counters:
            key = (t.rank, source, c.step, c.stage, c.name)
            row = merged.get(key)
            if row is None:
                merged[key] = _row(c, run, t.rank, source)
            else:
                _add(row, c)
    return sorted(
        merged.values(),
        key=lambda r: (
            rank_order(r.rank),
            r.source,
            r.step is None,
            r.step or 0,
            r.stage or "",
            r.name,
        ),
    )


def _row(c: Count, run: str, rank: int | None, source: str) -> CounterRow:
    return CounterRow(
        run=run,
        rank=rank,
        source=source,
        step=c.step,
        stage=c.stage,
        name=c.name,
        value=c.value,
        calls=c.calls,
        values=list(c.values) if c.values is not None else None,
    )


def _add(row: CounterRow, c: Count) -> None:
    """Two captures of one rank and source (two range files): their calls add up."""
    if c.value is not None:
        row.value = (row.value or 0.0) + c.value
        row.calls += c.calls
    if c.values is not None:  # ``row`` holds its own list (``_row``): extended in place
        if row.values is None:
            row.values = list(c.values)
        else:
            row.values.extend(c.values)


class Model(Row, kw_only=True):
    """What MFU needs: forward FLOPs per token and the device's peak TFLOPS, each with where
    it came from (``flag``, ``header``; None where no source gives it), and ``problems``:
    values given that could not be used (one line each)."""

    flops_per_token: float | None = None
    peak_tflops: float | None = None
    flops_from: str | None = None
    peak_from: str | None = None
    problems: list[str] = []


def model_problem(field: str, value: object) -> str | None:
    """Why ``value`` cannot be ``field`` (``flops_per_token``, ``peak_tflops``), or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{field}={value!r}: not a number"
    if not math.isfinite(value) or value <= 0:
        return f"{field}={value!r}: allowed a finite number over 0"
    if field == "peak_tflops" and value > MAX_PEAK_TFLOPS:
        return f"{field}={value!r}: over {MAX_PEAK_TFLOPS:,.0f} TFLOPS, no device's peak"
    return None


def model_facts(
    traces: Iterable[TraceData],
    flops_per_token: float | None = None,
    peak_tflops: float | None = None,
) -> Model:
    """The model facts: the user's (``--flops-per-token``, ``--peak-tflops``) where given,
    else the captures' headers (their ``mindspeed_prof.model`` block); headers that disagree
    give none, with a problem line. A peak no flag or header gives is the device's where every
    trace that names one names the same device of ``readers.kineto.device_peak``'s table."""
    traces = list(traces)
    given = {"flops_per_token": flops_per_token, "peak_tflops": peak_tflops}
    seen: dict[str, set[float]] = {"flops_per_token": set(), "peak_tflops": set()}
    problems: list[str] = []
    for t in traces:
        block = t.meta.model
        if block is None:  # (a block of the wrong type: dropped on reading, with a problem)
            continue
        for field, value in (
            ("flops_per_token", block.flops_per_token),
            ("peak_tflops", block.peak_tflops),
        ):
            if value is not None and value != 0:
                why = model_problem(field, value)
                if why:
                    problems.append(f"{t.path}: model.{why}; not used")
                else:
                    seen[field].add(float(value))
    out: dict[str, tuple[float | None, str | None]] = {}
    if given["peak_tflops"] is None and not seen["peak_tflops"]:
        devices = {t.meta.device_name for t in traces if t.meta.device_name}
        known = {(name, peak) for name in devices if (peak := device_peak(name)) is not None}
        if len(known) == 1 and len(devices) == 1:
            ((name, peak),) = known
            seen["peak_tflops"].add(peak)
            out["peak_tflops"] = (peak, f"device {name}")
    for field, values in seen.items():
        if field in out:
            continue
        if given[field] is not None:
            out[field] = (given[field], "flag")
        elif len(values) == 1:
            out[field] = (values.pop(), "header")
        else:
            if len(values) > 1:
                problems.append(
                    f"the captures' headers disagree on model.{field} "
                    f"({', '.join(f'{v:g}' for v in sorted(values))}): give it "
                    f"with --{field.replace('_', '-')}"
                )
            out[field] = (None, None)
    return Model(
        flops_per_token=out["flops_per_token"][0],
        flops_from=out["flops_per_token"][1],
        peak_tflops=out["peak_tflops"][0],
        peak_from=out["peak_tflops"][1],
        problems=problems,
    )
