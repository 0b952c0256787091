"""The whole answer for one analysis, computed once: the verdict (with what to run next), the
findings, then every table, each a typed row. The text view, the HTML view and ``--json``
(``Report.json``) only read it.

``Settings`` is the one way the user's choices reach the analysis (margin, noise floor, warmup,
model facts); ``report`` applies them and computes every ``Analysis`` table once: the verdict
and the findings read the same tables (``Tables``, through ``_Once``), never a second copy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TypeVar, cast

import msgspec

from mindspeed_prof.analysis.capture_facts import classified
from mindspeed_prof.analysis.counts import CounterRow, Model
from mindspeed_prof.analysis.findings import Finding, find
from mindspeed_prof.analysis.judgement.gating import StepTime
from mindspeed_prof.analysis.judgement.growth import Growth
from mindspeed_prof.analysis.judgement.lag import Lag
from mindspeed_prof.analysis.judgement.noise import DEFAULT_NOISE_MS
from mindspeed_prof.analysis.ledger import Ledger
from mindspeed_prof.analysis.phases import PhaseRow
from mindspeed_prof.analysis.readers import Range, TraceData
from mindspeed_prof.analysis.result import DEFAULT_MARGIN, Analysis
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
    RuntimeRow,
    StageRow,
    StepRow,
    Straggler,
    StragglerKind,
    to_json,
)
from mindspeed_prof.analysis.throughput import StageThroughput, ThroughputRow
from mindspeed_prof.analysis.verdict import Verdict, verdict
from mindspeed_prof.jsonio import JsonableObject

__all__ = ["TOP_MOST", "Report", "Settings", "Tables", "document", "report", "tables_json"]

#: The longest top list any view shows (the report's); shorter lists are its first rows.
TOP_MOST = 25
#: The top lists' length in ``--json`` and for the findings (``Analysis.top_*``' default).
TOP_JSON = 15

T = TypeVar("T")


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    """What the user chose for an analysis (``analyse``/``compare`` options)."""

    margin: float = DEFAULT_MARGIN
    noise_ms: float = DEFAULT_NOISE_MS
    include_warmup: bool = False
    flops_per_token: float | None = None
    peak_tflops: float | None = None
    #: Rows of each top list the terminal shows (``--top``); the report's lists hold at least
    #: ``TOP_MOST``.
    top: int = 10

    def apply(self, result: Analysis) -> Analysis:
        """``result`` under these settings (a copy: ``result`` is left as it was)."""
        return dataclasses.replace(
            result,
            margin=self.margin,
            noise_ms=self.noise_ms,
            include_warmup=self.include_warmup,
            flops_per_token=self.flops_per_token,
            peak_tflops=self.peak_tflops,
        )


class Tables(msgspec.Struct, kw_only=True):
    """Every table of an ``Analysis``, each computed once (its method's name and rows)."""

    ranges: list[Range]
    ranks: list[int | None]
    warmup: set[tuple[int | None, int]]
    counted: list[Range]
    counters: list[CounterRow]
    counted_counters: list[CounterRow]
    model: Model
    throughput: list[ThroughputRow]
    throughput_stages: list[StageThroughput]
    ledger: Ledger | None
    stage_rank: list[StageRow]
    per_step: list[StepRow]
    phases: list[PhaseRow]
    stragglers: list[Straggler]
    range_stragglers: list[Straggler]
    range_table: list[RangeRow]
    no_op: list[NoOpRow]
    device: list[DeviceRow]
    comm: list[CommRow]
    classified: list[Classified]
    top_ops: list[OpRow]
    top_kernels: list[KernelRow]
    top_runtime: list[RuntimeRow]
    memory: list[MemoryRow]
    inventory: list[InventoryRow]
    warnings: list[str]
    problems: list[str]
    notes: list[str]
    unread_device: dict[str, int]


class _Once(Analysis):
    """An ``Analysis`` whose every table is computed the first time it is asked for and read
    back after: what the verdict and the findings read while a ``Report`` is made."""

    def __init__(self, result: Analysis) -> None:
        super().__init__(**{f.name: getattr(result, f.name) for f in dataclasses.fields(Analysis)})
        self._memo: dict[tuple[str, object], object] = {}

    def _once(self, name: str, compute: Callable[[], T], key: object = None) -> T:
        """``compute()``, the first time ``name`` (with ``key``) is asked for; then its value."""
        if (name, key) not in self._memo:
            self._memo[(name, key)] = compute()
        return cast(T, self._memo[(name, key)])  # stored by this method, from ``compute``

    @property
    def ranges(self) -> list[Range]:
        return self._once("ranges", lambda: super(_Once, self).ranges)

    @property
    def ranks(self) -> list[int | None]:
        return self._once("ranks", lambda: super(_Once, self).ranks)

    def warmup(self) -> set[tuple[int | None, int]]:
        return self._once("warmup", super().warmup)

    def _warmup(self) -> set[tuple[int | None, str, int]]:
        return self._once("_warmup", super()._warmup)

    def counted(self) -> list[Range]:
        return self._once("counted", super().counted)

    def counters(self) -> list[CounterRow]:
        return self._once("counters", super().counters)

    def counted_counters(self) -> list[CounterRow]:
        return self._once("counted_counters", super().counted_counters)

    def model(self) -> Model:
        return self._once("model", super().model)

    def throughput(self) -> list[ThroughputRow]:
        return self._once("throughput", super().throughput)

    def throughput_stages(self) -> list[StageThroughput]:
        return self._once("throughput_stages", super().throughput_stages)

    def ledger(self) -> Ledger | None:
        return self._once("ledger", super().ledger)

    def stage_rank(self) -> list[StageRow]:
        return self._once("stage_rank", super().stage_rank)

    def per_step(self) -> list[StepRow]:
        return self._once("per_step", super().per_step)

    def phases(self) -> list[PhaseRow]:
        return self._once("phases", super().phases)

    def stragglers(self, kind: StragglerKind = "stage") -> list[Straggler]:
        return self._once("stragglers", lambda: super(_Once, self).stragglers(kind), kind)

    def counted_device(self) -> list[DeviceRow]:
        return self._once("counted_device", super().counted_device)

    def step_time(self) -> StepTime | None:
        return self._once("step_time", super().step_time)

    def lags(self) -> list[Lag]:
        return self._once("lags", super().lags)

    def growths(self) -> list[Growth]:
        return self._once("growths", super().growths)

    def range_table(self) -> list[RangeRow]:
        return self._once("range_table", super().range_table)

    def no_op(self) -> list[NoOpRow]:
        return self._once("no_op", super().no_op)

    def device(self, traces: list[TraceData] | None = None) -> list[DeviceRow]:
        if traces is not None:
            return super().device(traces)
        return self._once("device", super().device)

    def comm(self) -> list[CommRow]:
        return self._once("comm", super().comm)

    def top_kernels(self, n: int = TOP_JSON) -> list[KernelRow]:
        return self._once("top_kernels", lambda: super(_Once, self).top_kernels(n), n)

    def top_runtime(self, n: int = TOP_JSON) -> list[RuntimeRow]:
        return self._once("top_runtime", lambda: super(_Once, self).top_runtime(n), n)

    def top_ops(self, n: int = TOP_JSON) -> list[OpRow]:
        return self._once("top_ops", lambda: super(_Once, self).top_ops(n), n)

    def memory(self) -> list[MemoryRow]:
        return self._once("memory", super().memory)

    def problems(self) -> list[str]:
        return self._once("problems", super().problems)

    def notes(self) -> list[str]:
        return self._once("notes", super().notes)

    def unread_device(self) -> dict[str, int]:
        return self._once("unread_device", super().unread_device)

    def inventory(self) -> list[InventoryRow]:
        return self._once("inventory", super().inventory)

    def warnings(self) -> list[str]:
        return self._once("warnings", super().warnings)

    def _unshared_steps(self) -> list[str]:
        return self._once("_unshared_steps", super()._unshared_steps)


class Report(msgspec.Struct, kw_only=True):
    """The whole answer for one analysis. ``result`` is what was read (root, traces, skipped
    files, clashes, runs); ``tables`` every table; ``rule_notes``: finding rules that failed."""

    result: Analysis
    settings: Settings
    verdict: Verdict
    findings: list[Finding]
    rule_notes: list[str]
    tables: Tables

    def json(self) -> JsonableObject:
        """``analyse --json``: ``verdict`` and ``findings`` first, then the tables
        (``tables_json``), the rules' notes added to the captures'."""
        return {
            "verdict": self.verdict.json(),
            "findings": to_json(self.findings),
            **_tables_json(self.result, self.tables),
            "notes": [*self.tables.notes, *self.rule_notes],
        }


def _tables(once: _Once, most: int) -> Tables:
    """Every table of ``once``, each computed once; top lists of ``most`` rows."""
    return Tables(
        ranges=once.ranges,
        ranks=once.ranks,
        warmup=once.warmup(),
        counted=once.counted(),
        counters=once.counters(),
        counted_counters=once.counted_counters(),
        model=once.model(),
        throughput=once.throughput(),
        throughput_stages=once.throughput_stages(),
        ledger=once.ledger(),
        stage_rank=once.stage_rank(),
        per_step=once.per_step(),
        phases=once.phases(),
        stragglers=once.stragglers(),
        range_stragglers=once.stragglers("range"),
        range_table=once.range_table(),
        no_op=once.no_op(),
        device=once.device(),
        comm=once.comm(),
        classified=classified(once.traces),
        top_ops=once.top_ops(most),
        top_kernels=once.top_kernels(most),
        top_runtime=once.top_runtime(most),
        memory=once.memory(),
        inventory=once.inventory(),
        warnings=once.warnings(),
        problems=once.problems(),
        notes=once.notes(),
        unread_device=once.unread_device(),
    )


def _tables_json(r: Analysis, t: Tables) -> JsonableObject:
    """The tables ``t`` of ``r`` as ``--json`` writes them."""
    return {
        "root": str(r.root),
        "run": r.run.json() if r.run else None,
        "runs": [run.json() for run in r.runs],
        "ranks": t.ranks,
        "stage_rank": to_json(t.stage_rank),
        "per_step": to_json(t.per_step),
        "phases": to_json(t.phases),
        "stragglers": to_json(t.stragglers),
        "ranges": to_json(t.range_table),
        "no_op": to_json(t.no_op),
        "range_stragglers": to_json(t.range_stragglers),
        "device": to_json(t.device),
        "comm": to_json(t.comm),
        "classified": to_json(t.classified),
        "top_ops": to_json(t.top_ops[:TOP_JSON]),
        "top_kernels": to_json(t.top_kernels[:TOP_JSON]),
        "top_runtime": to_json(t.top_runtime[:TOP_JSON]),
        "memory": to_json(t.memory),
        "inventory": to_json(t.inventory),
        "warnings": t.warnings,
        "problems": t.problems,
        "skipped": r.bad,
        "notes": t.notes,
        "margin": r.margin,
        "noise_ms": r.noise_ms,
        "warmup": sorted(t.warmup),
        "counters": to_json(t.counters),
        "throughput": {
            "model": t.model.json(),
            "rows": to_json(t.throughput),
            "stages": to_json(t.throughput_stages),
        },
        "ledger": t.ledger.json() if t.ledger else None,
    }


def tables_json(result: Analysis) -> JsonableObject:
    """A job's ``analysis.json``: every table of ``result`` as ``--json`` writes it (each
    computed once), without the verdict and findings (not computed)."""
    once = _Once(result)
    return _tables_json(once, _tables(once, TOP_MOST))


def report(result: Analysis, settings: Settings | None = None) -> Report:
    """The ``Report`` of ``result`` under ``settings`` (default: those ``result`` holds):
    every table computed once, then the verdict and the findings from the same tables."""
    if settings is None:
        settings = Settings(
            margin=result.margin,
            noise_ms=result.noise_ms,
            include_warmup=result.include_warmup,
            flops_per_token=result.flops_per_token,
            peak_tflops=result.peak_tflops,
        )
    once = _Once(settings.apply(result))
    tables = _tables(once, max(TOP_MOST, settings.top))
    findings, rule_notes = find(once)
    return Report(
        result=once,
        settings=settings,
        verdict=verdict(once, findings),
        findings=findings,
        rule_notes=rule_notes,
        tables=tables,
    )


def document(result: Analysis | Report) -> JsonableObject:
    """``analyse --json`` of ``result`` (a ``Report``, or an ``Analysis`` to make one of)."""
    return (result if isinstance(result, Report) else report(result)).json()
