"""The next capture: the seed's best practice (a light capture to find the slow stage, then a
stage-scoped capture of that stage, then only the ranks that matter) as commands to run.

From a light capture (whole steps at ``level_none`` or ``level0``, or ranges only): the
stage-scoped capture that explains the slowest stage (the straggler's stage where there is
one), on the straggler rank, at ``level1`` (device time per kernel and collective), as a
relaunch override and as a ``mindspeed-prof capture`` request to a live job. From a capture
that already holds the device's detail: the kernel or operator to look at and the ``timeline``
command that shows it on the straggler rank, in the step it was slow.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from mindspeed_prof.analysis.readers.classify import classifier
from mindspeed_prof.analysis.rows import DeviceVerdict, Row, Share, Straggler
from mindspeed_prof.config.schema import STAGES

if TYPE_CHECKING:
    from mindspeed_prof.analysis.analyse import Analysis

__all__ = ["DETAILED", "GROUP", "NextStep", "next_steps"]

#: The preset group a relaunch override selects (``profiler`` is only an alias, and not where
#: another config source, such as verl's tree, has a ``profiler`` group).
GROUP = "profiler_config"
#: Levels whose captures hold device time per kernel: a stage capture at these is detailed.
DETAILED = ("level1", "level2")


class NextStep(Row, kw_only=True):
    """One thing to run next: ``kind`` (``relaunch``: an override of the job's command line;
    ``live``: a request to the running job; ``timeline``: a view of what was captured),
    ``why`` in a sentence, and the ``command``."""

    kind: str
    why: str
    command: str


def _levels(result: Analysis) -> set[str]:
    return {str(t.meta.get("level")) for t in result.traces if t.meta.get("level")}


def _detailed(result: Analysis) -> bool:
    """Whether the captures already hold device time per kernel (a level1+ or torch_npu or
    CUDA capture with kernels)."""
    return bool(_levels(result) & set(DETAILED)) or any(t.kernels for t in result.traces)


def _target(g: Straggler | None, slowest: Share | None
            ) -> tuple[str | None, int | None, int | None]:
    """(stage, rank, step) the next capture should look at."""
    if g is not None and g.kind == "stage":
        return g.name, g.rank, g.step
    stage = slowest.name if slowest and slowest.kind == "stage" else None
    if g is not None:
        return stage, g.rank, g.step
    return stage, None, None  # no rank behind the others: every rank


def next_steps(result: Analysis, straggler: Straggler | None, slowest: Share | None,
               device: DeviceVerdict | None) -> list[NextStep]:
    """What to run next, most useful first (empty where the captures say nothing to act on):
    from the verdict's straggler, slowest stage and device bound."""
    stage, rank, step = _target(straggler, slowest)
    root = shlex.quote(str(result.root))
    if not _detailed(result):
        if stage is None or stage not in STAGES:
            return []
        who = f"rank {rank}" if rank is not None else "every rank"
        ranks = f" profiler_config.integrated.profile_ranks=[{rank}]" if rank is not None else ""
        live_ranks = f" --ranks {rank}" if rank is not None else ""
        why = (f"{stage} is where the time goes; a stage-scoped (level1) capture of it on "
               f"{who} shows its device time per kernel and collective")
        return [
            NextStep(kind="relaunch", why=why, command=(
                f"{GROUP}=stage_scoped profiler_config.integrated.stage={stage}{ranks}")),
            NextStep(kind="live", why="the same, asked of the running job", command=(
                f"mindspeed-prof capture {root} --stage {stage}{live_ranks} --level level1 "
                "--steps 1")),
        ]
    focus = _focus(result, device.bound if device else "compute")
    detail = str(rank) if rank is not None else "all"
    steps = f" --steps {step}:{step + 1}" if step is not None else ""
    where = " ".join(filter(None, (
        f"in {stage}" if stage else "", f"on rank {rank}" if rank is not None else "",
        f"at step {step}" if step is not None else "")))
    return [NextStep(kind="timeline", why=(
        f"look at {focus or 'the slowest operators'}{' ' + where if where else ''}: the "
        "merged timeline holds the operators and kernels (open it in Perfetto)"),
        command=f"mindspeed-prof timeline {root} -o timeline.json --detail {detail}{steps}")]


def _focus(result: Analysis, bound: str) -> str | None:
    """What the device verdict points at: the longest communication kernel when exposed
    communication bounds the step, the longest compute kernel when compute does, the longest
    host operator when the device sits idle (the host is late)."""
    if bound == "idle":
        ops = result.top_ops(1)
        if ops:
            return f"host operator {ops[0].op!r} ({ops[0].self_ms:,.1f} ms self)"
    comm = sorted((c for c in result.comm() if c.kind != "link" and c.elapse_ms),
                  key=lambda c: -(c.elapse_ms or 0.0))
    if bound == "communication" and comm:  # torch_npu: collectives are not kernels
        return (f"communication op {comm[0].name!r} ({comm[0].elapse_ms:,.1f} ms, "
                f"rank {comm[0].rank})")
    want = "comm" if bound == "communication" else "memcpy" if bound == "copy" else "compute"
    table = classifier(result.comm_kernels)
    for k in result.top_kernels(50):
        if table.kind_of(k.name) == want:
            return f"kernel {_short(k.name)!r} ({k.device_ms:,.1f} ms)"
    kernels = result.top_kernels(1)
    return f"kernel {_short(kernels[0].name)!r} ({kernels[0].device_ms:,.1f} ms)" if (
        kernels) else None


def _short(name: str, most: int = 60) -> str:
    """A kernel's name without its argument list, cut to ``most`` characters."""
    name = name.split("(", 1)[0] if "(" in name[1:] else name
    return name if len(name) <= most else name[:most - 3] + "..."
