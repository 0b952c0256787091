"""torch_npu captures: ``*_ascend_pt`` folders (rank and level from ``profiler_info``, then the
files of the output) and single files of that output, read by the same code."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

import msgspec

from mindspeed_prof.analysis.readers.model import BadFile, TraceData
from mindspeed_prof.analysis.readers.npu.busy import Task, task_rows
from mindspeed_prof.analysis.readers.npu.db import read_analysis_db, read_profiler_db
from mindspeed_prof.analysis.readers.npu.facts import facts, read_env
from mindspeed_prof.analysis.readers.npu.memory import read_memory
from mindspeed_prof.analysis.readers.npu.text import (
    read_api_statistic,
    read_communication,
    read_communication_matrix,
    read_kernel_details,
    read_op_statistic,
    read_step_trace,
)
from mindspeed_prof.analysis.readers.npu.trace import read_trace_view, stage_device_rows
from mindspeed_prof.analysis.readers.ranks import rank_of, to_rank
from mindspeed_prof.analysis.readers.sniff import (
    ANALYSIS_DB,
    API_STATISTIC,
    COMMUNICATION,
    COMMUNICATION_MATRIX,
    KERNEL_DETAILS,
    MEMORY_RECORD,
    NPU_MODULE_MEM,
    OP_STATISTIC,
    OP_SUMMARY,
    OPERATOR_MEMORY,
    PROFILER_DB,
    STEP_TRACE_TIME,
)
from mindspeed_prof.formats import NPU_FOLDER, NPU_OUTPUT
from mindspeed_prof.formats.header import CaptureHeader

__all__ = [
    "FILE_NAMES",
    "TRACE_VIEW",
    "npu_info",
    "output_files",
    "read_npu",
    "read_npu_file",
    "read_output",
]

_INFO = re.compile(r"^profiler_info(?:_(\d+))?\.json$")
_STAMP = re.compile(r"_\d+_\d{17}$")  # <worker>_<pid>_<YYYYmmddHHMMSSmmm>


def npu_info(folder: Path) -> tuple[int | None, str | None]:
    """Rank and level of a capture: ``profiler_info_<r>.json``'s name, else its ``rank_id``.

    torch_npu writes ``profiler_info.json`` (no rank in the name, usually no ``rank_id``) when
    neither RANK nor torch.distributed gave it one: the rank is then unknown (None).
    """
    rank: int | None = None
    level: str | None = None
    for p in sorted(folder.glob("profiler_info*.json")):
        m = _INFO.match(p.name)
        if not m:
            continue
        try:
            info = json.loads(p.read_bytes())
        except (OSError, ValueError):
            info = {}
        info = info if isinstance(info, dict) else {}
        rank = int(m.group(1)) if m.group(1) else to_rank(info.get("rank_id"))
        config = info.get("config") if isinstance(info.get("config"), dict) else {}
        exp = config.get("experimental_config") if isinstance(config, dict) else None
        if isinstance(exp, dict):
            raw = exp.get("_profiler_level", exp.get("profiler_level"))
            level = str(raw).rsplit(".", 1)[-1].lower() if raw else None
        break
    return rank, level


def read_npu(folder: Path, group: str) -> TraceData:
    """A torch_npu ``*_ascend_pt`` folder, from its parsed ``ASCEND_PROFILER_OUTPUT``: every
    file of it that is there (a partial folder gives what its files hold)."""
    rank, level = npu_info(folder)
    if rank is None:
        rank = rank_of(folder, None, None)
    out = folder / NPU_OUTPUT
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    if not out.is_dir() and not _npu_offline_analyse(folder):
        raise BadFile(
            f"{folder}: raw torch_npu capture, not parsed yet. On a machine with torch_npu run: "
            f"python -c \"import torch_npu; torch_npu.profiler.profiler.analyse('{folder}')\" "
            "(or set profile_analysis: true)"
        )
    data = TraceData(
        folder,
        "npu",
        rank,
        group,
        size,
        meta=CaptureHeader(rank=rank, level=level),
        source=_STAMP.sub("", folder.name[: -len(NPU_FOLDER)]) or folder.name,
    )
    facts(data)
    read_env(folder, data)
    read_output(output_files(out), data)
    _finish(folder, data, f"{out}/")
    return data


def read_npu_file(path: Path, kind: str, group: str) -> TraceData:
    """One file of torch_npu's output on its own (``kind``: ``sniff``'s, or ``TRACE_VIEW``),
    read as the same file in a folder is; its rank is the one its name gives, if any."""
    rank = rank_of(path, None, None)
    data = TraceData(path, "npu", rank, group, path.stat().st_size, meta=CaptureHeader(rank=rank))
    facts(data)
    read_output({kind: path}, data)
    _finish(path, data, f"{path}: ")
    return data


def _finish(where: Path, data: TraceData, prefix: str) -> None:
    """The rank read (a db names it) into ``meta``; ``BadFile`` when every file failed."""
    data.meta.rank = data.rank
    if data.problems and data.holds_nothing:
        first = data.problems[0].replace(prefix, "", 1)
        raise BadFile(f"{where}: nothing readable ({first})")


#: The kind of the file torch_npu's list-form trace is (decided by its processes, on reading).
TRACE_VIEW = "trace_view"
#: torch_npu's names for the files of ``ASCEND_PROFILER_OUTPUT``, by kind.
FILE_NAMES = {
    STEP_TRACE_TIME: "step_trace_time.csv",
    KERNEL_DETAILS: "kernel_details.csv",
    OP_STATISTIC: "op_statistic.csv",
    API_STATISTIC: "api_statistic.csv",
    COMMUNICATION: "communication.json",
    COMMUNICATION_MATRIX: "communication_matrix.json",
    TRACE_VIEW: "trace_view.json",
    MEMORY_RECORD: "memory_record.csv",
    OPERATOR_MEMORY: "operator_memory.csv",
    NPU_MODULE_MEM: "npu_module_mem.csv",
    ANALYSIS_DB: "analysis.db",
}
Files = Mapping[str, Path]


def output_files(out: Path) -> dict[str, Path]:
    """The files of an ``ASCEND_PROFILER_OUTPUT`` folder by kind, under torch_npu's names."""
    files = {kind: out / name for kind, name in FILE_NAMES.items() if (out / name).is_file()}
    dbs = sorted(out.glob("ascend_pytorch_profiler*.db"))
    if dbs:
        files[PROFILER_DB] = dbs[0]
    return files


def read_output(files: Files, data: TraceData) -> None:
    """The db export when its profiler db is there, or when analysis.db is all there is; else
    the text export's files. A text export at level1 and up writes analysis.db beside its
    CSVs: without the profiler db (lost, or not written yet) its CSVs hold the data."""
    if PROFILER_DB in files or (ANALYSIS_DB in files and not set(files) - {ANALYSIS_DB}):
        data.meta.export = "db"
        if ANALYSIS_DB in files:
            read_analysis_db(files[ANALYSIS_DB], data)
        if PROFILER_DB in files:
            read_profiler_db(files[PROFILER_DB], data)
    else:
        _read_text(files, data)


def _read_text(files: Files, data: TraceData) -> None:
    """Each file of the text export that is given; each file that cannot be read is a
    problem. Device rows come from step_trace_time.csv, else from trace_view.json's Overlap
    Analysis lanes, else from kernel_details.csv's tasks (``busy``)."""
    data.meta.export = "text"
    if STEP_TRACE_TIME in files:
        read_step_trace(files[STEP_TRACE_TIME], data)
    tasks: list[Task] = []
    kernels = KERNEL_DETAILS in files and read_kernel_details(files[KERNEL_DETAILS], data, tasks)
    if not kernels and OP_SUMMARY in files:
        kernels = read_kernel_details(files[OP_SUMMARY], data, tasks)
    if not kernels and OP_STATISTIC in files:
        kernels = read_op_statistic(files[OP_STATISTIC], data)
    runtime = API_STATISTIC in files and read_api_statistic(files[API_STATISTIC], data)
    if COMMUNICATION in files:
        read_communication(files[COMMUNICATION], data)
    comm = bool(data.comm)
    if COMMUNICATION_MATRIX in files:
        read_communication_matrix(files[COMMUNICATION_MATRIX], data)
    read_memory(
        data, files.get(MEMORY_RECORD), files.get(OPERATOR_MEMORY), files.get(NPU_MODULE_MEM)
    )
    if TRACE_VIEW in files:
        _read_trace_view(
            files[TRACE_VIEW], data, kernels=not kernels, comm=not comm, runtime=not runtime
        )
    if not data.device and tasks:
        data.device.extend(task_rows(tasks))


def _read_trace_view(
    path: Path, data: TraceData, *, kernels: bool, comm: bool, runtime: bool
) -> None:
    try:
        overlap = read_trace_view(path, data, kernels=kernels, comm=comm, runtime=runtime)
    except BadFile as err:  # names the file
        data.problems.append(f"{err}; host ranges and ops skipped")
        return
    except (msgspec.DecodeError, msgspec.ValidationError, OSError) as err:
        data.problems.append(
            f"{path}: not a readable trace ({_first(err)}); host ranges and ops skipped"
        )
        return
    if not data.device:
        data.device.extend(stage_device_rows(data, overlap, ("step",)))
    data.device.extend(stage_device_rows(data, overlap, ("stage",)))


def _first(err: BaseException) -> str:
    return str(err).splitlines()[0][:120] if str(err) else type(err).__name__


def _npu_offline_analyse(folder: Path) -> bool:
    """Parse a raw capture with torch_npu's offline analyse, when torch_npu imports here."""
    try:
        import torch_npu
    except Exception:  # ImportError, or OSError when CANN's libraries are missing
        return False
    torch_npu.profiler.profiler.analyse(profiler_path=str(folder))
    return (folder / NPU_OUTPUT).is_dir()
