"""``attach_engine``: the rollout engine's own profiler (doubles of vLLM's and SGLang's API,
``tests/doubles/rollout_engines.py``) started and stopped at each capture's edges, its traces
kept under the save root and read by the analysis with the trainer's rank and step."""

from __future__ import annotations

import gzip
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from doubles.rollout_engines import SglangEngine, VllmAsyncLLM, VllmLLM

from mindspeed_prof import Profiler, mstx
from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.report.tables import tables


class _Unknown:
    """An engine of no known kind (its module is neither vllm nor sglang)."""

    def start_profile(self) -> None:
        pass

    def stop_profile(self) -> None:
        pass


def _prof(tmp_path: Path, rank: int = 3, **extensions: Any) -> Profiler:
    return Profiler.from_config(
        {
            "integrated": {
                "profile": True,
                "profile_level": "level_none",
                "mstx": True,
                "stage": "actor_generate",
                "profile_step_start": 1,
                "profile_step_end": 3,
                "profile_save_path": str(tmp_path / "save"),
            },
            "extensions": {"backend": "torch", **extensions},
        },
        rank=rank,
    )


def _train(prof: Profiler, engine: Any, steps: int = 2, iterations: int = 6) -> None:
    with prof:
        for step in range(1, steps + 1):
            with prof.step(step):
                with prof.stage("actor_generate"):
                    for i in range(iterations):
                        with mstx.iteration(i):
                            engine.step(i)
                with prof.stage("actor_update"):
                    pass


def _edges(engine: Any, first: int, last: int) -> None:
    """Each start_profile came after iteration ``first - 1`` ended and before ``first`` began;
    each stop_profile after ``last`` ended and before ``last + 1`` began."""
    starts = [ns for name, ns, _ in engine.calls if name == "start_profile"]
    stops = [ns for name, ns, _ in engine.calls if name == "stop_profile"]
    assert len(starts) == len(stops) == 2
    runs = [engine.iterations[k : k + 6] for k in (0, 6)]
    for start, stop, run in zip(starts, stops, runs):
        by = {i: (t0, t1) for i, t0, t1 in run}
        assert (first == 0 or by[first - 1][1] <= start) and start <= by[first][0]
        assert by[last][1] <= stop and (last + 1 not in by or stop <= by[last + 1][0])


def test_vllm_is_started_and_stopped_at_the_window_edges(tmp_path: Path) -> None:
    engine = VllmLLM(tmp_path / "vllm_traces")
    prof = _prof(tmp_path, iteration_start=2, iteration_count=2)
    part = prof.attach_engine(engine)
    _train(prof, engine)
    _edges(engine, 2, 3)
    save = (tmp_path / "save").resolve()
    assert len(part.files) == 2 and all(save in f.parents for f in part.files)
    assert not list((tmp_path / "vllm_traces").iterdir())  # moved into the save root
    for capture, path in zip(prof.captures, part.files):
        assert capture.engine == "vllm" and str(path) in capture.files
        with gzip.open(path) as f:
            doc = json.loads(f.read())
        assert doc["mindspeed_prof"]["rank"] == 3
        assert doc["mindspeed_prof"]["step"] == capture.step
        assert doc["mindspeed_prof"]["iterations"] == [2, 3]
        assert {e["name"] for e in doc["traceEvents"]} == {"decode_2", "decode_3", "aten::mm"}


def test_engine_traces_join_the_analysis_with_their_rank_and_step(tmp_path: Path) -> None:
    engine = VllmLLM(tmp_path / "vllm_traces", tp=1)
    prof = _prof(tmp_path, iteration_start=1, iteration_count=3)
    part = prof.attach_engine(engine, kind="vllm")
    _train(prof, engine)
    result = analyse(tmp_path / "save")
    found = {t.path.resolve(): t for t in result.traces}
    for path, step in zip(part.files, (1, 2)):
        trace = found[path.resolve()]
        assert trace.rank == 3  # the trainer's, not the engine worker's distributedInfo 0
        assert trace.meta.step == step and trace.meta.engine == "vllm"
        assert trace.meta.run == prof.run[0]
        assert trace.meta.world_size is None  # the engine's own workers, not the job's
    assert not [
        w for w in tables(result).warnings if "claimed by" in w
    ]  # one capture each, no clash


def test_manifest_entry_lists_the_engine_traces(tmp_path: Path) -> None:
    engine = VllmLLM(tmp_path / "vllm_traces", tp=2)
    prof = _prof(tmp_path, iteration_start=0, iteration_count=2)
    part = prof.attach_engine(engine)
    _train(prof, engine, steps=1)
    (entry,) = [c.to_json() for c in prof.captures]  # what the manifest writes
    assert entry["engine"] == "vllm" and entry["iterations"] == [0, 1]
    assert sorted(entry["files"][1:]) == sorted(str(f) for f in part.files)
    assert [Path(f).name.split(".")[0][-3:] for f in entry["files"][1:]] == ["tp0", "tp1"]


def test_sglang_writes_into_the_save_root_per_stage_without_a_window(tmp_path: Path) -> None:
    engine = SglangEngine()
    prof = _prof(tmp_path)
    part = prof.attach_engine(engine, activities=["CPU"])
    _train(prof, engine, iterations=6)
    _edges(engine, 0, 5)  # the whole stage: before its first iteration, after its last
    dirs = [Path(kw["output_dir"]) for name, _, kw in engine.calls if name == "start_profile"]
    save = (tmp_path / "save").resolve()
    assert all(save in d.parents for d in dirs) and len(set(dirs)) == 2
    assert [kw["activities"] for n, _, kw in engine.calls if n == "start_profile"] == [["CPU"]] * 2
    assert [p.parent for p in part.files] == dirs
    assert [c.reason for c in prof.captures] == ["stage_end", "stage_end"]


def test_async_vllm_coroutines_are_run(tmp_path: Path) -> None:
    engine = VllmAsyncLLM(tmp_path / "vllm_traces")
    prof = _prof(tmp_path, iteration_start=0, iteration_count=1)
    part = prof.attach_engine(engine)
    _train(prof, engine)
    _edges(engine, 0, 0)
    assert len(part.files) == 2


@pytest.mark.parametrize("fail", ["start_profile", "stop_profile"])
def test_engine_faults_never_stop_training(
    tmp_path: Path, fail: str, caplog: pytest.LogCaptureFixture
) -> None:
    engine = VllmLLM(tmp_path / "vllm_traces", fail=fail)
    prof = _prof(tmp_path, iteration_start=1, iteration_count=2, strict=True)
    prof.attach_engine(engine)
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        _train(prof, engine)
    assert len(engine.iterations) == 12  # training ran to its end
    assert [c.iterations for c in prof.captures] == [[1, 2], [1, 2]]  # our own captures too
    assert all(c.files for c in prof.captures) and not prof.failed
    warned = [r for r in caplog.records if "engine's profiler" in r.getMessage()]
    assert len(warned) == 1 and fail.split("_")[0] in warned[0].getMessage()


def test_engine_kind(tmp_path: Path) -> None:
    prof = _prof(tmp_path)
    assert prof.attach_engine(SglangEngine()).driver.kind == "sglang"
    with pytest.raises(ValueError, match="kind="):
        prof.attach_engine(_Unknown())
    with pytest.raises(ValueError, match="allowed: auto, vllm, sglang"):
        prof.attach_engine(SglangEngine(), kind="trtllm")
    prof.close()


def test_traces_flushed_after_the_stop_are_kept_later(tmp_path: Path) -> None:
    engine = VllmLLM(tmp_path / "vllm_traces", late=True)  # vLLM may flush in the background
    prof = _prof(tmp_path, iteration_start=0, iteration_count=1)
    part = prof.attach_engine(engine)
    with prof:
        for step in (1, 2):
            with prof.step(step), prof.stage("actor_generate"):
                for i in range(3):
                    with mstx.iteration(i):
                        engine.step(i)
            assert len(prof.captures[-1].files) == 1  # the range file; the engine's not yet
            engine.flush()  # found at the next capture's end (step 1's) or at close (step 2's)
    assert [len(c.files) for c in prof.captures] == [2, 2] and len(part.files) == 2
    assert all(c.engine == "vllm" for c in prof.captures)
    assert all(f.name.startswith(f"rank3_step{s}_") for f, s in zip(part.files, (1, 2)))
