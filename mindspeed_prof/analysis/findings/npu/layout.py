"""Operators' memory layout: tensors off the 512-byte alignment, and shapes that change
(dynamic shapes compiled at run time)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mindspeed_prof.analysis.findings.common import one_line, ranks_of
from mindspeed_prof.analysis.findings.finding import Finding
from mindspeed_prof.analysis.findings.npu.captures import (
    MS,
    facts_of,
    files_of,
    npu_captures,
    on_ranks,
    per_rank,
    steps_of,
)
from mindspeed_prof.analysis.readers.labels import rank_label
from mindspeed_prof.analysis.readers.model import TraceData
from mindspeed_prof.analysis.readers.ratio import ratio

if TYPE_CHECKING:
    from mindspeed_prof.analysis.report.captures import Captures
    from mindspeed_prof.analysis.report.settings import Settings
    from mindspeed_prof.analysis.report.tables import Tables

__all__ = [
    "ALIGN_BYTES",
    "ALIGN_MIN_BYTES",
    "Aligned",
    "Alignment",
    "alignment",
    "byte_alignment",
    "dynamic_shape",
    "dynamic_shapes",
]

# -- byte alignment

#: A copy task's size should be a multiple of this many bytes; tasks this small or smaller are
#: not judged (byte_alignment.yaml: min_size 512).
ALIGN_BYTES = 512
ALIGN_MIN_BYTES = 512
#: Unaligned copy time over all judged copy time: under LOW is low priority, from HIGH high.
ALIGN_LOW, ALIGN_HIGH = 0.2, 0.7


@dataclass
class Aligned:
    """One communication operator's judged copies: bytes, time (us), copies; the unaligned
    ones' time, count and sizes."""

    op: str
    bytes: int = 0
    us: float = 0.0
    copies: int = 0
    unaligned_us: float = 0.0
    unaligned: int = 0
    sizes: list[int] = field(default_factory=list)

    @property
    def gbps(self) -> float:
        """Bytes over time in decimal GB/s, as the advisor gives it."""
        return ratio(self.bytes / 1e9, self.us / 1e6, 0.0)


@dataclass
class Alignment:
    """One capture's operators with an unaligned copy, and the time of every judged copy."""

    ops: list[Aligned]
    judged_us: float

    @property
    def unaligned_us(self) -> float:
        return sum(a.unaligned_us for a in self.ops)


def alignment(t: TraceData) -> Alignment | None:
    """None where the capture has no task detail (level0)."""
    tasks = facts_of(t).tasks
    if tasks is None:
        return None
    out, total = [], 0.0
    for op in tasks:
        a = Aligned(op.op)
        for size, (count, us) in sorted(op.sizes.items()):
            if size <= ALIGN_MIN_BYTES:
                continue
            a.bytes += int(size * count)
            a.us += us
            a.copies += int(count)
            if size % ALIGN_BYTES:
                a.unaligned_us += us
                a.unaligned += int(count)
                a.sizes.append(size)
        total += a.us
        if a.unaligned:
            out.append(a)
    return Alignment(out, total)


def byte_alignment(captures: Captures, tables: Tables, settings: Settings) -> list[Finding]:
    found = [(t, al) for t in npu_captures(captures) if (al := alignment(t)) is not None and al.ops]
    if not found:
        return []
    traces = [t for t, _ in found]
    lines = []
    for t, al in found:
        for op in al.ops:
            sizes = ", ".join(f"{s:,}" for s in op.sizes[:3])
            lines.append(
                f"rank {rank_label(t.rank)} {op.op}: {op.bytes:,} B in {op.copies} "
                f"copies, {op.us:,.1f} us ({op.gbps:.2f} GB/s); {op.unaligned} "
                f"unaligned ({sizes} B) took {op.unaligned_us:,.1f} us"
            )
    bad = sum(al.unaligned_us for _, al in found)
    judged = sum(al.judged_us for _, al in found)
    per_step = max(al.unaligned_us / steps_of(t) / MS for t, al in found)
    ops_n = max(len(al.ops) for _, al in found)
    share = ratio(bad, judged, 0.0)
    return [
        one_line(
            Finding(
                rule="npu.byte_alignment",
                title=f"{ops_n} communication op{'s' * (ops_n != 1)} copy sizes that are not a "
                f"multiple of {ALIGN_BYTES} B on {on_ranks(traces)}: {bad:,.1f} us of "
                f"{judged:,.1f} us of copies ({share:.0%})",
                detail="\n".join(lines),
                suggestion=f"Make each communicated tensor (gradient bucket, all-gather shard) a "
                f"multiple of {ALIGN_BYTES} bytes, e.g. by padding it; unaligned copies run "
                "slower on SDMA",
                severity="low"
                if share < ALIGN_LOW
                else "high"
                if share >= ALIGN_HIGH
                else "medium",
                impact_ms=per_step,
                source=files_of(captures, traces, "tasks"),
                ranks=ranks_of(traces),
            )
        )
    ]


# -- dynamic shape

COMPILE_FIX = (
    "torch_npu.npu.set_compile_mode(jit_compile=False) and "
    "torch_npu.npu.config.allow_internal_format = False at the start of the script"
)


@per_rank
def dynamic_shape(t: TraceData) -> tuple[int, int] | None:
    """(operator runs with an OP State, of them static), where the capture records states."""
    ops = facts_of(t).ops
    stated = sum(o.stated for o in ops)
    return (stated, sum(o.static for o in ops)) if stated else None


def dynamic_shapes(captures: Captures, tables: Tables, settings: Settings) -> list[Finding]:
    found = [(t, s) for t in npu_captures(captures) if (s := dynamic_shape(t)) and s[1] == 0]
    if not found:
        return []
    traces = [t for t, _ in found]
    runs = ", ".join(f"{n:,} on rank {rank_label(t.rank)}" for t, (n, _) in found)
    return [
        one_line(
            Finding(
                rule="npu.dynamic_shape",
                title=(
                    f"Every operator ran with a dynamic shape, none static ({runs}): operators are "
                    "compiled at run time"
                ),
                detail="OP State of each operator run: 'dynamic' on all of them; msprof-analyze: "
                '"Found all operators are dynamic shape"',
                suggestion=f"Disable JIT compilation: {COMPILE_FIX}",
                severity="medium",
                source=files_of(captures, traces, "ops"),
                ranks=ranks_of(traces),
            )
        )
    ]
