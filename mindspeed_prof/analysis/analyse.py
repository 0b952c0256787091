"""``analyse(path)``: captures turned into per-stage, per-rank and per-step answers."""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mindspeed_prof.analysis.memory import is_memory_file, read_memory
from mindspeed_prof.analysis.parallel import Progress, read_all
from mindspeed_prof.analysis.ranges import range_rows
from mindspeed_prof.analysis.readers import BadFile, Range, TraceData, discover, read, separate
from mindspeed_prof.analysis.readers.model import rank_of, rank_order
from mindspeed_prof.config.schema import STAGES
from mindspeed_prof.formats import capture_stem

__all__ = ["DEFAULT_MARGIN", "Analysis", "analyse", "analyse_files"]

#: Rows of ``--json`` (every time in ms, bytes in bytes):
#: ``ranges``: name, rank, stage (where it ran, "a, b" for several, null unknown), count,
#:   total_ms, self_ms (minus nested ranges), mean_ms, p95_ms, max_ms.
#: ``device``: rank, step (null: launched outside every step), stage (null: the whole step),
#:   warmup, span_ms (the device window), busy_ms, compute_ms, comm_ms, overlap_ms (comm during
#:   compute), memcpy_ms (copies and sets), idle_ms (window minus busy).
#: ``comm`` (torch_npu): rank, then the reader's row (``TraceData``): name (op type), kind
#:   (collective, p2p, link), step, count, elapse_ms, wait_ms, transit_ms, sync_ms, idle_ms,
#:   size_mb, bandwidth_gbps, links (per link type); link rows: link, transport.
#: ``top_kernels``/``top_runtime``: name, count, device_ms/ms. ``top_ops``: op, count, self_ms.
#: ``memory``: rank, file, source (trace|timeline|snapshot), stage (null: the whole capture),
#:   peak_allocated_bytes, peak_reserved_bytes (null: not recorded); the whole-capture row also
#:   has top_ops (op, count, bytes) and timeline ([us, allocated bytes] points).
#: ``stragglers``/``range_stragglers``: stage|range, step, rank, ms, median_ms, ratio.

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
    #: Count warmup steps in stragglers and compare (they are left out by default).
    include_warmup: bool = False
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

    def warmup(self) -> set[tuple[int | None, int]]:
        """(rank, step) pairs captured as warmup (``warmup_steps``, the ``dpo`` preset)."""
        return {(rank, step) for rank, _, step in self._warmup()}

    def _warmup(self) -> set[tuple[int | None, str, int]]:
        """(rank, source, step) of warmup steps: a role's warmup is not another's at its rank."""
        out: set[tuple[int | None, str, int]] = set()
        for t in self.traces:
            window, n = t.meta.get("window"), t.meta.get("warmup_steps")
            if isinstance(window, list) and window and isinstance(window[0], int) and (
                    isinstance(n, int) and n > 0):
                source = t.meta.get("source", "")
                out.update((t.rank, source, s) for s in range(window[0], window[0] + n))
        return out

    def _counted(self) -> list[Range]:
        """``ranges`` less warmup steps unless ``include_warmup``."""
        skip = set() if self.include_warmup else self._warmup()
        return [r for r in self.ranges if (r.rank, r.source, r.step) not in skip]

    def stage_rank(self, include_warmup: bool = True) -> list[dict[str, Any]]:
        """Per stage and rank: executions, total, mean and max milliseconds."""
        times: dict[tuple[str, int | None, str], list[float]] = defaultdict(list)
        for r in self.ranges if include_warmup else self._counted():
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
        warmup = self._warmup()
        return [{"rank": rank, **_source(source), "step": step, **dict(v),
                 "warmup": (rank, source, step) in warmup}
                for (rank, source, step), v in sorted(
                    table.items(), key=lambda kv: (rank_order(kv[0][0]), kv[0][1], kv[0][2]))]

    def stragglers(self, kind: str = "stage") -> list[dict[str, Any]]:
        """Ranks whose stage (``kind="range"``: custom range) time in a step exceeds the median
        over ranks by ``margin``; warmup steps left out unless ``include_warmup``."""
        per: dict[tuple[str, int], dict[tuple[int | None, str], float]] = defaultdict(
            lambda: defaultdict(float))
        for r in self._counted():
            if r.kind == kind and r.step is not None:
                per[(r.name, r.step)][(r.rank, r.source)] += r.dur / 1000.0
        out = []
        for (name, step), by_rank in per.items():
            if len(by_rank) < 2:
                continue
            median = statistics.median(by_rank.values())
            for (rank, source), ms in by_rank.items():
                if median > 0 and ms > median * (1 + self.margin):
                    out.append({kind: name, "step": step, "rank": rank, **_source(source),
                                "ms": ms,
                                "median_ms": median, "ratio": ms / median})
        return sorted(out, key=lambda s: -s["ratio"])

    def range_table(self, include_warmup: bool = True) -> list[dict[str, Any]]:
        """Custom ranges per name and rank (``ranges.range_rows``)."""
        return range_rows(self.ranges if include_warmup else self._counted())

    def device(self) -> list[dict[str, Any]]:
        """Device breakdown rows per rank and step (and stage), warmup steps marked."""
        warmup = self._warmup()
        return [{"rank": t.rank, **row,
                 "warmup": (t.rank, row.get("source", ""), row["step"]) in warmup}
                for t in self.traces for row in t.device]

    def comm(self) -> list[dict[str, Any]]:
        """Communication per rank, step and op type (torch_npu), as each reader folds it."""
        return [{"rank": t.rank, **_source(t.meta.get("source", "")), **row}
                for t in self.traces for row in t.comm]

    def _top(self, field_name: str, key: str, unit: str, n: int) -> list[dict[str, Any]]:
        total: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
        for t in self.traces:
            for name, (count, us) in getattr(t, field_name).items():
                total[name][0] += count
                total[name][1] += us
        top = sorted(total.items(), key=lambda kv: -kv[1][1])[:n]
        return [{key: k, "count": int(c), unit: s / 1000.0} for k, (c, s) in top]

    def top_kernels(self, n: int = 15) -> list[dict[str, Any]]:
        """Device kernels, copies and sets by device time."""
        return self._top("kernels", "name", "device_ms", n)

    def top_runtime(self, n: int = 15) -> list[dict[str, Any]]:
        """Runtime and launch calls (``cudaLaunchKernel``...) by host time."""
        return self._top("runtime", "name", "ms", n)

    def memory(self) -> list[dict[str, Any]]:
        """Peak allocated/reserved bytes per capture (rank), then per stage where known."""
        out = []
        for t in self.traces:
            m = t.memory
            if not m:
                continue
            base = {"rank": t.rank, "file": _rel(t.path, self.root), "source": m.get("source")}
            out.append({**base, "stage": None,
                        "peak_allocated_bytes": m.get("peak_allocated_bytes"),
                        "peak_reserved_bytes": m.get("peak_reserved_bytes"),
                        "top_ops": m.get("top_ops", []), "timeline": m.get("timeline", [])})
            for stage, peak in sorted((m.get("by_stage") or {}).items(),
                                      key=lambda kv: _stage_order(kv[0])):
                out.append({**base, "stage": stage, "peak_allocated_bytes": peak,
                            "peak_reserved_bytes": None})
        return out

    def problems(self) -> list[str]:
        """One line per thing left out of a capture that was otherwise read (also in ``bad``)."""
        return [p for t in self.traces for p in t.problems]

    def notes(self) -> list[str]:
        """One line per fact about how a capture was read whole (not a problem: exit 0)."""
        return [n for t in self.traces for n in t.notes]

    def unread_device(self) -> dict[str, int]:
        """Device events recorded but not read as device time, per Kineto category."""
        out: dict[str, int] = defaultdict(int)
        for t in self.traces:
            for cat, count in (t.meta.get("unread_device") or {}).items():
                out[cat] += count
        return dict(out)

    def shown(self, line: str) -> str:
        """A problem or note for people: the file it names relative to the analysed root."""
        prefix = f"{str(self.root).rstrip('/')}/"
        return line[len(prefix):] if line.startswith(prefix) else line

    def messages(self) -> list[str]:
        """The stderr lines: each skipped file or part (``skipped ...``), then each note."""
        return ([f"skipped {self.shown(b)}" for b in self.bad]
                + [f"note: {self.shown(n)}" for n in self.notes()])

    def top_ops(self, n: int = 15) -> list[dict[str, Any]]:
        """Host operators with the most self time, summed over every capture."""
        return self._top("ops", "op", "self_ms", n)

    @property
    def has_device(self) -> bool:
        return any(t.device or t.kernels for t in self.traces)

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
                "ranges": self.range_table(), "range_stragglers": self.stragglers("range"),
                "device": self.device(), "comm": self.comm(), "top_ops": self.top_ops(),
                "top_kernels": self.top_kernels(), "top_runtime": self.top_runtime(),
                "memory": self.memory(), "inventory": self.inventory(),
                "warnings": self.warnings(), "problems": self.problems(), "skipped": self.bad,
                "notes": self.notes(),
                "margin": self.margin, "warmup": sorted(self.warmup())}


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
        rel = path.relative_to(root)
    except ValueError:
        return str(path)
    return str(rel) if rel.parts else path.name  # the root itself (a torch_npu folder): its name


def analyse(root: Path | str, margin: float = DEFAULT_MARGIN, progress: Progress | None = None,
            jobs: int = 1, cache: bool = True, ray: str | None = None) -> Analysis:
    """Read every capture below ``root`` (in ``jobs`` processes, through the per-capture cache;
    with ``ray``, a Ray address or "auto", on the nodes that hold them); unreadable ones are
    listed in ``Analysis.bad``."""
    root = Path(root)
    result = Analysis(root=root if ray or root.is_dir() else root.parent, margin=margin)
    memory: list[Path] = []  # read here, after the captures they are joined to (not with ray)
    if ray is not None:
        from mindspeed_prof.analysis.cluster import read_on_cluster

        results, result.placement = read_on_cluster(root, None if ray == "auto" else ray, cache)
    else:
        try:
            paths = [p for p in discover(root) if not is_memory_file(p.name)]
        except BadFile as err:
            result.bad.append(str(err))
            return result
        memory = ([p for p in sorted(root.rglob("*")) if is_memory_file(p.name) and p.is_file()]
                  if root.is_dir() else [root] if is_memory_file(root.name) else [])
        results = read_all(paths, result.root, jobs=jobs, use_cache=cache, progress=progress)
    for data in results:
        if isinstance(data, str):
            result.bad.append(data)
        else:
            result.traces.append(data)
    _read_all(result, memory)
    return _finish(result)


def analyse_files(files: list[Path], root: Path, margin: float = DEFAULT_MARGIN) -> Analysis:
    """Like ``analyse`` for a known list of captures (a job's, from its manifest)."""
    result = Analysis(root=root, margin=margin)
    _read_all(result, [Path(p) for p in files])
    return _finish(result)


def _read_all(result: Analysis, paths: list[Path]) -> None:
    """Captures first, then memory files, each joined to the capture of the same stem."""
    for path in sorted(paths, key=lambda p: is_memory_file(p.name)):
        try:
            if is_memory_file(path.name):
                _add_memory(result, path)
            else:
                result.traces.append(read(path, result.root))
        except BadFile as err:
            result.bad.append(str(err))


def _add_memory(result: Analysis, path: Path) -> None:
    same = sorted((t for t in result.traces if _stem(t.path) == _stem(path)
                   and t.kind not in ("memory", "spans")), key=lambda t: t.kind != "torch")
    ranges = [r for t in result.traces if _stem(t.path) == _stem(path) for r in t.ranges]
    facts = read_memory(path, ranges)
    if same:
        own = same[0].memory
        if own:  # a trace's [memory] events and a file: keep the file's timeline, the max peaks
            for key in ("peak_allocated_bytes", "peak_reserved_bytes"):
                values = [v for v in (own.get(key), facts.get(key)) if v is not None]
                facts[key] = max(values) if values else None
            facts["top_ops"] = facts["top_ops"] or own.get("top_ops", [])
            facts["by_stage"] = facts["by_stage"] or own.get("by_stage", {})
            facts["timeline"] = facts["timeline"] or own.get("timeline", [])
        same[0].memory = facts
        return
    result.traces.append(TraceData(path, "memory", rank_of(path, None, None), path.parent.name,
                                   path.stat().st_size, memory=facts))
