"""``doctor``'s check of every capture as ``analyse`` reads it: what it skips, whole or in
part, and what it counts per rank."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from pathlib import Path

from mindspeed_prof.analysis import analyse as _analyse
from mindspeed_prof.analysis.capture_facts import worlds
from mindspeed_prof.analysis.doctor.health import Health, Problem, ProblemKind
from mindspeed_prof.analysis.readers.kineto.chrome import INTERRUPTED
from mindspeed_prof.analysis.readers.labels import rank_label
from mindspeed_prof.analysis.runs import LEGACY
from mindspeed_prof.analysis.triggered import Triggered, triggered
from mindspeed_prof.formats import capture_stem
from mindspeed_prof.formats.stem import rank_of

__all__ = ["check_readable"]


def check_readable(
    health: Health, flagged: set[Path], results: list[_analyse.Captures]
) -> tuple[dict[str, set[int]], dict[str, set[int]], list[Triggered]]:
    """Every capture as ``analyse`` reads it, run by run (``results``): each one it skips,
    whole or in part, is a finding (unless the cheap checks already named its file); its
    captures and their ranks are counted. Returns, per run, the ranks of captures named as ours
    (``rank<r>_...``) and of every capture, and the unplanned captures their metadata names."""
    result = dataclasses.replace(
        results[0],
        traces=[t for r in results for t in r.traces],
        bad=list(dict.fromkeys(b for r in results for b in r.bad)),
    )
    partial = {line for t in result.traces for line in t.problems}
    for line in result.bad:
        if any(line.startswith(f"{path}:") for path in flagged):
            continue  # an empty or truncated file already has its finding
        where = result.shown(line).split(": ", 1)[0]
        kind: ProblemKind = (
            "interrupted"
            if INTERRUPTED in line
            else "partly_read"
            if line in partial
            else "unreadable"
        )
        health.findings.append(Problem(kind, where, result.shown(line)))
    for t in result.traces:
        if t.holds_nothing and t.path not in flagged:
            where = result.shown(str(t.path))
            health.findings.append(
                Problem(
                    "empty",
                    where,
                    f"{where}: captured nothing (no "
                    "ranges, no ops): analyse counts it but has nothing "
                    "to show",
                )
            )
    health.notes = [result.shown(n) for t in result.traces for n in t.notes]
    health.worlds = [w.json() for w in worlds(result.traces)]
    stems: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for t in result.traces:
        stems[rank_label(t.rank)].add((str(t.path.parent), capture_stem(t.path)))
        if t.rank is not None and (t.path.is_dir() or rank_of(t.path.name) is None):
            # a torch_npu folder, or a file not named rank<r>_...: its bytes not counted yet
            health.disk_per_rank[t.rank] = health.disk_per_rank.get(t.rank, 0) + t.size
    health.captures_per_rank = {
        rank: len(s)
        for rank, s in sorted(
            stems.items(), key=lambda kv: (kv[0] == "?", int(kv[0]) if kv[0] != "?" else 0)
        )
    }
    ranks: dict[str, set[int]] = defaultdict(set)
    own: dict[str, set[int]] = defaultdict(set)
    for r in results:
        run = r.run.id if r.run is not None else LEGACY
        ranks[run].update(t.rank for t in r.traces if t.rank is not None)
        own[run].update(n for t in r.traces if (n := rank_of(t.path.name)) is not None)
    return own, ranks, triggered(result)
