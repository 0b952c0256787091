"""A request is data: every field type-checked and bounded, ids never paths, torch_npu's form read."""

from __future__ import annotations

import math
from typing import Any

import pytest

from mindspeed_prof.capture.control import Ack, Request, from_npu


def parse(**fields: Any) -> Request:
    return Request.parse({"id": "a-1", "created": 1.0, "expires": 2.0, **fields})


def test_new_requests_are_checked() -> None:
    with pytest.raises(ValueError, match="steps=0"):
        Request.new(1, steps=0)
    with pytest.raises(ValueError, match="level='level9'"):
        Request.new(1, level="level9")
    assert Request.new(1, steps=0, flight=True).steps == 0


@pytest.mark.parametrize(("fields", "named"), [
    ({"colour": "red"}, "unknown field 'colour'"),
    ({"id": "../../etc"}, "id="), ({"id": "/abs/path"}, "id="), ({"id": {"a": 1}}, "id="),
    ({"id": ["a"]}, "id="), ({"id": "a" * 129}, "id="), ({"id": ".hidden"}, "id="),
    ({"created": "now"}, "created="), ({"expires": math.inf}, "expires="),
    ({"expires": True}, "expires="),
    ({"steps": "2"}, "steps="), ({"steps": -1}, "steps="), ({"steps": 10**9}, "steps="),
    ({"steps": True}, "steps="), ({"flight": "yes"}, "flight="),
    ({"ranks": "0"}, "ranks="), ({"ranks": [0, -1]}, "ranks="), ({"ranks": [True]}, "ranks="),
    ({"ranks": [2**40]}, "ranks="),
    ({"start_step": "5"}, "start_step="), ({"start_step": 0}, "start_step="),
    ({"role": "../../etc"}, "role="), ({"role": 5}, "role="),
    ({"stage": "everything"}, "stage="), ({"preset": "none"}, "preset="),
    ({"overrides": "level2"}, "overrides="), ({"overrides": {"profile_level": "level9"}},
                                              "overrides.profile_level="),
    ({"overrides": {"mstx": 1}}, "overrides.mstx="),
    ({"overrides": {"profile_save_path": "/"}}, "overrides.profile_save_path: unknown"),
])
def test_each_bad_field_is_named(fields: dict[str, Any], named: str) -> None:
    with pytest.raises(ValueError, match=named.replace("(", r"\(").replace(".", r"\.")):
        parse(**fields)


def test_a_request_that_is_not_an_object_is_one_line() -> None:
    data: Any
    for data in ([], "x", 3, None):
        with pytest.raises(ValueError, match="a request is a JSON object"):
            Request.parse(data)


def test_overrides_take_capture_options() -> None:
    request = parse(overrides={"profile_level": "level2", "profile_with_cpu": True,
                               "aic_metrics": "pipe_utilization"})
    assert request.overrides["profile_level"] == "level2"


def test_torch_npu_dynamic_profiling_config() -> None:
    data = from_npu({"activities": ["CPU", "NPU"], "prof_dir": "./elsewhere", "start_step": 3,
                     "active": 1, "is_rank": True, "rank_list": [0], "record_shapes": True,
                     "experimental_config": {"profiler_level": "Level1"}}, "npu-x-1")
    request = Request.parse(data)
    assert (request.steps, request.start_step, request.ranks, request.level) == (1, 3, [0],
                                                                                 "level1")
    assert request.overrides == {"profile_record_shapes": True}
    with pytest.raises(ValueError, match="experimental_config"):
        from_npu({"active": 1, "experimental_config": "Level1"}, "npu-x-1")
    with pytest.raises(ValueError, match="start_step="):
        Request.parse(from_npu({"start_step": "5"}, "npu-x-1"))
    with pytest.raises(ValueError, match="overrides.profile_with_memory="):
        Request.parse(from_npu({"active": 1, "profile_memory": "yes"}, "npu-x-1"))


def test_acks_from_json_are_checked() -> None:
    good = Ack(id="a", rank=1, role="actor", status="written", files=["f"])
    assert Ack.parse(good.to_json()) == good and good.done
    bad: Any
    for bad in ({"id": "a", "rank": "1", "role": "actor", "status": "written"},
                {"id": "a", "rank": 1, "role": "actor", "status": "written", "files": [1]},
                {"id": "a"}, [], "ack"):
        assert Ack.parse(bad) is None
    newer = {"id": "a", "rank": 1, "role": "x", "status": "queued", "from_a_newer_job": 1}
    assert Ack.parse(newer) == Ack(id="a", rank=1, role="x", status="queued")
