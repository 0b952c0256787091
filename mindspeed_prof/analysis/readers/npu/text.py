"""torch_npu's text export (``*.csv``, ``communication*.json``) as TraceData fields."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

from mindspeed_prof.analysis.readers.model import (
    CommRow,
    DeviceRow,
    HcclOp,
    LinkShare,
    TraceData,
    tally,
)
from mindspeed_prof.analysis.readers.npu.busy import Task, is_comm, task
from mindspeed_prof.analysis.readers.npu.facts import RATIOS, api_name, facts
from mindspeed_prof.analysis.readers.npu.facts_groups import OpGroups
from mindspeed_prof.analysis.readers.npu.tables import Table, number, step_number
from mindspeed_prof.analysis.readers.npu.tasks import is_control
from mindspeed_prof.analysis.readers.ratio import ratio

__all__ = [
    "KB",
    "MB",
    "OP_SUMMARY_COLUMNS",
    "comm_family",
    "device_row",
    "kernel_name",
    "link_rows",
    "read_api_statistic",
    "read_communication",
    "read_communication_matrix",
    "read_kernel_details",
    "read_op_statistic",
    "read_step_trace",
]

#: torch_npu's "MB" and "KB" are binary (2109.6015625 MB is a whole number of bytes).
MB = 1024**2
KB = 1024
#: An op instance's number after its type: ``hcom_allReduce_`` + ``_868_0_1``.
_INSTANCE = re.compile(r"(?<=_)_\d+(?:_\d+)*$")
#: msprof's ``op_summary_*.csv`` columns by kernel_details' names for them (torch_npu writes
#: kernel_details from op_summary, renaming these).
OP_SUMMARY_COLUMNS = {
    "Op Name": "Name",
    "OP Type": "Type",
    "Task Type": "Accelerator Core",
    "Task Start Time(us)": "Start Time(us)",
    "Task Duration(us)": "Duration(us)",
    "Task Wait Time(us)": "Wait Time(us)",
}


def device_row(
    step: int | None,
    compute: float,
    comm_exposed: float,
    overlap: float | None,
    comm: float | None,
    free: float,
    extra: dict[str, float | None],
) -> DeviceRow:
    """One ``device`` row from torch_npu's breakdown (microseconds in, milliseconds out).

    Communication is kept whole (``comm_ms`` = Communication): ``compute + comm - overlap +
    idle`` is then the step on the device, as on CUDA. Where an older file lacks Overlapped or
    Communication, each is derived from the other and Communication(Not Overlapped).
    """
    if comm is None:
        comm = comm_exposed + (overlap or 0.0)
    if overlap is None:
        overlap = max(comm - comm_exposed, 0.0)
    ms = {key: None if us is None else us / 1000.0 for key, us in extra.items()}
    return DeviceRow(
        step=step,
        compute_ms=compute / 1000.0,
        comm_ms=comm / 1000.0,
        overlap_ms=overlap / 1000.0,
        idle_ms=free / 1000.0,
        comm_exposed_ms=comm_exposed / 1000.0,
        step_ms=ms.get("step_ms"),
        bubble_ms=ms.get("bubble_ms"),
        preparing_ms=ms.get("preparing_ms"),
        comm_exposed_no_recv_ms=ms.get("comm_exposed_no_recv_ms"),
    )


_STEP_TRACE_EXTRA = {
    "step_ms": "Stage",
    "bubble_ms": "Bubble",
    "preparing_ms": "Preparing",
    "comm_exposed_no_recv_ms": "Communication(Not Overlapped and Exclude Receive)",
}


def read_step_trace(path: Path, data: TraceData) -> None:
    """``step_trace_time.csv`` -> ``device`` rows, one per step."""
    table = Table.open(path, ("Computing", "Communication(Not Overlapped)", "Free"), data.problems)
    if table is None:
        return
    for row in table.rows:
        if row.get("Type", "rank").strip() not in ("rank", ""):  # a cluster file's stage rows
            continue
        compute, exposed, free = (
            number(row[c]) for c in ("Computing", "Communication(Not Overlapped)", "Free")
        )
        if compute is None or exposed is None or free is None:
            data.problems.append(
                f"{path}: step {row.get('Step', '?')!r} has empty times; row skipped"
            )
            continue
        extra = {
            key: number(row.get(col)) for key, col in _STEP_TRACE_EXTRA.items() if table.has(col)
        }
        data.device.append(
            device_row(
                step_number(row.get("Step")),
                compute,
                exposed,
                number(row.get("Overlapped")),
                number(row.get("Communication")),
                free,
                extra,
            )
        )


def read_kernel_details(path: Path, data: TraceData, tasks: list[Task] | None = None) -> bool:
    """``kernel_details.csv`` (or msprof's ``op_summary``) -> ``kernels`` by op type (as
    op_statistic.csv counts them), and ``npu.ops``: the operators by name, core and shapes,
    with their OP State and PMU ratios. Each task's step, start, end and whether it
    communicates go to ``tasks`` when given (``busy``)."""
    table = Table.open(path, ("Type", "Duration(us)"), data.problems, OP_SUMMARY_COLUMNS)
    if table is None:
        return False
    core = next((c for c in ("Accelerator Core", "Task Type") if table.has(c)), None)
    ratios = tuple(c for c in RATIOS if table.has(c))
    state = "OP State" if table.has("OP State") else None
    groups = OpGroups(ratios)
    if not table.has("Start Time(us)"):
        tasks = None
    for row in table.rows:
        if is_control(row[core] if core else None, row["Type"], row.get("Name")):
            continue  # the runtime's own tasks: not kernels, not device work
        dur = number(row["Duration(us)"])
        if tasks is not None:
            one = task(
                step_number(row.get("Step Id")),
                row["Start Time(us)"],
                row["Duration(us)"],
                is_comm(row[core] if core else "", row.get("Name", "")),
            )
            if one is not None:
                tasks.append(one)
        if dur is not None and dur >= 0:
            tally(data.kernels, kernel_name(row["Type"], row.get("Name")), 1, dur)
            groups.add(
                (
                    row.get("Name", "").strip(),
                    row["Type"].strip(),
                    row[core].strip() if core else "",
                    row.get("Input Shapes", ""),
                    row.get("Output Shapes", ""),
                    row.get("Input Data Types", "").strip(),
                    row.get("Output Data Types", "").strip(),
                ),
                dur,
                row[state] if state else None,
                [row[c] for c in ratios],
            )
    npu = facts(data)
    npu.ops = groups.done()
    npu.sources["ops"] = path.name
    return True


def kernel_name(op_type: str | None, name: str | None) -> str:
    """The op type (level1 and up), else the task's own name less an instance number (level0
    writes the type as N/A): ``hcom_allReduce__868_0_1`` is ``hcom_allReduce_``, its type."""
    kind = (op_type or "").strip()
    if kind and kind.upper() != "N/A":
        return kind
    return _INSTANCE.sub("", (name or "").strip()) or "?"


def read_op_statistic(path: Path, data: TraceData) -> bool:
    """``op_statistic.csv`` -> ``kernels`` (compute ops only: torch_npu leaves HCCL out)."""
    table = Table.open(path, ("OP Type", "Count", "Total Time(us)"), data.problems)
    if table is None:
        return False
    for row in table.rows:
        count, total = number(row["Count"]), number(row["Total Time(us)"])
        if count is not None and total is not None:
            tally(data.kernels, row["OP Type"].strip(), count, total)
    return True


def read_api_statistic(path: Path, data: TraceData) -> bool:
    """``api_statistic.csv`` -> ``runtime`` (CANN API calls: acl, runtime, hccl, node)."""
    table = Table.open(path, ("API Name", "Count", "Time(us)"), data.problems)
    if table is None:
        return False
    longest = facts(data).api_max_us
    for row in table.rows:
        count, total = number(row["Count"]), number(row["Time(us)"])
        if count is not None and total is not None:
            tally(data.runtime, row["API Name"].strip(), count, total)
            most = number(row.get("Max(us)"))
            if most is not None:
                name = api_name(row["API Name"])
                longest[name] = max(longest.get(name, 0.0), most)
    if longest:
        facts(data).sources["api"] = path.name
    return True


def comm_family(op_name: str) -> str:
    """``hcom_allReduce__586_0_1@1752...`` -> ``hcom_allReduce_``, the op's type as torch_npu
    names it (kernel_details' Type, the db's opType): one row per kind of op, named as the
    kernel is."""
    return _INSTANCE.sub("", op_name.split("@")[0])


def _load_json(path: Path, data: TraceData) -> object:
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError) as err:
        data.problems.append(f"{path}: not readable JSON ({type(err).__name__}); file skipped")
        return None


def _bandwidth(info: dict[str, object]) -> tuple[float, float]:
    """Transit size (MB) and time (ms) over links: RDMA plus SDMA (which sums HCCS/PCIE/SIO)."""
    size = time = 0.0
    links = ("RDMA", "SDMA") if "SDMA" in info else ("RDMA", "HCCS", "PCIE", "SIO")
    for link in links:
        part = info.get(link)
        if isinstance(part, dict):
            size += float(part.get("Transit Size(MB)") or 0.0)
            time += float(part.get("Transit Time(ms)") or 0.0)
    return size, time


def _link_times(info: dict[str, object]) -> dict[str, tuple[float, float]]:
    """Transit size (MB) and time (ms) per link type that carried data (SDMA: HCCS+PCIE+SIO)."""
    out = {}
    for link, part in info.items():
        if isinstance(part, dict):
            size, time = _ms(part, "Transit Size(MB)"), _ms(part, "Transit Time(ms)")
            if size or time:
                out[str(link)] = (size, time)
    return out


def link_rows(sums: dict[str, list[float]]) -> dict[str, LinkShare]:
    """``links`` of a ``CommRow`` from [size MB, time ms] per link type: bandwidth in GB/s."""
    return {
        link: LinkShare(size_mb=size, time_ms=time, bandwidth_gbps=ratio(size, time, None))
        for link, (size, time) in sorted(sums.items())
    }


def read_communication(path: Path, data: TraceData) -> None:
    """``communication.json`` -> ``comm`` rows per step, kind and op family."""
    doc = _load_json(path, data)
    if not isinstance(doc, dict):
        if doc is not None:
            data.problems.append(f"{path}: not an object of steps; file skipped")
        return
    rows: dict[tuple[int | None, str, str], CommRow] = {}
    sizes: dict[tuple[int | None, str, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    links: dict[tuple[int | None, str, str], dict[str, list[float]]] = defaultdict(dict)
    hccl = facts(data).hccl
    facts(data).sources["hccl"] = path.name
    for step_key, kinds in doc.items():
        for kind, ops in kinds.items() if isinstance(kinds, dict) else ():
            for op_name, op in ops.items() if isinstance(ops, dict) else ():
                times = op.get("Communication Time Info") if isinstance(op, dict) else None
                if op_name == "Total Op Info" or not isinstance(times, dict):
                    continue
                key = (step_number(step_key), kind, comm_family(op_name))
                row = rows.get(key)
                if row is None:
                    row = rows[key] = CommRow(
                        name=key[2],
                        kind=kind,
                        step=key[0],
                        elapse_ms=0.0,
                        wait_ms=0.0,
                        transit_ms=0.0,
                        sync_ms=0.0,
                        idle_ms=0.0,
                    )
                row.count += 1
                row.elapse_ms = (row.elapse_ms or 0.0) + _ms(times, "Elapse Time(ms)")
                row.wait_ms = (row.wait_ms or 0.0) + _ms(times, "Wait Time(ms)")
                row.transit_ms = (row.transit_ms or 0.0) + _ms(times, "Transit Time(ms)")
                row.sync_ms = (row.sync_ms or 0.0) + _ms(times, "Synchronization Time(ms)")
                row.idle_ms = (row.idle_ms or 0.0) + _ms(times, "Idle Time(ms)")
                band = op.get("Communication Bandwidth Info")
                size, time = _bandwidth(band) if isinstance(band, dict) else (0.0, 0.0)
                sizes[key][0] += size
                sizes[key][1] += time
                for link, (size, time) in (
                    _link_times(band) if isinstance(band, dict) else {}
                ).items():
                    slot = links[key].setdefault(link, [0.0, 0.0])
                    slot[0] += size
                    slot[1] += time
                hccl.append(_hccl_op(op_name, kind, key[0], times, band))
    for key, row in rows.items():
        size, time = sizes[key]
        row.size_mb = size
        row.bandwidth_gbps = ratio(size, time, None)  # MB/ms = GB/s
        row.links = link_rows(links[key])
        data.comm.append(row)


def _hccl_op(
    op_name: str, kind: str, step: int | None, times: dict[str, object], band: object
) -> HcclOp:
    """One operator of ``communication.json`` with its SDMA and RDMA size and time."""
    op = HcclOp(
        name=op_name.split("@")[0], kind=kind, step=step, elapse_ms=_ms(times, "Elapse Time(ms)")
    )
    for link in ("SDMA", "RDMA"):
        part = band.get(link) if isinstance(band, dict) else None
        if isinstance(part, dict):
            setattr(op, f"{link.lower()}_mb", _ms(part, "Transit Size(MB)"))
            setattr(op, f"{link.lower()}_ms", _ms(part, "Transit Time(ms)"))
    return op


def read_communication_matrix(path: Path, data: TraceData) -> None:
    """``communication_matrix.json`` -> ``comm`` rows of kind ``link``, as torch_npu groups them."""
    doc = _load_json(path, data)
    if not isinstance(doc, dict):
        return
    for step_key, kinds in doc.items():
        for ops in kinds.values() if isinstance(kinds, dict) else ():
            for group_op, links in ops.items() if isinstance(ops, dict) else ():
                for link, info in links.items() if isinstance(links, dict) else ():
                    if not isinstance(info, dict):
                        continue
                    bandwidth = info.get("Bandwidth(GB/s)")
                    data.comm.append(
                        CommRow(
                            name=group_op.split("@")[0],
                            kind="link",
                            step=step_number(step_key),
                            link=str(link),
                            transport=_text(info.get("Transport Type")),
                            count=1,
                            size_mb=_ms(info, "Transit Size(MB)"),
                            transit_ms=_ms(info, "Transit Time(ms)"),
                            bandwidth_gbps=_ms(info, "Bandwidth(GB/s)")
                            if _finite(bandwidth)
                            else None,
                        )
                    )


def _finite(value: object) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and value == value
        and abs(value) != float("inf")
    )


def _ms(info: dict[str, object], key: str) -> float:
    """A number of a communication file's object (0 when missing or not a finite number)."""
    value = info.get(key)
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return 0.0
    return float(value) if isinstance(value, (int, float)) and _finite(value) else 0.0


def _text(value: object) -> str | None:
    return None if value is None else str(value)
