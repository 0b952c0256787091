"""The Ascend-specific facts of a torch_npu capture (``NpuFacts``): what the findings of
``analysis.findings.npu`` read, gathered by the text and db readers as they pass the files.

Here: the names they share (the PMU ratios, the copy tasks, ACL calls), ``facts`` and
``read_env``. The text and trace readers fill the accumulators of ``facts_groups`` a row or an
event at a time; ``facts_db`` reads the dbs' share.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from mindspeed_prof.analysis.readers.model import NpuFacts, TraceData
from mindspeed_prof.analysis.readers.ranks import world_size
from mindspeed_prof.formats.header import merged, read_header

__all__ = [
    "COPY_TASKS",
    "RATIOS",
    "api_name",
    "env_text",
    "facts",
    "is_launch",
    "is_sync",
    "read_env",
    "shapes",
]

#: The PMU ratios kept per operator (kernel_details.csv columns, TASK_PMU_INFO names).
RATIOS = (
    "aic_mac_ratio",
    "aic_scalar_ratio",
    "aic_mte1_ratio",
    "aic_mte2_ratio",
    "aic_fixpipe_ratio",
    "aiv_vec_ratio",
    "aiv_scalar_ratio",
    "aiv_mte2_ratio",
    "aiv_mte3_ratio",
)
#: HCCL tasks that copy data (the ones whose sizes decide alignment).
COPY_TASKS = ("Memcpy", "Reduce_Inline")


def facts(data: TraceData) -> NpuFacts:
    """``data.npu``, made on first use."""
    if data.npu is None:
        data.npu = NpuFacts()
    return data.npu


def api_name(name: str) -> str:
    """``AscendCL@aclrtSynchronizeStream`` (trace_view's CANN lane) -> ``aclrtSynchronizeStream``:
    the name api_statistic.csv and the db's CANN_API give."""
    return name.rsplit("@", 1)[-1].strip()


def is_sync(name: str) -> bool:
    """An ACL call that blocks the host on a stream (not the runtime call nested in it)."""
    return api_name(name).startswith("aclrtSynchronizeStream")


def is_launch(name: str) -> bool:
    return api_name(name) == "launch"


def shapes(text: str | None) -> str:
    """An operator's shapes cell without the quotes around it."""
    return (text or "").strip().strip('"')


def env_text(env: Mapping[object, object]) -> dict[str, str]:
    """ENV_VARIABLES as text (an unset variable as "")."""
    return {str(k): "" if v is None else str(v) for k, v in env.items()}


def read_env(folder: Path, data: TraceData) -> None:
    """``profiler_metadata.json``'s ENV_VARIABLES (torch_npu writes it beside the output), and
    the job's world size where MindSpeed records its ``distributed_args``, and the metadata our
    backend added to it (``mindspeed_prof``: the run id, role, window...)."""
    path = folder / "profiler_metadata.json"
    if not path.is_file():
        return
    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError) as err:
        data.problems.append(f"{path}: not readable JSON ({type(err).__name__}); file skipped")
        return
    world = world_size(doc.get("distributed_args")) if isinstance(doc, dict) else None
    ours, odd = read_header(doc.get("mindspeed_prof") if isinstance(doc, dict) else None, path)
    if odd:
        data.problems.append(odd)
    # what our backend recorded (the run, role, window...) under what the folder says
    data.meta = merged(ours, data.meta)
    if world is not None:
        data.meta.world_size = world
    env = doc.get("ENV_VARIABLES") if isinstance(doc, dict) else None
    if isinstance(env, dict):
        npu = facts(data)
        npu.env = env_text(env)
        npu.sources["env"] = path.name
