"""Write the corpus sets that are generated or derived rather than copied (``tests/fixtures/
corpus/SOURCES.md`` says which and from what): run from the repository root,
``python scripts/corpus_generated.py``; the same bytes every time (fixed seeds, no clock).

- ``chrome_rl_phases_4rank``: an RL framework's phase tracer as Chrome's trace format
  documents it (``B``/``E`` pairs, ``"pid": "rank3"`` strings, string tids, no ``cat``,
  ``C`` counters, ``i`` instants), one file per rank, rank 2 slow in ``train``.
- ``chrome_vendor_bigtid``: a vendor tool's JSON Array Format trace: ids above 2**63, a process
  named ``[rank1] python3``, categories no torch trace uses.
- ``msprof_export``: a CANN ``msprof`` export folder as CANN's documentation lays it out
  (``msprof_*.json`` timeline, ``op_summary``, ``op_statistic``, ``task_time``,
  ``api_statistic``), with runtime control tasks and the CANN lane's ``aclnn`` calls.
- ``kineto_cuda_launches_no_device``: ``kineto_cuda_simple_add`` with its device events
  removed, as a trace with CUPTI off is written.
- ``kineto_cuda_host_memory_only``: ``kineto_cuda_h100_bert_metadata_first`` with its device
  ``[memory]`` events removed: host memory only.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import lzma
import random
from pathlib import Path
from typing import Any

CORPUS = Path("tests/fixtures/corpus")
BASE_US = 1_767_225_600_000_000.0  # 2026-01-01T00:00:00Z in us


def _store(path: Path, raw: bytes) -> None:
    """Written as the corpus stores files: ``.xz`` appended past 16 KiB (``.gz`` kept)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if len(raw) > 16 << 10 and not path.name.endswith(".gz"):
        path = path.with_name(path.name + ".xz")
        raw = lzma.compress(raw, preset=9 | lzma.PRESET_EXTREME)
    path.write_bytes(raw)


def _json(doc: Any) -> bytes:
    return json.dumps(doc, indent=1).encode()


def rl_phases(dest: Path) -> None:
    """Four ranks, three steps: rollout, the transitions around training, training."""
    rng = random.Random(40)
    phases = [  # (thread, name, ms)
        ("trainer", "rollout", 5200.0),
        ("trainer", "engine sleep", 310.0),
        ("trainer", "actor model wake up", 420.0),
        ("trainer", "compute log prob", 640.0),
        ("trainer", "train", 2100.0),
        ("trainer", "actor model sleep", 380.0),
        ("trainer", "engine wake up", 290.0),
        ("trainer", "update weights from distributed", 1450.0),
    ]
    for rank in range(4):
        pid = f"rank{rank}"
        events: list[dict[str, Any]] = [
            {
                "name": "thread_name",
                "ph": "M",
                "pid": pid,
                "tid": "trainer",
                "args": {"name": "trainer loop"},
            },
            {
                "name": "thread_name",
                "ph": "M",
                "pid": pid,
                "tid": "engine",
                "args": {"name": "rollout engine"},
            },
        ]
        t = BASE_US + rank * 137.0
        for step in range(1, 4):
            events.append(
                {
                    "name": "step",
                    "ph": "B",
                    "pid": pid,
                    "tid": "trainer",
                    "ts": t,
                    "args": {"step": step},
                }
            )
            start = t
            for tid, name, ms in phases:
                dur = ms * 1000 * rng.uniform(0.97, 1.03)
                if name == "train" and rank == 2:
                    dur *= 1.6  # the straggler
                events.append({"name": name, "ph": "B", "pid": pid, "tid": tid, "ts": t})
                if name == "rollout":  # the engine's own batches inside the rollout
                    e = t + 50.0
                    for batch in range(3):
                        d = dur / 3 - 120.0
                        events.append(
                            {
                                "name": f"decode batch {batch}",
                                "ph": "B",
                                "pid": pid,
                                "tid": "engine",
                                "ts": round(e, 3),
                            }
                        )
                        events.append(
                            {
                                "name": f"decode batch {batch}",
                                "ph": "E",
                                "pid": pid,
                                "tid": "engine",
                                "ts": round(e + d, 3),
                            }
                        )
                        e += d + 100.0
                t += dur
                events.append({"ph": "E", "pid": pid, "tid": tid, "ts": round(t, 3)})
                events.append(
                    {
                        "name": "gpu_memory",
                        "ph": "C",
                        "pid": pid,
                        "ts": round(t, 3),
                        "args": {"allocated_gib": round(rng.uniform(20, 60), 2)},
                    }
                )
                t += 15.0
            events.append(
                {
                    "name": "weights version",
                    "ph": "i",
                    "s": "p",
                    "pid": pid,
                    "tid": "trainer",
                    "ts": round(t, 3),
                    "args": {"version": step},
                }
            )
            events.append(
                {
                    "ph": "E",
                    "pid": pid,
                    "tid": "trainer",
                    "ts": round(t, 3),
                    "args": {"step_ms": round((t - start) / 1000, 3)},
                }
            )
            t += 40.0
        for e in events:
            if "ts" in e:
                e["ts"] = round(e["ts"], 3)
        host = f"{0x5EED + rank:x}"
        _store(dest / f"phase_trace_{host}.json", _json({"traceEvents": events}))


def vendor_bigtid(dest: Path) -> None:
    """One rank's host and device lanes with ids past 2**63 (a JSON Array Format list)."""
    rng = random.Random(63)
    host, device = 4242, 2**64 - 59
    lanes = [2**63 + 17, 2**64 - 1]
    events: list[dict[str, Any]] = [
        {
            "name": "process_name",
            "ph": "M",
            "pid": host,
            "tid": 0,
            "args": {"name": "[rank1] python3"},
        },
        {
            "name": "process_name",
            "ph": "M",
            "pid": device,
            "tid": 0,
            "args": {"name": "[rank1] accelerator 0"},
        },
        {
            "name": "thread_name",
            "ph": "M",
            "pid": device,
            "tid": lanes[0],
            "args": {"name": "compute engine"},
        },
        {
            "name": "thread_name",
            "ph": "M",
            "pid": device,
            "tid": lanes[1],
            "args": {"name": "copy engine"},
        },
    ]
    t = BASE_US + 5_000.0
    for i in range(40):
        call = rng.uniform(4, 12)
        events.append(
            {
                "name": "zeCommandListAppendLaunchKernel",
                "ph": "X",
                "cat": "L0 API",
                "pid": host,
                "tid": 77,
                "ts": round(t, 3),
                "dur": round(call, 3),
            }
        )
        kernel = rng.uniform(20, 400)
        lane = lanes[i % 5 == 4]
        name = "memcpy_h2d" if lane == lanes[1] else f"gemm_kernel_{i % 3}"
        events.append(
            {
                "name": name,
                "ph": "X",
                "cat": "Device Op",
                "pid": device,
                "tid": lane,
                "ts": round(t + call + 3, 3),
                "dur": round(kernel, 3),
                "args": {"queue": i % 2},
            }
        )
        t += call + kernel + rng.uniform(5, 30)
        if i % 10 == 9:
            events.append(
                {"name": "sync", "ph": "i", "s": "t", "pid": host, "tid": 77, "ts": round(t, 3)}
            )
    _store(dest / "accelerator_trace.json", json.dumps(events).encode())


def _csv(rows: list[dict[str, Any]]) -> bytes:
    out = io.StringIO()
    w = csv.DictWriter(out, list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return out.getvalue().encode()


#: The op_summary columns msprof writes (CANN 8; PMU columns left out, as at --aic-metrics off).
_SUMMARY = [
    "Device_id",
    "Model ID",
    "Task ID",
    "Stream ID",
    "Infer ID",
    "Op Name",
    "OP Type",
    "OP State",
    "Task Type",
    "Task Start Time(us)",
    "Task Duration(us)",
    "Task Wait Time(us)",
    "Block Dim",
    "Mix Block Dim",
    "HF32 Eligible",
    "Input Shapes",
    "Input Data Types",
    "Input Formats",
    "Output Shapes",
    "Output Data Types",
    "Output Formats",
    "Context ID",
]


def msprof_export(dest: Path) -> None:
    """A standalone msprof export of a small aclnn program: matmuls, adds, a copy, and the
    runtime's control tasks, in the timeline and every CSV of ``mindstudio_profiler_output``."""
    rng = random.Random(8)
    out = dest / "PROF_000001_20260101000000123_KCNQGHLIEPBFAJOM" / "mindstudio_profiler_output"
    stamp = "20260101000105"
    ops = [
        ("aclnnMatmul_MatMulCommon_MatMulV2", "MatMulV2", "AI_CORE", "128,1024;1024,4096"),
        ("aclnnAdd_AddAiCore_Add", "Add", "AI_VECTOR_CORE", "128,4096;128,4096"),
        (
            "aclnnInplaceCopy_TensorMoveAiCore_TensorMove",
            "TensorMove",
            "AI_VECTOR_CORE",
            "128,4096",
        ),
    ]
    control = ["TASK_TIMEOUT_SET", "EVENT_RECORD", "EVENT_WAIT"]
    t = BASE_US + 100_000.0
    summary, timeline, cann = [], [], []
    task = 0
    for i in range(30):
        if i % 10 == 0:
            kind = control[(i // 10) % 3]
            summary.append(
                dict(
                    zip(
                        _SUMMARY,
                        [
                            0,
                            4294967295,
                            task,
                            2,
                            "N/A",
                            kind,
                            "N/A",
                            "N/A",
                            kind,
                            f"{t:.3f}\t",
                            "1.02",
                            "0",
                            0,
                            0,
                            "NO",
                            "N/A",
                            "N/A",
                            "N/A",
                            "N/A",
                            "N/A",
                            "N/A",
                            "N/A",
                        ],
                    )
                )
            )
            timeline.append(("Ascend Hardware", kind, t, 1.02, kind))
            task += 1
            t += 3.0
        name, op_type, core, shapes = ops[i % 3]
        api = rng.uniform(15, 40)
        cann.append((f"AscendCL@{name.split('_')[0]}", t - api - 5, api))
        dur = {
            "MatMulV2": rng.uniform(180, 260),
            "Add": rng.uniform(9, 14),
            "TensorMove": rng.uniform(6, 9),
        }[op_type]
        summary.append(
            dict(
                zip(
                    _SUMMARY,
                    [
                        0,
                        4294967295,
                        task,
                        2,
                        "N/A",
                        name,
                        op_type,
                        "dynamic",
                        core,
                        f"{t:.3f}\t",
                        f"{dur:.3f}",
                        f"{rng.uniform(1, 4):.3f}",
                        20,
                        0,
                        "NO",
                        f'"{shapes}"',
                        "FLOAT16",
                        "ND",
                        '"128,4096"',
                        "FLOAT16",
                        "ND",
                        "N/A",
                    ],
                )
            )
        )
        timeline.append(("Ascend Hardware", name, t, dur, core))
        task += 1
        t += dur + rng.uniform(2, 6)
    pids = {"Ascend Hardware": 2001, "CANN": 2002, "Overlap Analysis": 2003}
    events: list[dict[str, Any]] = []
    for proc, pid in pids.items():
        events.append(
            {"name": "process_name", "pid": pid, "tid": 0, "ph": "M", "args": {"name": proc}}
        )
    for proc, name, ts, dur, task_type in timeline:
        events.append(
            {
                "name": name,
                "pid": pids[proc],
                "tid": 2,
                "ts": f"{ts:.3f}",
                "dur": round(dur, 3),
                "ph": "X",
                "args": {"Task Type": task_type, "Physic Stream Id": 2},
            }
        )
    for name, ts, dur in cann:
        events.append(
            {
                "name": name,
                "pid": pids["CANN"],
                "tid": 7001,
                "ts": f"{ts:.3f}",
                "dur": round(dur, 3),
                "ph": "X",
                "args": {"level": "acl"},
            }
        )
    busy = [(ts, ts + dur) for _, n, ts, dur, _ in timeline if n not in control]
    for start, end in busy:
        events.append(
            {
                "name": "Computing",
                "pid": pids["Overlap Analysis"],
                "tid": 1,
                "ts": f"{start:.3f}",
                "dur": round(end - start, 3),
                "ph": "X",
                "args": {},
            }
        )
    _store(out / f"msprof_{stamp}.json", _json(events))
    _store(out / f"op_summary_{stamp}.csv", _csv(summary))
    stats: dict[tuple[str, str], list[float]] = {}
    for row in summary:
        if row["Task Type"] not in control:
            stats.setdefault((row["OP Type"], row["Task Type"]), []).append(
                float(row["Task Duration(us)"])
            )
    total = sum(sum(v) for v in stats.values())
    _store(
        out / f"op_statistic_{stamp}.csv",
        _csv(
            [
                {
                    "Device_id": 0,
                    "Model Name": "N/A",
                    "OP Type": k[0],
                    "Core Type": k[1],
                    "Count": len(v),
                    "Total Time(us)": f"{sum(v):.3f}",
                    "Min Time(us)": f"{min(v):.3f}",
                    "Avg Time(us)": f"{sum(v) / len(v):.3f}",
                    "Max Time(us)": f"{max(v):.3f}",
                    "Ratio(%)": f"{100 * sum(v) / total:.3f}",
                }
                for k, v in sorted(stats.items())
            ]
        ),
    )
    _store(
        out / f"task_time_{stamp}.csv",
        _csv(
            [
                {
                    "Device_id": 0,
                    "kernel_name": r["Op Name"],
                    "kernel_type": r["Task Type"],
                    "stream_id": 2,
                    "task_id": r["Task ID"],
                    "task_time(us)": r["Task Duration(us)"],
                    "task_start(us)": r["Task Start Time(us)"],
                    "task_stop(us)": "%.3f\t"
                    % (float(r["Task Start Time(us)"]) + float(r["Task Duration(us)"])),
                }
                for r in summary
            ]
        ),
    )
    apis: dict[str, list[float]] = {}
    for name, _, dur in cann:
        apis.setdefault(name.split("@")[1], []).append(dur)
    _store(
        out / f"api_statistic_{stamp}.csv",
        _csv(
            [
                {
                    "Device_id": 0,
                    "Level": "AscendCL",
                    "API Name": k,
                    "Time(us)": f"{sum(v):.3f}",
                    "Count": len(v),
                    "Avg(us)": f"{sum(v) / len(v):.3f}",
                    "Min(us)": f"{min(v):.3f}",
                    "Max(us)": f"{max(v):.3f}",
                    "Variance": "0",
                }
                for k, v in sorted(apis.items())
            ]
        ),
    )


def _trace(path: Path) -> dict[str, Any]:
    raw = path.read_bytes()
    if path.suffix == ".xz":
        raw = lzma.decompress(raw)
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    doc: dict[str, Any] = json.loads(raw)
    return doc


def launches_no_device(dest: Path) -> None:
    """The device's events (kernels, copies, sets, GPU annotations, launch flows) removed."""
    src = CORPUS / "kineto_cuda_simple_add" / "benchmark_result_493459_1694039959_trace.json.gz"
    doc = _trace(src)
    gone = {"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation", "ac2g"}
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("cat") not in gone]
    _store(dest / "cupti_off_trace.json", _json(doc))


def host_memory_only(dest: Path) -> None:
    """Only the host's ``[memory]`` events (Device Type 0) kept."""
    src = CORPUS / "kineto_cuda_h100_bert_metadata_first"
    (path,) = sorted(src.iterdir())
    doc = _trace(path)
    doc["traceEvents"] = [
        e
        for e in doc["traceEvents"]
        if e.get("name") != "[memory]" or e.get("args", {}).get("Device Type") == 0
    ]
    _store(dest / "host_memory_trace.json", _json(doc))


def main() -> None:
    for name, make in [
        ("chrome_rl_phases_4rank", rl_phases),
        ("chrome_vendor_bigtid", vendor_bigtid),
        ("msprof_export", msprof_export),
        ("kineto_cuda_launches_no_device", launches_no_device),
        ("kineto_cuda_host_memory_only", host_memory_only),
    ]:
        dest = CORPUS / name
        for old in sorted(dest.rglob("*"), reverse=True) if dest.exists() else []:
            old.unlink() if old.is_file() else old.rmdir()
        make(dest)
        print(name, sum(p.stat().st_size for p in dest.rglob("*") if p.is_file()))


if __name__ == "__main__":
    main()
