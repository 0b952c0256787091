"""``Analysis``: the captures of one run as read, and every table ``analyse`` answers from
them (per stage, rank and step), each a method computed from ``traces``."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

import msgspec

from mindspeed_prof.analysis.counts import CounterRow, Model, counter_rows, model_facts
from mindspeed_prof.analysis.judgement import judge
from mindspeed_prof.analysis.judgement.gating import StepTime
from mindspeed_prof.analysis.judgement.growth import Growth
from mindspeed_prof.analysis.judgement.lag import Lag
from mindspeed_prof.analysis.judgement.noise import DEFAULT_NOISE_MS
from mindspeed_prof.analysis.ledger import Ledger, ledger
from mindspeed_prof.analysis.phases import PhaseRow, phase_rows
from mindspeed_prof.analysis.ranges import (
    no_op_rows,
    range_rows,
    stage_order,
    stage_rows,
    with_bare,
)
from mindspeed_prof.analysis.readers import Range, TraceData
from mindspeed_prof.analysis.readers.labels import rank_label, rank_order, ranks_text
from mindspeed_prof.analysis.readers.model import Tally, merge_tallies
from mindspeed_prof.analysis.rows import (
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
)
from mindspeed_prof.analysis.runs import RunInfo
from mindspeed_prof.analysis.stragglers import find_stragglers
from mindspeed_prof.analysis.throughput import (
    StageThroughput,
    ThroughputRow,
    stage_summaries,
    throughput_rows,
)
from mindspeed_prof.formats import capture_stem

__all__ = ["DEFAULT_MARGIN", "Analysis", "Placement", "stem_key"]

#: A rank is a straggler when its stage time exceeds the other ranks' by this fraction (every
#: row's columns are documented with its type in ``analysis.rows``).
DEFAULT_MARGIN = 0.2


class Placement(TypedDict):
    """With ``--ray``: where one capture was read."""

    path: str
    node: str
    host: str
    bytes: int


def stem_key(path: Path) -> tuple[str, str]:
    """A capture's folder and stem: every file of one capture has the same."""
    return (str(path.parent), capture_stem(path))


@dataclass
class Analysis:
    """Everything ``mindspeed-prof analyse`` reports, computed once from the captures."""

    root: Path
    traces: list[TraceData] = field(default_factory=list)
    bad: list[str] = field(default_factory=list)
    margin: float = DEFAULT_MARGIN
    #: A difference between ranks under this many ms (or 1% of the step) is noise.
    noise_ms: float = DEFAULT_NOISE_MS
    #: Count warmup steps in stragglers and compare (they are left out by default).
    include_warmup: bool = False
    #: Captures that claimed the same rank and step (kept apart by ``Range.source``).
    clashes: list[str] = field(default_factory=list)
    #: With ``--ray``: where each capture was read (path, node, host, bytes).
    placement: list[Placement] = field(default_factory=list)
    #: The user's pattern of communication kernels (``--comm-kernels``; ``readers.classify``).
    comm_kernels: str = ""
    #: The run these captures are of, and every run under the root, newest first (``runs``).
    run: RunInfo | None = None
    runs: list[RunInfo] = field(default_factory=list)
    #: The user's model facts for MFU (``--flops-per-token``, ``--peak-tflops``): over the
    #: captures' headers (``counts.model_facts``).
    flops_per_token: float | None = None
    peak_tflops: float | None = None

    @property
    def ranges(self) -> list[Range]:
        """Step, stage and custom ranges, each counted once (span files win over op traces)."""
        by_stem: dict[tuple[str, str], list[TraceData]] = defaultdict(list)
        for t in self.traces:
            by_stem[stem_key(t.path)].append(t)
        out: list[Range] = []
        for group in by_stem.values():
            spans = [r for t in group if t.kind == "spans" for r in t.ranges]
            ops = [r for t in group if t.kind != "spans" for r in t.ranges]
            out.extend(with_bare(spans, ops) if spans else ops)  # op traces know bare times
        return out

    @property
    def ranks(self) -> list[int | None]:
        """Ranks seen, unknown (None) last."""
        return sorted({t.rank for t in self.traces}, key=rank_order)

    def warmup(self) -> set[tuple[int | None, int]]:
        """(rank, step) pairs captured as warmup (``warmup_steps``, the ``dpo`` preset)."""
        return {(rank, step) for rank, _, step in self._warmup()}

    def _warmup(self) -> set[tuple[int | None, str, int]]:
        """(rank, source, step) of warmup steps: a role's warmup is not another's at its rank."""
        out: set[tuple[int | None, str, int]] = set()
        for t in self.traces:
            window, n = t.meta.window, t.meta.warmup_steps
            if window and window[0] is not None and n is not None and n > 0:
                source = t.clash_label
                # the steps just before the window (MindSpeed-LLM's DPO warmup)
                out.update((t.rank, source, s) for s in range(window[0] - n, window[0]))
        return out

    def counted(self) -> list[Range]:
        """What stragglers and ``compare`` count: ``ranges`` less warmup steps, unless
        ``include_warmup``. (The tables show every step, warmup steps marked.)"""
        skip = set() if self.include_warmup else self._warmup()
        return [r for r in self.ranges if (r.rank, r.source, r.step) not in skip]

    def counters(self) -> list[CounterRow]:
        """Every counter, one row per rank, step, stage and name (``counts``)."""
        return counter_rows(self.traces, self.run.id if self.run is not None else "")

    def counted_counters(self) -> list[CounterRow]:
        """``counters`` less warmup steps, unless ``include_warmup`` (as ``counted``)."""
        skip = set() if self.include_warmup else self._warmup()
        return [c for c in self.counters() if (c.rank, c.source, c.step) not in skip]

    def model(self) -> Model:
        """FLOPs per token and peak for MFU: the user's, else the captures' headers."""
        return model_facts(self.traces, self.flops_per_token, self.peak_tflops)

    def throughput(self) -> list[ThroughputRow]:
        """Tokens and samples per second per stage, rank and step (``throughput``)."""
        return throughput_rows(self.counted(), self.counted_counters(), self.model())

    def throughput_stages(self) -> list[StageThroughput]:
        """Per stage: the spread over ranks, the trend over steps, MFU (``throughput``)."""
        model = self.model()
        return stage_summaries(
            throughput_rows(self.counted(), self.counted_counters(), model), model
        )

    def ledger(self) -> Ledger | None:
        """Generation time on samples not trained on, and the long tail (``ledger``)."""
        return ledger(self.counted(), self.counted_counters())

    def stage_rank(self) -> list[StageRow]:
        """Per stage and rank: executions, total, mean and max milliseconds."""
        return stage_rows(self.ranges)

    def per_step(self) -> list[StepRow]:
        """Per rank and step: each stage's milliseconds, and ``total`` the step's own length."""
        table: dict[tuple[int | None, str, int], StepRow] = {}
        for r in self.ranges:
            if r.step is None or r.kind == "range":
                continue
            row = table.get((r.rank, r.source, r.step))
            if row is None:
                row = table[(r.rank, r.source, r.step)] = StepRow(
                    rank=r.rank, source=r.source, step=r.step, stages={}
                )
            if r.kind == "step":
                row.total = (row.total or 0.0) + r.dur / 1000.0
            else:
                row.stages[r.name] = row.stages.get(r.name, 0.0) + r.dur / 1000.0
        warmup = self._warmup()
        for key, row in table.items():
            row.warmup = key in warmup
        return [
            row
            for _, row in sorted(
                table.items(), key=lambda kv: (rank_order(kv[0][0]), kv[0][1], kv[0][2])
            )
        ]

    def phases(self) -> list[PhaseRow]:
        """Per rank and step: the step split into generation, training, transitions, other
        stages and time no stage covers (``phases``), warmup steps marked."""
        return phase_rows(self.ranges, self._warmup())

    def stragglers(self, kind: StragglerKind = "stage") -> list[Straggler]:
        """Ranks whose stage (``kind="range"``: custom range) time in a step exceeds the median
        of the other ranks by ``margin`` and the noise floor (``stragglers``); warmup steps
        left out unless ``include_warmup``."""
        return find_stragglers(self.counted(), kind, self.margin, self.noise_ms)

    def counted_device(self) -> list[DeviceRow]:
        """``device`` less warmup steps, unless ``include_warmup`` (as ``counted``)."""
        return [r for r in self.device() if self.include_warmup or not r.warmup]

    def step_time(self) -> StepTime | None:
        """The step as the job lived it: each its slowest rank's (``judgement.gating``)."""
        return judge.step_time(self.counted(), self.counted_device())

    def lags(self) -> list[Lag]:
        """Every rank behind the others at a stage, a range or in device compute, judged
        against the noise of its row (``judgement.lag``)."""
        return judge.rank_lags(self.counted(), self.counted_device(), self.margin, self.noise_ms)

    def growths(self) -> list[Growth]:
        """Every stage's trend over the steps on each rank, judged (``judgement.growth``)."""
        return judge.stage_growths(self.counted(), self.counted_device(), self.noise_ms)

    def range_table(self) -> list[RangeRow]:
        """Custom ranges per name and rank (``ranges.range_rows``)."""
        return range_rows(self.ranges)

    def no_op(self) -> list[NoOpRow]:
        """Per stage and rank, the time no host operator ran, and the ranges that hold it
        (``ranges.no_op_rows``; captures that record operators only)."""
        return no_op_rows(self.ranges)

    def device(self, traces: list[TraceData] | None = None) -> list[DeviceRow]:
        """Device breakdown rows per rank and step (and stage), warmup steps marked; of
        ``traces`` (default: every capture)."""
        warmup = self._warmup()
        return [
            msgspec.structs.replace(
                row, rank=t.rank, warmup=(t.rank, row.source, row.step) in warmup
            )
            for t in (self.traces if traces is None else traces)
            for row in t.device
        ]

    def comm(self) -> list[CommRow]:
        """Communication per rank, step, kind and op type (torch_npu captures), as each reader
        folds it; ``source`` names the capture where two claim the same rank and step."""
        return [
            msgspec.structs.replace(row, rank=t.rank, source=t.clash_label)
            for t in self.traces
            for row in t.comm
        ]

    def _top(self, field_name: str, n: int) -> list[tuple[str, Tally]]:
        total: dict[str, Tally] = {}
        for t in self.traces:
            merge_tallies(total, getattr(t, field_name))
        return sorted(total.items(), key=lambda kv: -kv[1].total)[:n]

    def top_kernels(self, n: int = 15) -> list[KernelRow]:
        """Device kernels, copies and sets by device time."""
        return [
            KernelRow(name=k, count=t.count, device_ms=t.total / 1000.0)
            for k, t in self._top("kernels", n)
        ]

    def top_runtime(self, n: int = 15) -> list[RuntimeRow]:
        """Runtime and launch calls (``cudaLaunchKernel``...) by host time."""
        return [
            RuntimeRow(name=k, count=t.count, ms=t.total / 1000.0)
            for k, t in self._top("runtime", n)
        ]

    def top_ops(self, n: int = 15) -> list[OpRow]:
        """Host operators with the most self time, summed over every capture."""
        return [
            OpRow(op=k, count=t.count, self_ms=t.total / 1000.0) for k, t in self._top("ops", n)
        ]

    def memory(self) -> list[MemoryRow]:
        """Peak allocated/reserved bytes per capture (rank), then per stage where known."""
        out = []
        for t in self.traces:
            m = t.memory
            if m is None:
                continue
            file = _rel(t.path, self.root)
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
                        rank=t.rank,
                        file=file,
                        source=m.source,
                        stage=stage,
                        peak_allocated_bytes=peak,
                    )
                )
        return out

    def problems(self) -> list[str]:
        """One line per thing left out of a capture that was otherwise read (also in ``bad``)."""
        return [p for t in self.traces for p in t.problems]

    def notes(self) -> list[str]:
        """One line per fact about how a capture was read whole (not a problem: exit 0)."""
        return [n for t in self.traces for n in t.notes]

    def unread_device(self) -> dict[str, int]:
        """Device events recorded but not read as device time, per Kineto category."""
        out: dict[str, int] = defaultdict(int)
        for t in self.traces:
            for cat, count in (t.meta.unread_device or {}).items():
                out[cat] += count
        return dict(out)

    def shown(self, line: str) -> str:
        """A problem or note for people: the file it names relative to the analysed root."""
        prefix = f"{str(self.root).rstrip('/')}/"
        return line[len(prefix) :] if line.startswith(prefix) else line

    def messages(self) -> list[str]:
        """The stderr lines: each skipped file or part (``skipped ...``), then each note."""
        return [f"skipped {self.shown(b)}" for b in self.bad] + [
            f"note: {self.shown(n)}" for t in self.traces for n in t.notes
        ]

    @property
    def has_device(self) -> bool:
        return any(t.device or t.kernels for t in self.traces)

    def inventory(self) -> list[InventoryRow]:
        return [
            InventoryRow(
                file=_rel(t.path, self.root),
                kind=t.kind,
                rank=t.rank,
                source=t.clash_label,
                group=t.group,
                bytes=t.size,
                events=t.events,
                steps=sorted({r.step for r in t.ranges if r.step is not None}),
                level=t.meta.level,
            )
            for t in self.traces
        ]

    def warnings(self) -> list[str]:
        out = [
            f"{_rel(t.path, self.root)}: captured nothing (no ranges, no ops)"
            for t in self.traces
            if t.holds_nothing
        ]
        out += self.clashes
        out += self._unshared_steps()
        if not self.traces and not self.bad:
            out.append(
                f"{self.root}: no captures found (is profile: true, and does the window "
                "[profile_step_start, profile_step_end) contain steps that ran?)"
            )
        return out

    def _unshared_steps(self) -> list[str]:
        """One line when ranks captured no step in common: their times cannot be compared
        (an on-demand capture that ranks took at different steps, say)."""
        steps: dict[tuple[int | None, str], set[int]] = defaultdict(set)
        for r in self.ranges:
            if r.kind in ("step", "stage") and r.step is not None:
                steps[(r.rank, r.source)].add(r.step)
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


def _rel(path: Path, root: Path) -> str:
    try:
        rel = path.relative_to(root)
    except ValueError:
        return str(path)
    return str(rel) if rel.parts else path.name  # the root itself (a torch_npu folder): its name
