"""``Tables``: every table of an analysis, each declared once (its name, its rows' type, how
``--json`` writes it), and ``tables``: each computed once, from the captures and the settings.
Adding a table is a field here and its line in ``tables``.

``--json`` is written from the declaration (``tables_json``): the fields in their order, under
their JSON name (``rename``), each top list cut to ``TOP_JSON`` rows (``TOP``), the tables the
verdict and the findings read but ``--json`` does not write left out (``HIDDEN``).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Annotated, NamedTuple, get_args, get_origin

import msgspec

from mindspeed_prof.analysis.capture_facts import classified
from mindspeed_prof.analysis.counts import CounterRow, Model, counter_rows, model_facts
from mindspeed_prof.analysis.held_rows import HeldRows
from mindspeed_prof.analysis.judgement import judge
from mindspeed_prof.analysis.judgement.gating import StepTime
from mindspeed_prof.analysis.judgement.growth import Growth
from mindspeed_prof.analysis.judgement.lag import Lag
from mindspeed_prof.analysis.ledger import Ledger, ledger
from mindspeed_prof.analysis.phases import PhaseTable, phase_rows
from mindspeed_prof.analysis.ranges import no_op_rows, range_rows, stage_rows
from mindspeed_prof.analysis.readers import Range
from mindspeed_prof.analysis.readers.labels import rank_order
from mindspeed_prof.analysis.report import compute
from mindspeed_prof.analysis.report.captures import Captures
from mindspeed_prof.analysis.report.compute import Warmup
from mindspeed_prof.analysis.report.per_step import StepTable, per_step
from mindspeed_prof.analysis.report.settings import TOP_JSON, TOP_MOST, Settings
from mindspeed_prof.analysis.rows import (
    Classified,
    CommRow,
    DeviceRow,
    InventoryRow,
    KernelRow,
    MemoryRow,
    NoOpRow,
    OpRow,
    RangeRow,
    Row,
    RuntimeRow,
    StageRow,
    Straggler,
    row_json,
    to_json,
)
from mindspeed_prof.analysis.runs import RunInfo
from mindspeed_prof.analysis.stragglers import find_stragglers
from mindspeed_prof.analysis.throughput import (
    StageThroughput,
    ThroughputRow,
    stage_summaries,
    throughput_rows,
)
from mindspeed_prof.analysis.triggered import Triggered, triggered
from mindspeed_prof.jsonio import Jsonable, JsonableObject, JsonRows

__all__ = ["HIDDEN", "TOP", "Json", "Tables", "Throughput", "tables", "tables_json"]


class Json(NamedTuple):
    """How ``--json`` writes a table: ``shown`` or not, cut to its first ``most`` rows."""

    shown: bool = True
    most: int | None = None


#: A table the verdict and the findings read that ``--json`` does not write.
HIDDEN = Json(shown=False)
#: A top list: the report's hold up to ``TOP_MOST`` rows, ``--json`` its first ``TOP_JSON``.
TOP = Json(most=TOP_JSON)


class Throughput(msgspec.Struct, kw_only=True):
    """Tokens and samples per second (``throughput``): the model facts MFU reads, the rows
    per stage, rank and step, and per stage their spread and trend."""

    model: Model
    rows: list[ThroughputRow]
    stages: list[StageThroughput]


class Tables(msgspec.Struct, kw_only=True, rename={"range_table": "ranges", "ranges": "_"}):
    """Every table of an analysis, in ``--json``'s order (each row's columns are documented
    with its type in ``analysis.rows``). ``--json`` calls the custom ranges' table ``ranges``;
    the ranges themselves (``HIDDEN``) are renamed out of its way."""

    #: What was read, and the run it is of (every run under the root, newest first).
    root: str
    run: RunInfo | None
    runs: list[RunInfo]
    #: Ranks seen, unknown (None) last.
    ranks: list[int | None]
    #: Per stage and rank: executions, total, mean and max milliseconds.
    stage_rank: list[StageRow]
    #: Per rank and step: each stage's milliseconds, and ``total`` the step's own length.
    per_step: StepTable
    #: Per rank and step: the step split into generation, training, transitions, other stages
    #: and time no stage covers (``phases``), warmup steps marked.
    phases: PhaseTable
    #: Ranks whose stage time in a step exceeds the median of the other ranks by ``margin`` and
    #: the noise floor (``stragglers``); warmup steps left out unless ``include_warmup``.
    stragglers: list[Straggler]
    #: Custom ranges per name and rank (``ranges.range_rows``).
    range_table: list[RangeRow]
    #: Per stage and rank, the time no host operator ran (``ranges.no_op_rows``).
    no_op: list[NoOpRow]
    #: ``stragglers`` of custom ranges.
    range_stragglers: list[Straggler]
    #: Device breakdown rows per rank and step (and stage), warmup steps marked.
    device: list[DeviceRow]
    #: Communication per rank, step, kind and op type (torch_npu captures).
    comm: list[CommRow]
    #: Device time per class of kernel (``capture_facts.classified``).
    classified: list[Classified]
    top_ops: Annotated[list[OpRow], TOP]
    top_kernels: Annotated[list[KernelRow], TOP]
    top_runtime: Annotated[list[RuntimeRow], TOP]
    #: Peak allocated/reserved bytes per capture (rank), then per stage where known.
    memory: list[MemoryRow]
    inventory: list[InventoryRow]
    warnings: list[str]
    #: One line per thing left out of a capture that was otherwise read (also in ``skipped``).
    problems: list[str]
    skipped: list[str]
    #: One line per fact about how a capture was read whole (not a problem: exit 0).
    notes: list[str]
    margin: float
    noise_ms: float
    #: (rank, step) pairs captured as warmup (``warmup_steps``, the ``dpo`` preset).
    warmup: set[tuple[int | None, int]]
    #: Every counter, one row per rank, step, stage and name (``counts``).
    counters: list[CounterRow]
    throughput: Throughput
    #: Generation time on samples not trained on, and the long tail (``ledger``).
    ledger: Ledger | None
    #: Step, stage and custom ranges, each counted once (span files win over op traces).
    ranges: Annotated[Sequence[Range], HIDDEN]
    #: (rank, source, step) of warmup steps.
    warmup_steps: Annotated[Warmup, HIDDEN]
    #: ``ranges``, ``counters`` and ``device`` less warmup steps, unless ``include_warmup``.
    counted: Annotated[Sequence[Range], HIDDEN]
    counted_counters: Annotated[list[CounterRow], HIDDEN]
    counted_device: Annotated[list[DeviceRow], HIDDEN]
    #: The step as the job lived it: each its slowest rank's (``judgement.gating``).
    step_time: Annotated[StepTime | None, HIDDEN]
    #: Every rank behind the others at a stage, a range or in device compute (``judgement``).
    lags: Annotated[list[Lag], HIDDEN]
    #: Every stage's trend over the steps on each rank, judged (``judgement.growth``).
    growths: Annotated[list[Growth], HIDDEN]
    #: Device events recorded but not read as device time, per Kineto category.
    unread_device: Annotated[dict[str, int], HIDDEN]
    #: Unplanned captures (flight dumps, triggered, on demand): what triggered each.
    triggered: Annotated[list[Triggered], HIDDEN]


def tables(captures: Captures, settings: Settings | None = None) -> Tables:
    """Every table of ``captures`` under ``settings`` (default: the CLI's), each computed once;
    top lists of ``max(TOP_MOST, settings.top)`` rows."""
    s = settings or Settings()
    c, traces, most = captures, captures.traces, max(TOP_MOST, s.top)
    ranges = compute.merged_ranges(traces)
    warm = compute.warmup_of(traces)
    counted = compute.counted(ranges, warm, s.include_warmup)
    counters = counter_rows(traces, c.run.id if c.run is not None else "")
    counted_counters = compute.counted_counters(counters, warm, s.include_warmup)
    model = model_facts(traces, s.flops_per_token, s.peak_tflops)
    rows = throughput_rows(counted, counted_counters, model)
    device = compute.device_rows(traces, warm)
    counted_device = [r for r in device if s.include_warmup or not r.warmup]
    return Tables(
        root=str(c.root),
        run=c.run,
        runs=c.runs,
        ranks=sorted({t.rank for t in traces}, key=rank_order),
        stage_rank=stage_rows(ranges),
        per_step=per_step(ranges, warm),
        phases=phase_rows(ranges, warm),
        stragglers=find_stragglers(counted, "stage", s.margin, s.noise_ms),
        range_table=range_rows(ranges),
        no_op=no_op_rows(ranges),
        range_stragglers=find_stragglers(counted, "range", s.margin, s.noise_ms),
        device=device,
        comm=compute.comm_rows(traces),
        classified=classified(traces),
        top_ops=compute.top_ops(traces, most),
        top_kernels=compute.top_kernels(traces, most),
        top_runtime=compute.top_runtime(traces, most),
        memory=compute.memory_rows(traces, c.root),
        inventory=compute.inventory(traces, c.root),
        warnings=compute.warnings(c, ranges),
        problems=[p for t in traces for p in t.problems],
        skipped=c.bad,
        notes=[n for t in traces for n in t.notes],
        margin=s.margin,
        noise_ms=s.noise_ms,
        warmup={(rank, step) for rank, _, step in warm},
        counters=counters,
        throughput=Throughput(model=model, rows=rows, stages=stage_summaries(rows, model)),
        ledger=ledger(counted, counted_counters),
        ranges=ranges,
        warmup_steps=warm,
        counted=counted,
        counted_counters=counted_counters,
        counted_device=counted_device,
        step_time=judge.step_time(counted, counted_device),
        lags=judge.rank_lags(counted, counted_device, s.margin, s.noise_ms),
        growths=judge.stage_growths(counted, counted_device, s.noise_ms),
        unread_device=compute.unread_device(traces),
        triggered=triggered(c),
    )


@cache
def _declared(struct: type[msgspec.Struct]) -> list[tuple[str, str, Json]]:
    """(field, JSON name, how it is written) of each field of ``struct``, in order."""
    return [
        (f.name, f.encode_name, next((m for m in _metadata(f.type) if isinstance(m, Json)), Json()))
        for f in msgspec.structs.fields(struct)
    ]


def _metadata(annotation: object) -> tuple[object, ...]:
    """What ``Annotated[T, ...]`` adds to ``T`` (nothing for a plain type)."""
    return get_args(annotation)[1:] if get_origin(annotation) is Annotated else ()


def _json(value: object, lazy: bool = False) -> Jsonable:
    if isinstance(value, Row):
        return value.json()
    if isinstance(value, msgspec.Struct):  # a group of tables (``Throughput``)
        return tables_json(value, lazy)
    if isinstance(value, set):
        return sorted(value)  # (rank, step) pairs: arrays in JSON
    if isinstance(value, HeldRows) or (
        isinstance(value, list) and value and isinstance(value[0], msgspec.Struct)
    ):
        return JsonRows(value, row_json) if lazy else to_json(value)
    return value  # type: ignore[return-value]  # str, number, None, a list of them


def tables_json(t: msgspec.Struct, lazy: bool = False) -> JsonableObject:
    """``t`` (``Tables``, or a group of them) as ``--json`` writes it, from its declaration;
    ``lazy``: each table's rows made as the document is written (``jsonio.JsonRows``)."""
    out: JsonableObject = {}
    for name, key, how in _declared(type(t)):
        if how.shown:
            value = getattr(t, name)
            out[key] = _json(value if how.most is None else value[: how.most], lazy)
    return out
