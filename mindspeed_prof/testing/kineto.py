"""CUDA-format Kineto traces for tests and benchmarks, shaped like torch.profiler's on a GPU.

Host: ``ProfilerStep#N`` and stage annotations, ``aten::`` ops, ``cudaLaunchKernel``/
``cudaMemcpyAsync`` calls carrying correlation ids. Device: compute kernels on one stream, NCCL
kernels on another (overlapping compute at times), memcpy/memset on a third, with launch latency,
queueing behind earlier work on a stream, and idle gaps. Times are whole microseconds, as older
Kineto wrote them (HTA rounds finer times down, which would blur a comparison with it).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from mindspeed_prof.config.schema import STAGES

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing's from Python 3.11

__all__ = [
    "Shape",
    "cuda_events",
    "cuda_trace",
    "host_events",
    "span",
    "write_cuda_trace",
    "write_host_trace",
    "write_trace",
]

_COMPUTE = [
    "ampere_sgemm_128x64_tn",
    "void at::native::vectorized_elementwise_kernel<4>",
    "void at::native::reduce_kernel<512, 1>",
    "volta_fp16_s884gemm_fp16_256x128",
]
_COMM = [
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
    "ncclKernel_AllGather_RING_LL_Sum_int8_t",
    "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL",
]
_COPY = ["Memcpy HtoD (Pageable -> Device)", "Memcpy DtoH (Device -> Pinned)", "Memset (Device)"]


class Shape(TypedDict, total=False):
    """``cuda_events``'s arguments after ``rank``, for the functions that pass them on (each
    left out takes ``cuda_events``' default)."""

    steps: int
    seed: int
    kernels_per_stage: int
    with_steps: bool
    stages: tuple[str, ...]
    comm_scale: float


def cuda_trace(rank: int = 0, **shape: Unpack[Shape]) -> dict[str, Any]:
    """A trace object (``traceEvents`` etc.) for ``rank``: ``cuda_events(rank, **shape)``."""
    return {**_header(rank), "traceEvents": list(cuda_events(rank, **shape))}


def _header(rank: int) -> dict[str, object]:
    return {
        "schemaVersion": 1,
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2},
        "deviceProperties": [{"id": rank, "name": "NVIDIA H100", "totalGlobalMem": 85e9}],
    }


def cuda_events(
    rank: int = 0,
    steps: int = 4,
    seed: int = 0,
    kernels_per_stage: int = 12,
    with_steps: bool = True,
    stages: tuple[str, ...] = STAGES,
    comm_scale: float = 1.0,
) -> Iterator[dict[str, Any]]:
    """CUDA events for ``rank``, a step at a time: ``steps`` steps, each a run of ``stages``
    (annotations: other trainers' names make them custom ranges) of ``kernels_per_stage``
    kernels; NCCL kernels ``comm_scale`` times as long (a slow link), queued on their stream as
    any kernel."""
    rng = random.Random(seed * 1000 + rank)
    host, dev = 100 + rank, rank
    ev: list[dict[str, Any]] = []
    free = {7: 0.0, 13: 0.0, 20: 0.0}  # stream -> when its last op ends
    corr = 1000
    t = 1_000_000.0

    def launch(name: str, stream: int, dur: float, cat: str, runtime: str) -> None:
        nonlocal t, corr
        corr += 1
        call = float(rng.randint(3, 8))
        ev.append(
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": runtime,
                "pid": host,
                "tid": 1,
                "ts": t,
                "dur": call,
                "args": {"correlation": corr, "External id": corr},
            }
        )
        start = max(t + rng.randint(5, 15), free[stream])
        free[stream] = start + dur
        ev.append(
            {
                "ph": "X",
                "cat": cat,
                "name": name,
                "pid": dev,
                "tid": stream,
                "ts": start,
                "dur": dur,
                "args": {"correlation": corr, "External id": corr, "stream": stream, "device": dev},
            }
        )
        t += call + rng.randint(1, 4)

    for step in range(1, steps + 1):
        step_start = t
        t += 5
        for stage in stages:
            stage_start = t
            for _ in range(kernels_per_stage):
                op_start = t
                t += 2
                r = rng.random()
                if r < 0.25:
                    launch(
                        rng.choice(_COMM),
                        13,
                        rng.randint(40, 400) * comm_scale,
                        "kernel",
                        "cudaLaunchKernel",
                    )
                elif r < 0.4:
                    name = rng.choice(_COPY)
                    launch(
                        name,
                        20,
                        rng.randint(5, 60),
                        "gpu_memset" if name.startswith("Memset") else "gpu_memcpy",
                        "cudaMemsetAsync" if name.startswith("Memset") else "cudaMemcpyAsync",
                    )
                else:
                    launch(
                        rng.choice(_COMPUTE), 7, rng.randint(10, 200), "kernel", "cudaLaunchKernel"
                    )
                ev.append(
                    {
                        "ph": "X",
                        "cat": "cpu_op",
                        "name": "aten::mm",
                        "pid": host,
                        "tid": 1,
                        "ts": op_start,
                        "dur": t - op_start,
                        "args": {},
                    }
                )
                if rng.random() < 0.15:
                    t += rng.randint(100, 900)  # host busy elsewhere: the device idles
            ev.append(
                {
                    "ph": "X",
                    "cat": "user_annotation",
                    "name": stage,
                    "pid": host,
                    "tid": 1,
                    "ts": stage_start,
                    "dur": t - stage_start,
                }
            )
            t += 3
        t = max(t, max(free.values()) - rng.randint(0, 300))  # the next step overlaps a little
        if with_steps:
            ev.append(
                {
                    "ph": "X",
                    "cat": "user_annotation",
                    "name": f"ProfilerStep#{step}",
                    "pid": host,
                    "tid": 1,
                    "ts": step_start,
                    "dur": t - step_start,
                }
            )
        t += 10
        yield from ev
        ev.clear()
    yield {"ph": "M", "name": "process_name", "pid": dev, "args": {"name": f"GPU {dev}"}}


def write_cuda_trace(path: Path, rank: int = 0, **shape: Unpack[Shape]) -> Path:
    """``cuda_events(rank, **shape)`` as a trace file, written an event at a time (any size,
    little memory)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        f.write(json.dumps(_header(rank))[:-1] + ', "traceEvents": [')
        for i, event in enumerate(cuda_events(rank, **shape)):
            f.write(", " + json.dumps(event) if i else json.dumps(event))
        f.write("]}")
    return path


_HOST_OPS = [  # a top-level op and the ops it calls, as a CPU step's trace nests them
    ("aten::linear", ("aten::t", "aten::addmm")),
    ("aten::layer_norm", ("aten::native_layer_norm",)),
    ("aten::gelu", ()),
    ("aten::add_", ()),
    ("aten::matmul", ("aten::mm",)),
]


def host_events(
    steps: int = 4, seed: int = 0, ops_per_stage: int = 100
) -> Iterator[dict[str, Any]]:
    """Host ops only (``cpu_op``, no device), as a CPU training step or a host-heavy trace
    writes them, a step at a time: ``steps`` steps of the six stages, each ``ops_per_stage``
    top-level ops with the ops they call nested inside, on the main thread and, for one op in
    four, an autograd thread; gaps between top-level ops. About 150 bytes an event."""
    rng = random.Random(seed)
    t = 1_000_000.0
    ev: list[dict[str, Any]] = []

    def op(name: str, tid: int, ts: float, dur: float) -> None:
        ev.append(
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": name,
                "pid": 100,
                "tid": tid,
                "ts": ts,
                "dur": dur,
                "args": {"Sequence number": len(ev)},
            }
        )

    for step in range(1, steps + 1):
        step_start = t
        for stage in STAGES:
            stage_start = t
            for _ in range(ops_per_stage):
                name, calls = rng.choice(_HOST_OPS)
                tid = 2 if rng.random() < 0.25 else 1
                start = t
                t += 1
                for call in calls:
                    dur = float(rng.randint(2, 30))
                    op(call, tid, t, dur)
                    t += dur + 1
                op(name, tid, start, t + 1 - start)
                t += 1 + rng.randint(1, 20)
            ev.append(
                {
                    "ph": "X",
                    "cat": "user_annotation",
                    "name": stage,
                    "pid": 100,
                    "tid": 1,
                    "ts": stage_start,
                    "dur": t - stage_start,
                }
            )
            t += 3
        ev.append(
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": f"ProfilerStep#{step}",
                "pid": 100,
                "tid": 1,
                "ts": step_start,
                "dur": t - step_start,
            }
        )
        t += 10
        yield from ev
        ev.clear()


def write_host_trace(path: Path, steps: int = 4, ops_per_stage: int = 100) -> Path:
    """``host_events`` as a Kineto trace file, written an event at a time (any size)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        f.write(json.dumps(_header(0))[:-1] + ', "traceEvents": [')
        for i, event in enumerate(host_events(steps, ops_per_stage=ops_per_stage)):
            f.write(", " + json.dumps(event) if i else json.dumps(event))
        f.write("]}")
    return path


def span(
    name: str, ts: float, dur: float, cat: str = "user_annotation", tid: int = 1, **args: object
) -> dict[str, Any]:
    """One complete (``X``) event."""
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "ts": ts,
        "dur": dur,
        "pid": 1,
        "tid": tid,
        **({"args": args} if args else {}),
    }


def write_trace(path: Path, events: Sequence[Mapping[str, object]], **fields: object) -> Path:
    """A Chrome trace file of ``events`` with extra top-level ``fields``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"traceEvents": events, **fields}))
    return path
