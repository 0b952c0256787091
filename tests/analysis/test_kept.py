"""What the analysis keeps of each capture as it is read (``analysis.kept``): a torch_npu rank's
per-rank answers in place of its device operators (``findings.npu.answered``), names and a
memory timeline's repeated sizes held once. Whatever is released, every answer stays the same:
the findings on hand-made operators of every kind, and the whole ``--json`` document of the
corpus' real torch_npu sets, read with and without it."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import msgspec
import pytest
from helpers import answered as with_tables
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from npu_fixtures import copied

from mindspeed_prof.analysis import analyse as analyse_module
from mindspeed_prof.analysis import parallel
from mindspeed_prof.analysis.analyse import Captures, analyse
from mindspeed_prof.analysis.findings.npu import RULES, answered
from mindspeed_prof.analysis.findings.npu.captures import Answered
from mindspeed_prof.analysis.held_rows import Points
from mindspeed_prof.analysis.kept import kept
from mindspeed_prof.analysis.readers.model import Memory, NpuFacts, NpuOp, Range, TraceData
from mindspeed_prof.analysis.report.report import report
from mindspeed_prof.analysis.rows import MemoryRow, to_json

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus"
ROOT = Path("/captures")

CORES = ["AI_CORE", "AI_VECTOR_CORE", "MIX_AIV", "MIX_AIC", "AI_CPU", "HCCL"]
RATIOS = [
    "aiv_vec_ratio",
    "aiv_mte2_ratio",
    "aiv_mte3_ratio",
    "aiv_scalar_ratio",
    "aic_mac_ratio",
    "aic_mte2_ratio",
]

ops_st = st.lists(
    st.builds(
        lambda name, kind, core, count, us, most, ratios, stated, static: NpuOp(
            name=name,
            type=kind,
            core=core,
            input_shapes=f"{count},8",
            count=count,
            total_us=us,
            max_us=most,
            stated=stated,
            static=min(static, stated),
            ratios={k: v * count for k, v in ratios.items()},
        ),
        st.sampled_from(["add", "mul", "cast", "mm", "gather"]),
        st.sampled_from(["Add", "Mul", "Cast", "MatMul"]),
        st.sampled_from(CORES),
        st.integers(0, 4),
        st.floats(0, 2e6),
        st.sampled_from([0.0, 10.0, 20.0, 20.5, 300.0, 300.0, 5e5]),
        st.dictionaries(st.sampled_from(RATIOS), st.sampled_from([0.0, 0.1, 0.5, 0.7, 0.85, 1.0])),
        st.integers(0, 3),
        st.integers(0, 3),
    ),
    max_size=12,
)


def npu_capture(rank: int, ops: list[NpuOp]) -> TraceData:
    t = TraceData(
        ROOT / f"rank{rank}_ascend_pt",
        "npu",
        rank,
        "g",
        0,
        npu=NpuFacts(ops=ops, sources={"ops": "kernel_details.csv"}),
    )
    t.ranges = [Range(rank, "step", "ProfilerStep#1", 1, 0.0, 1e5)]
    return t


def findings_json(traces: list[TraceData]) -> str:
    captures = Captures(root=ROOT, traces=traces)
    found = [f for rule in RULES for f in rule(*with_tables(captures))]
    return json.dumps(to_json(found))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ops_st, min_size=1, max_size=3))
def test_an_answered_rank_gives_every_finding_its_operators_gave(ranks: list[list[NpuOp]]) -> None:
    whole = [npu_capture(r, ops) for r, ops in enumerate(ranks)]
    kept_ones = [answered(copy.deepcopy(t)) for t in whole]
    assert all(isinstance(t.npu, Answered) and t.npu.ops == [] for t in kept_ones)
    assert findings_json(kept_ones) == findings_json(whole)
    assert answered(kept_ones[0]) is kept_ones[0]  # once: its answers are not asked again


values = st.one_of(
    st.sampled_from([0.0, -0.0, 0, 7, 7.0, 1.5e9, math.nan, math.inf]),
    st.floats(allow_nan=True),
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(values, min_size=1, max_size=3), max_size=30)
    | st.lists(st.lists(st.floats(), min_size=3, max_size=3), max_size=30)
)
def test_a_timeline_is_held_as_one_array_or_its_repeats_once_and_written_the_same(
    points: list[list[float]],
) -> None:
    """Points as wide, every value a float: one array; else (an int, an odd point) the lists,
    a size that repeats the point before held once. Either way ``--json`` writes the same."""
    t = TraceData(ROOT / "rank0.json", "torch", 0, "g", 0, memory=Memory(source="x"))
    t.memory.timeline = copy.deepcopy(points)  # type: ignore[union-attr]
    kept(t)
    timeline = t.memory.timeline  # type: ignore[union-attr]
    row = MemoryRow(rank=0, file="f", source="x", timeline=timeline)
    assert json.dumps(row.json()["timeline"]) == json.dumps(points)
    uniform = all(len(p) == len(points[0]) for p in points)
    floats = all(type(v) is float for p in points for v in p)
    assert isinstance(timeline, Points) == bool(points and uniform and floats)
    if isinstance(timeline, Points):
        assert len(timeline) == len(points)
        return
    for before, p in zip(timeline, timeline[1:]):
        for v, w in zip(p[1:], before[1:]):
            if v == w and v and type(v) is type(w):
                assert v is w


@given(
    st.lists(st.lists(st.floats(allow_nan=False), min_size=2, max_size=3), max_size=5),
    st.one_of(st.none(), st.integers(0, 8)),
)
def test_a_memory_row_s_json_is_its_fields_with_the_capture_s_own_points(
    timeline: list[list[float]], rank: int | None
) -> None:
    row = MemoryRow(
        rank=rank, file="f", source="torch_npu", peak_allocated_bytes=3.0, timeline=timeline
    )
    doc = row.json()
    assert json.dumps(doc) == json.dumps(msgspec.to_builtins(row))
    assert doc["timeline"] is timeline


def unpacked(name: str, dest: Path) -> Path:
    return copied(CORPUS / name, dest)


def analysed(root: Path) -> str:
    captures = analyse(root, cache=False)
    return json.dumps(report(captures).json(), default=str)


@pytest.mark.parametrize("name", ["npu_text_qwen3_4rank_pp2", "npu_text_level2", "npu_db_level1"])
def test_the_json_answer_of_real_torch_npu_sets_is_the_same_with_ranks_kept_slim(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = unpacked(name, tmp_path / name)
    slim = analysed(root)
    captures = analyse(root, cache=False)
    npu = [t for t in captures.traces if t.npu is not None]
    assert npu and all(isinstance(t.npu, Answered) and not t.npu.ops for t in npu)
    monkeypatch.setattr(parallel, "kept", lambda t: t)
    monkeypatch.setattr(analyse_module, "kept", lambda t: t)
    whole = analyse(root, cache=False)
    assert any(t.npu is not None and t.npu.ops for t in whole.traces)  # read whole, this time
    assert analysed(root) == slim


def test_operators_bound_by_no_unit_keep_their_types_order_on_ties() -> None:
    """The types in the order of their longest runs, a tie in the order the operators came:
    the same from a rank's answer as from its operators."""
    ops = [
        NpuOp(name=n, type=k, core="AI_CORE", count=1, total_us=300.0, max_us=300.0, ratios=r)
        for n, k in [("a1", "A"), ("b", "B"), ("a2", "A"), ("c", "C")]
        for r in [{"aic_mac_ratio": 0.5}]
    ]
    whole = findings_json([npu_capture(0, ops)])
    assert "Longest first: A, B, C" in whole
    assert findings_json([answered(npu_capture(0, ops))]) == whole
