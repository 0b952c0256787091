"""The torch_npu findings (``analysis.findings.npu``): each rule on small hand-made captures at
its thresholds' edges, what the readers keep for them from real captures, and hostile facts
that must give no finding or one, never an exception. The comparison with msprof-analyze's
advisor on the real corpus is ``test_advisor_side_by_side``."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import msgspec
import pytest
from helpers import answered
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from npu_fixtures import unpack

from mindspeed_prof.analysis import cache
from mindspeed_prof.analysis.analyse import Captures, analyse
from mindspeed_prof.analysis.findings import Finding, find, npu
from mindspeed_prof.analysis.findings.finding import Rule
from mindspeed_prof.analysis.findings.npu import env as env_rules
from mindspeed_prof.analysis.findings.npu import host as host_rules
from mindspeed_prof.analysis.findings.npu import layout as layout_rules
from mindspeed_prof.analysis.findings.npu import ops as ops_rules
from mindspeed_prof.analysis.findings.npu import ranks as ranks_rules
from mindspeed_prof.analysis.readers.model import (
    DeviceRow,
    HcclOp,
    HcclTasks,
    NpuFacts,
    NpuOp,
    Range,
    Tally,
    TraceData,
)
from mindspeed_prof.analysis.readers.npu.facts_groups import LaunchOrder, OpGroups, TaskGroups
from mindspeed_prof.analysis.readers.npu.folder import read_npu

ROOT = Path("/captures")


def capture(
    rank: int | None = 0,
    *,
    step_ms: float | None = 100.0,
    steps: int = 1,
    device: list[DeviceRow] | None = None,
    host: dict[str, Tally] | None = None,
    runtime: dict[str, Tally] | None = None,
    **facts: Any,
) -> TraceData:
    """A torch_npu capture holding ``facts`` (``NpuFacts`` fields), ``host`` operators and
    ``steps`` host steps of ``step_ms`` each."""
    facts.setdefault(
        "sources", {k: f"{k}.src" for k in ("env", "tasks", "ops", "hccl", "api", "order", "host")}
    )
    t = TraceData(
        ROOT / f"rank{rank}_ascend_pt",
        "npu",
        rank,
        "g",
        0,
        npu=NpuFacts(**facts),
        device=device or [],
        ops=host or {},
        runtime=runtime or {},
    )
    if step_ms is not None:
        t.ranges = [
            Range(rank, "step", f"ProfilerStep#{s}", s, s * 1e6, step_ms * 1000)
            for s in range(1, steps + 1)
        ]
    return t


def run(*traces: TraceData) -> Captures:
    return Captures(root=ROOT, traces=list(traces))


def rules(result: Captures, rule: Rule) -> list[Finding]:
    out = rule(*answered(result))
    for f in out:  # every finding is one line with its numbers, a source and ranks
        assert f.title and "\n" not in f.title and f.rule.startswith("npu.")
        assert f.severity in ("high", "medium", "low") and f.source and f.ranks
    return out


# ------------------------------------------------------------------------------ environment


@pytest.mark.parametrize(
    ("name", "value", "flagged"),
    [
        ("ACLNN_CACHE_LIMIT", "", True),
        ("ACLNN_CACHE_LIMIT", "9999", True),
        ("ACLNN_CACHE_LIMIT", "10000", False),
        ("ACLNN_CACHE_LIMIT", "many", True),
        ("HOST_CACHE_CAPACITY", "", True),
        ("HOST_CACHE_CAPACITY", "0", True),
        ("HOST_CACHE_CAPACITY", "1", False),
        ("ACLNN_CACHE_LIMIT", "INF", True),  # no finite number: read as 0, not an overflow
        ("HOST_CACHE_CAPACITY", "1e400", True),
        ("ASCEND_GLOBAL_LOG_LEVEL", "", False),
        ("ASCEND_GLOBAL_LOG_LEVEL", "3", False),
        ("ASCEND_GLOBAL_LOG_LEVEL", "1", True),
        ("PYTORCH_NPU_ALLOC_CONF", "", True),
        ("PYTORCH_NPU_ALLOC_CONF", "max_split_size_mb:128", True),
        ("PYTORCH_NPU_ALLOC_CONF", "max_split_size_mb:128,expandable_segments:True", False),
        ("ASCEND_LAUNCH_BLOCKING", "", False),
        ("ASCEND_LAUNCH_BLOCKING", "0", False),
        ("ASCEND_LAUNCH_BLOCKING", "1", True),
        ("HCCL_RDMA_TC", "", False),
        ("HCCL_RDMA_TC", "132", True),
        ("HCCL_ALGO", "", False),
        ("HCCL_ALGO", "level0:ring", True),
        ("ASCEND_ENHANCE_ENABLE", "1", False),  # recorded, but no rule of the advisor's
    ],
)
def test_env_vars_at_their_edges(name: str, value: str, flagged: bool) -> None:
    found = rules(run(capture(env={name: value})), env_rules.env_vars)
    assert bool(found) == flagged
    if flagged:
        (f,) = found
        assert name in f.title and name in f.detail and f.ranks == [0]
        assert f.severity == (
            "high"
            if name == "ASCEND_LAUNCH_BLOCKING"
            else "medium"
            if name == "ASCEND_GLOBAL_LOG_LEVEL"
            else "low"
        )


def test_env_vars_group_ranks_that_read_the_same() -> None:
    same = {"ACLNN_CACHE_LIMIT": "", "HOST_CACHE_CAPACITY": "20"}
    other = {"ACLNN_CACHE_LIMIT": "", "HOST_CACHE_CAPACITY": "0"}
    found = rules(
        run(
            capture(0, env=same), capture(1, env=same), capture(2, env=other), capture(3, env=None)
        ),
        env_rules.env_vars,
    )
    assert sorted(f.ranks for f in found) == [[0, 1], [2]]
    assert "1 environment variable" in next(f.title for f in found if f.ranks == [0, 1])


# ------------------------------------------------------------------------------ byte alignment


def tasks(**sizes: list[float]) -> list[HcclTasks]:
    """``op=[size, count, us, size, count, us, ...]``."""
    return [
        HcclTasks(op=op, sizes={int(v[i]): [v[i + 1], v[i + 2]] for i in range(0, len(v), 3)})
        for op, v in sizes.items()
    ]


def test_alignment_judges_copies_over_512_bytes_only() -> None:
    t = capture(
        tasks=tasks(
            a=[512, 4, 10.0, 1024, 2, 30.0], b=[513, 1, 5.0, 2048, 1, 15.0], c=[511, 3, 9.0]
        )
    )
    al = layout_rules.alignment(t)
    assert al is not None and al.judged_us == 50.0  # 512 and 511 are not judged
    (b,) = al.ops
    assert (b.op, b.bytes, b.copies, b.unaligned, b.unaligned_us, b.sizes) == (
        "b",
        513 + 2048,
        2,
        1,
        5.0,
        [513],
    )
    assert b.gbps == pytest.approx((513 + 2048) / 1e9 / 20e-6)
    (f,) = rules(run(t), layout_rules.byte_alignment)
    assert "1 communication op " in f.title and "5.0 us of 50.0 us" in f.title
    assert f.severity == "low" and f.impact_ms == pytest.approx(0.005)


@pytest.mark.parametrize(
    ("bad_us", "severity"), [(19.9, "low"), (20.0, "medium"), (69.9, "medium"), (70.0, "high")]
)
def test_alignment_severity_is_the_advisors_share(bad_us: float, severity: str) -> None:
    t = capture(tasks=tasks(a=[1000, 1, bad_us, 1024, 1, 100.0 - bad_us]))
    (f,) = rules(run(t), layout_rules.byte_alignment)
    assert f.severity == severity


def test_alignment_without_task_detail_or_unaligned_copies_finds_nothing() -> None:
    assert layout_rules.alignment(capture(tasks=None)) is None
    assert not rules(run(capture(tasks=None)), layout_rules.byte_alignment)
    assert not rules(run(capture(tasks=tasks(a=[1024, 3, 10.0]))), layout_rules.byte_alignment)


def test_task_groups_place_copies_in_the_operator_that_holds_them() -> None:
    g = TaskGroups()
    g.op("lane", "hcom_a", 0.0, 10.0)
    g.op("lane", "hcom_b", 20.0, 10.0)
    g.op("other", "hcom_c", 0.0, 100.0)
    for start in (0.0, 10.0, 20.0, 25.0, 15.0, -1.0):  # 15 and -1: in no operator
        g.task("lane", start, 600, 1.0)
    g.task("missing lane", 5.0, 600, 1.0)
    by_op = {t.op: t.sizes for t in g.done()}
    assert by_op == {"hcom_a": {600: [2, 2.0]}, "hcom_b": {600: [2, 2.0]}, "hcom_c": {}}


# ------------------------------------------------------------------------------ operators


def op(
    name: str = "op",
    core: str = "AI_VECTOR_CORE",
    count: int = 1,
    us: float = 100.0,
    most: float | None = None,
    kind: str | None = None,
    **ratios: float,
) -> NpuOp:
    """An operator with mean ``ratios`` (stored as sums over its ``count`` runs)."""
    return NpuOp(
        name=name,
        type=kind or name,
        core=core,
        input_shapes="8,8",
        output_shapes="8,8",
        count=count,
        total_us=us,
        max_us=us / count if most is None else most,
        ratios={k: v * count for k, v in ratios.items()},
    )


def test_dynamic_shape_needs_states_and_no_static_one() -> None:
    dynamic = NpuOp(name="a", type="A", core="AI_CORE", count=3, stated=3, static=0)
    static = NpuOp(name="b", type="B", core="AI_CORE", count=1, stated=1, static=1)
    unknown = NpuOp(name="c", type="C", core="AI_CORE", count=5)
    assert layout_rules.dynamic_shape(capture(ops=[dynamic, unknown])) == (3, 0)
    assert layout_rules.dynamic_shape(capture(ops=[unknown])) is None
    (f,) = rules(run(capture(ops=[dynamic])), layout_rules.dynamic_shapes)
    assert "jit_compile=False" in f.suggestion and "allow_internal_format" in f.suggestion
    assert not rules(run(capture(ops=[dynamic, static])), layout_rules.dynamic_shapes)
    assert not rules(run(capture(ops=[unknown])), layout_rules.dynamic_shapes)


@pytest.mark.parametrize(
    ("vec", "mte2", "mte3", "bound"),
    [
        (0.6, 0.2, 0.1, "vec_mte2_mte3"),  # the sum reaches 0.9 (as floats add: 0.6+0.2+0.1)
        (0.6, 0.2, 0.0999, None),
        (0.1, 0.7, 0.0, "mte2"),
        (0.1, 0.0, 0.7, "mte3"),
        (0.7, 0.1, 0.0, "vec"),
        (0.69, 0.1, 0.1, None),
        (0.3, 0.3, 0.3, None),  # 0.8999...
    ],
)
def test_vector_bound_and_room_at_the_edges(
    vec: float, mte2: float, mte3: float, bound: str | None
) -> None:
    t = capture(ops=[op("v", aiv_vec_ratio=vec, aiv_mte2_ratio=mte2, aiv_mte3_ratio=mte3)])
    rooms, bounds = ops_rules.vector_ops(t)
    if bound:
        assert [v.bound for v in bounds] == [bound] and not rooms
    else:
        # msprof-analyze's room: how far the least busy of the three is under 0.7
        (v,) = rooms
        assert v.room == pytest.approx(0.7 - min(vec, mte2, mte3)) and not bounds
        assert v.runs == 1 and v.vec == vec


def test_vector_ops_look_at_types_with_a_percent_of_the_time() -> None:
    kept = op("kept", us=1.0, aiv_vec_ratio=0.1, aiv_mte2_ratio=0.1, aiv_mte3_ratio=0.1)
    left = op("left", us=0.99, aiv_vec_ratio=0.1, aiv_mte2_ratio=0.1, aiv_mte3_ratio=0.1)
    cube = op("cube", core="AI_CORE", us=98.01)
    rooms, _ = ops_rules.vector_ops(capture(ops=[kept, left, cube]))
    assert [v.name for v in rooms] == ["kept"]  # 1.00 of 100 us: 1%; 0.99: under
    # communication counts in the whole where kernel_details has no HCCL rows (the db)
    hccl = [HcclOp(name="hcom_x", kind="collective", elapse_ms=0.1)]
    rooms, _ = ops_rules.vector_ops(capture(ops=[kept, left, cube], hccl=hccl))
    assert not rooms


def test_vector_ops_keep_the_top_five_and_merge_names_and_shapes() -> None:
    ops = [
        op(f"v{i}", aiv_vec_ratio=i / 100, aiv_mte2_ratio=i / 100, aiv_mte3_ratio=i / 100)
        for i in range(7)
    ]
    # v0 runs once more on a mixed core: one operator by name and shapes, its means over both
    ops.append(
        op(
            "v0",
            core="MIX_AIV",
            count=2,
            aiv_vec_ratio=0.15,
            aiv_mte2_ratio=0.15,
            aiv_mte3_ratio=0.15,
        )
    )
    rooms, _ = ops_rules.vector_ops(capture(ops=ops))
    assert [v.name for v in rooms] == ["v1", "v2", "v3", "v4", "v5"]
    every, _ = ops_rules.vector_ops(capture(ops=ops), top=None)
    v0 = next(v for v in every if v.name == "v0")
    assert len(every) == 7 and v0.runs == 3 and v0.vec == pytest.approx(0.1)  # 0.3 / 3
    assert v0.room == pytest.approx(0.6)
    (f,) = rules(run(capture(ops=ops)), ops_rules.vector_perf)
    assert "69.0% room" in f.title and f.detail.count("\n") == 4


def test_no_bound_reads_each_core_s_own_units() -> None:
    cube = op("mm", core="AI_CORE", us=50.0, aic_mac_ratio=0.8, aic_mte2_ratio=0.1)
    busy = op("mm2", core="AI_CORE", us=50.0, aic_mac_ratio=0.81)
    # bound on its vector unit's mte2, with no aic_ ratio: the advisor calls it unbound
    vector = op("add", us=50.0, aiv_mte2_ratio=0.9, aic_mte2_ratio=0.0)
    idle = op("idle", us=50.0, aiv_vec_ratio=0.0)
    nb = ops_rules.no_bound(capture(ops=[cube, busy, vector, idle]))
    assert nb is not None and [o.name for o in nb.ops] == ["mm"] and nb.runs == 1
    assert ops_rules.unit_ratios(vector) == {
        "aiv_vec_ratio": 0.0,
        "aiv_scalar_ratio": 0.0,
        "aiv_mte2_ratio": 0.9,
        "aiv_mte3_ratio": 0.0,
    }


def test_no_bound_needs_a_run_over_20_us() -> None:
    short = op("mm", core="AI_CORE", us=20.0, aic_mac_ratio=0.5)
    assert ops_rules.no_bound(capture(ops=[short])) is None
    longer = op("mm", core="AI_CORE", us=20.5, aic_mac_ratio=0.5, kind="MatMul")
    (f,) = rules(run(capture(ops=[longer])), ops_rules.no_bound_ops)
    assert f.title.startswith("1 operator runs") and "MatMul" in f.detail


def test_aicpu_operators_over_20_us() -> None:
    ops = [
        op("cast_a", core="AI_CPU", us=20.0),
        op("cast_b", core="AI_CPU", us=40.0, count=2, most=30.0),
        op("mm", core="AI_CORE", us=500.0),
    ]
    assert [o.name for o in ops_rules.aicpu(capture(ops=ops))] == ["cast_b"]
    (f,) = rules(run(capture(ops=ops, steps=2)), ops_rules.aicpu_ops)
    assert "cast_b 30.0 us" in f.title and f.impact_ms == pytest.approx(0.03)  # 60 us / 2
    assert f.severity == "low"
    assert not rules(run(capture(ops=ops[:1] + ops[2:])), ops_rules.aicpu_ops)


def test_affinity_apis_of_optimizer_steps() -> None:
    host = {
        "Optimizer.step#SGD.step": Tally(2, 1500.0),
        "Optimizer.step#Mine.step": Tally(1, 5),
        "Optimizer.zero_grad#SGD.zero_grad": Tally(1, 5.0),
    }
    assert ops_rules.affinity(capture(host=host)) == {
        "Optimizer.step#SGD.step": ("torch_npu.optim.NpuFusedSGD", 2, 1500.0)
    }
    (f,) = rules(run(capture(0, host=host), capture(1, host=host)), ops_rules.affinity_apis)
    assert "torch_npu.optim.NpuFusedSGD" in f.title and "4 calls" in f.title
    assert f.ranks == [0, 1]


# ------------------------------------------------------------------------------ across ranks


def row(compute: float, exposed: float, free: float, step: int = 1) -> DeviceRow:
    return DeviceRow(
        step=step,
        compute_ms=compute,
        comm_ms=exposed,
        overlap_ms=0.0,
        idle_ms=free,
        comm_exposed_ms=exposed,
    )


@pytest.mark.parametrize(("gap", "found"), [(5.12, False), (5.13, True)])
def test_slow_rank_at_five_percent_of_the_step(gap: float, found: bool) -> None:
    # steps of 100 and 100 + gap, their mean 100 + gap / 2: over 5% from gap = 5.128
    a = capture(0, device=[row(60, 40, 0)])
    b = capture(1, device=[row(60, 40, gap)])
    (spread,) = ranks_rules.rank_spread(*answered(run(a, b)))
    assert spread.gap("Free") == (pytest.approx(gap), 1, 0)
    mean = 100 + gap / 2
    out = rules(run(a, b), ranks_rules.slow_rank)
    assert bool(out) == (gap / mean > ranks_rules.SPREAD) == found
    if found:
        assert "free" in out[0].title and out[0].impact_ms == pytest.approx(gap)


def test_slow_rank_names_the_worst_step_and_part() -> None:
    a = capture(0, device=[row(60, 40, 0, step=1), row(60, 40, 0, step=2)])
    b = capture(1, device=[row(90, 10, 0, step=1), row(61, 39, 0, step=2)])
    c = capture(2, device=[row(60, 40, 0, step=3)])  # a step of its own: no spread
    assert [s.step for s in ranks_rules.rank_spread(*answered(run(a, b, c)))] == [1, 2]
    (f,) = rules(run(a, b, c), ranks_rules.slow_rank)
    assert f.title.startswith("Ranks differ by 30.0 ms in") and "step 1" in f.title
    assert "compute" in f.detail and "exposed communication" in f.detail
    assert f.severity == "high"  # 30 of 100 ms
    assert not rules(run(a), ranks_rules.slow_rank)


def link(rank: int, **gbps: float) -> TraceData:
    return capture(
        rank,
        hccl=[
            HcclOp(
                name="hcom_a",
                kind="collective",
                step=1,
                sdma_mb=gbps.get("sdma", 0) * 10,
                sdma_ms=10.0 if "sdma" in gbps else 0.0,
                rdma_mb=None,
                rdma_ms=None,
            )
        ],
    )


@pytest.mark.parametrize(("slow", "found"), [(19.1, False), (19.0, True)])
def test_slow_link_at_five_percent_of_the_mean(slow: float, found: bool) -> None:
    # 20 and 19.1: 0.9 / 19.55 = 4.6%; 20 and 19: 1 / 19.5 = 5.1%
    fast = 20.0
    result = run(link(0, sdma=fast), link(1, sdma=slow))
    (s,) = ranks_rules.link_spread(*answered(result))
    assert s.link == "SDMA" and s.mean == pytest.approx((fast + slow) / 2)
    spread = (fast - slow) / ((fast + slow) / 2)
    assert s.spread == pytest.approx(spread)
    out = rules(result, ranks_rules.slow_link)
    assert bool(out) == (spread > ranks_rules.SPREAD) == found
    if found:
        assert "slowest rank 1" in out[0].title and "19.00-20.00 GB/s" in out[0].title


def test_slow_link_edge_exactly() -> None:
    # (20 - x) / ((20 + x) / 2) = 0.05 -> x = 20 * 1.95 / 2.05
    edge = 20 * (1 - ranks_rules.SPREAD / 2) / (1 + ranks_rules.SPREAD / 2)
    assert not rules(run(link(0, sdma=20.0), link(1, sdma=edge + 1e-9)), ranks_rules.slow_link)
    assert rules(run(link(0, sdma=20.0), link(1, sdma=edge - 1e-6)), ranks_rules.slow_link)
    assert not ranks_rules.link_spread(*answered(run(link(0, sdma=20.0))))  # one rank


# ------------------------------------------------------------------------------ small packets


def comm(*mb: float, link: str = "sdma") -> list[HcclOp]:
    return [
        HcclOp(name=f"hcom_{i}", kind="collective", step=1, **{f"{link}_mb": v, f"{link}_ms": 0.5})
        for i, v in enumerate(mb)
    ]


def test_packets_under_16_mb_sdma_over_a_fifth() -> None:
    # 1 small of 5: 20%, not more than a fifth; 16 MB itself is not small; 0 MB not counted
    assert not rules(run(capture(hccl=comm(15.99, 16, 17, 18, 19, 0))), ranks_rules.small_packets)
    (p,) = ranks_rules.packets(capture(hccl=comm(15.99, 16, 17, 18, 19, 0)))
    assert (p.ops, p.small, p.small_ms) == (5, 1, 0.5)
    (f,) = rules(run(capture(hccl=comm(1, 2, 16, 17))), ranks_rules.small_packets)
    assert "2 of 4 SDMA" in f.title and "under 16 MB" in f.title and f.impact_ms == 1.0


def test_packets_under_1_mb_rdma() -> None:
    (f,) = rules(run(capture(hccl=comm(0.99, 1.0, link="rdma"))), ranks_rules.small_packets)
    assert "1 of 2 RDMA" in f.title
    assert not rules(run(capture(hccl=comm(1.0, 1.0, link="rdma"))), ranks_rules.small_packets)


# ------------------------------------------------------------------------------ host side


def waits(us: float, calls: int = 4) -> dict[str, Tally]:
    return {
        "aclrtSynchronizeStreamWithTimeout": Tally(calls, us),
        "AscendCL@aclrtSynchronizeStream": Tally(1, 0.0),
        "launch": Tally(10, 99.0),
        "Runtime@StreamSynchronize": Tally(9, 1e9),
    }  # nested in the ACL call: not counted


@pytest.mark.parametrize(("wait_ms", "found"), [(9.99, False), (10.0, True)])
def test_host_wait_from_a_tenth_of_the_step(wait_ms: float, found: bool) -> None:
    t = capture(
        runtime=waits(wait_ms * 1000),
        step_ms=100.0,
        api_max_us={"aclrtSynchronizeStreamWithTimeout": 8000.0},
        host={"aten::_local_scalar_dense": Tally(3, 9000.0)},
    )
    w = host_rules.host_waits(t)
    assert w is not None and w.us == pytest.approx(wait_ms * 1000) and w.steps == 1
    out = rules(run(t), host_rules.host_wait)
    assert bool(out) == found
    if found:
        assert f"{wait_ms:.1f} ms per step" in out[0].title and "longest 8.0 ms" in out[0].title
        assert "aten::_local_scalar_dense" in out[0].detail and out[0].severity == "medium"


def test_host_wait_needs_a_millisecond_and_is_high_from_half_the_step() -> None:
    assert not rules(run(capture(runtime=waits(990.0), step_ms=2.0)), host_rules.host_wait)
    (f,) = rules(
        run(capture(runtime=waits(100_000.0), step_ms=150.0, steps=2)), host_rules.host_wait
    )
    assert "50.0 ms per step" in f.title and f.severity == "medium"  # 100 ms over 2 steps
    (f,) = rules(
        run(capture(runtime=waits(150_000.0), step_ms=150.0, steps=2)), host_rules.host_wait
    )
    assert f.severity == "high"
    assert not rules(run(capture(runtime=waits(1e6), step_ms=None)), host_rules.host_wait)


@pytest.mark.parametrize(
    ("us", "found", "severity"),
    [(990.0, False, None), (1000.0, True, "low"), (4999.0, True, "low"), (5000.0, True, "medium")],
)
def test_runtime_compile_from_a_millisecond_per_step(
    us: float, found: bool, severity: str | None
) -> None:
    runtime = {"AscendCL@aclopCompileAndExecute": Tally(19, us), "opCompile": Tally(19, 300.0)}
    out = rules(run(capture(runtime=runtime, step_ms=100.0)), host_rules.runtime_compile)
    assert bool(out) == found
    if found:
        (f,) = out
        assert f.impact_ms == pytest.approx(us / 1000)  # opCompile runs inside it
        assert f.severity == severity and "jit_compile=False" in f.suggestion
        assert "opCompile 0.3 ms of it" in f.title


def test_synchronize_stream_after_more_than_half_the_launches() -> None:
    order = LaunchOrder()
    for i in range(4):
        order.add("Node@launch", i * 10.0)
        if i < 2:
            order.add("AscendCL@aclrtSynchronizeStream", i * 10.0 + 1)
    order.add("aclrtSynchronizeStreamWithTimeout", 0.5)  # right after launch 0 too
    assert order.done() == [4, 3, 2]  # 0.5 follows launch 0, 1.0 follows 0.5: not a launch
    half = capture(launch_sync=[4, 3, 2])
    assert not rules(run(half), host_rules.synchronize_stream)
    (f,) = rules(run(capture(launch_sync=[4, 3, 3])), host_rules.synchronize_stream)
    assert "75% of its 4" in f.title and "ASCEND_LAUNCH_BLOCKING" in f.suggestion
    assert not rules(run(capture(launch_sync=None)), host_rules.synchronize_stream)
    assert LaunchOrder().done() is None


# ------------------------------------------------------------------------------ faults


def test_op_groups_sum_ratios_and_count_states() -> None:
    g = OpGroups(("aiv_vec_ratio", "aiv_mte2_ratio"))
    key = ("n", "T", "AI_VECTOR_CORE", '"8,8"', '"8,8"', "FLOAT", "FLOAT")
    g.add(key, 10.0, "dynamic", ["0.5", "N/A"])
    g.add(key, 30.0, " Static ", ["nan", "0.25"])
    g.add(key, 20.0, "N/A", ["inf", ""])
    (o,) = g.done()
    assert (o.count, o.total_us, o.max_us, o.stated, o.static) == (3, 60.0, 30.0, 2, 1)
    assert o.ratios == {"aiv_vec_ratio": 0.5, "aiv_mte2_ratio": 0.25}
    assert o.input_shapes == "8,8"


_text = st.text(max_size=8)
#: Readers keep finite numbers only (a NaN or inf cell is no number); any size or sign here.
_num = st.floats(min_value=-1e12, max_value=1e12, allow_nan=False, allow_infinity=False)
_facts = st.builds(
    NpuFacts,
    env=st.none() | st.dictionaries(st.sampled_from(sorted(env_rules.ENV_RULES)) | _text, _text),
    hccl=st.lists(
        st.builds(
            HcclOp,
            name=_text,
            kind=st.sampled_from(["collective", "p2p"]),
            step=st.none() | st.integers(-2, 3),
            elapse_ms=st.none() | _num,
            sdma_mb=st.none() | _num,
            sdma_ms=st.none() | _num,
            rdma_mb=st.none() | _num,
            rdma_ms=st.none() | _num,
        ),
        max_size=4,
    ),
    tasks=st.none()
    | st.lists(
        st.builds(
            HcclTasks,
            op=_text,
            sizes=st.dictionaries(
                st.integers(-10, 5000), st.tuples(st.integers(-1, 5), _num).map(list), max_size=4
            ),
        ),
        max_size=3,
    ),
    ops=st.lists(
        st.builds(
            NpuOp,
            name=_text,
            type=_text,
            core=st.sampled_from(["AI_CORE", "AI_VECTOR_CORE", "MIX_AIV", "AI_CPU", "HCCL", ""]),
            count=st.integers(0, 4),
            total_us=_num,
            max_us=_num,
            static=st.integers(0, 2),
            stated=st.integers(0, 4),
            ratios=st.dictionaries(
                st.sampled_from(
                    ["aiv_vec_ratio", "aiv_mte2_ratio", "aiv_mte3_ratio", "aic_mac_ratio", "x"]
                ),
                _num,
                max_size=4,
            ),
        ),
        max_size=5,
    ),
    api_max_us=st.dictionaries(_text, _num, max_size=3),
    launch_sync=st.none() | st.lists(st.integers(0, 9), max_size=4),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    facts=st.lists(_facts, min_size=1, max_size=3),
    device=st.lists(st.tuples(_num, _num, _num), max_size=3),
    runtime=st.dictionaries(
        st.sampled_from(
            ["aclrtSynchronizeStream", "aclopCompileAndExecute", "opCompile", "launch"]
        ),
        st.tuples(st.integers(-1, 5), _num),
        max_size=3,
    ),
)
def test_hostile_facts_give_findings_or_none_never_an_exception(
    facts: list[NpuFacts],
    device: list[tuple[float, float, float]],
    runtime: dict[str, tuple[int, float]],
) -> None:
    traces = []
    for rank, f in enumerate(facts):
        t = capture(
            rank,
            device=[
                DeviceRow(step=1, compute_ms=a, comm_ms=b, overlap_ms=0.0, idle_ms=c)
                for a, b, c in device
            ],
            runtime={k: Tally(n, v) for k, (n, v) in runtime.items()},
        )
        t.npu = f
        traces.append(t)
    result = run(*traces)
    for rule in npu.RULES:
        for finding in rule(*answered(result)):
            assert finding.title and "\n" not in finding.title and "nan" not in finding.title
            assert finding.impact_ms is None or math.isfinite(finding.impact_ms)
    _, notes = find(*answered(result))
    assert not notes, notes  # no rule failed


# ------------------------------------------------------------------------------ the readers


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> dict[str, TraceData]:
    root = tmp_path_factory.mktemp("torch_npu")
    out = {}
    for name in ("text/rank0_ascend_pt", "db/rank0_ascend_pt", "level0/rank0_ascend_pt"):
        out[name.split("/")[0]] = read_npu(unpack(name, root / name), "g")
    return out


def test_text_and_db_of_one_run_keep_the_same_facts(real: dict[str, TraceData]) -> None:
    text, db = real["text"].npu, real["db"].npu
    assert text is not None and db is not None
    assert text.env == db.env and text.env is not None  # profiler_metadata.json and META_DATA
    assert text.sources["env"] == "profiler_metadata.json" and db.sources["env"] == "META_DATA"
    # the same copy sizes per operator (times differ: two runs of the program)
    sizes = [sorted(t.sizes) for t in sorted(text.tasks or [], key=lambda t: t.op)]
    assert sizes and sizes == [sorted(t.sizes) for t in sorted(db.tasks or [], key=lambda t: t.op)]
    for facts in (text, db):
        assert sum(o.count for o in facts.ops) > 100
        assert facts.launch_sync is not None and facts.launch_sync[0] > 0
        assert facts.api_max_us["aclrtSynchronizeStreamWithTimeout"] > 1000
        assert [h.sdma_mb for h in facts.hccl] and all(h.sdma_mb for h in facts.hccl)


def test_text_ops_are_kernel_details_rows(real: dict[str, TraceData]) -> None:
    t = real["text"]
    assert t.npu is not None
    assert sum(o.count for o in t.npu.ops) == sum(k.count for k in t.kernels.values())
    assert sum(o.stated for o in t.npu.ops) > 0 and sum(o.static for o in t.npu.ops) == 0


def test_level0_has_no_task_detail_nor_states(real: dict[str, TraceData]) -> None:
    facts = real["level0"].npu
    assert facts is not None and facts.tasks is None
    assert sum(o.stated for o in facts.ops) == 0
    assert not any(o.ratios for o in facts.ops)


def test_facts_survive_the_cache(real: dict[str, TraceData]) -> None:
    for t in real.values():
        back = cache.decode(cache.encode(t))
        assert msgspec.to_builtins(back.npu) == msgspec.to_builtins(t.npu)


def test_an_unreadable_metadata_file_is_one_problem(tmp_path: Path) -> None:
    folder = unpack("text/rank1_ascend_pt", tmp_path / "rank1_ascend_pt")
    (folder / "profiler_metadata.json").write_text("{not json")
    data = read_npu(folder, "g")
    assert data.npu is not None and data.npu.env is None
    assert [p for p in data.problems if "profiler_metadata.json" in p]
    result = analyse(tmp_path, cache=False)
    assert not find(*answered(result))[1]
