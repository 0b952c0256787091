"""What a reader returns: ranges, per-op times and device/memory facts of one capture."""

from __future__ import annotations

from collections.abc import MutableSequence, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import msgspec

from mindspeed_prof.analysis.readers.counters import Count
from mindspeed_prof.formats.header import CaptureHeader

__all__ = [
    "MAX_BYTES",
    "Alloc",
    "BadFile",
    "CommRow",
    "DeviceRow",
    "HcclOp",
    "HcclTasks",
    "LinkShare",
    "LaunchStats",
    "Memory",
    "NpuFacts",
    "NpuOp",
    "Range",
    "StreamIdle",
    "Tally",
    "TraceData",
    "merge_tallies",
    "tally",
]

#: Larger captures (after decompression) are refused with one line instead of read into memory.
MAX_BYTES = 1024**3


class BadFile(Exception):
    """A capture that cannot be read; the message is one line naming the file."""


class Range(NamedTuple):
    """A named span: ``kind`` is ``step``, ``stage`` or ``range`` (custom); times in us.

    ``rank`` is None when no source names it (shown as ``?``, never guessed as 0). ``source``
    is empty unless another capture claims the same rank and step: then it names this
    capture's host or folder, so the two are reported apart instead of added up.
    """

    rank: int | None
    kind: str
    name: str
    step: int | None
    ts: float
    dur: float
    source: str = ""
    tid: str = ""  # the recording thread, where known: ranges nest only within one thread
    #: Of ``dur``, the time (us) no host operator ran on any thread (Python, waits, sleeps):
    #: stage and custom ranges of captures that record operators; None elsewhere.
    bare: float | None = None


# ``gc=False``: rows of numbers and names that never refer back to what holds them (no cycle can
# pass through one); a rank holds hundreds, each 16 bytes less and none for the collector to walk.
class Tally(msgspec.Struct, array_like=True, gc=False):
    """How often something happened and how much it took: a host op's calls and self time (us),
    a kernel's runs and device time (us), an allocation site's allocations and bytes."""

    count: int = 0
    total: float = 0.0


def tally(into: dict[str, Tally], name: str, count: float = 1, total: float = 0.0) -> None:
    """Add ``count`` and ``total`` to ``into[name]``."""
    slot = into.get(name)
    if slot is None:
        slot = into[name] = Tally()
    slot.count += int(count)
    slot.total += total


def merge_tallies(into: dict[str, Tally], more: dict[str, Tally]) -> None:
    for name, t in more.items():
        tally(into, name, t.count, t.total)


class DeviceRow(msgspec.Struct, kw_only=True, gc=False):
    """Device time of one step (``stage`` None) or one stage run, in milliseconds.

    ``comm_ms`` is all communication, overlapped or not; ``overlap_ms`` the part that ran while
    computing; ``memcpy_ms`` copies and sets (None where the source folds them into the others);
    so the step on the device is ``compute + comm - overlap + memcpy + idle``. ``span_ms`` and
    ``busy_ms``: the device window and the time anything ran in it (None where unknown);
    ``idle_ms`` is the window less busy (torch_npu: its Free).
    torch_npu rows add ``comm_exposed_ms`` (Communication(Not Overlapped)), ``step_ms`` (its
    Stage column: the step on the device), ``bubble_ms``, ``preparing_ms`` and
    ``comm_exposed_no_recv_ms``. ``step`` None: work launched outside every step, or, with
    ``whole``, all the work of a capture without steps. ``rank``, ``source`` and ``warmup`` are
    the analysis's: a reader leaves them unset.
    """

    step: int | None
    stage: str | None = None
    compute_ms: float
    comm_ms: float
    overlap_ms: float
    idle_ms: float
    memcpy_ms: float | None = None
    span_ms: float | None = None
    busy_ms: float | None = None
    comm_exposed_ms: float | None = None
    step_ms: float | None = None
    bubble_ms: float | None = None
    preparing_ms: float | None = None
    comm_exposed_no_recv_ms: float | None = None
    rank: int | None = None
    source: str = ""
    warmup: bool = False
    whole: bool = False


class LinkShare(msgspec.Struct, kw_only=True, gc=False):
    """What one link type (``HCCS``, ``PCIE``, ``SIO``, ``RDMA``, ``SDMA``...) carried of a
    ``CommRow``: transit size (MB), transit time (ms) and their ratio in GB/s (None when the
    time is 0)."""

    size_mb: float
    time_ms: float
    bandwidth_gbps: float | None = None


class CommRow(msgspec.Struct, kw_only=True, gc=False):
    """Communication (torch_npu) per step, kind (``collective``, ``p2p``; ``link`` for a
    rank-to-rank link) and op type, in ms and MB. Times and sizes are None where the source
    does not give them.

    ``name`` is the op type as torch_npu names it (``hcom_allReduce_``, as ``top_kernels``
    lists it; see ``npu_text.comm_family``). ``elapse_ms``, ``wait_ms``, ``transit_ms``,
    ``sync_ms`` and ``idle_ms`` are torch_npu's communication analysis summed over the
    ``count`` ops; a profiler db without ``analysis.db`` gives elapse only (``wait_ms`` None:
    the db does not mark the plane torch_npu reads wait from). ``size_mb`` and
    ``bandwidth_gbps`` are RDMA plus SDMA (SDMA is HCCS + PCIE + SIO, so the two cover every
    byte once); ``links`` breaks them down per link type that carried data (``LinkShare``;
    None where the source has no breakdown). Rows of kind ``link`` are the communication
    matrix: ``name`` the group's op, ``link`` (src-dst), ``transport``, ``size_mb``,
    ``transit_ms`` and ``bandwidth_gbps``. ``rank`` and ``source`` are the analysis's (as on
    ``DeviceRow``): a reader leaves them unset.
    """

    name: str
    kind: str
    step: int | None
    count: int = 0
    elapse_ms: float | None = None
    wait_ms: float | None = None
    transit_ms: float | None = None
    sync_ms: float | None = None
    idle_ms: float | None = None
    size_mb: float | None = None
    bandwidth_gbps: float | None = None
    links: dict[str, LinkShare] | None = None
    link: str | None = None  # src-dst, on link rows
    transport: str | None = None
    rank: int | None = None  # the analysis's
    source: str = ""  # the analysis's


class Alloc(msgspec.Struct, kw_only=True, gc=False):
    """An allocating operator (or call site): allocations, bytes in all, the largest one."""

    op: str
    count: int
    bytes: int
    max_bytes: int | None = None


class Memory(msgspec.Struct, kw_only=True):
    """What one capture says about memory (bytes): where from (``trace``, ``timeline``,
    ``snapshot``, ``torch_npu``), peaks, peaks per stage, the top allocating operators and a
    timeline of ``[us, allocated]`` points (``[us, allocated, reserved]`` from torch_npu), thinned
    with the peak kept. torch_npu adds the allocator ``component`` the peaks are of, every
    component's peaks and the peak per CANN module."""

    source: str
    peak_allocated_bytes: float | None = None
    peak_reserved_bytes: float | None = None
    by_stage: dict[str, float] = {}
    top_ops: list[Alloc] = []
    timeline: Sequence[Sequence[float]] = []
    component: str | None = None
    components: dict[str, dict[str, int]] = {}
    modules: dict[str, int] = {}


class HcclOp(msgspec.Struct, kw_only=True):
    """One communication operator of a torch_npu capture (``communication.json``, analysis.db's
    CommAnalyzer tables): its kind (``collective``, ``p2p``), step, time and what it moved over
    SDMA (on-server links) and RDMA (between servers), in ms and in MB as those files count them
    (10**6 bytes: a 28,647,232-byte transfer is 28.647232 MB); None where the source does not
    say."""

    name: str
    kind: str
    step: int | None = None
    elapse_ms: float | None = None
    sdma_mb: float | None = None
    sdma_ms: float | None = None
    rdma_mb: float | None = None
    rdma_ms: float | None = None


class HcclTasks(msgspec.Struct, kw_only=True):
    """The copy tasks of one communication operator that move data over a link (``Memcpy`` and
    ``Reduce_Inline`` tasks with transport SDMA and a link other than ON_CHIP; trace_view's HCCL
    lane, the db's COMMUNICATION_TASK_INFO): ``sizes`` maps a task size in bytes to
    ``[tasks, us]``, the count of such tasks and their device time."""

    op: str
    sizes: dict[int, list[float]] = {}


class NpuOp(msgspec.Struct, kw_only=True):
    """Device operators of one name, core and shapes (kernel_details.csv, the db's
    COMPUTE_TASK_INFO): runs, device time (us, total and longest), how many ran with OP State
    ``static`` out of those with a state, and each PMU ratio's sum over the runs (a mean is the
    sum over ``count``; a run without the ratio counts 0, as msprof-analyze counts it)."""

    name: str
    type: str
    core: str
    input_shapes: str = ""
    output_shapes: str = ""
    input_dtypes: str = ""
    output_dtypes: str = ""
    count: int = 0
    total_us: float = 0.0
    max_us: float = 0.0
    static: int = 0
    stated: int = 0
    ratios: dict[str, float] = {}


class NpuFacts(msgspec.Struct, kw_only=True):
    """What the Ascend findings (``analysis.findings.npu``) read from a torch_npu capture.

    ``env``: the environment variables torch_npu recorded (ENV_VARIABLES of
    profiler_metadata.json or the db's META_DATA; None where it records none). ``hccl``: each
    communication operator. ``tasks``: each operator's link copy tasks by size (None where the
    capture has no task detail, as at level0). ``ops``: device operators by name and shapes.
    ``api_max_us``: the longest call of each CANN API (us). ``launch_sync``: in CANN API order,
    [node launches, stream synchronizations, synchronizations right after a launch] (None where
    the order is not recorded). ``sources``: the file or table each of these came from.
    """

    env: dict[str, str] | None = None
    hccl: list[HcclOp] = []
    tasks: list[HcclTasks] | None = None
    ops: list[NpuOp] = []
    api_max_us: dict[str, float] = {}
    launch_sync: list[int] | None = None
    sources: dict[str, str] = {}


class StreamIdle(msgspec.Struct, kw_only=True):
    """One CUDA stream in one step (``step`` None: a trace without steps): its ops, their time
    (``busy_ms``, summed) and the gaps before them split as HTA's idle time breakdown splits a
    stream's idle time: ``host_wait_ms`` (the op was launched after the one before it ended,
    and before it started), ``kernel_wait_ms`` (else a gap under ``device.KERNEL_WAIT_US``),
    ``other_ms`` (the rest).
    A gap belongs to the step of the op that ends it. ``device`` and ``stream``: the trace's
    names (Kineto's pid and stream)."""

    step: int | None
    device: str
    stream: str
    ops: int
    busy_ms: float
    host_wait_ms: float = 0.0
    kernel_wait_ms: float = 0.0
    other_ms: float = 0.0


class LaunchStats(msgspec.Struct, kw_only=True):
    """Kernel launches of one step as HTA's kernel launch stats see them: device ops matched to
    their launch call (``device.LAUNCH_CALLS``), the calls' and the ops' time, the ops that ran
    shorter than their call (``short``, with both times), ops under ``device.TINY_US``, the
    launch delays (op start less call end, at least 0), calls over ``device.SLOW_CALL_US`` and
    delays over ``device.LATE_US``; ``starved``: the short ops that started within
    ``device.PROMPT_US`` of the end of a call of at most ``device.SLOW_CALL_US`` (the device
    waited for them), with both times."""

    step: int | None
    launches: int
    cpu_ms: float
    gpu_ms: float
    short: int = 0
    short_cpu_ms: float = 0.0
    short_gpu_ms: float = 0.0
    tiny: int = 0
    delay_ms: float = 0.0
    slow_calls: int = 0
    late: int = 0
    starved: int = 0
    starved_cpu_ms: float = 0.0
    starved_gpu_ms: float = 0.0


@dataclass
class TraceData:
    """What one capture holds, per rank.

    ``ops``, ``kernels``, ``runtime``: host operators (self time), device kernels (device time)
    and runtime/launch calls (host time) by name, in microseconds. ``device``, ``comm``,
    ``memory``: see ``DeviceRow``, ``CommRow``, ``Memory``.
    ``npu``: the Ascend-specific facts of a torch_npu capture (``NpuFacts``), else None.
    ``stream_idle``, ``launch_stats``: CUDA streams' idle time and kernel launches per step
    (``StreamIdle``, ``LaunchStats``); ``classified``: what each classification rule counted.
    ``problems``: one line per part of the capture that could not be read (the rest was).
    ``notes``: one line per fact about how a wholly read capture was read (no ProfilerStep
    ranges, approximate self times, device events that are not broken down): not problems.
    """

    path: Path
    kind: str  # torch | spans | db | npu | memory
    rank: int | None
    group: str  # the directory under the save root: integrated, actor_update, ...
    size: int
    events: int = 0
    #: A reader's ranges (a ``range_table.RangeTable`` where they can be many).
    ranges: MutableSequence[Range] = field(default_factory=list)
    ops: dict[str, Tally] = field(default_factory=dict)
    kernels: dict[str, Tally] = field(default_factory=dict)
    runtime: dict[str, Tally] = field(default_factory=dict)
    device: list[DeviceRow] = field(default_factory=list)
    comm: list[CommRow] = field(default_factory=list)
    memory: Memory | None = None
    npu: NpuFacts | None = None
    #: The capture's header (its own, or for another tool's capture what its reader found).
    meta: CaptureHeader = field(default_factory=CaptureHeader)
    #: The host (or, failing that, the folder) the capture came from.
    source: str = ""
    #: What tells this capture apart from another that claims the same rank and step (a
    #: host, a folder, a role: ``readers.ranks``); "" when none does.
    clash_label: str = ""
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    stream_idle: list[StreamIdle] = field(default_factory=list)
    launch_stats: list[LaunchStats] = field(default_factory=list)
    #: Per rule of ``readers.classify`` that classified a device op of the capture: the ops
    #: and their device time (us).
    classified: dict[str, Tally] = field(default_factory=dict)
    #: Counters per (step, stage, name) (``prof.count``; ``readers.counters``).
    counters: list[Count] = field(default_factory=list)

    @property
    def holds_nothing(self) -> bool:
        """Read whole, but no range, op, kernel, runtime call, device row, collective,
        memory or counter in it."""
        return not (
            self.ranges
            or self.ops
            or self.kernels
            or self.runtime
            or self.device
            or self.comm
            or self.memory is not None
            or self.counters
        )
