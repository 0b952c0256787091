"""Counters: ``prof.count`` and ``mstx.count`` land in range files and flight dumps as Chrome
counter events with their rank, step and stage; bad counts are dropped with one warning; nothing
is recorded (or paid for) while nothing records."""

from __future__ import annotations

import json
import logging
import math
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from mindspeed_prof import Profiler, mstx
from mindspeed_prof.analysis.report.tables import tables
from mindspeed_prof.capture import count as count_module
from mindspeed_prof.capture.lifecycle import State
from mindspeed_prof.capture.part import Part
from mindspeed_prof.config.validate import ConfigError, validate
from mindspeed_prof.formats.header import ModelFacts


def light(
    tmp_path: Path, start: int = 1, end: int = 3, rank: int = 3, **extensions: Any
) -> Profiler:
    """Ranges only (the ``mstx_light`` settings), steps ``start`` to ``end - 1``."""
    return Profiler.from_config(
        {
            "integrated": {
                "profile": True,
                "mstx": True,
                "profile_level": "level_none",
                "profile_with_cpu": False,
                "profile_step_start": start,
                "profile_step_end": end,
                "profile_save_path": str(tmp_path),
            },
            "extensions": extensions,
        },
        rank=rank,
    )


def range_file(root: Path) -> dict[str, Any]:
    (path,) = root.rglob("*.mstx.trace.json")
    return json.loads(path.read_text())


def counts(trace: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in trace["traceEvents"] if e["ph"] == "C"]


def test_counts_land_with_their_rank_step_and_stage(tmp_path: Path) -> None:
    prof = light(tmp_path, rank=3)
    for step in (1, 2):
        with prof.step(step):
            with prof.stage("actor_generate"):
                prof.count("tokens_generated", 100 * step)
                mstx.count("response_length", [3, 5, 8])
                with prof.stage("reward"):  # the innermost stage is the one counted in
                    prof.count("reward", (0.5, 1.0))
                prof.count("tokens_generated", 7)  # the same name again: a second event
            prof.count("samples_kept", 4)  # in the step, outside any stage
        prof.count("between", 1.5)  # outside any step
    prof.close()
    trace = range_file(tmp_path)
    assert trace["distributedInfo"] == {"rank": 3} and trace["mindspeed_prof"]["rank"] == 3
    got = [(e["name"], e["cat"], e["pid"], e["tid"], e["args"]) for e in counts(trace)]
    me = (os.getpid(), threading.get_native_id())
    assert (
        got
        == [
            e
            for step in (1, 2)
            for e in [
                (
                    "tokens_generated",
                    "count",
                    *me,
                    {"value": 100 * step, "step": step, "stage": "actor_generate"},
                ),
                (
                    "response_length",
                    "count",
                    *me,
                    {"values": [3, 5, 8], "step": step, "stage": "actor_generate"},
                ),
                ("reward", "count", *me, {"values": [0.5, 1.0], "step": step, "stage": "reward"}),
                (
                    "tokens_generated",
                    "count",
                    *me,
                    {"value": 7, "step": step, "stage": "actor_generate"},
                ),
                ("samples_kept", "count", *me, {"value": 4, "step": step}),
                ("between", "count", *me, {"value": 1.5}),
            ]
        ][:-1]
    )  # the window closed with step 2
    stamps = [e["ts"] for e in counts(trace)]
    assert stamps == sorted(stamps)  # on the ranges' clock, in the order counted
    (gen1, *_), steps = (
        [e for e in trace["traceEvents"] if e["name"] == "actor_generate"],
        [e for e in trace["traceEvents"] if e["cat"] == "step"],
    )
    assert gen1["ts"] <= stamps[0] <= gen1["ts"] + gen1["dur"]
    assert steps[0]["ts"] + steps[0]["dur"] <= stamps[5] <= steps[1]["ts"]


@pytest.mark.parametrize(
    "value,args",
    [
        (np.array([1.0, 2.5]), {"values": [1.0, 2.5]}),
        (torch.tensor([3, 4]), {"values": [3, 4]}),
        (torch.tensor(2.5), {"value": 2.5}),
        (np.int64(7), {"value": 7}),
        (np.float32(0.5), {"value": 0.5}),
        ([np.int64(1), 2.0], {"values": [1, 2.0]}),
        (range(3), {"values": [0, 1, 2]}),
    ],
)
def test_arrays_tensors_and_numpy_numbers_are_read_as_numbers(
    tmp_path: Path, value: Any, args: dict[str, Any]
) -> None:
    prof = light(tmp_path)
    with prof.step(1):
        prof.count("c", value)
    prof.close()
    (event,) = counts(range_file(tmp_path))
    assert event["args"] == {**args, "step": 1}


def test_a_distribution_is_copied_when_counted(tmp_path: Path) -> None:
    """The trainer may reuse its list: what was counted is what it held at the call."""
    prof = light(tmp_path)
    lengths = [1, 2]
    with prof.step(1):
        prof.count("response_length", lengths)
        lengths.append(99)
    prof.close()
    assert counts(range_file(tmp_path))[0]["args"]["values"] == [1, 2]


def test_counts_from_several_threads_each_have_their_thread_and_stage(tmp_path: Path) -> None:
    """Threads count at once, each inside its own stage or none: every count is written once,
    with its thread and that thread's innermost stage."""
    prof = light(tmp_path)
    n, per = 6, 300
    start = threading.Barrier(n)
    tids: dict[int, int] = {}

    def work(i: int) -> None:
        tids[i] = threading.get_native_id()
        start.wait()
        if i % 2:
            with prof.stage(f"stage{i}"):
                for k in range(per):
                    mstx.count("tokens_generated", k)
        else:
            for k in range(per):
                prof.count("tokens_generated", [k])

    with prof.step(1):
        threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    prof.close()
    by_tid: dict[int, list[dict[str, Any]]] = {}
    for e in counts(range_file(tmp_path)):
        by_tid.setdefault(e["tid"], []).append(e["args"])
    assert sorted(by_tid) == sorted(tids.values())
    for i, tid in tids.items():
        if i % 2:
            assert by_tid[tid] == [
                {"value": k, "step": 1, "stage": f"stage{i}"} for k in range(per)
            ]
        else:
            assert by_tid[tid] == [{"values": [k], "step": 1} for k in range(per)]


def test_nothing_is_recorded_or_registered_while_nothing_records(tmp_path: Path) -> None:
    """Before the window and with profiling off, counts go nowhere: ``mstx.count`` has no
    profiler to call, and the window's file holds only what was counted inside it."""
    assert mstx._counters == ()
    off = Profiler.from_config(
        {"integrated": {"profile": False, "profile_save_path": str(tmp_path / "off")}}
    )
    with off.step(1):
        off.count("tokens_generated", 5)
    assert mstx._counters == () and not (tmp_path / "off").exists()
    prof = light(tmp_path / "on", start=3, end=4)
    for step in (1, 2, 3, 4):
        with prof.step(step), prof.stage("actor_generate"):
            assert bool(mstx._counters) == (step == 3)
            mstx.count("tokens_generated", step)
            prof.count("reward", [step])
    prof.close()
    assert [(e["name"], e["args"]["step"]) for e in counts(range_file(tmp_path / "on"))] == [
        ("tokens_generated", 3),
        ("reward", 3),
    ]
    assert mstx._counters == ()


def test_a_closed_profiler_counts_nothing_and_leaves_mstx(tmp_path: Path) -> None:
    prof = light(tmp_path, start=1, end=10)
    with prof.step(1):
        prof.count("a", 1)
    assert mstx._counters
    prof.close()
    assert mstx._counters == ()
    prof.count("a", 2)  # nothing, no error
    assert [e["args"]["value"] for e in counts(range_file(tmp_path))] == [1]


def test_two_profilers_each_record_mstx_counts(tmp_path: Path) -> None:
    a = light(tmp_path / "a", end=10)
    b = Profiler.from_config(
        {"profile_save_path": str(tmp_path / "b"), "flight_recorder_steps": 2}, rank=0
    )
    with a.step(1), b.step(1):
        mstx.count("tokens_generated", 11)
        a.count("only_a", 1)
    a.close()
    assert [e["name"] for e in counts(range_file(tmp_path / "a"))] == ["tokens_generated", "only_a"]
    dump = b.dump_flight("request")
    b.close()
    assert dump is not None
    assert [(e["name"], e["args"]) for e in counts(json.loads(dump.read_text()))] == [
        ("tokens_generated", {"value": 11, "step": 1})
    ]


def test_the_flight_recorder_keeps_counts_of_its_last_steps(tmp_path: Path) -> None:
    prof = Profiler.from_config(
        {"profile_save_path": str(tmp_path), "flight_recorder_steps": 2}, rank=5
    )
    for step in (1, 2, 3):
        with prof.step(step), prof.stage("actor_update"):
            prof.count("tokens_trained", step * 10)
    path = prof.dump_flight("request")
    prof.close()
    assert path is not None
    trace = json.loads(path.read_text())
    assert trace["distributedInfo"] == {"rank": 5}
    assert [e["args"] for e in counts(trace)] == [
        {"value": 20, "step": 2, "stage": "actor_update"},
        {"value": 30, "step": 3, "stage": "actor_update"},
    ]


# -- faults: dropped with one warning, never raised into training ----------------------------
class _Unreadable:
    def tolist(self) -> list[float]:
        raise RuntimeError("device lost")


BAD: list[tuple[Any, Any]] = [
    ("", 1),
    ("has space", 1),
    ("9lives", 1),
    ("x" * 101, 1),
    (None, 1),
    (7, 1),
    ("nan", math.nan),
    ("inf", [1.0, math.inf]),
    ("neg_inf", np.array([-np.inf])),
    ("flag", True),
    ("text", "12"),
    ("nested", [[1, 2]]),
    ("flags", [1, False]),
    ("mapping", {"a": 1}),
    ("unreadable", _Unreadable()),
    ("obj", object()),
]


def test_bad_counts_are_dropped_with_one_warning_each(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    prof = light(tmp_path)
    with caplog.at_level(logging.WARNING, "mindspeed_prof"):
        for step in (1, 2):
            with prof.step(step):
                for name, value in BAD:
                    prof.count(name, value)
                    mstx.count(name, value)
                prof.count("fine", step)
        prof.close()
    assert [e["name"] for e in counts(range_file(tmp_path))] == ["fine", "fine"]
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == len(BAD)  # one per bad name, whatever the calls
    assert all("dropped" in w and "allowed:" in w for w in warned)
    assert any("'nan'" in w and "not finite" in w for w in warned)
    assert any("'has space'" in w and "bad name" in w for w in warned)
    assert any("'unreadable'" in w and "device lost" in w for w in warned)


def test_an_empty_distribution_adds_nothing(tmp_path: Path) -> None:
    prof = light(tmp_path)
    with prof.step(1):
        prof.count("reward", [])
        prof.count("reward", np.array([]))
    prof.close()
    assert counts(range_file(tmp_path)) == []


class _Taker(Part):
    """A part that takes counts (as the telemetry part does)."""

    def __init__(self, fail: bool = False) -> None:
        self.got: list[tuple[Any, ...]] = []
        self.fail = fail

    def on_count(
        self, name: str, value: float | list[float], step: int | None, stage: str | None
    ) -> None:
        if self.fail:
            raise ValueError("part broke")
        self.got.append((name, value, step, stage, threading.get_native_id()))


def test_a_part_gets_every_count_whether_or_not_anything_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    taker, broken = _Taker(), _Taker(fail=True)
    real_init = Profiler.__init__

    def with_parts(self: Profiler, *args: Any, **kwargs: Any) -> None:
        real_init(self, *args, **kwargs)
        self.parts += [taker, broken]  # as if built with it: a live part that counts
        self._counting, self._state = [taker, broken], State.LIVE
        self._tap.count_always()

    monkeypatch.setattr(Profiler, "__init__", with_parts)
    prof = Profiler.from_config({"profile_save_path": str(tmp_path)}, rank=0)  # records nothing
    with caplog.at_level(logging.WARNING, "mindspeed_prof"):
        mstx.count("before", 1)
        with prof.step(4), prof.stage("actor_generate"):
            mstx.count("tokens_generated", np.int64(12))
            prof.count("reward", [1, 0.5])
            prof.count("bad name", 1)
    prof.close()
    mstx.count("after", 1)
    me = threading.get_native_id()
    assert taker.got == [
        ("before", 1, None, None, me),
        ("tokens_generated", 12, 4, "actor_generate", me),
        ("reward", [1, 0.5], 4, "actor_generate", me),
    ]
    assert mstx._counters == ()
    assert [
        r.getMessage().count("part broke") for r in caplog.records if "on_count" in r.getMessage()
    ] == [1]  # warned once, training went on
    assert not list(tmp_path.rglob("*.json"))


def test_the_profilers_parts_that_count_are_those_with_on_count(tmp_path: Path) -> None:
    """The built-in parts take no counts: a profiler with a flight recorder registers with
    ``mstx`` only while it records (it always does, with a ring)."""
    prof = Profiler.from_config(
        {"profile_save_path": str(tmp_path), "anomaly_factor": 2.0, "max_disk_mb": 10}, rank=0
    )
    assert prof.parts and prof._counting == [] and mstx._counters == ()
    prof.close()


# -- the header's model block -------------------------------------------------
def test_the_header_carries_the_model_facts_when_given(tmp_path: Path) -> None:
    prof = light(tmp_path / "given", model_flops_per_token=1.4e10, peak_tflops="989")
    with prof.step(1):
        pass
    prof.close()
    head = range_file(tmp_path / "given")["mindspeed_prof"]
    assert head["model"] == {"flops_per_token": 1.4e10, "peak_tflops": 989.0}
    half = light(tmp_path / "half", peak_tflops=312)
    assert half.metadata("all", 1).model == ModelFacts(flops_per_token=0.0, peak_tflops=312.0)
    half.close()
    bare = light(tmp_path / "bare")
    assert bare.metadata("all", 1).model is None
    bare.close()


@pytest.mark.parametrize(
    "field,value,problem",
    [
        ("model_flops_per_token", -1, "must be a number >= 0"),
        ("model_flops_per_token", "nan", "must be a number >= 0"),
        ("peak_tflops", "inf", "must be a number >= 0"),
        ("peak_tflops", "fast", "must be a number"),
    ],
)
def test_bad_model_facts_stop_the_run_naming_the_field(
    field: str, value: Any, problem: str
) -> None:
    with pytest.raises(ConfigError) as err:
        validate({"integrated": {"profile": True}, "extensions": {field: value}})
    assert f"profiler_config.extensions.{field}=" in str(err.value)
    assert problem in str(err.value)


def test_check_keeps_ints_and_floats_as_given() -> None:
    assert count_module.check("a", 3) == 3 and type(count_module.check("a", 3)) is int
    assert count_module.check("a", 2.5) == 2.5
    assert count_module.check("a_b.c:d/e-f", (1, 2.0)) == [1, 2.0]
    assert count_module.STANDARD[-2:] == ("response_length", "reward")


def test_the_analysis_reads_a_range_file_with_counts_as_one_without(tmp_path: Path) -> None:
    """Counter events change nothing the analysis reads of ranges (until it reads counts)."""
    from mindspeed_prof.analysis.analyse import analyse

    prof = light(tmp_path / "with", end=4)
    for step in (1, 2, 3):
        with prof.step(step):
            with prof.stage("actor_generate"):
                prof.count("tokens_generated", 128)
                prof.count("reward", [0.0, 1.0])
                with mstx.range("decode"):
                    prof.count("response_length", [4, 4])
            prof.count("samples_kept", 2)
    prof.close()
    (path,) = (tmp_path / "with").rglob("*.mstx.trace.json")
    trace = json.loads(path.read_text())
    assert len(counts(trace)) == 12
    trace["traceEvents"] = [e for e in trace["traceEvents"] if e["ph"] != "C"]
    bare = tmp_path / "without" / path.relative_to(tmp_path / "with")
    bare.parent.mkdir(parents=True)
    bare.write_text(json.dumps(trace))

    def read(root: Path) -> Any:
        result = analyse(root)
        return (
            [(r.kind, r.name, r.rank, r.step, r.ts, r.dur) for r in tables(result).ranges],
            [note.replace("without", "with") for note in tables(result).notes],
        )

    assert read(tmp_path / "with") == read(tmp_path / "without")
    assert {r[1] for r in read(tmp_path / "with")[0]} >= {"actor_generate", "decode"}
