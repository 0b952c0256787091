"""``analyse(path)``: captures turned into per-stage, per-rank and per-step answers."""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mindspeed_prof.analysis.parallel import Progress, read_all
from mindspeed_prof.analysis.readers import BadFile, Range, TraceData, discover, read, separate
from mindspeed_prof.analysis.readers.model import rank_order
from mindspeed_prof.config.schema import STAGES
from mindspeed_prof.formats import capture_stem

__all__ = ["Analysis", "analyse", "analyse_files", "DEFAULT_MARGIN"]

#: A rank is a straggler when its stage time exceeds the median over ranks by this fraction.
DEFAULT_MARGIN = 0.2


def _stem(path: Path) -> tuple[str, str]:
    return (str(path.parent), capture_stem(path))


def _stage_order(name: str) -> tuple[int, str]:
    return (STAGES.index(name) if name in STAGES else len(STAGES), name)


@dataclass
class Analysis:
    """Everything ``mindspeed-prof analyse`` reports, computed once from the captures."""

    root: Path
    traces: list[TraceData] = field(default_factory=list)
    bad: list[str] = field(default_factory=list)
    margin: float = DEFAULT_MARGIN
    #: Captures that claimed the same rank and step (kept apart by ``Range.source``).
    clashes: list[str] = field(default_factory=list)
    #: With ``--ray``: where each capture was read (path, node, host, bytes).
    placement: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ranges(self) -> list[Range]:
        """Step, stage and custom ranges, each counted once (span files win over op traces)."""
        by_stem: dict[tuple[str, str], list[TraceData]] = defaultdict(list)
        for t in self.traces:
            by_stem[_stem(t.path)].append(t)
        out: list[Range] = []
        for group in by_stem.values():
            spans = [t for t in group if t.kind == "spans"]
            for t in spans or group:
                out.extend(t.ranges)
        return out

    @property
    def ranks(self) -> list[int | None]:
        """Ranks seen, unknown (None) last."""
        return sorted({t.rank for t in self.traces}, key=rank_order)

    def stage_rank(self) -> list[dict[str, Any]]:
        """Per stage and rank: executions, total, mean and max milliseconds."""
        times: dict[tuple[str, int | None, str], list[float]] = defaultdict(list)
        for r in self.ranges:
            if r.kind == "stage":
                times[(r.name, r.rank, r.source)].append(r.dur / 1000.0)
        rows = []
        for (stage, rank, source), ms in sorted(times.items(), key=lambda kv: (
                _stage_order(kv[0][0]), rank_order(kv[0][1]), kv[0][2])):
            rows.append({"stage": stage, "rank": rank, **_source(source), "count": len(ms),
                         "total_ms": sum(ms), "mean_ms": sum(ms) / len(ms), "max_ms": max(ms)})
        return rows

    def per_step(self) -> list[dict[str, Any]]:
        """Per rank and step: each stage's milliseconds, and ``total`` the step's own length."""
        table: dict[tuple[int | None, str, int], dict[str, float]] = defaultdict(
            lambda: defaultdict(float))
        for r in self.ranges:
            if r.step is None or r.kind == "range":
                continue
            key = "total" if r.kind == "step" else r.name
            table[(r.rank, r.source, r.step)][key] += r.dur / 1000.0
        return [{"rank": rank, **_source(source), "step": step, **dict(v)}
                for (rank, source, step), v in sorted(
                    table.items(), key=lambda kv: (rank_order(kv[0][0]), kv[0][1], kv[0][2]))]

    def stragglers(self) -> list[dict[str, Any]]:
        """Ranks whose stage time in a step exceeds the median over ranks by ``margin``."""
        per: dict[tuple[str, int], dict[tuple[int | None, str], float]] = defaultdict(
            lambda: defaultdict(float))
        for r in self.ranges:
            if r.kind == "stage" and r.step is not None:
                per[(r.name, r.step)][(r.rank, r.source)] += r.dur / 1000.0
        out = []
        for (stage, step), by_rank in per.items():
            if len(by_rank) < 2:
                continue
            median = statistics.median(by_rank.values())
            for (rank, source), ms in by_rank.items():
                if median > 0 and ms > median * (1 + self.margin):
                    out.append({"stage": stage, "step": step, "rank": rank, **_source(source),
                                "ms": ms,
                                "median_ms": median, "ratio": ms / median})
        return sorted(out, key=lambda s: -s["ratio"])

    def top_ops(self, n: int = 15) -> list[dict[str, Any]]:
        """Ops with the most self time, summed over every capture."""
        total: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
        for t in self.traces:
            for name, (count, self_us) in t.ops.items():
                total[name][0] += count
                total[name][1] += self_us
        rows: list[dict[str, Any]] = [{"op": k, "count": int(c), "self_ms": s / 1000.0}
                                      for k, (c, s) in total.items()]
        return sorted(rows, key=lambda r: -r["self_ms"])[:n]

    def inventory(self) -> list[dict[str, Any]]:
        out = []
        for t in self.traces:
            steps = sorted({r.step for r in t.ranges if r.step is not None})
            out.append({"file": _rel(t.path, self.root), "kind": t.kind, "rank": t.rank,
                        **_source(t.meta.get("source", "")), "group": t.group,
                        "bytes": t.size, "events": t.events, "steps": steps,
                        "level": t.meta.get("level")})
        return out

    def warnings(self) -> list[str]:
        out = [f"{_rel(t.path, self.root)}: captured nothing (no ranges, no ops)"
               for t in self.traces if not (t.ranges or t.ops or t.kernels or t.device
                                            or t.comm or t.memory)]
        out += self.clashes
        if not self.traces and not self.bad:
            out.append(f"{self.root}: no captures found (is profile: true, and does the window "
                       "[profile_step_start, profile_step_end) contain steps that ran?)")
        return out

    def to_json(self) -> dict[str, Any]:
        return {"root": str(self.root), "ranks": self.ranks, "stage_rank": self.stage_rank(),
                "per_step": self.per_step(), "stragglers": self.stragglers(),
                "top_ops": self.top_ops(), "inventory": self.inventory(),
                "warnings": self.warnings(), "skipped": self.bad, "margin": self.margin}


def _source(source: str) -> dict[str, str]:
    """``{"source": host-or-folder}`` on rows of a capture that shares its rank and step."""
    return {"source": source} if source else {}


def _finish(result: Analysis) -> Analysis:
    """Parts of captures that could not be read are listed as skipped; clashes are kept apart."""
    for t in result.traces:
        result.bad.extend(t.problems)
    result.clashes = separate(result.traces, result.root)
    return result


def _rel(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root)) or path.name
    except ValueError:
        return str(path)


def analyse(root: Path | str, margin: float = DEFAULT_MARGIN, progress: Progress | None = None,
            jobs: int = 1, cache: bool = True, ray: str | None = None) -> Analysis:
    """Read every capture below ``root`` (in ``jobs`` processes, through the per-capture cache;
    with ``ray``, a Ray address or "auto", on the nodes that hold them); unreadable ones are
    listed in ``Analysis.bad``."""
    root = Path(root)
    result = Analysis(root=root if ray or root.is_dir() else root.parent, margin=margin)
    if ray is not None:
        from mindspeed_prof.analysis.cluster import read_on_cluster

        results, result.placement = read_on_cluster(root, None if ray == "auto" else ray, cache)
    else:
        try:
            paths = list(discover(root))
        except BadFile as err:
            result.bad.append(str(err))
            return result
        results = read_all(paths, result.root, jobs=jobs, use_cache=cache, progress=progress)
    for data in results:
        if isinstance(data, str):
            result.bad.append(data)
        else:
            result.traces.append(data)
    return _finish(result)


def analyse_files(files: list[Path], root: Path, margin: float = DEFAULT_MARGIN) -> Analysis:
    """Like ``analyse`` for a known list of captures (a job's, from its manifest)."""
    result = Analysis(root=root, margin=margin)
    for path in files:
        try:
            result.traces.append(read(Path(path), root))
        except BadFile as err:
            result.bad.append(str(err))
    return _finish(result)
