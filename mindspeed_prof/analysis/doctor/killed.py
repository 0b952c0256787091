"""``doctor``'s checks of a run that was stopped or spread from outside: a job killed (a
preemption without a handler, SIGKILL) whose manifest still says ``running``, with the steps of
its window that have no op-level trace; a complete trace left under its temporary name (the
process stopped between the export and its rename); captures the cluster summary names outside
the root (another node's disk), and workers Ray restarted."""

from __future__ import annotations

import os
import shlex
import socket
from collections.abc import Sequence
from pathlib import Path

from mindspeed_prof.analysis import analyse as _analyse
from mindspeed_prof.analysis.cluster import elsewhere, restarts
from mindspeed_prof.analysis.doctor.health import Health, Problem
from mindspeed_prof.analysis.readers.labels import ranks_text
from mindspeed_prof.analysis.runs import LEGACY
from mindspeed_prof.formats import is_capture_file
from mindspeed_prof.formats.cluster import Worker
from mindspeed_prof.formats.manifest import Manifest

__all__ = ["check_elsewhere", "check_killed", "unfinished_rename"]

_TMP = ".tmp"


def unfinished_rename(path: Path, root: Path, whole: bool) -> Problem | None:
    """The finding for ``path``, a ``<capture>.tmp`` that holds a whole trace (``whole``)
    where the capture's own name is free: the rename the export did not finish, and the
    command that finishes it. None for any other temporary file."""
    final = path.with_name(path.name[: -len(_TMP)])
    if not (path.name.endswith(_TMP) and whole and is_capture_file(final.name)):
        return None
    if final.exists():
        return None
    rel = str(path.relative_to(root))
    command = f"mv -n -- {shlex.quote(str(path))} {shlex.quote(str(final))}"
    return Problem(
        "unfinished_rename",
        rel,
        f"{rel}: a complete trace under its temporary name (an unfinished rename: the process "
        f"was stopped after its export); to read it: {command}",
    )


def gone(manifest: Manifest) -> bool:
    """Whether the process a manifest names ran on this host and is no longer there."""
    if manifest.host != socket.gethostname() or not isinstance(manifest.pid, int):
        return False
    if manifest.pid <= 0:
        return False
    try:
        os.kill(manifest.pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # EPERM: another user's process of that pid is alive
        return False
    return False


def check_killed(
    health: Health, by_run: dict[str, list[Manifest]], results: list[_analyse.Captures]
) -> None:
    """Each manifest still ``running`` whose process is gone (on this host) is a killed job:
    a finding naming its rank, pid and host, and the steps of its window with no op-level
    trace (those its range files saw run, and those it never reached)."""
    traced: dict[tuple[str, int | None], set[int]] = {}
    ran: dict[tuple[str, int | None], set[int]] = {}
    for r in results:
        run = r.run.id if r.run is not None else LEGACY
        for t in r.traces:
            steps = {x.step for x in t.ranges if x.step is not None and x.kind == "step"}
            into = ran if t.kind == "spans" else traced
            into.setdefault((run, t.rank), set()).update(steps)
    for run, manifests in by_run.items():
        for m in manifests:
            if m.status != "running" or not gone(m):
                continue
            health.findings.append(_killed(m, run, ran, traced, len(by_run) > 1))


def _killed(
    m: Manifest,
    run: str,
    ran: dict[tuple[str, int | None], set[int]],
    traced: dict[tuple[str, int | None], set[int]],
    several: bool,
) -> Problem:
    who = f"rank {m.rank}" if m.rank is not None else "the job"
    where = f" of run {run}" if several and not run.startswith(LEGACY) else ""
    line = (
        f"{who}{where}: killed (its manifest says running, and process {m.pid} on {m.host} "
        "is gone: a preemption or SIGKILL before the job ended)"
    )
    window = m.window
    start, end = window.profile_step_start, window.profile_step_end
    if window.profile and start is not None and end is not None and end > start:
        seen = ran.get((run, m.rank), set())
        missing = sorted(set(range(start, end)) - traced.get((run, m.rank), set()))
        if missing:
            line += f"; steps with no trace in the window [{start}, {end}): {ranks_text(missing)}"
            line += _ran(missing, seen)
        else:
            line += f"; every step of the window [{start}, {end}) has its trace"
    return Problem("killed", who, line)


def _ran(missing: list[int], seen: set[int]) -> str:
    """`` (2-3 ran: their ranges are in the range file)``: which of ``missing`` the range
    files saw run (a later one may have run after the range file's last write)."""
    did = [s for s in missing if s in seen]
    return f" ({ranks_text(did)} ran: their ranges are in the range file)" if did else ""


def check_elsewhere(health: Health, workers: Sequence[Worker], read: set[Path]) -> None:
    """Each rank whose captures the cluster summary names outside the root is a finding saying
    where they are (folder, node, host), in place of "no capture file found" for that rank;
    each worker Ray restarted is a finding naming the restart and its earlier files."""
    away = elsewhere(health.root, workers, {p.name for p in read})
    ranks = {f"rank {a.rank}" for a in away if a.rank is not None}
    health.findings[:] = [
        f for f in health.findings if not (f.kind == "missing_rank" and f.where in ranks)
    ]
    for a in away:
        who = f"rank {a.rank}" if a.rank is not None else a.folder
        health.findings.append(Problem("elsewhere", who, a.line(health.root)))
    for line in restarts(workers):
        health.findings.append(Problem("worker_restarted", line.split(" (", 1)[0], line))
