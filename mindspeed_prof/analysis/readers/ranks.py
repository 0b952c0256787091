"""Whose capture is it: a rank from the manifest; captures that claim the same rank and step; the
job's world size a capture records."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

from mindspeed_prof.analysis.readers.labels import rank_label, step_label
from mindspeed_prof.analysis.readers.model import TraceData
from mindspeed_prof.formats import MANIFEST, capture_stem
from mindspeed_prof.formats.header import CaptureHeader
from mindspeed_prof.formats.manifest import read_manifest

__all__ = [
    "manifest_rank",
    "name_rank",
    "rank_of",
    "role_of",
    "separate",
    "to_rank",
    "world_size",
]

_MANIFEST_PREFIX = MANIFEST.split(".")[0]
#: ``rank3_host_1.pt.trace.json``, ``rank-3.json.gz``, ``trace_rank_3.json``: a rank in a name.
_RANK_IN_NAME = re.compile(r"(?:^|[^a-z0-9])rank[-_]?(\d+)(?=[^0-9]|$)", re.IGNORECASE)


def to_rank(value: object) -> int | None:
    """A rank from JSON: a non-negative int or digit string; anything else is no rank."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def rank_of(path: Path, meta: CaptureHeader | None, info: object) -> int | None:
    """Our own header's rank, else ``distributedInfo.rank``, else a rank in the file name."""
    r = to_rank(meta.rank) if meta is not None else None
    if r is None and isinstance(info, dict):
        r = to_rank(info.get("rank"))
    return r if r is not None else name_rank(path.name)


def name_rank(name: str) -> int | None:
    """The rank a file or folder name gives (``rank3_host.json``, ``rank_3``), else None."""
    m = _RANK_IN_NAME.search(name)
    return int(m.group(1)) if m else None


def manifest_rank(path: Path, levels: int = 3) -> int | None:
    """The rank of the manifest that lists ``path`` among its files, when exactly one rank does.

    Looks in the capture's folder and up to ``levels`` folders above it; a folder whose
    manifests disagree (several ranks list the file) gives no rank.
    """
    folder = path.parent
    for _ in range(levels + 1):
        manifests = sorted(folder.glob(f"{_MANIFEST_PREFIX}*.json"))
        if manifests:
            ranks = set()
            rel = str(path.relative_to(folder))
            for m in manifests:
                manifest = read_manifest(m)  # a regular file, bounded, never through a link
                if manifest is None or manifest.rank is None or manifest.rank < 0:
                    continue
                files = manifest.files
                if files is None or any(f.path.startswith(rel) for f in files):
                    ranks.add(manifest.rank)
            return ranks.pop() if len(ranks) == 1 else None
        if folder.parent == folder:
            break
        folder = folder.parent
    return None


def _claims(t: TraceData) -> dict[int | None, set[str]]:
    """Per step, what the capture holds of it: its stages, or the whole step when it has none."""
    out: dict[int | None, set[str]] = {}
    for r in t.ranges:
        if r.kind in ("step", "stage"):
            out.setdefault(r.step, set()).update([r.name] if r.kind == "stage" else [])
    step, stage = t.meta.step, t.meta.stage
    if not out and step is not None and stage is not None and stage != "all":
        # a capture inside a stage without its range (an iteration window, a rollout engine's
        # trace): the part of the step its header names; each engine file is its own part
        engine = t.meta.engine
        return {step: {f"{stage}: {engine} {t.path.name}" if engine else stage}}
    for row in t.device:
        out.setdefault(row.step, set())
    return {step: names or {"(whole step)"} for step, names in (out or {None: set()}).items()}


def _identity(t: TraceData) -> tuple[str, str]:
    """The capture a file is part of: its folder and stem (a trace and its range file share
    them)."""
    return (str(t.path.parent), capture_stem(t.path))


def role_of(t: TraceData) -> str:
    """The role our own captures name in their metadata; empty for other tools' captures."""
    return t.meta.role or ""


def separate(traces: list[TraceData], root: Path) -> list[str]:
    """Captures that claim the same rank and step get apart: their ranges and device rows are
    labelled with their host or folder (``Range.source``), one warning line per clash.

    Files of one capture (a trace and its range file share a stem) are one claim; captures of
    different stages of one step (``stage_scoped`` with several stages) complete each other and
    do not clash. A capture without a known rank clashes with every other capture of unknown
    rank that holds the same part of the same step. Roles number their ranks each from 0 (actor
    rank 0, rollout rank 0, a driver at rank 0): where one rank is held by several roles, each
    capture that names its role (ours do) is labelled with it as well, without a warning, so no
    two roles are added up.
    """
    claims: dict[tuple[int | None, str, int | None], dict[tuple[str, str], list[TraceData]]] = (
        defaultdict(dict)
    )
    parts: dict[tuple[str, str], dict[int | None, set[str]]] = {}
    roles: dict[int | None, set[str]] = defaultdict(set)
    # only captures that share a rank and role can clash: a lone one's steps are not looked at
    # (a range file of 90,000 steps would otherwise hold a set per step)
    sharing: dict[tuple[int | None, str], set[tuple[str, str]]] = defaultdict(set)
    for t in traces:
        sharing[(t.rank, role_of(t))].add(_identity(t))
    for t in traces:
        identity = _identity(t)
        held = parts.setdefault(identity, defaultdict(set))
        role = role_of(t)
        if role:
            roles[t.rank].add(role)
        if len(sharing[(t.rank, role)]) < 2:
            continue
        for step, names in _claims(t).items():
            claims[(t.rank, role, step)].setdefault(identity, []).append(t)
            held[step] |= names
    labels_of: dict[int, list[str]] = {}
    lines: dict[tuple[int | None, str, tuple[str, ...]], list[int | None]] = defaultdict(list)
    for (rank, role, step), by_capture in claims.items():
        ids = list(by_capture)
        overlapping = {i for i in ids for j in ids if i != j and parts[i][step] & parts[j][step]}
        if len(overlapping) < 2:
            continue
        groups = [by_capture[i] for i in ids if i in overlapping]
        labels = _labels([g[0] for g in groups], root)
        for group, label in zip(groups, labels):
            for t in group:
                labels_of[id(t)] = [label]
        lines[(rank, role, tuple(labels))].append(step)
    for t in traces:
        if role_of(t) and len(roles[t.rank]) > 1:
            labels_of[id(t)] = [role_of(t), *labels_of.get(id(t), [])]
    for t in traces:
        if id(t) in labels_of:
            label = t.clash_label = ", ".join(labels_of[id(t)])
            t.ranges = [r._replace(source=label) for r in t.ranges]
            for row in t.device:
                row.source = label
    return [
        f"rank {rank_label(rank)}{f' ({role})' if role else ''}, "
        f"step{'s' if len(steps) > 1 else ''} "
        f"{', '.join(map(step_label, steps))}: claimed by "
        f"{len(labels)} captures ({', '.join(labels)}); reported apart, not added up"
        for (rank, role, labels), steps in lines.items()
    ]


def _labels(traces: list[TraceData], root: Path) -> list[str]:
    """Hosts when they tell the captures apart, else their paths below ``root``."""
    hosts = [t.source for t in traces]
    if all(hosts) and len(set(hosts)) == len(hosts):
        return hosts
    out = []
    for t in traces:
        try:
            out.append(str(t.path.relative_to(root)))
        except ValueError:
            out.append(str(t.path))
    return out


def world_size(info: object) -> int | None:
    """The job's ranks from a ``world_size`` key (Kineto's ``distributedInfo``, torch_npu's
    ``distributed_args``); None: not recorded, or not a count of ranks."""
    size = info.get("world_size") if isinstance(info, dict) else None
    return size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else None
