"""On-demand capture in a running profiler: requests through the control folder (and Ray)."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from mindspeed_prof import Profiler
from mindspeed_prof.capture.control import Request, read_acks, write_request


def make(tmp_path: Path, rank: int = 0, **fields: Any) -> Profiler:
    cfg = {"profile_save_path": str(tmp_path), "backend": "none", "mstx": True, **fields}
    prof = Profiler.from_config(cfg, rank=rank)
    if prof._ondemand is not None:
        prof._ondemand.interval_ns = 0  # every step looks, so tests need not wait a second
    return prof


def run(prof: Profiler, steps: range) -> None:
    for step in steps:
        with prof.step(step), prof.stage("actor_update"):
            pass


def request(tmp_path: Path, **values: Any) -> Request:
    req = Request.new(60, **values)
    write_request(tmp_path, req)
    return req


def test_request_captures_next_steps_of_a_job_with_profiling_off(tmp_path: Path) -> None:
    prof = make(tmp_path)
    assert not prof.enabled and not prof._live
    run(prof, range(1, 3))
    req = request(tmp_path, steps=2)
    run(prof, range(3, 8))
    prof.close()
    (record,) = prof.captures
    assert record.steps == [3, 4] and record.trigger == "on_demand"
    assert record.request == req.id
    (spans,) = (tmp_path / "triggered" / "integrated").iterdir()
    names = {e["name"] for e in json.loads(spans.read_text())["traceEvents"]}
    assert names == {"ProfilerStep#3", "ProfilerStep#4", "actor_update"}
    (ack,) = read_acks(tmp_path, req.id)
    assert ack.status == "written" and ack.files == [str(spans)]


@pytest.mark.parametrize("fault", ["start", "no files"])
def test_a_capture_that_did_not_start_or_wrote_nothing_is_acknowledged_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    """The command exits 0 only on files: a start that raised without a message, or a
    capture that wrote nothing, is ``failed`` with a reason, never ``written``."""
    prof = make(tmp_path)
    capturer = prof._capturer
    if fault == "start":

        def start(starting: object) -> None:
            raise RuntimeError()

        monkeypatch.setattr(capturer, "start", start)
    else:
        stop = capturer.stop

        def stop_without_files(reason: str) -> tuple[Any, str]:
            record, error = stop(reason)
            if record is not None:
                record.files = []
            return record, error

        monkeypatch.setattr(capturer, "stop", stop_without_files)
    req = request(tmp_path, steps=1)
    with pytest.warns(RuntimeWarning) if fault == "start" else contextlib.nullcontext():
        run(prof, range(1, 4))
    prof.close()
    (ack,) = read_acks(tmp_path, req.id)
    assert ack.status == "failed" and ack.files == []
    assert ack.message == ("RuntimeError: " if fault == "start" else "the capture wrote no files")


def test_two_requests_apply_in_order_once_across_restarts(tmp_path: Path) -> None:
    first = request(tmp_path, steps=1)
    second = request(tmp_path, steps=1, stage="actor_update")
    prof = make(tmp_path)
    run(prof, range(1, 5))
    prof.close()
    assert [(c.request, c.step, c.stage) for c in prof.captures] == [
        (first.id, 1, "all"),
        (second.id, 2, "actor_update"),
    ]
    restarted = make(tmp_path)  # a restarted job sees the same files: applies nothing again
    run(restarted, range(1, 4))
    restarted.close()
    assert restarted.captures == []


def test_ranks_and_role_select_workers(tmp_path: Path) -> None:
    request(tmp_path, steps=1, ranks=[1], role="actor")
    workers = [
        Profiler.from_config(
            {"actor": {"profile_save_path": str(tmp_path), "backend": "none"}}, rank=r, role="actor"
        )
        for r in (0, 1)
    ]
    critic = Profiler.from_config(
        {"critic": {"profile_save_path": str(tmp_path), "backend": "none"}}, rank=1, role="critic"
    )
    for prof in (*workers, critic):
        prof._ondemand.interval_ns = 0  # type: ignore[union-attr]
        run(prof, range(1, 3))
        prof.close()
    assert [len(p.captures) for p in (*workers, critic)] == [0, 1, 0]


def test_level_override_and_torch_npu_config_format(tmp_path: Path) -> None:
    folder = tmp_path / "control" / "requests"
    folder.mkdir(parents=True)
    (folder / "profiler_config.json").write_text(
        json.dumps(
            {
                "activities": ["CPU", "NPU"],
                "prof_dir": "./elsewhere",
                "start_step": 3,
                "active": 1,
                "is_rank": True,
                "rank_list": [0],
                "record_shapes": True,
                "experimental_config": {"profiler_level": "Level_none", "export_type": "text"},
            }
        )
    )
    prof = make(tmp_path, backend="torch")
    run(prof, range(1, 6))
    prof.close()
    (record,) = prof.captures
    assert record.steps == [3] and record.backend == "torch"
    (spans,) = (tmp_path / "triggered" / "integrated").iterdir()
    assert json.loads(spans.read_text())["mindspeed_prof"]["trigger"] == "on_demand"
    assert spans.name.endswith(".mstx.trace.json")  # level_none: ranges only, no op trace


def test_the_check_is_time_gated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prof = Profiler.from_config({"integrated": {"profile_save_path": str(tmp_path)}})
    (tmp_path / "control" / "requests").mkdir(parents=True)
    calls = []
    real = os.scandir

    def counting(path: Any) -> Any:
        calls.append(path)
        return real(path)

    monkeypatch.setattr(os, "scandir", counting)
    run(prof, range(1, 200))
    assert len(calls) == 1  # 199 steps well inside a second: one look


def test_on_demand_off(tmp_path: Path) -> None:
    request(tmp_path, steps=1)
    prof = make(tmp_path, on_demand=False)
    run(prof, range(1, 3))
    assert prof._ondemand is None and prof.captures == []


def test_closed_profiler_takes_no_requests(tmp_path: Path) -> None:
    prof = make(tmp_path)
    prof.close()
    req = request(tmp_path, steps=1)
    run(prof, range(1, 3))
    assert prof.captures == [] and read_acks(tmp_path, req.id) == []


class RayWorker:
    def __init__(self, rank: int, cfg: dict[str, Any]) -> None:
        from mindspeed_prof.ray import ProfilerMixin

        self.mixin = ProfilerMixin()
        self.mixin.init_profiler(cfg, rank=rank)

    def steps(self, first: int, last: int) -> list[dict[str, Any]]:
        prof = self.mixin.profiler
        for step in range(first, last + 1):
            with prof.step(step), prof.stage("actor_update"):
                pass
        prof.close()
        return [c.to_json() for c in prof.captures]


def test_ray_workers_take_requests_for_their_rank(ray_cluster: Any, tmp_path: Path) -> None:
    from mindspeed_prof.ray import worker_config

    ray = ray_cluster
    req = request(tmp_path, steps=1, ranks=[1])
    cfg = worker_config({"profile_save_path": str(tmp_path), "backend": "none"})
    workers = [ray.remote(RayWorker).remote(rank, cfg) for rank in range(2)]
    captures = ray.get([w.steps.remote(1, 3) for w in workers])
    assert captures[0] == [] and [c["request"] for c in captures[1]] == [req.id]
    assert [a.rank for a in read_acks(tmp_path, req.id)] == [1]


def test_a_preset_brings_all_its_capture_options_whatever_the_jobs_preset() -> None:
    from mindspeed_prof.capture.ondemand import asks_for_ops, variant
    from mindspeed_prof.config.validate import validate

    light = validate(
        {
            "integrated": {
                "profile": True,
                "mstx": True,
                "profile_level": "level_none",
                "profile_with_cpu": False,
            }
        }
    )
    full = variant(light, Request.new(60, steps=1, preset="full"))
    assert (full.profile_level.value, full.profile_with_cpu, full.profile_record_shapes) == (
        "level1",
        True,
        True,
    )
    level = variant(light, Request.new(60, steps=1, level="level2"))
    assert (level.profile_level.value, level.profile_with_cpu) == ("level2", False)
    own = variant(
        light, Request.new(60, steps=1, preset="full", overrides={"profile_with_cpu": False})
    )
    assert not own.profile_with_cpu  # the request's own options win over its preset's
    assert asks_for_ops(Request.new(60, steps=1, preset="full"))
    assert not asks_for_ops(Request.new(60, steps=1, preset="mstx_light"))
    assert not asks_for_ops(Request.new(60, steps=1))


@pytest.mark.parametrize("enter", ["step", "on_step_start"])
def test_the_look_is_due_at_its_instant_not_a_tick_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, enter: str
) -> None:
    from mindspeed_prof.capture import profiler as profiler_module

    prof = make(tmp_path)
    ondemand = prof._ondemand
    assert ondemand is not None
    looked: list[int] = []
    monkeypatch.setattr(ondemand, "check", looked.append)
    monkeypatch.setattr(profiler_module, "perf_counter_ns", lambda: 5_000)
    ondemand.due_ns = 5_001
    getattr(prof, enter)(1)
    ondemand.due_ns = 5_000
    getattr(prof, enter)(2)
    assert looked == [2]
