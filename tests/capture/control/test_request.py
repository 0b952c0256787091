"""A request is data: every field type-checked and bounded, ids never paths, torch_npu's form
read."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

from mindspeed_prof.capture.control import Ack, Request, from_npu
from mindspeed_prof.capture.control import request as request_module


def parse(**fields: Any) -> Request:
    return Request.parse({"id": "a-1", "created": 1.0, "expires": 2.0, **fields})


def test_new_requests_are_checked() -> None:
    with pytest.raises(ValueError, match="steps=0"):
        Request.new(1, steps=0)
    with pytest.raises(ValueError, match="level='level9'"):
        Request.new(1, level="level9")
    assert Request.new(1, steps=0, flight=True).steps == 0


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"colour": "red"}, "unknown field 'colour'"),
        ({"id": "../../etc"}, "id="),
        ({"id": "/abs/path"}, "id="),
        ({"id": {"a": 1}}, "id="),
        ({"id": ["a"]}, "id="),
        ({"id": "a" * 129}, "id="),
        ({"id": ".hidden"}, "id="),
        ({"created": "now"}, "created="),
        ({"expires": math.inf}, "expires="),
        ({"expires": True}, "expires="),
        ({"steps": "2"}, "steps="),
        ({"steps": -1}, "steps="),
        ({"steps": 10**9}, "steps="),
        ({"steps": True}, "steps="),
        ({"flight": "yes"}, "flight="),
        ({"ranks": "0"}, "ranks="),
        ({"ranks": [0, -1]}, "ranks="),
        ({"ranks": [True]}, "ranks="),
        ({"ranks": [2**40]}, "ranks="),
        ({"start_step": "5"}, "start_step="),
        ({"start_step": 0}, "start_step="),
        ({"role": "../../etc"}, "role="),
        ({"role": 5}, "role="),
        ({"stage": "everything"}, "stage="),
        ({"preset": "none"}, "preset="),
        ({"overrides": "level2"}, "overrides="),
        ({"overrides": {"profile_level": "level9"}}, "overrides.profile_level="),
        ({"overrides": {"mstx": 1}}, "overrides.mstx="),
        ({"overrides": {"profile_save_path": "/"}}, "overrides.profile_save_path: unknown"),
    ],
)
def test_each_bad_field_is_named(fields: dict[str, Any], named: str) -> None:
    with pytest.raises(ValueError, match=named.replace("(", r"\(").replace(".", r"\.")):
        parse(**fields)


def test_a_request_that_is_not_an_object_is_one_line() -> None:
    data: Any
    for data in ([], "x", 3, None):
        with pytest.raises(ValueError, match="a request is a JSON object"):
            Request.parse(data)


def test_overrides_take_capture_options() -> None:
    request = parse(
        overrides={
            "profile_level": "level2",
            "profile_with_cpu": True,
            "aic_metrics": "pipe_utilization",
        }
    )
    assert request.overrides["profile_level"] == "level2"


def test_torch_npu_dynamic_profiling_config() -> None:
    data = from_npu(
        {
            "activities": ["CPU", "NPU"],
            "prof_dir": "./elsewhere",
            "start_step": 3,
            "active": 1,
            "is_rank": True,
            "rank_list": [0],
            "record_shapes": True,
            "experimental_config": {"profiler_level": "Level1"},
        },
        "npu-x-1",
    )
    request = Request.parse(data)
    assert (request.steps, request.start_step, request.ranks, request.level) == (
        1,
        3,
        [0],
        "level1",
    )
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
    for bad in (
        {"id": "a", "rank": "1", "role": "actor", "status": "written"},
        {"id": "a", "rank": 1, "role": "actor", "status": "written", "files": [1]},
        {"id": "a"},
        [],
        "ack",
    ):
        assert Ack.parse(bad) is None
    newer = {"id": "a", "rank": 1, "role": "x", "status": "queued", "from_a_newer_job": 1}
    assert Ack.parse(newer) == Ack(id="a", rank=1, role="x", status="queued")


class _Clock:
    """``request``'s ``time`` module, stopped at ``now`` seconds since the epoch."""

    def __init__(self, now: float) -> None:
        self.now = now

    def time(self) -> float:
        return self.now

    def time_ns(self) -> int:
        return int(self.now * 1e9)


def test_a_new_request_is_named_by_its_time_and_expires_after_its_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(request_module, "time", _Clock(1000.0))
    request = Request.new(60, steps=3, ranks=[1])
    assert re.fullmatch(r"1000000000000-[0-9a-f]{8}", request.id)
    assert (request.created, request.expires, request.steps, request.ranks) == (
        1000.0,
        1060.0,
        3,
        [1],
    )
    assert request.to_json() == {
        "id": request.id,
        "created": 1000.0,
        "expires": 1060.0,
        "steps": 3,
        "ranks": [1],
        "role": None,
        "stage": None,
        "level": None,
        "preset": None,
        "flight": False,
        "start_step": None,
        "overrides": {},
    }


def message(data: Any) -> str:
    """Why ``Request.parse`` refuses ``data``."""
    with pytest.raises(ValueError) as err:
        Request.parse(data)
    return str(err.value)


def test_what_a_request_must_be_is_said_in_full() -> None:
    assert message([]) == "a request is a JSON object, not list"
    assert message("x") == "a request is a JSON object, not str"
    allowed = (
        "created, expires, flight, id, level, overrides, preset, ranks, role, stage, "
        "start_step, steps"
    )
    assert message({"id": "a", "b" * 50: 1, "c": 2}) == (
        f"unknown field '{'b' * 40}'; allowed: {allowed}"
    )
    assert message({"id": "a", "expires": 2.0}) == "field 'created' missing"
    assert message({"created": 1.0}) == "field 'id' missing"
    assert message({"id": "a", "created": 1.0}) == "field 'expires' missing"


def test_each_bad_field_is_said_in_full() -> None:
    roles = "integrated, actor, rollout, reference, critic, reward"
    cases: list[tuple[dict[str, Any], str]] = [
        ({"id": "/a"}, "id='/a': letters, digits, '_', '-' and '.' (at most 128), not a path"),
        ({"created": "now"}, "created='now': must be a time in seconds since the epoch"),
        ({"expires": None}, "expires=None: must be a time in seconds since the epoch"),
        ({"steps": 10_001}, "steps=10001: must be an integer from 0 to 10000"),
        ({"flight": 1}, "flight=1: must be true or false"),
        ({"steps": 0}, "steps=0: 0 asks for nothing; give steps >= 1 or flight"),
        ({"ranks": 5}, "ranks=5: must be a list of integers >= 0"),
        ({"ranks": (0, 1)}, "ranks=(0, 1): must be a list of integers >= 0"),
        ({"ranks": [2**31]}, "ranks=[2147483648]: must be a list of integers >= 0"),
        ({"start_step": 0}, "start_step=0: must be an integer >= 1"),
        ({"role": "chef"}, f"role='chef': allowed: {roles}"),
        ({"level": "l2"}, "level='l2': allowed: level_none, level0, level1, level2"),
        (
            {"preset": "nope"},
            "preset='nope': allowed: mstx_light, stage_scoped, memory_debug, full, dpo",
        ),
        (
            {"overrides": []},
            "overrides=[]: must be an object of mstx, profile_with_memory, "
            "profile_record_shapes, profile_with_cpu, profile_with_npu, profile_with_module, "
            "with_stack, profile_level, aic_metrics",
        ),
        (
            {"overrides": {"k" * 50: 1}},
            f"overrides.{'k' * 40}: unknown; allowed: mstx, "
            "profile_with_memory, profile_record_shapes, profile_with_cpu, profile_with_npu, "
            "profile_with_module, with_stack, profile_level, aic_metrics",
        ),
        ({"overrides": {"mstx": "y" * 50}}, f"overrides.mstx='{'y' * 40}': allowed: true, false"),
        (
            {"overrides": {"profile_level": "L2"}},
            "overrides.profile_level='L2': allowed: level_none, level0, level1, level2",
        ),
    ]
    for fields, said in cases:
        assert message({"id": "a-1", "created": 1.0, "expires": 2.0, **fields}) == said


def test_a_long_value_is_cut_to_60_characters_of_its_repr() -> None:
    """A repr of 60 characters is shown whole, one of 61 cut to 60 (its closing quote) and
    '...'."""
    why = " letters, digits, '_', '-' and '.' (at most 128), not a path"
    sixty = "/" + "a" * 57  # its repr, quotes included, is 60 characters
    assert message({"id": sixty, "created": 1.0, "expires": 2.0}) == f"id='{sixty}':{why}"
    longer = sixty + "b"
    assert message({"id": longer, "created": 1.0, "expires": 2.0}) == f"id='{longer}...:{why}"


def test_the_largest_allowed_values_are_taken() -> None:
    assert parse(steps=10_000).steps == 10_000
    assert parse(start_step=1).start_step == 1
    assert parse(ranks=[0, 2**31 - 1]).ranks == [0, 2**31 - 1]
    assert len(parse(ranks=[0] * (1 << 16)).ranks or []) == 1 << 16
    with pytest.raises(ValueError, match="ranks="):
        parse(ranks=[0] * ((1 << 16) + 1))
    assert parse(preset="dpo").preset == "dpo"


def test_an_override_is_compared_by_value_a_switch_by_identity() -> None:
    level = "".join(["level", "2"])  # equal to "level2", not the same object
    assert parse(overrides={"profile_level": level}).overrides == {"profile_level": "level2"}
    with pytest.raises(ValueError, match="overrides.with_stack="):
        parse(overrides={"with_stack": 1})  # 1 == True, but not a switch


@pytest.mark.parametrize(
    ("ranks", "role", "rank", "their_role", "taken"),
    [
        (None, None, 3, "critic", True),
        ([1, 2], None, 2, "actor", True),
        ([1, 2], None, 0, "actor", False),
        (None, "actor", 5, "actor", True),
        (None, "actor", 5, "critic", False),
        ([1], "actor", 1, "critic", False),
        ([1], "actor", 2, "actor", False),
        ([1], "actor", 1, "actor", True),
    ],
)
def test_a_request_is_for_the_workers_of_its_ranks_and_role(
    ranks: list[int] | None, role: str | None, rank: int, their_role: str, taken: bool
) -> None:
    assert parse(ranks=ranks, role=role).for_worker(rank, their_role) is taken


def test_torch_npu_config_fields_and_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(request_module, "time", _Clock(500.0))
    assert from_npu({}, "npu-x-1") == {
        "id": "npu-x-1",
        "created": 500.0,
        "expires": 4100.0,
        "steps": 1,
        "ranks": None,
        "level": None,
        "overrides": {},
        "start_step": None,
    }
    data = from_npu(
        {
            "active": 4,
            "start_step": 1,
            "is_rank": False,
            "rank_list": [3],
            "with_stack": True,
            "with_modules": False,
            "profile_memory": True,
        },
        "npu-x-2",
    )
    assert (data["steps"], data["start_step"], data["ranks"]) == (4, 1, None)
    assert data["overrides"] == {
        "profile_with_memory": True,
        "with_stack": True,
        "profile_with_module": False,
    }
    assert from_npu({"start_step": 0}, "n")["start_step"] is None  # torch_npu: 0 is "now"
    assert from_npu({"start_step": -2}, "n")["start_step"] is None
    with pytest.raises(ValueError) as err:
        from_npu({"experimental_config": "e" * 50}, "n")
    assert str(err.value) == f"experimental_config='{'e' * 40}': must be an object"
