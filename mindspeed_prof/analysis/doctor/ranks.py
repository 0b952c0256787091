"""``doctor``'s checks of what a run's records expect: the ranks its manifests, its
``profile_ranks`` and the cluster summary name, a window that captured something, and every Ray
worker's summary collected."""

from __future__ import annotations

from collections.abc import Sequence

from mindspeed_prof.analysis.doctor.health import Health, Problem, ProblemKind
from mindspeed_prof.analysis.runs import LEGACY
from mindspeed_prof.formats.cluster import LostWorker, Worker, WorkerSummary
from mindspeed_prof.formats.manifest import Manifest

__all__ = ["check_ranks", "check_windows", "check_workers"]

#: What a worker whose summary the Ray driver did not get is said to have done, by ``status``.
_LOST: dict[str, tuple[ProblemKind, str]] = {
    "died": ("worker_died", "died before its summary was collected"),
    "timeout": ("worker_timeout", "gave no summary in time"),
    "failed": ("worker_failed", "failed to give its summary"),
}


def check_workers(health: Health, workers: Sequence[Worker]) -> None:
    """Each Ray worker of the cluster summary whose summary did not come back (``collect``'s
    ``died``, ``timeout`` and ``failed`` entries) is a finding naming its rank and actor."""
    for w in workers:
        lost = _LOST.get(str(w.status))
        if lost is None or not isinstance(w, LostWorker):
            continue
        kind, what = lost
        who = (
            f"rank {w.rank}"
            if w.rank is not None
            else f"worker {w.worker if w.worker is not None else '?'}"
        )
        actor = f" (actor {w.actor[:12]})" if w.actor else ""
        health.findings.append(
            Problem(
                kind,
                who,
                f"{who}{actor}: {what} ({w.error or ''}); "
                "whatever it wrote stays on its node's disk",
            )
        )


def check_ranks(
    health: Health,
    manifests: list[Manifest],
    workers: list[WorkerSummary],
    own: set[int],
    found: set[int],
    run: str | None,
) -> None:
    """Ranks expected of one run: its manifests, ``profile_ranks``, its workers in the cluster
    summary, else every rank up to the highest of our own captures (another tool's captures
    say nothing of the ranks left out); each one without a capture is a finding (naming the
    run where the root holds several)."""
    expected = {m.rank for m in manifests if isinstance(m.rank, int) and _selected(m)}
    listed = False
    # a rank profile_ranks names is expected only where the job has it (below its manifests'
    # world size, or seen), never only because the list named it: [7] in a job of two ranks
    world = max((m.job.world_size or 0 for m in manifests), default=0)
    seen = found | {m.rank for m in manifests}
    for m in manifests:
        ranks = m.window.profile_ranks
        if isinstance(ranks, list):
            expected.update(r for r in ranks if 0 <= r < world or r in seen)
            listed = True
    expected.update(w.rank for w in workers if w.enabled and w.rank is not None)
    if own and not listed:  # profile_ranks: all: every rank up to the highest seen
        expected.update(range(max(own) + 1))
    health.ranks_expected += sorted(expected)
    where = (
        ""
        if run is None
        else (
            " among the captures without a run id" if run.startswith(LEGACY) else f" in run {run}"
        )
    )
    for rank in sorted(expected - found):
        health.findings.append(
            Problem(
                "missing_rank",
                f"rank {rank}",
                f"rank {rank}: expected{where}, but no capture file found",
            )
        )


def check_windows(health: Health, manifests: list[Manifest], found: set[int]) -> None:
    for m in manifests:
        window = m.window
        if (
            m.status in ("completed", "exited")
            and not m.captures
            and window.profile
            and m.rank not in found
            and _selected(m)
        ):
            start, end = window.profile_step_start, window.profile_step_end
            health.findings.append(
                Problem(
                    "nothing_captured",
                    f"rank {m.rank}",
                    f"rank {m.rank}: the job {m.status} but captured nothing (window "
                    f"[{start}, {end}): did the run reach step {start}? were the hooks called?)",
                )
            )


def _selected(m: Manifest) -> bool:
    """Whether a manifest's rank is one its own ``profile_ranks`` captures on: a rank left
    out on purpose (a Ray driver, rank 0 of ``profile_ranks: [1]``) is expected to have none."""
    ranks = m.window.profile_ranks
    return not isinstance(ranks, list) or m.rank in ranks
