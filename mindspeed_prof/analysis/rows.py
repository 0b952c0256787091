"""The typed rows of an analysis: what every view, ``compare`` and ``--json`` read.

Times are milliseconds and memory is bytes. ``rank`` is None where no source names it (shown as
``?``); ``source`` names a capture's host or folder where two captures claim the same rank and
step (else ""). ``json()`` gives a row as ``--json`` writes it (``DeviceRow``, ``CommRow`` with
its ``LinkShare``s and ``Alloc``, the readers' rows, are written with ``msgspec.to_builtins``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import msgspec

from mindspeed_prof.analysis.readers.model import Alloc, CommRow, DeviceRow, LinkShare
from mindspeed_prof.jsonio import JsonableObject

__all__ = [
    "BOUNDS",
    "Alloc",
    "Bound",
    "Change",
    "Classified",
    "CommRow",
    "DeviceMeans",
    "DevicePer",
    "DeviceRow",
    "DeviceVerdict",
    "InventoryRow",
    "KernelRow",
    "LinkShare",
    "MemoryRow",
    "MemoryVerdict",
    "NoOpRow",
    "OpRow",
    "Peaks",
    "RangeRow",
    "Row",
    "RuntimeRow",
    "SideBySide",
    "StageOrRange",
    "StageRow",
    "StepRow",
    "Straggler",
    "StragglerKind",
    "World",
    "row_json",
    "to_json",
]

#: What a table row is about: a stage, or a custom range.
StageOrRange = Literal["stage", "range"]
#: What a straggler is slow at: a stage, a custom range, or (the verdict's) device compute.
StragglerKind = Literal["stage", "range", "device"]


class Row(msgspec.Struct, kw_only=True):
    """A row of a table; ``json()`` is its ``--json`` form."""

    def json(self) -> JsonableObject:
        out: JsonableObject = msgspec.to_builtins(self)
        return out


class StageRow(Row, kw_only=True):
    """One stage on one rank: executions, and total, mean and max ms per execution;
    ``no_op_ms``: of the total, the time no host operator ran (None: the capture records no
    operators)."""

    stage: str
    rank: int | None
    source: str = ""
    count: int
    total_ms: float
    mean_ms: float
    max_ms: float
    no_op_ms: float | None = None


class NoOpRow(Row, kw_only=True):
    """One stage on one rank, in captures that record host operators: of its ``total_ms``
    over ``count`` executions, ``no_op_ms`` ran no operator on any thread (host-side Python,
    waits, sleeps; ``share`` of the total, 0-1), and ``ranges``: the custom ranges inside the
    stage that hold that time (name -> ms, each range less the ranges nested in it; the
    largest first)."""

    stage: str
    rank: int | None
    source: str = ""
    count: int
    total_ms: float
    no_op_ms: float
    share: float
    ranges: dict[str, float] = {}


class StepRow(Row, kw_only=True):
    """One step on one rank: ``total`` the step's own length (None when only its stages were
    captured), ``stages`` each stage's ms in it, ``warmup`` a warmup step. In ``--json`` the
    stages are keys of the row beside ``total``."""

    rank: int | None
    source: str = ""
    step: int
    total: float | None = None
    stages: dict[str, float] = {}
    warmup: bool = False

    def json(self) -> JsonableObject:
        out: JsonableObject = {"rank": self.rank, "source": self.source, "step": self.step}
        if self.total is not None:
            out["total"] = self.total
        return {**out, **self.stages, "warmup": self.warmup}


class Straggler(Row, kw_only=True):
    """A rank slower than the others at a stage (``kind`` ``stage``) or custom range
    (``range``) in one step: its ``ms``, the median of the *other* ranks ``median_ms``, the
    ``ratio`` of the two and the time lost ``excess_ms``. In ``--json`` the name is under the
    kind (``{"stage": name}``)."""

    kind: StragglerKind
    name: str
    step: int
    rank: int | None
    source: str = ""
    ms: float
    median_ms: float
    ratio: float
    excess_ms: float

    @classmethod
    def of(
        cls,
        kind: StragglerKind,
        name: str,
        step: int,
        who: tuple[int | None, str],
        ms: float,
        others_ms: float,
    ) -> Straggler:
        """A rank (``who``: its rank and label) at ``ms`` in a step against ``others_ms``."""
        return cls(
            kind=kind,
            name=name,
            step=step,
            rank=who[0],
            source=who[1],
            ms=ms,
            median_ms=others_ms,
            ratio=ms / others_ms if others_ms else math.inf,
            excess_ms=ms - others_ms,
        )

    def json(self) -> JsonableObject:
        out = super().json()
        del out["kind"]
        out[self.kind] = out.pop("name")
        return out


class RangeRow(Row, kw_only=True):
    """One custom range (``mstx.range``, ``record_function``...) on one rank: executions,
    total, self (less the ranges nested in it on its thread), mean, p95 and max ms, and the
    ``stage`` it ran in ("a, b" for several, None unknown)."""

    name: str
    rank: int | None
    source: str = ""
    stage: str | None
    count: int
    total_ms: float
    self_ms: float
    mean_ms: float
    p95_ms: float
    max_ms: float


class OpRow(Row, kw_only=True):
    """A host operator: calls and self ms over every capture."""

    op: str
    count: int
    self_ms: float


class KernelRow(Row, kw_only=True):
    """A device kernel, copy or set: runs and device ms over every capture."""

    name: str
    count: int
    device_ms: float


class RuntimeRow(Row, kw_only=True):
    """A runtime or launch call (``cudaLaunchKernel``, ``aclrt*``): calls and host ms."""

    name: str
    count: int
    ms: float


class MemoryRow(Row, kw_only=True):
    """Peaks of one capture (``stage`` None) or of one stage in it (None: not recorded); the
    whole-capture row has the top allocating operators and the timeline
    (``[us, allocated(, reserved)]`` points). ``source`` here is where the figures come from
    (``trace``, ``timeline``, ``snapshot``, ``torch_npu``; see ``Memory``), not a host."""

    rank: int | None
    file: str
    source: str | None
    stage: str | None = None
    peak_allocated_bytes: float | None = None
    peak_reserved_bytes: float | None = None
    top_ops: list[Alloc] = []
    timeline: Sequence[Sequence[float]] = []

    def json(self) -> JsonableObject:
        """The row, its timeline's points the capture's own where they are lists (not copied:
        a rank's timeline is the bulk of its row, and every rank's is written), else made."""
        out: JsonableObject = msgspec.to_builtins(msgspec.structs.replace(self, timeline=[]))
        points = self.timeline
        out["timeline"] = points if isinstance(points, list) else list(points)
        return out


class InventoryRow(Row, kw_only=True):
    """One capture read: its file, kind, rank, folder group, size, events, steps and level."""

    file: str
    kind: str
    rank: int | None
    source: str = ""
    group: str
    bytes: int
    events: int
    steps: list[int]
    level: str | None = None


class Change(Row, kw_only=True):
    """A stage (``kind`` ``stage``) or custom range (``range``) on one rank in two runs: mean ms
    per execution in A (the baseline) and B, the relative ``change`` (None when either is
    missing or A's is 0), flagged as a regression or an improvement by ``compare``'s gate
    (``analysis.gate``: a shift in the steps' times that a rank test finds real, over the
    threshold and over the noise floor, a difference under ``noise_ms`` or 1% of A's step).
    ``a_steps_ms``/``b_steps_ms``: its time in each counted step of each run, what the gate
    compares; ``shift_ms`` (B - A, Hodges-Lehmann) and ``p`` (one-sided, B slower). In
    ``--json`` the name is under the kind (``{"stage": name}``; ranges: ``{"name": name}``)."""

    kind: StageOrRange
    name: str
    rank: int | None
    a_mean_ms: float | None
    b_mean_ms: float | None
    change: float | None
    regression: bool = False
    improvement: bool = False
    #: Executions in B (in A where B has none), and what the change costs over them:
    #: ``(b_mean - a_mean) * count`` ms (None when either mean is missing). Rows sort by it.
    count: int = 0
    impact_ms: float | None = None
    a_steps_ms: list[float] = []
    b_steps_ms: list[float] = []
    shift_ms: float | None = None
    p: float | None = None

    def json(self) -> JsonableObject:
        out = super().json()
        kind = out.pop("kind")
        out = {("stage" if kind == "stage" else "name"): out.pop("name"), **out}
        return out


class _Side(msgspec.Struct, kw_only=True):
    """One run's numbers in a ``SideBySide`` (None: not recorded); ``json()`` by field name."""

    def json(self) -> dict[str, float | None]:
        return {name: getattr(self, name) for name in self.__struct_fields__}


class DeviceMeans(_Side, kw_only=True):
    """Mean ms per (non-warmup) step of each device component."""

    compute_ms: float | None = None
    comm_ms: float | None = None
    overlap_ms: float | None = None
    memcpy_ms: float | None = None
    idle_ms: float | None = None


class Peaks(_Side, kw_only=True):
    """Peak allocated and reserved bytes over a rank's captures (None: not recorded)."""

    peak_allocated_bytes: float | None = None
    peak_reserved_bytes: float | None = None


class SideBySide(Row, kw_only=True):
    """One rank's device means or memory peaks in A and B; in ``--json`` flat, as ``a_<field>``
    and ``b_<field>``."""

    rank: int | None
    a: DeviceMeans | Peaks
    b: DeviceMeans | Peaks

    def json(self) -> JsonableObject:
        return {
            "rank": self.rank,
            **{f"a_{k}": v for k, v in self.a.json().items()},
            **{f"b_{k}": v for k, v in self.b.json().items()},
        }


#: What a device verdict can name, in the order ties are broken.
Bound = Literal["compute", "communication", "copy", "idle"]
BOUNDS: tuple[Bound, ...] = ("compute", "communication", "copy", "idle")
#: What device time is per: a step, or (no capture has steps) a whole capture.
DevicePer = Literal["step", "capture"]


class Classified(Row, kw_only=True):
    """What one rule of ``readers.classify`` classified over every capture: the ``rule``, the
    ``kind`` it gives (``comm``, ``memcpy``, ``other``, ``compute``), the device ``ms`` and
    runs (``kernels``) of the ops it decided."""

    rule: str
    kind: str
    ms: float
    kernels: int


class World(Row, kw_only=True):
    """A world size the captures record (Kineto's ``distributedInfo``, torch_npu's
    ``distributed_args``) and the ``ranks`` of that job captured."""

    world_size: int
    ranks: list[int | None]


class DeviceVerdict(Row, kw_only=True):
    """Mean per step over ranks, of the step on the device: ``compute_ms``, ``comm_ms`` (the
    communication not overlapped with compute), ``copy_ms`` (copies and other work neither
    compute nor communication covers), ``idle_ms`` (nothing ran: the host was late), their
    ``shares`` and the largest of them, ``bound`` (one of ``BOUNDS``); ``ranks`` and ``steps``
    averaged over. ``per``: ``step``, or ``capture`` where no capture has steps (each capture
    one unit). ``left_out``: captures without steps beside captures with steps (not averaged
    in). ``classified``: device time of the classification rules HTA does not share (DeepEP,
    NVSHMEM, the user's...) that classified anything."""

    bound: Bound
    compute_ms: float
    comm_ms: float
    copy_ms: float
    idle_ms: float
    shares: dict[str, float]
    ranks: int
    steps: int
    per: DevicePer = "step"
    left_out: list[str] = []
    classified: list[Classified] = []


class MemoryVerdict(Row, kw_only=True):
    """The highest ``peak_bytes`` allocated on any rank (``rank``; 0 where no capture records
    a peak), the device's ``capacity_bytes`` where a capture records it, and ``share`` of it;
    ``growth``: the memory growth finding's title, where a stage's peak grows step over step."""

    rank: int | None
    peak_bytes: float
    capacity_bytes: float | None = None
    share: float | None = None
    growth: str | None = None


def row_json(row: msgspec.Struct) -> JsonableObject:
    """A row as ``--json`` writes it."""
    out: JsonableObject = row.json() if isinstance(row, Row) else msgspec.to_builtins(row)
    return out


def to_json(rows: Sequence[msgspec.Struct]) -> list[JsonableObject]:
    """Rows as ``--json`` writes them."""
    return [row_json(r) for r in rows]
