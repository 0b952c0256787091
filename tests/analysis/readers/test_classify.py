"""The classification table: real kernel names of each library on the communication side, real
compute names that look like them on the other, the user's patterns first, and what each rule
counted adding up to the device time."""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from corpus import unpack
from helpers import answered
from hypothesis import given, settings
from hypothesis import strategies as st

from mindspeed_prof.analysis.analyse import Captures, analyse, analyse_files
from mindspeed_prof.analysis.capture_facts import classified
from mindspeed_prof.analysis.readers.classify import (
    CLI_RULE,
    CONFIG_RULE,
    DEFAULT,
    KINDS,
    RULES,
    Classifier,
    classifier,
)
from mindspeed_prof.analysis.readers.device.ops import DeviceOps
from mindspeed_prof.analysis.report.tables import tables
from mindspeed_prof.analysis.verdict import verdict
from mindspeed_prof.cli import main
from mindspeed_prof.views.words import verdict_lines

#: Names as each library's sources (and, for dpsk::ep and NCCL, published traces) give them,
#: with the rule that must decide them.
COMM = [
    # NCCL and RCCL (nccl src/device, ROCm/rccl src/device/common.cu and msccl_kernel.h)
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "nccl"),
    ("ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "nccl"),
    ("ncclDevKernel_Generic(ncclDevComm*, channelMasks, ncclWork*)", "nccl"),
    ("rccl_main_kernel(ncclDevComm*, unsigned long, ncclWork*)", "nccl"),
    ("mscclKernel_Sum_float_LL_0(ncclDevComm*, mscclAlgo*, mscclWork*)", "nccl"),
    # HCCL (torch_npu's op names)
    ("hcom_allReduce__868_0_1", "hccl"),
    # DeepEP: deep_ep::{intranode,internode,internode_ll} (legacy/ too), dpsk::ep in DeepSeek's
    # published training trace
    (
        "void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*, int*, long*, float*)",
        "deepep",
    ),
    ("void deep_ep::internode_ll::combine<true, 7168>(void*, void*, int*, void const*)", "deepep"),
    (
        "void deep_ep::legacy::intranode::cached_notify_combine(void**, int*, int, int, int)",
        "deepep",
    ),
    ("void deep_ep::elastic::dispatch_impl<8, 128>(void*, float*, long*, float*)", "deepep"),
    (
        "void dpsk::ep::internode::combine<false, 8, __nv_bfloat16, 8, 2, 16, 24>(int4*, float*)",
        "deepep",
    ),
    (
        "void dpsk::ep::internode::notify_dispatch<false, 8>(int const*, long*, int, int const*)",
        "deepep",
    ),
    # pplx-kernels: dispatchKernel in an anonymous namespace, combineKernel global
    (
        "void (anonymous namespace)::dispatchKernel<4u, true, true>(int*, unsigned long, "
        "std::byte*)",
        "pplx",
    ),
    ("void combineKernel<4u, true, true, __nv_bfloat16, __nv_bfloat16>(__nv_bfloat16*)", "pplx"),
    # TensorRT-LLM's and FlashInfer's MoE all-to-all
    (
        "void moeA2ADispatchKernel<8, true, false, false>(int const*, DispatchKernelPointers, int,"
        " int)",
        "moe-all-to-all",
    ),
    (
        "void moeA2ACombineKernel<__nv_bfloat16, 8, false, false>(CombineKernelPointers, int)",
        "moe-all-to-all",
    ),
    # NVSHMEM's own kernels and torch's nvshmem extension
    ("alltoall_on_stream_kernel(nvshmem_team_t, void*, void const*, unsigned long)", "nvshmem"),
    (
        "void nvshmemi_init_array_kernel<unsigned long>(unsigned long*, int, unsigned long)",
        "nvshmem",
    ),
    ("c10d::nvshmem_extension::allToAllV(void*, void*, long*, unsigned long, int, int)", "nvshmem"),
    # torch symmetric memory (CUDASymmetricMemoryOps.cu, CUDASymmetricMemory.cu)
    (
        "void (anonymous namespace)::multimem_all_reduce_kernel<float, 16>(float*, unsigned long, "
        "unsigned int**, unsigned long, unsigned long)",
        "symmetric-memory",
    ),
    (
        "void (anonymous namespace)::one_shot_all_reduce_kernel<c10::BFloat16, 16, 8>"
        "(c10::BFloat16**, c10::BFloat16*)",
        "symmetric-memory",
    ),
    (
        "void (anonymous namespace)::two_shot_all_reduce_kernel_inplace<float, 16, 4>(float**)",
        "symmetric-memory",
    ),
    (
        "c10d::symmetric_memory::barrier_kernel(unsigned int**, int, int, int, unsigned long)",
        "symmetric-memory",
    ),
    # vLLM's and SGLang's custom all-reduce
    (
        "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, "
        "vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)",
        "custom-all-reduce",
    ),
    # other kernels named for a collective (TensorRT-LLM's fused all-reduce)
    (
        "void allreduce_fusion_kernel_oneshot_lamport<__nv_bfloat16, 8>"
        "(AllReduceFusionParams<__nv_bfloat16>)",
        "collective-name",
    ),
]
#: Compute kernels that name a collective library somewhere, or do an MoE's token bookkeeping.
COMPUTE = [
    "void dpsk::ep::cuda::get_dispatch_layout<256, 32, 8>(long const*, int*, int*, int*, "
    "bool*, int, int, int, int)",
    "void deep_ep::layout::get_dispatch_layout<256, 32, 8>(long const*, int*, int*, int*)",
    "void deep_ep::legacy::layout::get_dispatch_layout<256, 32, 8>(long const*, int*)",
    "void cutlass::device_kernel<dpsk::grouped_gemm::cuda::fp8_ptp128c::GemmKernel>"
    "(dpsk::grouped_gemm::cuda::fp8_ptp128c::GemmKernel::Params)",
    "void cuda::expand_to_fused_with_scales_impl(int4 const*, int4*, float const*, float*, "
    "int const*, int const*, int, int, int, int, int)",
    "void cuda::reduce_fused_impl<__nv_bfloat16, false, false>(int4 const*, float const*, "
    "int const*, int4*, int, int, int, __nv_fp8_interpretation_t, float)",
    "void cutlass::device_kernel<Gemm>(deep_ep::intranode::Params, ncclKernel_AllReduce)",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
    "at::native::func_wrapper_t<float, at::native::all_reduce_functor> > >(float)",
    "Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x16x32_MI16x16x1_SN_LDSB0_AFC1_AFEM1_",
    "sm90_xmma_gemm_bf16f32_bf16f32_f32_nt_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
    "segment_k_off_kernel__5x_cublas",
    "triton_poi_fused_all_gather_into_tensor_cat_0",
    "void vllm::moe::moe_align_block_size_kernel<int>(int const*, int*, int*, int*, int, int)",
    "void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous "
    "namespace)::OpaqueType<4u>, unsigned int, 1, 128, 1>(float)",
]


@pytest.mark.parametrize(("name", "rule"), COMM)
def test_real_communication_kernels_meet_their_rule(name: str, rule: str) -> None:
    got = classifier().rule_of(name)
    assert (got.name, got.kind) == (rule, "comm")


@pytest.mark.parametrize("name", COMPUTE)
def test_compute_kernels_that_look_like_collectives_stay_compute(name: str) -> None:
    assert classifier().rule_of(name) is DEFAULT
    assert classifier().rule_of(name, collective=False).kind == "compute"


def test_copies_and_htas_not_compute_names() -> None:
    table = classifier()
    assert table.rule_of("Memcpy DtoD (Device -> Device)").name == "memory"
    assert table.rule_of("Memset (Device)").kind == "memcpy"
    assert table.rule_of("hipMemcpyAsync").kind == "memcpy"
    assert table.rule_of("cudaStreamSync").name == "not-compute"
    assert classifier().kind_of("ampere_sgemm_128x64_tn") == "compute"


def test_kinetos_collective_arguments_decide_a_name_no_rule_knows() -> None:
    """A vendor's kernel that c10d launched: the trace says so, the name does not."""
    table = classifier()
    assert table.rule_of("vendor_a2a_v2", collective=True).name == "kineto-collective"
    assert table.rule_of("vendor_a2a_v2").kind == "compute"
    # a name rule still decides first, and a copy stays a copy
    assert table.rule_of("ncclDevKernel_Generic", collective=True).name == "nccl"
    assert table.rule_of("Memcpy HtoD (Pinned -> Device)", collective=True).kind == "memcpy"


def test_the_users_patterns_come_first() -> None:
    table = Classifier(cli="my_a2a|Memcpy PtoP", config="expert_shuffle")
    assert [r.name for r in table.rules[:2]] == [CLI_RULE, CONFIG_RULE]
    assert table.rule_of("my_a2a_kernel<8>").name == CLI_RULE
    assert table.rule_of("Memcpy PtoP (Device -> Device)").name == CLI_RULE
    assert table.rule_of("void expert_shuffle<4>(float*)").name == CONFIG_RULE
    assert table.rule_of("ampere_sgemm").kind == "compute"
    assert [r.name for r in Classifier().rules] == [r.name for r in (*RULES, DEFAULT)]


def test_every_rule_is_named_once_and_documented() -> None:
    names = [r.name for r in (*RULES, DEFAULT)]
    assert len(set(names)) == len(names) and CLI_RULE not in names and CONFIG_RULE not in names
    assert all(r.kind in KINDS and r.why for r in (*RULES, DEFAULT))
    hta = [r.name for r in (*RULES, DEFAULT) if r.hta]
    assert hta == ["nccl", "hccl", "memory", "not-compute", "compute"]


def test_the_documented_table_is_the_tables() -> None:
    """docs/classification.md lists every rule, in the order they are tried."""
    doc = (Path(__file__).resolve().parents[3] / "docs" / "classification.md").read_text()
    rows = [
        line.split("|")[1].strip().strip("`") for line in doc.splitlines() if line.startswith("| `")
    ]
    assert rows == [r.name for r in Classifier(cli="x", config="y").rules]


_names = st.sampled_from([n for n, _ in COMM] + COMPUTE + ["Memset (Device)", "gemm"])


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            _names, st.booleans(), st.integers(0, 500), st.integers(0, 50), st.integers(0, 2)
        ),
        max_size=40,
    )
)
def test_what_each_rule_counted_adds_up_to_every_op(ops: list) -> None:
    """Every op is counted once, by the rule that decides it: runs and device time per rule
    add up to all of them, and the rows' kinds are the rules' kinds."""
    store = DeviceOps()
    for name, collective, ts, dur, stream in ops:
        store.add(stream, ts / 4, (ts + dur) / 4, name, ts / 4, collective=collective)
    table = Classifier(cli="gemm")
    counted = store.classify(table)
    assert sum(t.count for t in counted.values()) == len(ops)
    assert math.fsum(t.total for t in counted.values()) == pytest.approx(
        math.fsum(d / 4 for *_, d, _ in ops)
    )
    want: dict[str, int] = {}
    for name, collective, *_ in ops:
        rule = table.rule_of(name, collective).name
        want[rule] = want.get(rule, 0) + 1
    assert {k: t.count for k, t in counted.items()} == want
    kinds = sorted(KINDS.index(table.kind_of(n, c)) for n, c, *_ in ops)
    assert sorted(kind for part in store.slices() for _, _, kind, _ in part) == kinds
    store.close()


# -- on a real trace: NCCL's kernels renamed as other libraries name theirs -----------------

_NCCL_SET = "kineto_nccl_rank0_of_2"  # A100, rank 0 of 2: 15 all-reduces, 6 broadcasts


def _load(path: Path) -> Any:
    return json.loads(gzip.decompress(path.read_bytes()))


@pytest.fixture(scope="module")
def nccl(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Captures]:
    root = unpack(_NCCL_SET, tmp_path_factory.mktemp("nccl") / "set")
    return next(root.iterdir()), analyse(root, cache=False)


def _renamed(
    original: Path,
    dest: Path,
    name: Callable[[str], str],
    args: bool = False,
    meta: dict[str, Any] | None = None,
) -> Path:
    """The trace with each NCCL kernel renamed by ``name`` (of its collective), Kineto's
    collective arguments kept only with ``args``, and ``meta`` as our metadata block."""
    trace = _load(original)
    for e in trace["traceEvents"]:
        if e.get("cat") == "kernel" and e["name"].startswith("nccl"):
            collective = e["args"]["Collective name"]
            e["name"] = name(collective)
            if not args:
                e["args"] = {k: v for k, v in e["args"].items() if k not in _KINETO_ARGS}
    if meta is not None:
        trace["mindspeed_prof"] = meta
    dest.mkdir(parents=True)
    (dest / original.name).write_bytes(gzip.compress(json.dumps(trace).encode()))
    return dest


_KINETO_ARGS = (
    "Collective name",
    "In msg nelems",
    "Out msg nelems",
    "Group size",
    "dtype",
    "In split size",
    "Out split size",
    "Process Group Name",
    "Process Group Description",
    "Process Group Ranks",
)
_DEEPEP = {
    "allreduce": "void deep_ep::intranode::combine<__nv_bfloat16, 8, 768>(int4*, "
    "float*, int4 const*, float const*, int*, int*, int, int, int)",
    "broadcast": "void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*, int*, "
    "long*, float*, int*, int*, int4 const*)",
}
_SYMMETRIC = {
    "allreduce": "void (anonymous namespace)::multimem_all_reduce_kernel<float, 16>"
    "(float*, unsigned long, unsigned int**, unsigned long, "
    "unsigned long)",
    "broadcast": "broadcast_on_stream_kernel(nvshmem_team_t, void*, void const*, "
    "unsigned long, int)",
}


#: Names that say nothing of a collective (``vendor_allreduce`` would meet collective-name).
_VENDOR = {"allreduce": "vendor_kernel_a", "broadcast": "vendor_kernel_b"}


def _rules(result: Captures) -> dict[str, tuple[int, float]]:
    return {c.rule: (c.kernels, c.ms) for c in classified(result.traces)}


@pytest.mark.parametrize(
    ("names", "rules"), [(_DEEPEP, {"deepep"}), (_SYMMETRIC, {"symmetric-memory", "nvshmem"})]
)
def test_expert_parallel_and_symmetric_memory_kernels_are_communication(
    nccl: tuple[Path, Captures], tmp_path: Path, names: dict[str, str], rules: set[str]
) -> None:
    """The same kernels under DeepEP's (or torch symmetric memory's and NVSHMEM's) names, and
    without Kineto's collective arguments: the device rows are the NCCL trace's to the bit, and
    the time NCCL's rule classified moves whole to theirs."""
    path, original = nccl
    result = analyse(_renamed(path, tmp_path / "x", names.__getitem__), cache=False)
    assert tables(result).device == tables(original).device
    before, after = _rules(original), _rules(result)
    assert set(after) - set(before) == rules and "nccl" not in after
    moved = [after[r] for r in rules]
    assert sum(n for n, _ in moved) == before["nccl"][0] == 21
    assert sum(ms for _, ms in moved) == pytest.approx(before["nccl"][1])
    line = dict(verdict_lines(verdict(*answered(result))))["classified"]
    assert all(f"{r} " in line for r in rules)


def test_kinetos_collective_arguments_classify_a_vendors_kernels(
    nccl: tuple[Path, Captures], tmp_path: Path
) -> None:
    """Kernels no rule knows by name, that c10d launched: the trace's own arguments make them
    communication; without the arguments they are computation, and the time moves exactly."""
    path, original = nccl
    with_args = analyse(_renamed(path, tmp_path / "a", _VENDOR.__getitem__, True), cache=False)
    assert tables(with_args).device == tables(original).device
    assert _rules(with_args)["kineto-collective"] == _rules(original)["nccl"]
    bare = analyse(_renamed(path, tmp_path / "b", _VENDOR.__getitem__), cache=False)
    assert all(r.comm_ms == 0.0 for r in tables(bare).device)
    kernels, ms = _rules(original)["nccl"]
    assert _rules(bare)["compute"][0] == _rules(original)["compute"][0] + kernels
    assert _rules(bare)["compute"][1] == pytest.approx(_rules(original)["compute"][1] + ms)


def test_the_users_pattern_from_the_command_line_or_the_capture(
    nccl: tuple[Path, Captures], tmp_path: Path, capsys
) -> None:
    """``--comm-kernels`` and the ``comm_kernels`` a capture records put the vendor's kernels
    back with the communication: the rows are the NCCL trace's again."""
    path, original = nccl
    bare = _renamed(path, tmp_path / "bare", _VENDOR.__getitem__)
    flagged = analyse(bare, cache=False, comm_kernels=r"^vendor_kernel_[ab]$")
    assert tables(flagged).device == tables(original).device
    assert _rules(flagged)[CLI_RULE] == _rules(original)["nccl"]
    recorded = _renamed(
        path, tmp_path / "rec", _VENDOR.__getitem__, meta={"comm_kernels": "^vendor_"}
    )
    files = sorted(recorded.iterdir())
    for result in (analyse(recorded, cache=False), analyse_files(files, recorded)):
        assert tables(result).device == tables(original).device  # as after capture and later alike
        assert _rules(result)[CONFIG_RULE] == _rules(original)["nccl"]
    assert main(["analyse", str(bare), "--json", "--comm-kernels", "^vendor_"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (rule,) = [c for c in doc["classified"] if c["rule"] == CLI_RULE]
    assert (rule["kind"], rule["kernels"]) == ("comm", 21)
    assert doc["verdict"]["device"]["classified"][0]["rule"] == CLI_RULE
    with pytest.raises(SystemExit) as bad:
        main(["analyse", str(bare), "--comm-kernels", "(vendor"])
    assert bad.value.code == 2
    assert "argument --comm-kernels: '(vendor': not a regular expression" in (
        capsys.readouterr().err
    )


def test_a_recorded_pattern_that_is_no_regex_is_one_problem(
    nccl: tuple[Path, Captures], tmp_path: Path
) -> None:
    path, original = nccl
    root = _renamed(path, tmp_path / "bad", _VENDOR.__getitem__, meta={"comm_kernels": "(vendor"})
    result = analyse(root, cache=False)
    (problem,) = tables(result).problems
    assert problem.startswith(
        f"{root / path.name}: its comm_kernels ('(vendor') is not a regular expression"
    )
    assert all(r.comm_ms == 0.0 for r in tables(result).device)  # classified without it


def test_compute_kernels_named_like_moe_bookkeeping_stay_compute(
    nccl: tuple[Path, Captures], tmp_path: Path
) -> None:
    """The trace's GEMMs renamed as DeepEP's layout kernel and DeepSeek's grouped GEMM: not a
    microsecond moves to communication."""
    path, original = nccl
    trace = _load(path)
    swaps = iter([COMPUTE[0], COMPUTE[3]])
    renamed: dict[str, str] = {}
    for e in trace["traceEvents"]:
        if e.get("cat") == "kernel" and "gemm" in e["name"].lower():
            e["name"] = renamed.setdefault(e["name"], next(swaps, COMPUTE[1]))
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / path.name).write_bytes(gzip.compress(json.dumps(trace).encode()))
    result = analyse(tmp_path / "g", cache=False)
    assert renamed and tables(result).device == tables(original).device
    got, want = _rules(result), _rules(original)
    assert {k: n for k, (n, _) in got.items()} == {k: n for k, (n, _) in want.items()}
    assert {k: ms for k, (_, ms) in got.items()} == pytest.approx(
        {k: ms for k, (_, ms) in want.items()}
    )
