"""The next capture: the seed's best practice (a light capture to find the slow stage, then a
stage-scoped capture of that stage, then only the ranks that matter) as commands to run, for
the verdict's first cause (``judgement.causes``: the finding that costs the most per step), or,
where no cause clears the noise, for the stage where the time goes.

From a light capture (whole steps at ``level_none`` or ``level0``, or ranges only): the
stage-scoped capture of the cause's stage (the slowest stage's without a cause), on the
cause's rank, at ``level1`` (device time per kernel and collective), as the job's own command
line with the new overrides (from the manifest the Hydra job wrote: its command, launch dir
and overrides), and, while the job runs, as a ``mindspeed-prof capture`` request to it. From a
capture that already holds the device's detail: the kernel or operator to look at and the
``timeline`` command that shows it on the cause's rank, in the step it was slowest.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NamedTuple

from mindspeed_prof.analysis.judgement.causes import Cause
from mindspeed_prof.analysis.judgement.lag import Lag
from mindspeed_prof.analysis.judgement.where import Share
from mindspeed_prof.analysis.readers.classify import classifier
from mindspeed_prof.analysis.report.compute import top_kernels
from mindspeed_prof.analysis.rows import DeviceVerdict, Row
from mindspeed_prof.config.schema import STAGE_ORDER
from mindspeed_prof.formats.manifest import Job, Manifest, newest_job
from mindspeed_prof.formats.shell import command, quote

if TYPE_CHECKING:
    from mindspeed_prof.analysis.report.captures import Captures
    from mindspeed_prof.analysis.report.settings import Settings
    from mindspeed_prof.analysis.report.tables import Tables

__all__ = [
    "BETWEEN_STAGES",
    "DETAILED",
    "GROUP",
    "NextStep",
    "Target",
    "alive",
    "merged_overrides",
    "next_steps",
    "relaunch_line",
    "target",
]

#: The preset group a relaunch override selects (``profiler`` is only an alias, and not where
#: another config source, such as verl's tree, has a ``profiler`` group).
GROUP = "profiler_config"
#: Levels whose captures hold device time per kernel: a stage capture at these is detailed.
DETAILED = ("level1", "level2")
#: Causes no stage holds (the step's time between its stages): the next capture is of whole
#: steps, not of a stage.
BETWEEN_STAGES = ("rl.uncovered",)


class NextStep(Row, kw_only=True):
    """One thing to run next: ``kind`` (``relaunch``: the job's command line with new
    overrides; ``live``: a request to the running job; ``timeline``: a view of what was
    captured), ``why`` in a sentence, and the ``command``: a whole shell line where
    ``runnable``, else (no manifest recorded the job's command) the ``overrides`` to add to
    it. ``overrides``: the new ones a relaunch sets."""

    kind: Literal["relaunch", "live", "timeline"]
    why: str
    command: str
    runnable: bool = True
    overrides: list[str] = []


def _levels(captures: Captures, tables: Tables, settings: Settings) -> set[str]:
    return {t.meta.level for t in captures.traces if t.meta.level}


def _detailed(captures: Captures, tables: Tables, settings: Settings) -> bool:
    """Whether the captures already hold device time per kernel (a level1+ or torch_npu or
    CUDA capture with kernels)."""
    return bool(_levels(captures, tables, settings) & set(DETAILED)) or any(
        t.kernels for t in captures.traces
    )


class Target(NamedTuple):
    """What the next capture looks at: the ``stage`` (None: every stage), ``rank`` (None:
    every rank), the ``step`` it was slowest in, and ``why`` in words."""

    stage: str | None
    rank: int | None
    step: int | None
    why: str


def target(cause: Cause | None, behind: Lag | None, slowest: Share | None) -> Target:
    """What to look at next: the first cause's stage, rank and step (the named straggler's
    where it is the first cause, or no cause was given; one at a range or in device compute
    takes the slowest stage; one between the stages, none: whole steps); without either, the
    slowest stage on every rank."""
    stage = slowest.name if slowest and slowest.kind == "stage" else None
    if cause is not None and cause.rule in BETWEEN_STAGES:  # in no stage: whole steps
        return Target(None, cause.rank, cause.step, cause.title)
    if cause is not None and cause.rule != "ranks.straggler":
        return Target(cause.stage or stage, cause.rank, cause.step, cause.title)
    if behind is not None:
        where = behind.name if behind.kind == "stage" else stage
        return Target(where, behind.rank, behind.worst.step, "")
    return Target(stage, None, None, "")


def next_steps(
    captures: Captures,
    tables: Tables,
    settings: Settings,
    cause: Cause | None,
    behind: Lag | None,
    slowest: Share | None,
    device: DeviceVerdict | None,
) -> list[NextStep]:
    """What to run next, most useful first (empty where the captures say nothing to act on):
    for the verdict's first cause, else the slowest stage, and the device bound."""
    stage, rank, step, _ = target(cause, behind, slowest)
    root = quote(str(captures.root))
    if not _detailed(captures, tables, settings):
        between = cause is not None and cause.rule in BETWEEN_STAGES
        if not between and (stage is None or stage not in STAGE_ORDER):
            return []
        who = f"rank {rank}" if rank is not None else "every rank"
        live_ranks = f" --ranks {rank}" if rank is not None else ""
        ranks = [f"profiler_config.integrated.profile_ranks=[{rank}]"] if rank is not None else []
        if cause is not None and between:  # no stage holds it: the whole step at level1
            why = (
                f"{_cause_text(cause, stage or '')}; a whole-step (level1) capture on {who} "
                "shows what the host and the device run between the stages"
            )
            new = [f"{GROUP}=full", *ranks]
            live = f"mindspeed-prof capture {root}{live_ranks} --level level1 --steps 1"
        else:
            lead = (
                f"{_cause_text(cause, stage or '')}"
                if cause is not None
                else f"{stage} is where the time goes"
            )
            why = (
                f"{lead}; a stage-scoped (level1) capture of {stage} on {who} shows its "
                "device time per kernel and collective"
            )
            new = [f"{GROUP}=stage_scoped", f"profiler_config.integrated.stage={stage}", *ranks]
            live = (
                f"mindspeed-prof capture {root} --stage {stage}{live_ranks} --level level1 "
                "--steps 1"
            )
        manifest = newest_job(Path(captures.root))
        line = relaunch_line(manifest.job, new, Path.cwd()) if manifest else None
        out = [
            NextStep(
                kind="relaunch",
                overrides=new,
                runnable=line is not None,
                why=why if line else f"{why}; add these overrides to the job's command line",
                command=line or command(new),
            )
        ]
        if manifest is None or alive(manifest):  # no manifest: nothing says it ended
            out.append(
                NextStep(kind="live", why="the same, asked of the running job", command=live)
            )
        return out
    focus = _focus(captures, tables, settings, device.bound if device else "compute")
    detail = str(rank) if rank is not None else "all"
    steps = f" --steps {step}:{step + 1}" if step is not None else ""
    where = " ".join(
        filter(
            None,
            (
                f"in {stage}" if stage else "",
                f"on rank {rank}" if rank is not None else "",
                f"at step {step}" if step is not None else "",
            ),
        )
    )
    return [
        NextStep(
            kind="timeline",
            why=(
                f"look at {focus or 'the slowest operators'}{' ' + where if where else ''}: the "
                "merged timeline holds the operators and kernels (open it in Perfetto)"
            ),
            command=f"mindspeed-prof timeline {root} -o timeline.json --detail {detail}{steps}",
        )
    ]


def _cause_text(cause: Cause, stage: str) -> str:
    """The first cause in a few words: what it costs, and where."""
    words = {
        "ranks.straggler": "a rank behind the others",
        "rl.growing_stage": f"{stage} grows with the step",
        "rl.dropped": "generation on samples dropped",
        "rl.zero_variance": "generation on groups with zero reward variance",
        "rl.truncated": "generation on truncated responses",
        "rl.long_tail": "generation waiting for its longest responses",
        "rl.generation_tail": "generation waiting for its slowest rank",
        "rl.uncovered": "time no stage covers",
        "rl.transitions": f"the transitions, most {stage}",
    }
    what = words.get(cause.rule, cause.rule)
    at = f" at {stage}" if cause.rule == "ranks.straggler" else ""
    return f"the first cause, {what}{at}, costs {cause.cost_ms:,.1f} ms per step"


def _focus(captures: Captures, tables: Tables, settings: Settings, bound: str) -> str | None:
    """What the device verdict points at: the longest communication kernel when exposed
    communication bounds the step, the longest compute kernel when compute does, the longest
    host operator when the device sits idle (the host is late)."""
    if bound == "idle":
        ops = tables.top_ops[:1]
        if ops:
            return f"host operator {ops[0].op!r} ({ops[0].self_ms:,.1f} ms self)"
    comm = sorted(
        (c for c in tables.comm if c.kind != "link" and c.elapse_ms),
        key=lambda c: -(c.elapse_ms or 0.0),
    )
    if bound == "communication" and comm:  # torch_npu: collectives are not kernels
        return (
            f"communication op {comm[0].name!r} ({comm[0].elapse_ms:,.1f} ms, rank {comm[0].rank})"
        )
    want = "comm" if bound == "communication" else "memcpy" if bound == "copy" else "compute"
    table = classifier(captures.comm_kernels)
    for k in top_kernels(captures.traces, 50):
        if table.kind_of(k.name) == want:
            return f"kernel {_short(k.name)!r} ({k.device_ms:,.1f} ms)"
    kernels = tables.top_kernels[:1]
    return (
        f"kernel {_short(kernels[0].name)!r} ({kernels[0].device_ms:,.1f} ms)"
        if (kernels)
        else None
    )


def _short(name: str, most: int = 60) -> str:
    """A kernel's name without its argument list, cut to ``most`` characters."""
    name = name.split("(", 1)[0] if "(" in name[1:] else name
    return name if len(name) <= most else name[: most - 3] + "..."


# -- the relaunch line -------------------------------------------------------------------------


def alive(manifest: Manifest) -> bool:
    """Whether the job may still run: its manifest says ``running`` and, on this host, its
    process is there."""
    if manifest.status != "running":
        return False
    import socket  # only for a job still running

    pid = manifest.pid
    if manifest.host != socket.gethostname() or pid is None or pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # someone else's process: it is there
        pass
    return True


def _key(override: str) -> tuple[str, str]:
    """``(prefix, key)`` of a Hydra override: ``+``/``++``/``~`` and the key (``profiler``,
    the presets' alias, reads as their group)."""
    body = override.lstrip("+~")
    prefix = override[: len(override) - len(body)]
    key = body.partition("=")[0].partition("@")[0]
    return prefix, GROUP if key == "profiler" else key


def merged_overrides(old: list[str], new: list[str]) -> list[str]:
    """The job's ``old`` overrides with ``new`` ones: a new value replaces the old override of
    the same key where it stood (keeping its ``+``, and ``profiler=`` for the preset where the
    job chose it so); a new preset drops the old fields it sets itself, so that it is the
    preset it says; the rest follow."""
    from mindspeed_prof.config.presets import PRESETS, preset_sections

    wanted = {_key(o)[1]: o for o in new}
    preset = wanted.get(GROUP, "").partition("=")[2]
    sets = {
        f"{GROUP}.{section}.{name}"
        for section, values in preset_sections(
            PRESETS[preset].fields if preset in PRESETS else {}
        ).items()
        for name in values
    }
    out, placed = [], set()
    for line in old:
        prefix, key = _key(line)
        if key in wanted and key not in placed:
            spelled = line.lstrip("+~").partition("=")[0]
            out.append(f"{prefix}{spelled}={wanted[key].partition('=')[2]}")
            placed.add(key)
        elif key not in wanted and key not in sets:
            out.append(line)
    return out + [line for key, line in wanted.items() if key not in placed]


def relaunch_line(job: Job, new: list[str], here: Path) -> str | None:
    """The job's command with its overrides and ``new`` merged in, quoted for a POSIX shell
    (``cd`` to its launch dir first where that is not ``here``), or None when the manifest
    holds no command (a job that predates it, or one not launched by Hydra)."""
    if not job.command:
        return None
    line = command([*job.command, *merged_overrides(job.overrides, new)])
    if job.cwd and Path(job.cwd) != here:
        line = f"cd {quote(job.cwd)} && {line}"
    return line
