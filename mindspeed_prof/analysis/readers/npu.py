"""torch_npu ``*_ascend_pt`` folders: rank and level from ``profiler_info``, then the output."""

from __future__ import annotations

import json
import re
from pathlib import Path

import msgspec

from mindspeed_prof.analysis.readers.model import (
    BadFile,
    TraceData,
    rank_of,
    to_rank,
)
from mindspeed_prof.analysis.readers.npu_db import read_analysis_db, read_profiler_db
from mindspeed_prof.analysis.readers.npu_facts import facts, read_env
from mindspeed_prof.analysis.readers.npu_text import (
    read_api_statistic,
    read_communication,
    read_communication_matrix,
    read_kernel_details,
    read_memory,
    read_op_statistic,
    read_step_trace,
)
from mindspeed_prof.analysis.readers.npu_trace import read_trace_view, stage_device_rows
from mindspeed_prof.formats import NPU_FOLDER, NPU_OUTPUT

__all__ = ["TEXT_FILES", "npu_info", "read_npu"]

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
    """A torch_npu ``*_ascend_pt`` folder, from its parsed ``ASCEND_PROFILER_OUTPUT``."""
    rank, level = npu_info(folder)
    if rank is None:
        rank = rank_of(folder, None, None)
    out = folder / NPU_OUTPUT
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    if not out.is_dir() and not _npu_offline_analyse(folder):
        raise BadFile(
            f"{folder}: raw torch_npu capture, not parsed yet. On a machine with torch_npu run: "
            f"python -c \"import torch_npu; torch_npu.profiler.profiler.analyse('{folder}')\" "
            "(or set profile_analysis: true)")
    data = TraceData(folder, "npu", rank, group, size, meta={"rank": rank, "level": level},
                     source=_STAMP.sub("", folder.name[: -len(NPU_FOLDER)]) or folder.name)
    facts(data)
    read_env(folder, data)
    dbs = sorted(out.glob("ascend_pytorch_profiler*.db"))
    # A text export at level1 and up writes analysis.db beside its CSVs: without the profiler
    # db (lost, or not written yet) it is still a text export, and its CSVs hold the data.
    if dbs or ((out / "analysis.db").is_file() and not _has_text(out)):
        _read_db(out, dbs, data)
    else:
        _read_text(out, data)
    data.meta["rank"] = data.rank
    if data.problems and not (data.ranges or data.ops or data.kernels or data.device
                              or data.comm or data.memory):
        first = data.problems[0].replace(f"{out}/", "", 1)
        raise BadFile(f"{folder}: nothing readable ({first})")
    return data


#: Files only a text export writes (``analysis.db`` comes with either export).
TEXT_FILES = ("step_trace_time.csv", "kernel_details.csv", "op_statistic.csv",
              "api_statistic.csv", "communication.json", "communication_matrix.json",
              "trace_view.json", "memory_record.csv", "operator_memory.csv")


def _has_text(out: Path) -> bool:
    return any((out / name).is_file() for name in TEXT_FILES)


def _read_db(out: Path, dbs: list[Path], data: TraceData) -> None:
    data.meta["export"] = "db"
    if (out / "analysis.db").is_file():
        read_analysis_db(out / "analysis.db", data)
    if dbs:
        read_profiler_db(dbs[0], data)


def _read_text(out: Path, data: TraceData) -> None:
    """Each file of the text export that exists; each file that cannot be read is a problem."""
    data.meta["export"] = "text"
    if (out / "step_trace_time.csv").is_file():
        read_step_trace(out / "step_trace_time.csv", data)
    kernels = (out / "kernel_details.csv").is_file() and read_kernel_details(
        out / "kernel_details.csv", data)
    if not kernels and (out / "op_statistic.csv").is_file():
        kernels = read_op_statistic(out / "op_statistic.csv", data)
    runtime = (out / "api_statistic.csv").is_file() and read_api_statistic(
        out / "api_statistic.csv", data)
    if (out / "communication.json").is_file():
        read_communication(out / "communication.json", data)
    comm = bool(data.comm)
    if (out / "communication_matrix.json").is_file():
        read_communication_matrix(out / "communication_matrix.json", data)
    read_memory(out, data)
    trace_view = out / "trace_view.json"
    if trace_view.is_file():
        try:
            overlap = read_trace_view(trace_view, data, kernels=not kernels, comm=not comm,
                                      runtime=not runtime)
        except BadFile as err:  # names the file
            data.problems.append(f"{err}; host ranges and ops skipped")
            return
        except (msgspec.DecodeError, msgspec.ValidationError, OSError) as err:
            data.problems.append(f"{trace_view}: not a readable trace ({_first(err)}); "
                                 "host ranges and ops skipped")
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
