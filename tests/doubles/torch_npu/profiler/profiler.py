import csv
import json
import os
import sqlite3
import time
from typing import Any, Callable, Iterable, Optional, Union

from .experimental_config import ExportType

CREATED = []  # every profile() built, for assertions


def tensorboard_trace_handler(
    dir_name: Optional[str] = None,
    worker_name: Optional[str] = None,
    analyse_flag: bool = True,
    async_mode: bool = False,
):
    def handler_fn(prof_inst) -> None:
        prof_inst._write(dir_name, worker_name, analyse_flag)

    handler_fn.args = dict(dir_name=dir_name, worker_name=worker_name, analyse_flag=analyse_flag,
                           async_mode=async_mode)
    return handler_fn


class _KinetoProfile:
    def add_metadata_json(self, key: str, value: str):
        """As torch_npu: the value is JSON text, kept parsed for ``profiler_metadata.json``."""
        self.metadata[key] = json.loads(value)


class profile(_KinetoProfile):
    def __init__(
        self,
        *,
        activities: Optional[Iterable[Any]] = None,
        schedule: Optional[Callable[[int], Any]] = None,
        on_trace_ready: Optional[Callable[..., Any]] = None,
        record_shapes: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        with_flops: bool = False,
        with_modules: bool = False,
        experimental_config: Optional[Any] = None,
        execution_trace_observer: Any = None,
        custom_trace_id_callback: Optional[Callable[[], str]] = None,
        use_cuda: Optional[bool] = None,
    ):
        self.kwargs = dict(activities=list(activities or []), schedule=schedule,
                           on_trace_ready=on_trace_ready, record_shapes=record_shapes,
                           profile_memory=profile_memory, with_stack=with_stack,
                           with_flops=with_flops, with_modules=with_modules,
                           experimental_config=experimental_config)
        self.started = self.stopped = False
        self.metadata = {}
        CREATED.append(self)

    def start(self):
        self.started = True
        self._t0 = time.time_ns()

    def stop(self):
        self.stopped = True
        if self.kwargs["on_trace_ready"]:
            self.kwargs["on_trace_ready"](self)

    def _write(self, dir_name, worker_name, analyse_flag):
        """The ``*_ascend_pt`` layout torch_npu writes (FRAMEWORK/, PROF_*/, info files)."""
        stamp = time.strftime("%Y%m%d%H%M%S") + "000"
        root = os.path.join(dir_name, f"{worker_name}_{os.getpid()}_{stamp}_ascend_pt")
        os.makedirs(os.path.join(root, "FRAMEWORK"))
        os.makedirs(os.path.join(root, "PROF_000001_20261130000000000_ABCDEFG"))
        # As torch_npu 2.x: RANK (kept a string), else no rank at all: profiler_info.json.
        info = {"config": {"common_config": {}, "experimental_config": {
            "_profiler_level": "Level0", "_export_type": "text"}}}
        rank = os.environ.get("RANK")
        name = "profiler_info.json" if rank is None else f"profiler_info_{rank}.json"
        if rank is not None:
            info["rank_id"] = rank
        with open(os.path.join(root, name), "w") as f:
            json.dump(info, f)
        with open(os.path.join(root, "profiler_metadata.json"), "w") as f:
            json.dump(self.metadata, f)
        if analyse_flag:
            analyse(root)


def analyse(
    profiler_path: str,
    max_process_number: int = 4,
    export_type: Optional[Union[str, list]] = None,
):
    """Writes ASCEND_PROFILER_OUTPUT as torch_npu's parser does (string ts, step csv)."""
    out = os.path.join(profiler_path, "ASCEND_PROFILER_OUTPUT")
    os.makedirs(out, exist_ok=True)
    kinds = export_type if isinstance(export_type, list) else [export_type or ExportType.Text]
    base = 1_700_000_000_000_000
    if ExportType.Db in kinds:
        con = sqlite3.connect(os.path.join(out, "ascend_pytorch_profiler_0.db"))
        con.execute("CREATE TABLE STEP_TIME(id INTEGER, startNs INTEGER, endNs INTEGER)")
        con.execute("INSERT INTO STEP_TIME VALUES (1, ?, ?)", (base * 1000, base * 1000 + 5_000_000))
        con.commit()
        con.close()
        return
    # Every record_function range (the step, a stage) is cat cpu_op; device events have no cat.
    events = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "Python"}},
              {"ph": "M", "name": "process_name", "pid": 2, "tid": 0,
               "args": {"name": "Ascend Hardware"}},
              {"ph": "X", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": str(base),
               "dur": 5000.0, "cat": "cpu_op"},
              {"ph": "X", "name": "actor_update", "pid": 1, "tid": 1, "ts": f"{base + 5}.000",
               "dur": 4000.0, "cat": "cpu_op"},
              {"ph": "X", "name": "aten::mm", "pid": 1, "tid": 1, "ts": f"{base + 10}.5",
               "dur": 100.25, "cat": "cpu_op", "args": {"Sequence number": 2 ** 60}},
              {"ph": "X", "name": "MatMulV2", "pid": 2, "tid": 3, "ts": f"{base + 20}.125",
               "dur": 80.0, "args": {"Task Type": "AI_CORE"}}]
    with open(os.path.join(out, "trace_view.json"), "w") as f:
        json.dump(events, f)
    with open(os.path.join(out, "step_trace_time.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Step", "Computing", "Communication(Not Overlapped)", "Overlapped",
                    "Communication", "Free", "Stage", "Bubble",
                    "Communication(Not Overlapped and Exclude Receive)", "Preparing"])
        w.writerow(["1", "4000.0", "500.0", "100.0", "600.0", "500.0", "5000.0", "0", "500.0",
                    "20.0"])
