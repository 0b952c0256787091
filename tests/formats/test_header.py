"""The capture header: written with the keys it always had, read leniently."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mindspeed_prof.formats.header import (
    MAX_NAME,
    MAX_RANK,
    CaptureHeader,
    Clock,
    ModelFacts,
    header_dict,
    header_json,
    merged,
    read_header,
)
from mindspeed_prof.formats.run import valid_run_id


def test_written_keys_and_order_are_those_of_the_dict_it_replaces() -> None:
    header = CaptureHeader(
        kind="spans",
        format=2,
        run="r1",
        rank=0,
        role="actor",
        stage="all",
        step=3,
        host="h",
        pid=9,
        level="level1",
        window=[2, None],
        warmup_steps=0,
        model=ModelFacts(flops_per_token=0.0, peak_tflops=1.0),
        clock=Clock(wall_ns=5, trace_ns=5),
    )
    doc = header_dict(header)
    assert list(doc) == [
        "kind",
        "format",
        "run",
        "rank",
        "role",
        "stage",
        "step",
        "host",
        "pid",
        "level",
        "window",
        "warmup_steps",
        "model",
        "clock",
    ]
    assert doc["window"] == [2, None] and doc["model"] == {
        "flops_per_token": 0.0,
        "peak_tflops": 1.0,
    }
    assert json.loads(header_json(header)) == doc
    back, problem = read_header(doc, "f")
    assert (back, problem) == (header, None)


def test_unknown_keys_are_ignored_and_missing_ones_are_none() -> None:
    header, problem = read_header({"rank": 1, "future_key": {"x": [1]}}, "f")
    assert problem is None and header.rank == 1 and header.step is None


def test_a_wrong_typed_value_costs_only_its_key_with_one_problem_naming_the_file() -> None:
    raw = {
        "rank": 2,
        "step": True,
        "host": 7,
        "model": {"flops_per_token": "big", "peak_tflops": 3},
        "clock": "x",
    }
    header, problem = read_header(raw, "/r/a.json")
    assert header.rank == 2 and header.step is None and header.host is None
    assert header.model == ModelFacts(peak_tflops=3.0) and header.clock is None
    assert problem == (
        "/r/a.json: its mindspeed_prof header has clock, host, "
        "model.flops_per_token, step of the wrong type; ignored"
    )


def test_a_header_that_is_not_an_object_is_ignored_with_a_problem() -> None:
    for raw in ([1], "x", 3):
        header, problem = read_header(raw, "f")
        assert header == CaptureHeader() and problem is not None and problem.startswith("f: ")
    assert read_header(None, "f") == (CaptureHeader(), None)


def test_merged_keeps_the_fields_set_over_those_under() -> None:
    under = CaptureHeader(run="r", rank=1, level="level0")
    over = CaptureHeader(rank=4, world_size=8)
    assert merged(under, over) == CaptureHeader(run="r", rank=4, level="level0", world_size=8)


# -- fields validated as config validates them (issue 42, item 11) ---------------------------
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("run", "z" * 5000),
        ("run", "r1\n"),
        ("run", ""),
        ("run", "../up"),
        ("run", "a b"),
        ("run", "-flag"),
        ("rank", -1),
        ("rank", 10**12),
        ("step", -3),
        ("pid", 0),
        ("stage", "x" * 5000),
        ("host", "h\x1b[31m"),
        ("role", ""),
        ("comm_kernels", "a" * 5000),
    ],
)
def test_a_field_out_of_bounds_is_dropped_with_one_line_naming_the_file(
    field: str, value: object
) -> None:
    header, problem = read_header({"run": "r1", "rank": 3, field: value}, "/r/a.json")
    assert getattr(header, field) is None
    assert problem is not None and problem.startswith(
        f"/r/a.json: its mindspeed_prof header has {field} "
    )
    assert problem.endswith("; ignored") and "\n" not in problem and len(problem) < 300
    kept = {"run": "r1", "rank": 3}
    assert {k: getattr(header, k) for k in kept if k != field} == {
        k: v for k, v in kept.items() if k != field
    }


def test_the_fields_config_allows_are_kept() -> None:
    raw = {
        "run": "a" * 64,
        "rank": MAX_RANK - 1,
        "step": 0,
        "stage": "s" * MAX_NAME,
        "host": "node-1.example",
        "pid": 1,
    }
    header, problem = read_header(raw, "f")
    assert problem is None and header == CaptureHeader(**raw)  # type: ignore[arg-type]


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=300),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(raw=st.dictionaries(st.sampled_from([*CaptureHeader.__struct_fields__, "x"]), JSONISH))
def test_whatever_a_header_holds_what_is_kept_is_valid(raw: dict[str, object]) -> None:
    header, problem = read_header(raw, "f")
    assert header.run is None or valid_run_id(header.run)
    assert header.rank is None or 0 <= header.rank < MAX_RANK
    for name in ("role", "stage", "host", "level", "trigger", "engine", "reason", "kind"):
        value = getattr(header, name)
        assert value is None or (0 < len(value) <= MAX_NAME and value.isprintable())
    assert problem is None or (problem.startswith("f: ") and "\n" not in problem)
