"""What every torch_npu rule reads: the captures by rank, their facts, the files a finding
cites, their steps."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Protocol, TypeVar, cast

from mindspeed_prof.analysis.findings.common import folder_of, ranks_of
from mindspeed_prof.analysis.readers.labels import rank_order, ranks_text
from mindspeed_prof.analysis.readers.model import NpuFacts, TraceData

if TYPE_CHECKING:
    from mindspeed_prof.analysis.report.captures import Captures


__all__ = [
    "MS",
    "Answered",
    "answered",
    "facts_of",
    "files_of",
    "grouped",
    "host_step_ms",
    "npu_captures",
    "on_ranks",
    "per_rank",
    "steps_of",
]

MS = 1000.0  # us per ms


def npu_captures(captures: Captures) -> list[TraceData]:
    """The torch_npu captures, by rank."""
    return sorted(
        (t for t in captures.traces if t.kind == "npu" and t.npu is not None),
        key=lambda t: (rank_order(t.rank), str(t.path)),
    )


class Answered(NpuFacts, kw_only=True):
    """A rank's facts once its per-rank answers are in (``answered``): the device operators
    (``ops``, the bulk of a capture's facts) left out, ``answers`` what each ``per_rank``
    function gave for them."""

    answers: dict[str, object] = {}


R = TypeVar("R")

#: Each ``per_rank`` function, by name: what a rank keeps of its operators.
_PER_RANK: dict[str, Callable[[TraceData], object]] = {}


def per_rank(fn: Callable[[TraceData], R]) -> Callable[[TraceData], R]:
    """``fn`` (an answer of one capture, from its ``NpuFacts.ops``) kept per rank: computed
    once when the capture is ``answered``, read back from there after (the operators gone)."""
    key = f"{fn.__module__}.{fn.__qualname__}"
    _PER_RANK[key] = fn

    @functools.wraps(fn)
    def answer(t: TraceData) -> R:
        if isinstance(t.npu, Answered):
            return cast(R, t.npu.answers[key])
        return fn(t)

    return answer


def answered(t: TraceData) -> TraceData:
    """``t`` with its torch_npu facts' per-rank answers computed and its operators released
    (what the analysis across ranks reads of them is in the answers); ``t`` as it is when it
    holds no torch_npu facts or has them answered. Import it from ``findings.npu``, which
    imports every module with a ``per_rank`` function."""
    if t.npu is None or isinstance(t.npu, Answered):
        return t
    answers = {key: fn(t) for key, fn in _PER_RANK.items()}
    fields = {f: getattr(t.npu, f) for f in t.npu.__struct_fields__ if f != "ops"}
    t.npu = Answered(**fields, answers=answers)
    return t


def facts_of(t: TraceData) -> NpuFacts:
    assert t.npu is not None
    return t.npu


def files_of(captures: Captures, traces: Iterable[TraceData], key: str) -> str:
    """``rank0_ascend_pt/kernel_details.csv``, or the file and the folders where several."""
    traces = list(traces)
    files = sorted({facts_of(t).sources.get(key, "?") for t in traces})
    folders = [folder_of(captures, t) for t in traces]
    if len(folders) == 1:
        return f"{folders[0]}/{files[0]}"
    return f"{', '.join(files)} of {', '.join(folders)}"


def steps_of(t: TraceData) -> int:
    """Steps the capture holds (ProfilerStep ranges, else its device rows), at least 1."""
    steps = {r.step for r in t.ranges if r.kind == "step"}
    if not steps:
        steps = {d.step for d in t.device if d.stage is None and d.step is not None}
    return max(len(steps), 1)


def host_step_ms(t: TraceData) -> float | None:
    """The mean step on the host (ProfilerStep), else on the device (torch_npu's Stage)."""
    host = [r.dur for r in t.ranges if r.kind == "step"]
    if host:
        return sum(host) / len(host) / MS
    device = [d.step_ms for d in t.device if d.stage is None and d.step_ms]
    return sum(device) / len(device) if device else None


def on_ranks(traces: list[TraceData]) -> str:
    ranks = ranks_of(traces)
    return f"rank {ranks_text(ranks)}" if len(ranks) == 1 else f"ranks {ranks_text(ranks)}"


class Evidence(Protocol):
    """What a rank's finding rests on; ``key()``: equal for evidence that reads the same."""

    def key(self) -> object: ...


E = TypeVar("E", bound=Evidence)


def grouped(per_rank: list[tuple[TraceData, E]]) -> list[list[tuple[TraceData, E]]]:
    """Ranks whose evidence reads the same, together (a finding names them once)."""
    groups: dict[str, list[tuple[TraceData, E]]] = {}
    for t, ev in per_rank:
        groups.setdefault(repr(ev.key()), []).append((t, ev))
    return list(groups.values())
