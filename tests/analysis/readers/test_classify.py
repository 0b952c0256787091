"""The classification table: real kernel names of each library on the communication side, real
compute names that look like them on the other, the user's patterns first, and what each rule
counted adding up to the device time."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mindspeed_prof.analysis.readers.classify import (
    CLI_RULE,
    CONFIG_RULE,
    DEFAULT,
    KINDS,
    RULES,
    Classifier,
    classifier,
    kind_of,
)
from mindspeed_prof.analysis.readers.device_ops import DeviceOps

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
    ("void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*, int*, long*, float*)",
     "deepep"),
    ("void deep_ep::internode_ll::combine<true, 7168>(void*, void*, int*, void const*)",
     "deepep"),
    ("void deep_ep::legacy::intranode::cached_notify_combine(void**, int*, int, int, int)",
     "deepep"),
    ("void deep_ep::elastic::dispatch_impl<8, 128>(void*, float*, long*, float*)", "deepep"),
    ("void dpsk::ep::internode::combine<false, 8, __nv_bfloat16, 8, 2, 16, 24>(int4*, float*)",
     "deepep"),
    ("void dpsk::ep::internode::notify_dispatch<false, 8>(int const*, long*, int, int const*)",
     "deepep"),
    # pplx-kernels: dispatchKernel in an anonymous namespace, combineKernel global
    ("void (anonymous namespace)::dispatchKernel<4u, true, true>(int*, unsigned long, "
     "std::byte*)", "pplx"),
    ("void combineKernel<4u, true, true, __nv_bfloat16, __nv_bfloat16>(__nv_bfloat16*)",
     "pplx"),
    # NVSHMEM's own kernels and torch's nvshmem extension
    ("alltoall_on_stream_kernel(nvshmem_team_t, void*, void const*, unsigned long)",
     "nvshmem"),
    ("void nvshmemi_init_array_kernel<unsigned long>(unsigned long*, int, unsigned long)",
     "nvshmem"),
    ("c10d::nvshmem_extension::allToAllV(void*, void*, long*, unsigned long, int, int)",
     "nvshmem"),
    # torch symmetric memory (CUDASymmetricMemoryOps.cu, CUDASymmetricMemory.cu)
    ("void (anonymous namespace)::multimem_all_reduce_kernel<float, 16>(float*, unsigned long, "
     "unsigned int**, unsigned long, unsigned long)", "symmetric-memory"),
    ("void (anonymous namespace)::one_shot_all_reduce_kernel<c10::BFloat16, 16, 8>"
     "(c10::BFloat16**, c10::BFloat16*)", "symmetric-memory"),
    ("void (anonymous namespace)::two_shot_all_reduce_kernel_inplace<float, 16, 4>(float**)",
     "symmetric-memory"),
    ("c10d::symmetric_memory::barrier_kernel(unsigned int**, int, int, int, unsigned long)",
     "symmetric-memory"),
    # vLLM's and SGLang's custom all-reduce
    ("void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, "
     "vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)", "custom-all-reduce"),
    # other kernels named for a collective (TensorRT-LLM's fused all-reduce)
    ("void allreduce_fusion_kernel_oneshot_lamport<__nv_bfloat16, 8>"
     "(AllReduceFusionParams<__nv_bfloat16>)", "collective-name"),
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
    assert kind_of("ampere_sgemm_128x64_tn") == "compute"


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


_names = st.sampled_from([n for n, _ in COMM] + COMPUTE + ["Memset (Device)", "gemm"])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(_names, st.booleans(), st.integers(0, 500), st.integers(0, 50),
                          st.integers(0, 2)), max_size=40))
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
        math.fsum(d / 4 for *_, d, _ in ops))
    want: dict[str, int] = {}
    for name, collective, *_ in ops:
        rule = table.rule_of(name, collective).name
        want[rule] = want.get(rule, 0) + 1
    assert {k: t.count for k, t in counted.items()} == want
    kinds = sorted(KINDS.index(table.kind_of(n, c)) for n, c, *_ in ops)
    assert sorted(kind for part in store.slices() for _, _, kind, _ in part) == kinds
    store.close()
