"""CUDA findings on Kineto traces: planted effects found with their numbers (checked by hand in
each docstring), no effect finds nothing, each threshold tried from both sides, and what the
rules say on the real corpus."""

from __future__ import annotations

import json
import lzma
import shutil
from pathlib import Path

import pytest
from helpers import answered
from hypothesis import given, settings
from hypothesis import strategies as st

from mindspeed_prof.analysis.analyse import Captures, analyse
from mindspeed_prof.analysis.findings import Finding, cuda, find
from mindspeed_prof.analysis.findings.finding import Rule
from mindspeed_prof.analysis.readers.model import DeviceRow, LaunchStats, StreamIdle, TraceData
from mindspeed_prof.analysis.report.settings import Settings
from mindspeed_prof.analysis.report.tables import tables
from mindspeed_prof.cli import main
from mindspeed_prof.testing.kineto import write_trace

_T0 = 1_000_000_000  # us


def _x(
    name: str, ts: float, dur: float, cat: str, tid: int = 1, pid: int = 1, **args: object
) -> dict:
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "ts": _T0 + ts,
        "dur": dur,
        "pid": pid,
        "tid": tid,
        "args": args,
    }


class Trace:
    """A hand-made CUDA trace: steps, launch calls and the ops they launch."""

    def __init__(self) -> None:
        self.events: list[dict] = []
        self.corr = 0

    def step(self, n: int, ts: float, dur: float) -> Trace:
        self.events.append(_x(f"ProfilerStep#{n}", ts, dur, "user_annotation"))
        return self

    def stage(self, name: str, ts: float, dur: float) -> Trace:
        self.events.append(_x(name, ts, dur, "user_annotation"))
        return self

    def op(
        self,
        launch: float,
        ts: float,
        dur: float,
        call: float = 5.0,
        stream: int = 7,
        name: str = "ampere_sgemm",
    ) -> Trace:
        self.corr += 1
        self.events.append(
            _x("cudaLaunchKernel", launch, call, "cuda_runtime", correlation=self.corr)
        )
        self.events.append(
            _x(name, ts, dur, "kernel", tid=stream, pid=0, correlation=self.corr, stream=stream)
        )
        return self

    def write(self, root: Path, rank: int = 0, **fields: object) -> Path:
        write_trace(
            root / f"rank{rank}.pt.trace.json",
            self.events,
            distributedInfo={"rank": rank},
            **fields,
        )
        return root


def found(root: Path, rule: Rule, noise_ms: float = 1.0) -> list[Finding]:
    result = analyse(root, cache=False)
    given = Settings(noise_ms=noise_ms)
    out = rule(*answered(result, given))
    for f in out:
        assert "\n" not in f.title and f.severity in ("high", "medium", "low")
        assert f.impact_ms is not None and f.impact_ms > 0 and f.suggestion
        assert f.source.startswith("rank") and f.rule.startswith("cuda.")
    return out


# -- idle time ------------------------------------------------------------------------------


def _host_bound(t: Trace, base: float) -> Trace:
    """A step's three 1 ms kernels, each launched after the one before has ended (the host
    busy 2 ms, then 3 ms, in between)."""
    return (
        t.op(base + 10, base + 20, 1000)
        .op(base + 3000, base + 3010, 1000)
        .op(base + 7000, base + 7010, 1000)
    )


def test_idle_host_wait(tmp_path: Path) -> None:
    """Steps [0, 10000) and [10000, 20000). Device windows: [20, 10020) (busy 3 ms, idle 7)
    and [10020, 18010] (busy 3, idle 4.99): 5.995 ms idle in a 8.995 ms step, 67%. Stream 7's
    gaps, all launched after the op before ended: 1.99 + 3 ms in step 1, 2.01 + 1.99 + 3 in
    step 2 (the gap from step 1's last op is step 2's): 5.995 ms host wait per step."""
    t = Trace().step(1, 0, 10000).step(2, 10000, 10000)
    _host_bound(_host_bound(t, 0), 10000).write(tmp_path)
    (f,) = found(tmp_path, cuda.idle_time)
    assert f.title == (
        "GPU idle 67% of the step (6.0 ms per step) on rank 0: mostly host wait "
        "(100% of stream 7's gaps)"
    )
    assert f.severity == "high" and f.impact_ms == pytest.approx(5.995) and f.ranks == [0]
    assert f.detail.splitlines()[0] == (
        "rank 0: idle 6.0 of 9.0 ms per step; stream 7 (busiest, 3 ops): host wait 6.0, "
        "kernel wait 0.0, other 0.0 ms; every stream: 6.0, 0.0, 0.0 ms"
    )
    assert "DataLoader" in f.suggestion and f.source == (
        "rank0.pt.trace.json (Kineto device ops and their launch calls)"
    )


def test_many_ranks_show_four_then_how_then_how_many_more(tmp_path: Path) -> None:
    """Six ranks idle alike: the title names rank 0 of 6, the detail the first four ranks, how
    it was measured and how many more; the source names three files and the rest's count."""
    for rank in range(6):
        _host_bound(Trace().step(1, 0, 10000), 0).write(tmp_path, rank)
    (f,) = found(tmp_path, cuda.idle_time)
    assert "on rank 0 (of 6 ranks): mostly host wait" in f.title and f.ranks == list(range(6))
    lines = f.detail.splitlines()
    assert [x.split(":")[0] for x in lines[:4]] == ["rank 0", "rank 1", "rank 2", "rank 3"]
    assert lines[4].startswith("HTA's idle time breakdown") and lines[5:] == [
        "... and 2 more ranks"
    ]
    assert f.source == (
        "rank0.pt.trace.json, rank1.pt.trace.json, rank2.pt.trace.json and 3 "
        "more (Kineto device ops and their launch calls)"
    )


def test_idle_kernel_wait(tmp_path: Path) -> None:
    """Everything launched up front; 100 kernels of 50 us with 20 us between them: idle
    99 x 20 = 1.98 ms of a 6.98 ms window (28%), every gap kernel wait."""
    t = Trace().step(1, 0, 10000)
    for i in range(100):
        t.op(i, 200 + 70 * i, 50)
    (f,) = found(t.write(tmp_path), cuda.idle_time)
    assert f.title == (
        "GPU idle 28% of the step (2.0 ms per step) on rank 0: mostly kernel "
        "wait (100% of stream 7's gaps)"
    )
    assert "fuse" in f.suggestion


def test_idle_other_and_a_second_stream(tmp_path: Path) -> None:
    """Kernels launched up front wait 500 us each (on an event, say): 9 x 500 = 4.5 ms other
    in a 13.5 ms window; an NCCL stream busy at the same time is not the busiest."""
    t = Trace().step(1, 0, 20000)
    for i in range(10):
        t.op(i, 100 + 1400 * i, 900)
    t.op(50, 100, 300, stream=13, name="ncclDevKernel_AllReduce")
    (f,) = found(t.write(tmp_path), cuda.idle_time)
    assert f.title.startswith("GPU idle 33% of the step (4.5 ms per step)")
    assert f.title.endswith("mostly other (100% of stream 7's gaps)")
    assert "overlap communication" in f.suggestion


def test_idle_split_of_every_stream_where_the_busiest_does_not_explain_it(tmp_path: Path) -> None:
    """Stream 7 runs two ops back to back, [0, 1000] and [1000, 2000]; stream 8 runs [5000,
    5500] (a stream's first op has no gap) and [9000, 9500], launched at 8990: a 3.5 ms
    host-wait gap. The device idles 3 + 3.5 = 6.5 ms of 9.5; the busiest stream's gaps (none)
    explain none of it, so the split is of every stream's gaps."""
    t = Trace().step(1, 0, 20000)
    t.op(0, 0, 1000).op(1, 1000, 1000)
    t.op(4900, 5000, 500, stream=8).op(8990, 9000, 500, stream=8)
    (f,) = found(t.write(tmp_path), cuda.idle_time)
    assert f.title == (
        "GPU idle 68% of the step (6.5 ms per step) on rank 0: mostly host wait "
        "(100% of every stream's gaps)"
    )


@pytest.mark.parametrize(
    ("gap", "span", "noise_ms", "fires"),
    [
        (5.1, 100, 1.0, True),
        (4.9, 100, 1.0, False),  # FIRE_SHARE: 5% of the step
        (1.1, 10, 1.0, True),
        (0.9, 10, 1.0, False),  # the 1 ms floor (9% of the step)
        (5.1, 100, 6.0, False),  # --noise-ms 6
    ],
)
def test_idle_at_its_edges(
    tmp_path: Path, gap: float, span: float, noise_ms: float, fires: bool
) -> None:
    """Two kernels with ``gap`` ms between them in a ``span`` ms window, the second launched
    after the first ends."""
    first = (span - gap) / 2 * 1000
    t = Trace().step(1, 0, 200000)
    t.op(0, 10, first).op(10 + first + 1, 10 + first + gap * 1000, first)
    got = found(t.write(tmp_path), cuda.idle_time, noise_ms)
    assert bool(got) is fires
    if fires:
        assert got[0].impact_ms == pytest.approx(gap)


def test_a_capture_without_steps_is_read_whole(tmp_path: Path) -> None:
    t = Trace()
    _host_bound(t, 0).write(tmp_path)
    (f,) = found(tmp_path, cuda.idle_time)
    assert f.title.startswith("GPU idle 62% of the capture (5.0 ms) on rank 0")  # 4.99/7.99


def test_warmup_steps_are_left_out(tmp_path: Path) -> None:
    """Only warmup step 1 idles; steps 2 and 3 are busy through: nothing. Counted, the warmup
    step is one step of three that idles: a one-off, still nothing."""
    t = Trace().step(1, 0, 10000).step(2, 10000, 10000).step(3, 20000, 10000)
    _host_bound(t, 0).op(10001, 10020, 9000).op(20001, 20020, 9000)
    # the window [2, 4) and its warmup step just before it (MindSpeed-LLM's DPO warmup)
    t.write(tmp_path, mindspeed_prof={"rank": 0, "window": [2, 4], "warmup_steps": 1})
    result = analyse(tmp_path, cache=False)
    assert tables(result).warmup == {(0, 1)} and cuda.idle_time(*answered(result)) == []
    given = Settings(include_warmup=True)
    assert {r.step for r in tables(result, given).counted_device} >= {1, 2, 3}
    assert cuda.idle_time(*answered(result, given)) == []


def test_a_device_idle_in_most_steps_fires_and_in_one_step_does_not(tmp_path: Path) -> None:
    """Host-bound in steps 1 to 4 of 4: named; in step 1 of 4 only (a host stall), though its
    mean over the steps is over the threshold: a one-off, not named."""
    every, once = tmp_path / "every", tmp_path / "once"
    t = Trace()
    for step in range(4):
        t.step(step + 1, 10000 * step, 10000)
        _host_bound(t, 10000 * step)
    t.write(every)
    t = Trace()
    for step in range(4):
        t.step(step + 1, 10000 * step, 10000)
        if step == 0:
            _host_bound(t, 0)
        else:
            t.op(10000 * step + 1, 10000 * step + 20, 9500)
    t.write(once)
    assert cuda.idle_time(*answered(analyse(every, cache=False)))
    assert cuda.idle_time(*answered(analyse(once, cache=False))) == []


def test_ranks_named_worst_first(tmp_path: Path) -> None:
    for rank, base in ((0, 0.0), (1, 0.0)):
        t = Trace().step(1, 0, 10000)
        _host_bound(t, base)
        if rank == 1:
            t.op(9000, 9010, 500)  # a fourth op: a wider window, more idle
        t.write(tmp_path, rank=rank)
    (f,) = found(tmp_path, cuda.idle_time)
    assert f.ranks == [0, 1] and " on rank 1 (of 2 ranks): " in f.title
    assert [line.split(":")[0] for line in f.detail.splitlines()[:2]] == ["rank 1", "rank 0"]


# -- launch overhead ------------------------------------------------------------------------


def _tiny(t: Trace, n: int, call: float = 8.0, queued: float = 0.0) -> Trace:
    """``n`` 2 us kernels, each launched by a ``call`` us call every ``call + 2`` us; each runs
    1 us after its call returns (``queued``: that much later, behind earlier work)."""
    every = call + 2
    for i in range(n):
        t.op(every * i, every * i + call + 1 + queued, 2, call=call)
    return t


def test_launch_bound_kernels(tmp_path: Path) -> None:
    """300 kernels of 2 us, each after an 8 us call: the GPU waits 6 us a kernel, 1.8 ms, in a
    window from 9 to 2,999 us (2.99 ms): 60%."""
    (f,) = found(_tiny(Trace().step(1, 0, 10000), 300).write(tmp_path), cuda.launch_overhead)
    assert f.title == (
        "300 of 300 kernels per step are shorter than their launch call and run "
        "as soon as it returns on rank 0: the GPU waits 1.8 ms per step on "
        "launches (60% of the step)"
    )
    assert f.severity == "high" and f.impact_ms == pytest.approx(1.8)
    assert f.detail.splitlines()[0] == (
        "rank 0: 300 launches per step (calls 2.4 ms, kernels 0.6 ms); 300 shorter than their "
        "call, 300 of them run at once (calls 2.4 ms, kernels 0.6 ms); 300 under 10 us; launch "
        "delay 1.0 us on average, 0 over 100 us; 0 calls over 50 us"
    )
    assert "CUDA graph" in f.suggestion


def test_short_kernels_that_queue_or_blocking_calls_cost_no_launch_time(tmp_path: Path) -> None:
    """The same kernels queued behind a 20 ms kernel (each starts long after its call): the
    GPU never waited for them; or launched by 60 us calls (blocked on a full queue, or a
    copy from pageable memory): not launch overhead either."""
    queued = Trace().step(1, 0, 30000).op(0, 5, 20000)
    _tiny(queued, 300, queued=20000).write(tmp_path / "queued")
    _tiny(Trace().step(1, 0, 30000), 300, call=60).write(tmp_path / "blocked")
    for root in ("queued", "blocked"):
        assert found(tmp_path / root, cuda.launch_overhead) == []


@pytest.mark.parametrize(("n", "fires"), [(170, True), (163, False)])  # 1.02 vs 0.978 ms
def test_launch_overhead_at_the_floor(tmp_path: Path, n: int, fires: bool) -> None:
    got = found(_tiny(Trace().step(1, 0, 10000), n).write(tmp_path), cuda.launch_overhead)
    assert bool(got) is fires


# -- exposed communication ------------------------------------------------------------------


def _comm(t: Trace, nccl_at: float, nccl_ms: float = 20.0) -> Trace:
    return t.op(0, 10, 70000).op(
        5, nccl_at, nccl_ms * 1000, stream=13, name="ncclDevKernel_AllReduce_Sum_f32_RING_LL"
    )


def test_exposed_nccl(tmp_path: Path) -> None:
    """Compute [10, 70010], NCCL [70010, 90010], both launched in actor_update: 20 ms exposed
    in a 90 ms window (22%), all of the communication."""
    t = Trace().step(1, 0, 100000).stage("actor_update", 0, 100000)
    (f,) = found(_comm(t, 70010).write(tmp_path), cuda.exposed_comm)
    assert f.title == (
        "Communication not overlapped with compute: 20.0 ms per step (22% of "
        "the step, 100% of its communication) on rank 0"
    )
    assert f.severity == "medium" and f.impact_ms == pytest.approx(20.0)
    assert f.detail.splitlines()[0] == (
        "rank 0: communication 20.0 ms per step, 20.0 ms of it while no compute ran, of a "
        "90.0 ms step; most in actor_update (20.0 ms per step)"
    )
    assert "bucket" in f.suggestion


@pytest.mark.parametrize(("nccl_ms", "fires"), [(3.7, True), (3.6, False)])
def test_exposed_nccl_at_its_share(tmp_path: Path, nccl_ms: float, fires: bool) -> None:
    """Compute 70 ms then NCCL: exposed / (70 + exposed) is 5.02% at 3.7 ms, 4.89% at 3.6."""
    t = Trace().step(1, 0, 100000)
    got = found(_comm(t, 70010, nccl_ms).write(tmp_path), cuda.exposed_comm)
    assert bool(got) is fires


def test_overlapped_nccl_and_npu_rows_are_no_finding(tmp_path: Path) -> None:
    _comm(Trace().step(1, 0, 100000), 1000).write(tmp_path)  # under the compute kernel
    assert found(tmp_path, cuda.exposed_comm) == []
    npu = TraceData(
        Path("/r/rank0_ascend_pt"),
        "npu",
        0,
        "x",
        1,
        device=[
            DeviceRow(
                step=1, compute_ms=10, comm_ms=50, overlap_ms=0, idle_ms=40, comm_exposed_ms=50
            )
        ],
    )
    result = Captures(root=Path("/r"), traces=[npu])
    assert [rule(*answered(result)) for rule in cuda.RULES] == [
        [],
        [],
        [],
    ]  # torch_npu's: the npu rules'


# -- every rule: views, the corpus, anything at all ------------------------------------------


def test_cuda_findings_in_analyse_text_and_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _tiny(Trace().step(1, 0, 10000), 300).write(tmp_path)
    assert main(["analyse", str(tmp_path), "--json"]) == 0
    rules = [f["rule"] for f in json.loads(capsys.readouterr().out)["findings"]]
    assert {"cuda.idle_time", "cuda.launch_overhead"} <= set(rules)
    assert main(["analyse", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    # 1.8 ms of a 10 ms step: its severity is the share of the step it costs (18%)
    assert "[medium] 300 of 300 kernels per step are shorter than their" in out


#: What the rules find on the corpus' GPU sets: per rule, the ms per step of the rank shown
#: (and, for idle time, what it mostly is).
CORPUS: dict[str, dict[str, tuple[float, str]]] = {
    # exposed communication 10.2, 10.5 and 18.9 ms of 220 ms steps: over 5% on average only
    # because of its last step, so no finding (a rule holds in nearly every step)
    "kineto_nccl_rank0_of_2": {"cuda.idle_time": (167.7, "host wait")},
    "kineto_nccl_rank0_of_16": {
        "cuda.idle_time": (169.6, "other"),
        "cuda.exposed_comm": (32.1, ""),
    },
    "kineto_nccl_v100_rank1_of_2": {
        "cuda.idle_time": (146.5, "host wait"),
        "cuda.exposed_comm": (71.5, ""),
    },
    "kineto_nccl_2rank_sampled": {
        "cuda.idle_time": (337.6, "host wait"),
        "cuda.exposed_comm": (168.5, ""),
    },
    "kineto_trace_diff": {"cuda.idle_time": (12.7, "host wait"), "cuda.exposed_comm": (14.7, "")},
    "kineto_tb_resnet50_2021": {"cuda.idle_time": (43.9, "host wait")},
    "kineto_cuda_v100_ns_resolution": {},
}


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_on_the_real_corpus(name: str, tmp_path: Path) -> None:
    """Real traces (HTA's own test data): the busy ns-resolution V100 run finds nothing (its
    kernels queue milliseconds deep, so its 700 short kernels a step cost no launch time and
    its stream hardly idles); the NCCL runs idle on host wait (rank0_of_16 on other work: its
    compute stream waits on NCCL) and expose their collectives."""
    src = Path(__file__).resolve().parents[2] / "fixtures" / "corpus" / name
    if not src.is_dir():
        pytest.skip("no trace corpus")
    shutil.copytree(src, tmp_path / name)
    result = analyse(tmp_path / name, cache=False)
    got = {f.rule: f for rule in cuda.RULES for f in rule(*answered(result))}
    assert {k: round(f.impact_ms or 0, 1) for k, f in got.items()} == {
        k: ms for k, (ms, _) in CORPUS[name].items()
    }
    for rule, (_, kind) in CORPUS[name].items():
        assert f"mostly {kind} (" in got[rule].title or not kind


def test_npu_and_cpu_captures_find_nothing_here(tmp_path: Path) -> None:
    corpus = Path(__file__).resolve().parents[2] / "fixtures" / "corpus"
    if not corpus.is_dir():
        pytest.skip("no trace corpus")
    for name in ("npu_text_level1", "kineto_cpu_only_gloo"):
        shutil.copytree(corpus / name, tmp_path / name)
        for packed in (tmp_path / name).rglob("*.xz"):
            packed.with_suffix("").write_bytes(lzma.decompress(packed.read_bytes()))
            packed.unlink()
        result = analyse(tmp_path / name, cache=False)
        assert [f for rule in cuda.RULES for f in rule(*answered(result))] == [], name


_ms = st.floats(0, 1e4, allow_nan=False)
_row = st.builds(
    DeviceRow,
    step=st.one_of(st.none(), st.integers(0, 3)),
    stage=st.sampled_from([None, "actor_update"]),
    compute_ms=_ms,
    comm_ms=_ms,
    overlap_ms=_ms,
    idle_ms=_ms,
    span_ms=st.one_of(st.none(), _ms),
    busy_ms=_ms,
)
_idle = st.builds(
    StreamIdle,
    step=st.one_of(st.none(), st.integers(0, 3)),
    device=st.just("0"),
    stream=st.sampled_from(["7", "13"]),
    ops=st.integers(0, 9),
    busy_ms=_ms,
    host_wait_ms=_ms,
    kernel_wait_ms=_ms,
    other_ms=_ms,
)
_stats = st.builds(
    LaunchStats,
    step=st.one_of(st.none(), st.integers(0, 3)),
    launches=st.integers(0, 9),
    cpu_ms=_ms,
    gpu_ms=_ms,
    short=st.integers(0, 9),
    starved=st.integers(0, 9),
    starved_cpu_ms=_ms,
    starved_gpu_ms=_ms,
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(_row, max_size=6),
            st.lists(_idle, max_size=6),
            st.lists(_stats, max_size=4),
            st.sampled_from([0, 1, None]),
        ),
        max_size=3,
    )
)
def test_any_rows_never_crash_a_rule(traces: list) -> None:
    """Whatever rows the readers hand over (zero-length windows, rows without a window, more
    overlap than communication, steps that have no idle rows): every rule answers, with
    finite numbers and shares."""
    result = Captures(
        root=Path("/r"),
        traces=[
            TraceData(
                Path(f"/r/{k}.json"),
                "torch",
                rank,
                "x",
                1,
                device=rows,
                stream_idle=idle,
                launch_stats=stats,
            )
            for k, (rows, idle, stats, rank) in enumerate(traces)
        ],
    )
    for rule in cuda.RULES:
        for f in rule(*answered(result)):
            assert f.impact_ms is not None and 0 < f.impact_ms < float("inf")
            assert "nan" not in f.title and "inf" not in f.title
    assert find(*answered(result))[1] == []


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 4), max_size=5, unique=True),
    st.lists(st.one_of(st.none(), st.integers(0, 5)), max_size=20),
    st.lists(st.one_of(st.none(), st.integers(0, 5)), max_size=20),
)
def test_a_rank_one_step_at_a_time_holds_each_step_s_rows_in_order(
    steps: list[int], stage_steps: list[int | None], idle_steps: list[int | None]
) -> None:
    """``consistent`` judges a rank step by step: each step's rank holds that step's stage and
    idle rows, in their order, and no other step's."""
    from mindspeed_prof.analysis.findings.cuda.ranks import Rank, _steps

    def row(step: int | None, stage: str | None = None, ms: float = 0.0) -> DeviceRow:
        return DeviceRow(step=step, stage=stage, compute_ms=ms, comm_ms=0, overlap_ms=0, idle_ms=0)

    who = Rank(
        0,
        "",
        steps=[row(s) for s in steps],
        stages=[row(s, "actor_update", i) for i, s in enumerate(stage_steps)],
        idle=[
            StreamIdle(step=s, device="0", stream=str(i), ops=1, busy_ms=1.0)
            for i, s in enumerate(idle_steps)
        ],
    )
    one = _steps(who)
    assert [r.steps for r in one] == [[s] for s in who.steps]
    for r in one:
        (step,) = {s.step for s in r.steps}
        assert r.stages == [s for s in who.stages if s.step == step]
        assert r.idle == [s for s in who.idle if s.step == step]
