"""Unplanned captures a job took on its own: what triggered each, at which step, what it holds.

Read from each capture's own metadata, so a run without manifests (a plain ``Profiler``, no
Hydra callback) still names them: a flight dump records the reason and the step that asked for
it (``trigger_step``, an anomaly's step, not the first step the ring holds); a triggered or
on-demand capture records its ``trigger``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mindspeed_prof.analysis.readers.labels import rank_order
from mindspeed_prof.analysis.rows import Row

if TYPE_CHECKING:
    from mindspeed_prof.analysis.report.captures import Captures

__all__ = ["Triggered", "triggered"]


class Triggered(Row, kw_only=True):
    """An unplanned capture: ``trigger`` (``flight``, ``anomaly``, ``on_demand``), ``reason``
    (a flight dump's: ``anomaly``, ``error``, ``signal``...; else None), ``step`` the step that
    triggered it (None: unknown), ``steps`` the steps it holds, ``file`` relative to the root."""

    rank: int | None
    trigger: str
    reason: str | None = None
    step: int | None = None
    steps: list[int] = []
    file: str


def triggered(captures: Captures) -> list[Triggered]:
    """Every flight dump and triggered capture of ``result``, by rank then step."""
    out = []
    for t in captures.traces:
        meta = t.meta
        trigger = meta.trigger
        if meta.stage == "flight" or t.group == "flight":
            trigger = "flight"
        if not trigger:
            continue
        held = meta.steps
        steps = (
            sorted(s for s in held if s is not None)
            if held is not None
            else sorted({r.step for r in t.ranges if r.step is not None})
        )
        step = meta.trigger_step
        if step is None:
            step = meta.step if trigger != "flight" else None
        reason = meta.reason
        if step is None and steps:  # a capture starts at its step; a dump ends at its fault
            step = steps[-1] if trigger == "flight" else steps[0]
        out.append(
            Triggered(
                rank=t.rank,
                trigger=trigger,
                reason=reason,
                step=step,
                steps=steps,
                file=captures.shown(str(t.path)),
            )
        )
    return sorted(out, key=lambda r: (rank_order(r.rank), r.step or 0, r.file))
