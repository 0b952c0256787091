"""torch_npu's memory files (``memory_record.csv``, ``operator_memory.csv``,
``npu_module_mem.csv``, or the db's tables) as a capture's ``memory``."""

from __future__ import annotations

from pathlib import Path

from mindspeed_prof.analysis.readers.model import Alloc, Memory, Tally, TraceData, tally
from mindspeed_prof.analysis.readers.npu.tables import Table, number
from mindspeed_prof.analysis.readers.npu.text import KB, MB

__all__ = ["TIMELINE_POINTS", "memory_summary", "read_memory"]

#: How many points of a memory timeline are kept (evenly spaced, peaks kept).
TIMELINE_POINTS = 512


def _thin(points: list[list[float]]) -> list[list[float]]:
    """At most ``TIMELINE_POINTS`` points, evenly spaced, always keeping the highest one."""
    if len(points) <= TIMELINE_POINTS:
        return points
    stride = len(points) / TIMELINE_POINTS
    keep = {int(i * stride) for i in range(TIMELINE_POINTS)}
    keep.add(max(range(len(points)), key=lambda i: points[i][1]))
    return [points[i] for i in sorted(keep)]


def memory_summary(
    records: list[tuple[str, float, float | None, float | None]],
    op_allocs: list[tuple[str, float]],
    modules: list[tuple[str, float]],
) -> Memory | None:
    """``memory`` from (component, us, allocated, reserved) records, op allocations, modules.

    Peaks come from the ``PTA+GE`` component (the framework's whole device memory: PyTorch's
    allocator plus graph engine), else ``PTA`` (the allocator alone), else any component.
    """
    if not (records or op_allocs or modules):
        return None
    out = Memory(source="torch_npu")
    peaks: dict[str, list[float]] = {}
    for comp, _, alloc, reserved in records:
        slot = peaks.setdefault(comp, [0.0, 0.0])
        slot[0] = max(slot[0], alloc or 0.0)
        slot[1] = max(slot[1], reserved or 0.0)
    main = next((c for c in ("PTA+GE", "PTA") if c in peaks), next(iter(peaks), None))
    if main is not None:
        out.component = main
        # whole bytes, as the float the field holds (an int here is read back from the cache
        # as a float: the answer would depend on --jobs and the cache)
        out.peak_allocated_bytes = float(int(peaks[main][0]))
        out.peak_reserved_bytes = float(int(peaks[main][1]))
        out.components = {
            c: {"peak_allocated_bytes": int(a), "peak_reserved_bytes": int(r)}
            for c, (a, r) in sorted(peaks.items())
        }
        out.timeline = _thin(
            [
                [float(us), float(alloc or 0.0), float(reserved or 0.0)]  # as a cache hit has them
                for comp, us, alloc, reserved in sorted(
                    (r for r in records if r[0] == main), key=lambda r: r[1]
                )
            ]
        )
    if op_allocs:
        by_op: dict[str, Tally] = {}
        largest: dict[str, float] = {}
        for name, size in op_allocs:
            tally(by_op, name, 1, size)
            largest[name] = max(largest.get(name, 0.0), size)
        out.top_ops = [
            Alloc(op=n, count=t.count, bytes=int(t.total), max_bytes=int(largest[n]))
            for n, t in sorted(by_op.items(), key=lambda kv: -kv[1].total)[:20]
        ]
    if modules:
        mods: dict[str, float] = {}
        for name, size in modules:
            mods[name] = max(mods.get(name, 0.0), size)
        out.modules = {n: int(b) for n, b in sorted(mods.items(), key=lambda kv: -kv[1]) if b}
    return out


def read_memory(
    data: TraceData, record: Path | None, operator: Path | None, module: Path | None
) -> None:
    """``memory_record.csv``, ``operator_memory.csv``, ``npu_module_mem.csv`` -> ``memory``."""
    records: list[tuple[str, float, float | None, float | None]] = []
    path = record
    if path is not None:
        table = Table.open(
            path,
            ("Component", "Timestamp(us)", "Total Allocated(MB)", "Total Reserved(MB)"),
            data.problems,
        )
        for row in table.rows if table else ():
            us = number(row["Timestamp(us)"])
            if us is not None:
                alloc, res = number(row["Total Allocated(MB)"]), number(row["Total Reserved(MB)"])
                records.append(
                    (
                        row["Component"].strip(),
                        us,
                        None if alloc is None else alloc * MB,
                        None if res is None else res * MB,
                    )
                )
    allocs: list[tuple[str, float]] = []
    path = operator
    if path is not None:
        table = Table.open(path, ("Name", "Size(KB)"), data.problems)
        for row in table.rows if table else ():
            size = number(row["Size(KB)"])
            if size is not None and size > 0:
                allocs.append((row["Name"].strip(), size * KB))
    modules: list[tuple[str, float]] = []
    path = module
    if path is not None:
        table = Table.open(path, ("Component", "Total Reserved(MB)"), data.problems)
        for row in table.rows if table else ():
            size = number(row["Total Reserved(MB)"])
            if size is not None:
                modules.append((row["Component"].strip(), size * MB))
    memory = memory_summary(records, allocs, modules)
    if memory is not None:
        data.memory = memory
