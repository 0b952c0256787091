"""Device rows from the tasks of ``kernel_details.csv`` (or an ``op_summary`` CSV), where no
``step_trace_time.csv`` or Overlap Analysis lane says how a step's device time divides.

Per step (its ``Step Id``; none: one row, step None) the tasks' intervals are merged as
torch_npu's overlap analysis merges them: Computing is the time any task other than a
communication one ran, Communication the time a communication task ran (``Accelerator Core``
or ``Task Type`` HCCL or COMMUNICATION, or an ``hcom_`` name), Overlapped both at once, and Free
the rest of the window from the first task's start to the last one's end (which is also the
row's step time, torch_npu's Stage). Times are decimals, as the file writes them, so 1.7e15 us
timestamps lose nothing: the figures are exact sums of the file's own numbers.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation

from mindspeed_prof.analysis.readers.model import DeviceRow

__all__ = ["COMM_CORES", "Task", "is_comm", "task", "task_rows"]

#: Accelerator cores (``Task Type`` in older files) of communication tasks.
COMM_CORES = frozenset({"HCCL", "COMMUNICATION"})

Task = tuple[int | None, Decimal, Decimal, bool]  # step, start us, end us, communication


def is_comm(core: str, name: str) -> bool:
    """A communication task: its core says so, or its name is an HCCL op's (``hcom_``)."""
    return core.strip().upper() in COMM_CORES or name.strip().startswith("hcom_")


def task(step: int | None, start: str | None, duration: str | None, comm: bool) -> Task | None:
    """One task from its cells; None when a time is missing, not a number or negative."""
    try:
        begin, dur = Decimal((start or "").strip()), Decimal((duration or "").strip())
    except InvalidOperation:
        return None
    if not (begin.is_finite() and dur.is_finite()) or dur < 0:
        return None
    return step, begin, begin + dur, comm


def _union(spans: Iterable[tuple[Decimal, Decimal]]) -> Decimal:
    """Time covered by ``spans`` (sorted by start)."""
    total, end = Decimal(0), None
    start = Decimal(0)
    for a, b in spans:
        if end is None or a > end:
            if end is not None:
                total += end - start
            start, end = a, b
        elif b > end:
            end = b
    return total + (end - start) if end is not None else total


def task_rows(tasks: list[Task]) -> list[DeviceRow]:
    """One device row per step of ``tasks``, steps in order (None last)."""
    by_step: dict[int | None, list[Task]] = defaultdict(list)
    for t in tasks:
        by_step[t[0]].append(t)
    rows = []
    for step in sorted(by_step, key=lambda s: (s is None, s or 0)):
        spans = sorted((a, b, comm) for _, a, b, comm in by_step[step])
        busy = _union((a, b) for a, b, _ in spans)
        compute = _union((a, b) for a, b, comm in spans if not comm)
        comm = _union((a, b) for a, b, comm in spans if comm)
        overlap = compute + comm - busy
        window = max(b for _, b, _ in spans) - spans[0][0]
        rows.append(
            DeviceRow(
                step=step,
                compute_ms=_ms(compute),
                comm_ms=_ms(comm),
                overlap_ms=_ms(overlap),
                idle_ms=_ms(window - busy),
                comm_exposed_ms=_ms(comm - overlap),
                step_ms=_ms(window),
                span_ms=_ms(window),
                busy_ms=_ms(busy),
            )
        )
    return rows


def _ms(us: Decimal) -> float:
    return float(us / 1000)
