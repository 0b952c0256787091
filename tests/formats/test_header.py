"""The capture header: written with the keys it always had, read leniently."""

from __future__ import annotations

import json

from mindspeed_prof.formats.header import (
    CaptureHeader,
    Clock,
    ModelFacts,
    header_dict,
    header_json,
    merged,
    read_header,
)


def test_written_keys_and_order_are_those_of_the_dict_it_replaces() -> None:
    header = CaptureHeader(kind="spans", format=2, run="r1", rank=0, role="actor", stage="all",
                           step=3, host="h", pid=9, level="level1", window=[2, None],
                           warmup_steps=0, model=ModelFacts(flops_per_token=0.0, peak_tflops=1.0),
                           clock=Clock(wall_ns=5, trace_ns=5))
    doc = header_dict(header)
    assert list(doc) == ["kind", "format", "run", "rank", "role", "stage", "step", "host", "pid",
                         "level", "window", "warmup_steps", "model", "clock"]
    assert doc["window"] == [2, None] and doc["model"] == {"flops_per_token": 0.0,
                                                          "peak_tflops": 1.0}
    assert json.loads(header_json(header)) == doc
    back, problem = read_header(doc, "f")
    assert (back, problem) == (header, None)


def test_unknown_keys_are_ignored_and_missing_ones_are_none() -> None:
    header, problem = read_header({"rank": 1, "future_key": {"x": [1]}}, "f")
    assert problem is None and header.rank == 1 and header.step is None


def test_a_wrong_typed_value_costs_only_its_key_with_one_problem_naming_the_file() -> None:
    raw = {"rank": 2, "step": True, "host": 7, "model": {"flops_per_token": "big",
                                                          "peak_tflops": 3}, "clock": "x"}
    header, problem = read_header(raw, "/r/a.json")
    assert header.rank == 2 and header.step is None and header.host is None
    assert header.model == ModelFacts(peak_tflops=3.0) and header.clock is None
    assert problem == ("/r/a.json: its mindspeed_prof header has clock, host, "
                       "model.flops_per_token, step of the wrong type; ignored")


def test_a_header_that_is_not_an_object_is_ignored_with_a_problem() -> None:
    for raw in ([1], "x", 3):
        header, problem = read_header(raw, "f")
        assert header == CaptureHeader() and problem is not None and problem.startswith("f: ")
    assert read_header(None, "f") == (CaptureHeader(), None)


def test_merged_keeps_the_fields_set_over_those_under() -> None:
    under = CaptureHeader(run="r", rank=1, level="level0")
    over = CaptureHeader(rank=4, world_size=8)
    assert merged(under, over) == CaptureHeader(run="r", rank=4, level="level0", world_size=8)
