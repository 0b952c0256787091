"""Tasks of the CANN runtime that are not kernels: the control tasks it puts on a stream
(events, notifies, stream and label switches, model and profiler bookkeeping, timeouts). They
appear in msprof's timeline and ``op_summary`` under their task type; counted as kernels, a
``TASK_TIMEOUT_SET`` would lead the top kernels of a short capture."""

from __future__ import annotations

__all__ = ["CONTROL_TASKS", "is_control"]

#: The runtime's control task types, as msprof names them (``Task Type``, the task's name on
#: the Ascend Hardware lane where it has no operator).
CONTROL_TASKS = frozenset(
    {
        "TASK_TIMEOUT_SET",
        "EVENT_RECORD",
        "EVENT_WAIT",
        "EVENT_RESET",
        "STREAM_WAIT_EVENT",
        "NOTIFY_RECORD",
        "NOTIFY_WAIT",
        "STREAM_ACTIVE",
        "STREAM_SWITCH",
        "STREAM_SWITCH_N",
        "LABEL_SET",
        "LABEL_SWITCH",
        "LABEL_SWITCH_BY_INDEX",
        "LABEL_GOTO",
        "LABEL_GOTO_EX",
        "MODEL_EXECUTE",
        "MODEL_MAINTAIN",
        "MODEL_END_GRAPH",
        "PROFILER_TRACE",
        "PROFILER_TRACE_EX",
        "PROFILING_ENABLE",
        "PROFILING_DISABLE",
        "FUSION_START",
        "FUSION_END",
        "CAPTURE_RECORD",
        "CAPTURE_WAIT",
        "MAINTENANCE",
        "RDMA_DB_SEND",
    }
)


def is_control(*names: str | None) -> bool:
    """Whether any of a task's names (its type, its op's type, its name) is a control task."""
    return any((n or "").strip().upper() in CONTROL_TASKS for n in names)
