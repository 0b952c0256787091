"""What the device verdict, the CUDA findings and compare read: on every real CUDA and ROCm trace
the parts of each row add up to its span, and captures with and without steps are never
averaged together (a real stepped trace beside a real one without steps)."""

from __future__ import annotations

import gzip
import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest
from corpus import SETS, unpack
from helpers import answered
from hypothesis import given, settings
from hypothesis import strategies as st

from mindspeed_prof.analysis.analyse import Captures, analyse
from mindspeed_prof.analysis.device_scope import counted, parts, scope
from mindspeed_prof.analysis.findings import cuda
from mindspeed_prof.analysis.readers.model import DeviceRow, TraceData
from mindspeed_prof.analysis.report.settings import Settings
from mindspeed_prof.analysis.report.tables import tables
from mindspeed_prof.analysis.rows import BOUNDS
from mindspeed_prof.analysis.verdict import device, verdict
from mindspeed_prof.cli import main
from mindspeed_prof.views.words import verdict_lines

#: The real CUDA and ROCm sets (Kineto traces with device ops).
DEVICE_SETS = [n for n, s in SETS.items() if s["kind"] in ("kineto_cuda", "kineto_rocm")]


def load(path: Path) -> Any:
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if path.name.endswith(".gz") else raw)


def save(path: Path, trace: Any) -> Path:
    text = json.dumps(trace).encode()
    path.write_bytes(gzip.compress(text) if path.name.endswith(".gz") else text)
    return path


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Captures]:
    root = tmp_path_factory.mktemp("sets")
    return {name: analyse(unpack(name, root / name), cache=False) for name in DEVICE_SETS}


def test_the_parts_of_every_row_add_up_to_its_span(corpus: dict[str, Captures]) -> None:
    """Per rank and step (stage runs, work outside steps and captures without steps too):
    compute + exposed communication + copy + idle = the span to 0.1%, every part and share
    within [0, 100%] of it. A part over the span, or a copy the others already cover, would
    show as a sum over it."""
    rows = 0
    for name, result in corpus.items():
        for r in tables(result).device:
            assert r.span_ms is not None and r.busy_ms is not None, name
            got = parts(r)
            assert list(got) == list(BOUNDS)
            assert math.fsum(got.values()) == pytest.approx(r.span_ms, rel=1e-3, abs=1e-9), (
                name,
                r,
            )
            for part, ms in got.items():
                assert -1e-9 <= ms <= r.span_ms * (1 + 1e-9) + 1e-9, (name, part, r)
            assert r.overlap_ms <= min(r.comm_ms, r.compute_ms) + 1e-9
            rows += 1
        v = device(*answered(result))
        if v is not None:
            assert all(0.0 <= s <= 1.0 for s in v.shares.values()), name
            assert math.fsum(v.shares.values()) == pytest.approx(1.0)
    assert rows > 50
    assert {n for n, r in corpus.items() if tables(r).device} == {
        n for n, r in corpus.items() if tables(r).top_kernels[:15]
    }  # every set with kernels was checked


def test_copies_under_compute_are_not_counted_twice(corpus: dict[str, Captures]) -> None:
    """Where a copy runs while a kernel computes, the copy part is less than the copies' own
    time (the old verdict added both, over the span): such rows exist in the corpus."""
    overlapped = [
        r
        for result in corpus.values()
        for r in tables(result).device
        if r.memcpy_ms and parts(r)["copy"] < r.memcpy_ms - 1e-6
    ]
    assert overlapped
    for r in overlapped:
        assert r.memcpy_ms is not None and r.span_ms is not None
        assert r.compute_ms + (r.comm_ms - r.overlap_ms) + r.memcpy_ms + r.idle_ms > (
            r.span_ms + 1e-6
        )


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    """A folder with a real stepped trace (rank 0 of 2, three steps) and a real trace without
    steps (AlexNet, rank 0): two captures of rank 0, one with steps, one without."""
    root = tmp_path / "mixed"
    root.mkdir()
    for name in ("kineto_nccl_rank0_of_2", "kineto_cuda_alexnet"):
        for f in unpack(name, tmp_path / name).iterdir():
            shutil.copy(f, root / f.name)
    return root


def test_a_capture_without_steps_is_never_averaged_with_steps(mixed: Path, tmp_path: Path) -> None:
    """The verdict and every finding read the stepped capture's rows only, as they do of that
    capture alone; the capture without steps is named as left out, and is its own row in the
    device table."""
    both = analyse(mixed, cache=False)
    alone = analyse(unpack("kineto_nccl_rank0_of_2", tmp_path / "alone"), cache=False)
    within = scope(both)
    assert within.per == "step" and [t.path.name for t in within.left_out] == [
        "benchmark_result_2869224_1695835535_trace.json.gz"
    ]
    assert counted(*answered(both)) == counted(*answered(alone))
    v, v_alone = device(*answered(both)), device(*answered(alone))
    assert v is not None and v_alone is not None
    assert v.left_out == ["benchmark_result_2869224_1695835535_trace.json.gz"]
    assert msgspec_fields(v, "left_out") == msgspec_fields(v_alone, "left_out")
    assert cuda.idle_time(*answered(alone))  # a finding there is to compare
    for rule in cuda.RULES:
        assert [f.title for f in rule(*answered(both))] == [
            f.title for f in rule(*answered(alone))
        ], rule
    line = dict(verdict_lines(verdict(*answered(both))))["device"]
    assert "per step" in line and line.endswith(
        "captures without steps left out: benchmark_result_2869224_1695835535_trace.json.gz"
    )
    whole = [r for r in tables(both).device if r.whole]
    assert len(whole) == 1 and whole[0].step is None and whole[0].stage is None


def msgspec_fields(v: Any, *skip: str) -> dict[str, Any]:
    out = v.json()
    for k in skip:
        out.pop(k)
    return out


def test_the_device_table_names_the_row_of_a_capture_without_steps(mixed: Path, capsys) -> None:
    assert main(["analyse", str(mixed)]) == 0
    out = capsys.readouterr().out
    table = out[out.index("Device time per step") :]
    assert "no steps" in table and "outside" not in table


def test_captures_without_steps_are_each_their_own_unit(tmp_path: Path) -> None:
    """Two real captures without steps, both rank 0: each a unit of its own in the findings
    (named by its file), averaged per capture in the verdict."""
    root = tmp_path / "two"
    root.mkdir()
    for name in ("kineto_cuda_alexnet", "kineto_cuda_simple_add"):
        for f in unpack(name, tmp_path / name).iterdir():
            shutil.copy(f, root / f.name)
    result = analyse(root, cache=False)
    given = Settings(noise_ms=0.0)
    within = scope(result)
    assert within.per == "capture" and len(within.traces) == 2 and not within.left_out
    rows = counted(*answered(result, given))
    assert len(rows) == 2 and all(r.whole for r in rows)
    v = device(*answered(result, given))
    assert v is not None and v.per == "capture" and v.steps == 0
    assert v.idle_ms == pytest.approx(sum(r.idle_ms for r in rows) / 2)
    assert (
        "per capture (no steps)" in dict(verdict_lines(verdict(*answered(result, given))))["device"]
    )
    (idle,) = cuda.idle_time(*answered(result, given))
    assert "no steps" in idle.detail and "benchmark_result_493459" in idle.detail
    assert "benchmark_result_2869224" in idle.detail


# -- no division by a zero or subnormal duration -------------------------------------------

_tiny = st.sampled_from(
    [0.0, 5e-324, 1e-310, 2.2250738585072014e-308, -1.0, 1e-3, 1.0, 1e12, float("nan")]
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(_tiny, _tiny, _tiny, _tiny, _tiny, _tiny), min_size=1, max_size=4),
    st.booleans(),
)
def test_subnormal_and_zero_durations_give_numbers_or_nothing(rows: list, steps: bool) -> None:
    """Device rows whose times are zero, subnormal, negative, huge or NaN (as a hostile trace
    may give them): the verdict and the CUDA findings answer with finite shares in [0, 1] or
    nothing, and never raise."""
    traces = []
    for k, (span, busy, compute, comm, overlap, idle) in enumerate(rows):
        t = TraceData(Path(f"rank{k}.pt.trace.json"), "torch", k, "g", 1)
        t.device = [
            DeviceRow(
                step=1 if steps else None,
                span_ms=span,
                busy_ms=busy,
                compute_ms=compute,
                comm_ms=comm,
                overlap_ms=overlap,
                idle_ms=idle,
                memcpy_ms=0.0,
                whole=not steps,
            )
        ]
        traces.append(t)
    result = Captures(root=Path("."), traces=traces)
    given = Settings(noise_ms=0.0)
    v = verdict(*answered(result, given))
    if v.device is not None:
        assert all(0.0 <= s <= 1.0 for s in v.device.shares.values())
    for rule in cuda.RULES:
        for f in rule(*answered(result, given)):
            assert "nan" not in f.title and "inf" not in f.title
