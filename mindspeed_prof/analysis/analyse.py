"""``analyse(path)``: the captures below a folder read (here, in processes or on Ray nodes)
into ``Captures`` per run."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import msgspec

from mindspeed_prof.analysis.kept import kept
from mindspeed_prof.analysis.parallel import Progress, read_all
from mindspeed_prof.analysis.readers import BadFile, TraceData, read, separate, survey
from mindspeed_prof.analysis.readers.kineto.memory import is_memory_file, read_memory
from mindspeed_prof.analysis.readers.ranks import rank_of
from mindspeed_prof.analysis.report.captures import Captures, Placement, stem_key
from mindspeed_prof.analysis.runs import split
from mindspeed_prof.formats.header import HEADER_NOTE
from mindspeed_prof.jsonio import within

__all__ = [
    "Captures",
    "ClusterReader",
    "analyse",
    "analyse_files",
    "analyse_runs",
    "runs_of",
]

#: Reads every capture below a root on the machines that hold it (``use_cache``,
#: ``comm_kernels`` as ``read_all``'s): the results in ``discover``'s order, and where each was
#: read. A layer above gives one (``mindspeed_prof.ray.cluster.reader``).
ClusterReader = Callable[[Path, bool, str], tuple[list[TraceData | str], list[Placement]]]


def _finish(result: Captures) -> Captures:
    """Parts of captures that could not be read are listed as skipped; clashes are kept apart."""
    for t in result.traces:
        result.bad.extend(t.problems)
    result.clashes = separate(result.traces, result.root)
    return result


def analyse(
    root: Path | str,
    progress: Progress | None = None,
    jobs: int = 1,
    cache: bool = True,
    cluster: ClusterReader | None = None,
    comm_kernels: str = "",
    run: str | None = None,
) -> Captures:
    """Read every capture below ``root`` (in ``jobs`` processes, through the per-capture cache;
    with ``cluster``, by it: on the nodes that hold them) and answer for one run
    (``runs``): the newest, or ``run`` (an id; ``runs.UnknownRun`` when none matches).
    Unreadable captures are listed in ``Captures.bad``. ``comm_kernels``: a regex of more
    communication kernels (``readers.classify``; ``ValueError`` when it is none)."""
    return analyse_runs(root, progress, jobs, cache, cluster, run, comm_kernels)[0]


def analyse_runs(
    root: Path | str,
    progress: Progress | None = None,
    jobs: int = 1,
    cache: bool = True,
    cluster: ClusterReader | None = None,
    run: str | None = None,
    comm_kernels: str = "",
) -> list[Captures]:
    """``analyse`` for each run ``run`` names (``all``: every run, newest first), apart."""
    return runs_of(_read_root(Path(root), progress, jobs, cache, cluster, comm_kernels), run)


def runs_of(result: Captures, run: str | None = None) -> list[Captures]:
    """``result`` (every capture under its root) as the runs ``run`` names (``runs.choose``),
    each finished apart; ``result`` itself where it holds no capture. Skipped files belong to
    no run: every answer lists them."""
    runs, chosen = split(result.traces, result.root, run)
    if not chosen:
        return [_finish(result)]
    return [
        _finish(
            dataclasses.replace(
                result,
                traces=traces,
                bad=result.bad + _refused(result, traces),
                run=info,
                runs=runs,
            )
        )
        for info, traces in chosen
    ]


def _refused(result: Captures, traces: list[TraceData]) -> list[str]:
    """The header notes of the captures of other runs: a header refused (a run id that is no
    run id) is said in every answer, not only in the run its capture fell into."""
    own = {id(t) for t in traces}
    return [p for t in result.traces if id(t) not in own for p in t.problems if HEADER_NOTE in p]


def _read_root(
    root: Path,
    progress: Progress | None,
    jobs: int,
    cache: bool,
    cluster: ClusterReader | None,
    comm_kernels: str,
) -> Captures:
    result = Captures(
        root=root if cluster is not None or root.is_dir() else root.parent,
        comm_kernels=_pattern(comm_kernels),
    )
    memory: list[Path] = []  # read here, after the captures they are joined to (not by cluster)
    if cluster is not None:
        results, result.placement = cluster(root, cache, comm_kernels)
    else:
        try:
            paths, memory = survey(root)
        except BadFile as err:
            result.bad.append(str(err))
            return result
        paths, memory = _inside(result, root, paths), _inside(result, root, memory)
        results = read_all(
            paths,
            result.root,
            jobs=jobs,
            use_cache=cache,
            progress=progress,
            comm_kernels=comm_kernels,
        )
    for data in results:
        if isinstance(data, str):
            result.bad.append(data)
        else:
            result.traces.append(data if cluster is None else kept(data))
    _read_all(result, memory)
    return result


def _pattern(comm_kernels: str) -> str:
    if not comm_kernels:
        return comm_kernels
    from mindspeed_prof.config.validate import pattern_problem  # the config schema: when asked

    problem = pattern_problem(comm_kernels)
    if problem:
        raise ValueError(f"comm_kernels={comm_kernels!r}: {problem}")
    return comm_kernels


def _inside(result: Captures, root: Path, paths: list[Path]) -> list[Path]:
    """``paths`` below the folder ``root`` that lie inside it, links followed; each that
    leads outside it is not read, one line in ``result.bad`` (its content is never shown)."""
    if not root.is_dir():
        return paths  # one file, named by the user: read wherever it is
    outside = {p for p in paths if not within(p, root)}
    result.bad += [
        f"{p}: a link to a file outside {root}: not read (analyse its own folder)"
        for p in paths
        if p in outside
    ]
    return [p for p in paths if p not in outside]


def analyse_files(files: list[Path], root: Path) -> Captures:
    """Like ``analyse`` for a known list of captures (a job's, from its manifest): each is
    classified with the pattern it records."""
    result = Captures(root=root)
    _read_all(result, [Path(p) for p in files])
    return _finish(result)


def _read_all(result: Captures, paths: list[Path]) -> None:
    """Captures first, then memory files, each joined to the capture of the same stem."""
    for path in sorted(paths, key=is_memory_file):
        try:
            if is_memory_file(path):
                _add_memory(result, path)
            else:
                result.traces.append(read(path, result.root, result.comm_kernels))
        except BadFile as err:
            result.bad.append(str(err))


def _add_memory(result: Captures, path: Path) -> None:
    same = sorted(
        (
            t
            for t in result.traces
            if stem_key(t.path) == stem_key(path) and t.kind not in ("memory", "spans")
        ),
        key=lambda t: t.kind != "torch",
    )
    ranges = [r for t in result.traces if stem_key(t.path) == stem_key(path) for r in t.ranges]
    facts = read_memory(path, ranges)
    if same:
        own = same[0].memory
        if own is not None:  # a trace's [memory] events and a file: the file's timeline,
            facts = msgspec.structs.replace(  # the higher peaks
                facts,
                peak_allocated_bytes=_most(own.peak_allocated_bytes, facts.peak_allocated_bytes),
                peak_reserved_bytes=_most(own.peak_reserved_bytes, facts.peak_reserved_bytes),
                top_ops=facts.top_ops or own.top_ops,
                by_stage=facts.by_stage or own.by_stage,
                timeline=facts.timeline or own.timeline,
            )
        same[0].memory = facts
        return
    result.traces.append(
        TraceData(
            path,
            "memory",
            rank_of(path, None, None),
            path.parent.name,
            path.stat().st_size,
            memory=facts,
        )
    )


def _most(a: float | None, b: float | None) -> float | None:
    known = [v for v in (a, b) if v is not None]
    return max(known) if known else None
