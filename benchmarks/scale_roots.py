"""Roots of many ranks of detailed captures, made fast from templates, cached between runs.

``kineto_root(ranks)``: one level1 CUDA Kineto trace per rank (``testing.kineto``'s shape,
``MB_PER_RANK`` MB each, ``STEPS`` steps): a handful of templates (seeds) encoded once, each
rank's file its header (its rank) and a template's body. ``npu_root(ranks)``: one torch_npu text
export per rank, the real 2-rank capture of ``tests/fixtures/torch_npu`` (about 2.5 MB) with its
rank, and its communication matrix's links, renumbered.

Planted in both: ``slow_rank(n)`` takes 1.25x as long for everything (steps, stages, operators,
kernels); the link between ``slow_link(n)``'s two ranks is slow: their NCCL kernels take 4x as
long (Kineto); in torch_npu's matrix the link's transit time is 4x and its bandwidth a quarter,
and its two ranks' HCCS/SDMA bandwidth in ``communication.json`` 0.7x (one of seven peers 4x
slower).
A root is made once into ``cache_dir()`` (a ``.complete`` file marks it whole) and reused.
"""

from __future__ import annotations

import json
import lzma
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["MB_PER_RANK", "STEPS", "cache_dir", "kineto_root", "npu_root", "slow_link", "slow_rank"]

MB_PER_RANK = 5
STEPS = 4
_SEEDS = 6
_KERNELS_PER_STAGE = 430  # about 5 MB a rank at four steps
_BASE_NS = 1_790_000_000_000_000_000
_FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "torch_npu" / "text"


def slow_rank(ranks: int) -> int:
    return ranks * 5 // 8 + 1


def slow_link(ranks: int) -> tuple[int, int]:
    return ranks // 4 + 2, ranks // 4 + 3


def cache_dir() -> Path:
    return Path(
        os.environ.get("MINDSPEED_PROF_SCALE_CACHE")
        or Path(tempfile.gettempdir()) / "mindspeed-prof-scale-detailed"
    )


def _cached(name: str, make: Any) -> Path:
    root = cache_dir() / name
    if (root / ".complete").exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    make(root)
    (root / ".complete").write_text("")
    return root


def _events(seed: int, stretch: float, comm: float) -> list[dict[str, Any]]:
    from mindspeed_prof.testing.kineto import cuda_events

    events = list(
        cuda_events(
            rank=0, steps=STEPS, seed=seed, kernels_per_stage=_KERNELS_PER_STAGE, comm_scale=comm
        )
    )
    t0 = 1_000_000.0
    for e in events if stretch != 1.0 else ():  # x1.25: whole us stay exact
        if "ts" in e:
            e["ts"] = t0 + (e["ts"] - t0) * stretch
            e["dur"] = e["dur"] * stretch
    return events


def _body(events: list[dict[str, Any]]) -> bytes:
    return b', "traceEvents": ' + json.dumps(events).encode() + b"}"


def _header(rank: int, ranks: int) -> bytes:
    head = {
        "schemaVersion": 1,
        "baseTimeNanoseconds": _BASE_NS,
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": ranks},
        "deviceProperties": [{"id": 0, "name": "NVIDIA H100", "totalGlobalMem": 85e9}],
    }
    return json.dumps(head).encode()[:-1]


def kineto_root(ranks: int) -> Path:
    """``ranks`` level1 Kineto traces under ``<root>/integrated``."""

    def make(root: Path) -> None:
        folder = root / "integrated"
        folder.mkdir(parents=True)
        bodies = [_body(_events(seed, 1.0, 1.0)) for seed in range(_SEEDS)]
        slow = _body(_events(0, 1.25, 1.0))
        link = _body(_events(1, 1.0, 4.0))
        for rank in range(ranks):
            body = (
                slow
                if rank == slow_rank(ranks)
                else link
                if rank in slow_link(ranks)
                else bodies[rank % _SEEDS]
            )
            name = f"rank{rank}_node{rank // 8}_{4000 + rank}_step1.pt.trace.json"
            (folder / name).write_bytes(_header(rank, ranks) + body)

    return _cached(f"kineto-{ranks}", make)


def npu_root(ranks: int) -> Path:
    """``ranks`` torch_npu text exports (``rank<N>_ascend_pt`` folders) under ``<root>``."""

    def make(root: Path) -> None:
        src = _FIXTURE / "rank0_ascend_pt"
        files: dict[str, bytes] = {}
        for path in src.rglob("*"):
            if path.is_file():
                rel = str(path.relative_to(src))
                data = path.read_bytes()
                if rel.endswith(".xz"):
                    rel, data = rel[:-3], lzma.decompress(data)
                files[rel] = data
        info = json.loads(files.pop("profiler_info_0.json"))
        matrix = files.pop("ASCEND_PROFILER_OUTPUT/communication_matrix.json").decode()
        comm = files.pop("ASCEND_PROFILER_OUTPUT/communication.json").decode()
        steps = files.pop("ASCEND_PROFILER_OUTPUT/step_trace_time.csv").decode()
        root.mkdir(parents=True)
        for rank in range(ranks):
            folder = root / f"rank{rank}_node{rank // 8}_{5000 + rank}_ascend_pt"
            for rel, data in files.items():
                (folder / rel).parent.mkdir(parents=True, exist_ok=True)
                (folder / rel).write_bytes(data)
            (folder / f"profiler_info_{rank}.json").write_text(
                json.dumps({**info, "rank_id": rank})
            )
            out = folder / "ASCEND_PROFILER_OUTPUT"
            (out / "communication_matrix.json").write_text(_matrix(matrix, rank, ranks))
            (out / "communication.json").write_text(
                _slower(comm) if rank in slow_link(ranks) else comm
            )
            (out / "step_trace_time.csv").write_text(
                _stretched(steps, 1.25) if rank == slow_rank(ranks) else steps
            )

    return _cached(f"npu-{ranks}", make)


def _matrix(text: str, rank: int, ranks: int) -> str:
    """The matrix's ``0-k`` links as ``rank-peer`` (peers: ``rank``'s group of 8); the planted
    link 4x slower."""
    doc = json.loads(text)
    group = rank - rank % 8
    a, b = slow_link(ranks)
    for step in doc.values():
        for ops in step.values():
            for op, links in list(ops.items()):
                renamed = {}
                for key, row in links.items():
                    src, dst = (int(x) for x in key.split("-"))
                    src, dst = rank, group + (dst + rank) % 8
                    if {src, dst} == {a, b}:
                        row = {
                            **row,
                            "Transit Time(ms)": row["Transit Time(ms)"] * 4,
                            "Bandwidth(GB/s)": row["Bandwidth(GB/s)"] / 4,
                        }
                    renamed[f"{src}-{dst}"] = row
                ops[op] = renamed
    return json.dumps(doc)


def _slower(text: str) -> str:
    """``communication.json`` with HCCS and SDMA bandwidth 0.7x, their transit time 1/0.7x."""
    doc = json.loads(text)
    for step in doc.values():
        for ops in step.values():
            for op in ops.values():
                for link, row in op.get("Communication Bandwidth Info", {}).items():
                    if link in ("HCCS", "SDMA") and row.get("Bandwidth(GB/s)"):
                        row["Bandwidth(GB/s)"] *= 0.7
                        row["Transit Time(ms)"] /= 0.7
    return json.dumps(doc)


def _stretched(csv: str, factor: float) -> str:
    """``step_trace_time.csv`` with every time after the step column ``factor`` as long."""
    lines = csv.splitlines()
    out = [lines[0]]
    for line in lines[1:]:
        cells = line.split(",")
        out.append(",".join([cells[0]] + [_times(c, factor) for c in cells[1:]]))
    return "\n".join(out) + "\n"


def _times(cell: str, factor: float) -> str:
    return str(float(cell) * factor) if re.fullmatch(r"[0-9.]+", cell) else cell
