"""``cuda.idle_time``: the GPU idles a share of the step; its busiest stream's idle time split
as HTA's ``get_idle_time_breakdown`` splits it (host wait, kernel wait, other)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mindspeed_prof.analysis.findings.cuda.ranks import (
    Rank,
    finding,
    fired,
    ranks_said,
)
from mindspeed_prof.analysis.findings.finding import Finding
from mindspeed_prof.analysis.readers.device.streams import KERNEL_WAIT_US
from mindspeed_prof.analysis.readers.ratio import ratio

if TYPE_CHECKING:
    from mindspeed_prof.analysis.report.captures import Captures
    from mindspeed_prof.analysis.report.settings import Settings
    from mindspeed_prof.analysis.report.tables import Tables

__all__ = ["EXPLAINS", "idle_time"]

_IDLE_KINDS = ("host wait", "kernel wait", "other")
_IDLE_ADVICE = {
    "host wait": "the GPU waits for the host to launch work: find what the CPU does between "
    "launches (input pipeline: more DataLoader workers, pin_memory, non_blocking "
    "copies; Python overhead: CUDA graphs or torch.compile; .item() or other "
    "syncs in the loop)",
    "kernel wait": "back-to-back small kernels: fuse them (torch.compile, fused optimizers "
    "and kernels) or capture them in a CUDA graph",
    "other": "the stream waits on other work (events, NCCL, copies on other streams): "
    "overlap communication and copies with compute, or reorder the work on the "
    "busiest stream",
}
#: The busiest stream's gaps explain the device's idle time when they add up to at least this
#: share of it; else the split is of every stream's gaps together.
EXPLAINS = 0.5


@dataclass
class _Split:
    """Idle time of one rank: the device's, and gaps split into host wait, kernel wait and
    other (ms per step) on its busiest stream or, where those do not explain the device's
    idle time, on all its streams."""

    idle_ms: float
    stream: str  # the busiest stream's name
    ops: int  # its ops per step
    busiest: list[float]
    every: list[float]

    @property
    def explained(self) -> bool:
        return sum(self.busiest) >= EXPLAINS * self.idle_ms

    @property
    def parts(self) -> list[float]:
        return self.busiest if self.explained else self.every

    @property
    def where(self) -> str:
        return f"stream {self.stream}'s gaps" if self.explained else "every stream's gaps"


def _split(who: Rank, idle_ms: float) -> _Split | None:
    per: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0] * 5)
    for r in who.idle:
        v = per[(r.device, r.stream)]
        v[0] += r.busy_ms
        v[1] += r.host_wait_ms
        v[2] += r.kernel_wait_ms
        v[3] += r.other_ms
        v[4] += r.ops
    if not per:
        return None
    (device, stream), v = max(per.items(), key=lambda kv: (kv[1][0], kv[0]))
    name = stream if len({d for d, _ in per}) == 1 else f"{stream} of device {device}"
    every = [sum(x[k] for x in per.values()) / who.n for k in (1, 2, 3)]
    return _Split(idle_ms, name, round(v[4] / who.n), [x / who.n for x in v[1:4]], every)


def _measure(who: Rank) -> tuple[float, _Split] | None:
    """The device's idle time per step, and its split (None without stream gaps)."""
    idle = sum(r.idle_ms for r in who.steps) / who.n
    split = _split(who, idle)
    return None if split is None else (idle, split)


def idle_time(captures: Captures, tables: Tables, settings: Settings) -> list[Finding]:
    """The GPU idle a share of the step, and why: its busiest stream's gaps split as HTA's
    idle time breakdown splits them."""
    hits = fired(captures, tables, settings, _measure)
    if not hits:
        return []
    idle, who, top = hits[0]
    share = ratio(idle, who.span_ms, 0.0)
    parts = top.parts
    kind = _IDLE_KINDS[max(range(3), key=lambda k: (parts[k], -k))]
    gaps = sum(parts)
    said = [(h[0], h[1]) for h in hits]
    lines = []
    for ms, w, sp in hits:
        b, e = sp.busiest, sp.every
        lines.append(
            f"rank {w.label}: idle {ms:,.1f} of {w.span_ms:,.1f} ms {w.per}; "
            f"stream {sp.stream} (busiest, {sp.ops:,} ops): host wait {b[0]:,.1f}, "
            f"kernel wait {b[1]:,.1f}, other {b[2]:,.1f} ms; every stream: "
            f"{e[0]:,.1f}, {e[1]:,.1f}, {e[2]:,.1f} ms"
        )
    return [
        finding(
            captures,
            tables,
            settings,
            said,
            lines,
            how=f"HTA's idle time breakdown, per stream: host wait, an op launched after the "
            f"op before it ended; kernel wait, a gap under {KERNEL_WAIT_US:.0f} us; "
            "other, the rest",
            rule="cuda.idle_time",
            title=f"GPU idle {share:.0%} of {who.whole} ({idle:,.1f} ms{who.each}) on "
            f"{ranks_said(said)}: mostly {kind} "
            f"({ratio(parts[_IDLE_KINDS.index(kind)], gaps, 0.0):.0%} of {top.where})",
            suggestion=_IDLE_ADVICE[kind][0].upper() + _IDLE_ADVICE[kind][1:] + ".",
            share=share,
            what="Kineto device ops and their launch calls",
        )
    ]
