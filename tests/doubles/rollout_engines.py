"""Doubles of the rollout engines' profiler API, written from their public signatures (none of
their code): vLLM's ``LLM``/``AsyncLLM`` and SGLang's ``Engine``.

Each records its ``start_profile``/``stop_profile`` calls (with the clock), its decode
iterations (``step()``), and on stop writes a Kineto-like trace of the iterations run while it
profiled, named as the engine names it:

- vLLM: ``<torch_profiler_dir>/<prefix>_dp0_pp0_tp<r>.<ns>.pt.trace.json.gz``, one per tensor
  parallel worker, the folder fixed when the engine is made (``profiler_config``);
- SGLang: ``<output_dir>/<profile id>-TP-<r>.trace.json.gz``.

Its ``distributedInfo.rank`` is the engine worker's own (0, 1...), never the trainer's.
``fail`` names a method that raises.
"""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any


class _Engine:
    def __init__(self, tp: int = 1, fail: str = "") -> None:
        self.tp, self.fail = tp, fail
        self.calls: list[tuple[str, int, dict[str, Any]]] = []  # (name, ns, kwargs)
        self.iterations: list[tuple[int, int, int]] = []  # (iteration, start ns, end ns)
        self.profiling = False
        self.written: list[Path] = []

    def step(self, iteration: int) -> None:
        """One decode iteration (a little CPU work)."""
        t0 = time.time_ns()
        sum(range(2000))
        self.iterations.append((iteration, t0, time.time_ns()))

    def _record(self, name: str, **kwargs: Any) -> None:
        self.calls.append((name, time.time_ns(), kwargs))
        if self.fail == name:
            raise RuntimeError(f"{name}: engine fault")

    def _write(self, folder: Path, names: list[str]) -> None:
        start = next(ns for name, ns, _ in reversed(self.calls) if name == "start_profile")
        events = [e for i, t0, t1 in self.iterations if t0 >= start for e in (
            {"ph": "X", "cat": "user_annotation", "name": f"decode_{i}", "pid": 1, "tid": 1,
             "ts": t0 / 1000, "dur": (t1 - t0) / 1000},
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1,
             "ts": t0 / 1000, "dur": (t1 - t0) / 2000})]
        folder.mkdir(parents=True, exist_ok=True)
        for rank, name in enumerate(names):
            doc = {"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": rank,
                                                            "world_size": self.tp},
                   "traceEvents": events}
            path = folder / name
            with gzip.open(path, "wt") as f:
                json.dump(doc, f)
            self.written.append(path)


class VllmLLM(_Engine):
    """``vllm.LLM``: ``start_profile(profile_prefix=None)``, ``stop_profile()``; the trace
    folder is ``llm_engine.vllm_config.profiler_config.torch_profiler_dir``."""

    def __init__(self, torch_profiler_dir: Path, tp: int = 1, fail: str = "",
                 late: bool = False) -> None:
        super().__init__(tp, fail)
        self.late = late  # the traces flushed after stop_profile returned, at flush()
        self._unwritten: list[tuple[Path, list[str]]] = []
        config = SimpleNamespace(profiler_config=SimpleNamespace(
            profiler="torch", torch_profiler_dir=str(torch_profiler_dir)))
        self.llm_engine = SimpleNamespace(vllm_config=config)
        self._prefix: str | None = None

    def start_profile(self, profile_prefix: str | None = None) -> None:
        self._record("start_profile", profile_prefix=profile_prefix)
        self.profiling, self._prefix = True, profile_prefix

    def stop_profile(self) -> None:
        self._record("stop_profile")
        self.profiling = False
        folder = Path(self.llm_engine.vllm_config.profiler_config.torch_profiler_dir)
        prefix = self._prefix or "worker"
        names = [f"{prefix}_dp0_pp0_tp{r}.{time.time_ns()}.pt.trace.json.gz"
                 for r in range(self.tp)]
        if self.late:
            self._unwritten.append((folder, names))
        else:
            self._write(folder, names)

    def flush(self) -> None:
        """The background writer catches up."""
        for folder, names in self._unwritten:
            self._write(folder, names)
        self._unwritten = []


VllmLLM.__module__ = "vllm.entrypoints.llm"


class VllmAsyncLLM(VllmLLM):
    """``vllm.v1.engine.async_llm.AsyncLLM``: the same calls, as coroutines."""

    async def start_profile(self, profile_prefix: str | None = None) -> None:  # type: ignore[override]
        VllmLLM.start_profile(self, profile_prefix)

    async def stop_profile(self) -> None:  # type: ignore[override]
        VllmLLM.stop_profile(self)


VllmAsyncLLM.__module__ = "vllm.v1.engine.async_llm"


class SglangEngine(_Engine):
    """``sglang.Engine``: ``start_profile(output_dir=None, start_step=None, num_steps=None,
    activities=None, with_stack=None, record_shapes=None, profile_by_stage=False, ...)``,
    ``stop_profile()``."""

    def __init__(self, tp: int = 1, fail: str = "") -> None:
        super().__init__(tp, fail)
        self._dir: Path | None = None

    def start_profile(self, output_dir: str | None = None, start_step: int | None = None,
                      num_steps: int | None = None, activities: list[str] | None = None,
                      with_stack: bool | None = None, record_shapes: bool | None = None,
                      profile_by_stage: bool = False, merge_profiles: bool = False,
                      profile_prefix: str | None = None) -> None:
        self._record("start_profile", output_dir=output_dir, activities=activities,
                     with_stack=with_stack, record_shapes=record_shapes)
        self.profiling, self._dir = True, Path(output_dir or "/nonexistent")

    def stop_profile(self) -> None:
        self._record("stop_profile")
        self.profiling = False
        assert self._dir is not None
        profile_id = str(time.time())
        self._write(self._dir, [f"{profile_id}-TP-{r}.trace.json.gz" for r in range(self.tp)])


SglangEngine.__module__ = "sglang.srt.entrypoints.engine"
