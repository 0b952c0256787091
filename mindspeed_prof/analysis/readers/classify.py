"""What a device op is: communication, a copy, other busy work, or computation, by one ordered
table of named rules (docs/classification.md lists them with their sources).

A rule matches an op by its name (``re.search``), or, for ``kineto-collective``, by what the
trace says of it: Kineto writes c10d's collective arguments (``Collective name``, ``In msg
nelems``, ``Group size``, ``Process Group Name``...) on the kernels that c10d's
``record_param_comms`` op launched. The first rule that matches decides; an op no rule matches
is computation. Names were read from each library's sources, not guessed, and the patterns test
the kernel's own name, never its template or call arguments: a GEMM whose arguments name an
expert-parallel type is still computation, and so are the MoE kernels that only sort tokens
(DeepEP's ``get_dispatch_layout``, token permutes).

The user adds communication kernels with a regex (``--comm-kernels``, or the capture's
``profiler_config.extensions.comm_kernels``, recorded in the trace); those rules come first.
``hta`` marks the rules HTA's temporal breakdown shares: on traces no other rule touches, the
two agree (``tests/analysis/readers/device/test_breakdown.py``).
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

__all__ = [
    "CLI_RULE",
    "CONFIG_RULE",
    "DEFAULT",
    "KINDS",
    "RULES",
    "Classifier",
    "Rule",
    "classifier",
]

#: What a rule can call an op, in the order of the breakdown's kind codes.
KINDS = ("compute", "comm", "memcpy", "other")
#: The function's own name: what precedes its template and call arguments (a kernel in an
#: anonymous namespace keeps that part: ``(anonymous namespace)::dispatchKernel<...>``).
_HEAD = r"^(?:void )?(?:[^(<]|\(anonymous namespace\))*?"
#: Rule names of the user's own patterns.
CLI_RULE = "--comm-kernels"
CONFIG_RULE = "comm_kernels"


class Rule(NamedTuple):
    """One row of the table: its ``name`` (what the verdict and ``--json`` count under), the
    ``kind`` it gives, its ``pattern`` (a regex searched in the op's name; "" for the rule that
    reads the trace's collective arguments), ``why`` (the evidence), and whether HTA's
    temporal breakdown classes these ops the same way (``hta``)."""

    name: str
    kind: str
    pattern: str
    why: str
    hta: bool = False


#: The built-in table, in the order it is tried.
RULES: tuple[Rule, ...] = (
    Rule(
        "nccl",
        "comm",
        r"(?i)^nccl.*kernel|^rccl_main_kernel|^mscclKernel_",
        "NCCL's kernels (ncclKernel_AllReduce_RING_LL_Sum_float, ncclDevKernel_Generic) and "
        "RCCL's, which keep NCCL's names and add rccl_main_kernel and MSCCL's mscclKernel_*",
        hta=True,
    ),
    Rule(
        "hccl",
        "comm",
        r"(?i)^(?:hccl|hcom_)",
        "Huawei HCCL: its ops are named hcom_<collective>_ (torch_npu), hccl* elsewhere",
        hta=True,
    ),
    Rule(
        "memory",
        "memcpy",
        r"^(?:hip)?(?:Memcpy|Memset)|^dma",
        "copies and sets as CUPTI and ROCm name them (Memcpy HtoD, Memset (Device))",
        hta=True,
    ),
    Rule(
        "not-compute",
        "other",
        r"Memcpy|Sync",
        "other names HTA leaves out of computation (a Memcpy inside a name, *Sync*): busy, "
        "neither computation nor communication",
        hta=True,
    ),
    Rule(
        "deepep",
        "comm",
        _HEAD + r"\b(?:deep_ep|dpsk::ep)::(?![\w:]*\bget_dispatch_layout\b)",
        "DeepEP's expert-parallel all-to-all (deep_ep::intranode::dispatch, "
        "deep_ep::internode_ll::combine, notify_dispatch, cached_notify...; dpsk::ep:: in "
        "DeepSeek's own traces); get_dispatch_layout only counts tokens: computation",
    ),
    Rule(
        "pplx",
        "comm",
        _HEAD + r"\b(?:dispatch|combine)Kernel<",
        "pplx-kernels' all-to-all (dispatchKernel<...>, combineKernel<...>)",
    ),
    Rule(
        "moe-all-to-all",
        "comm",
        _HEAD + r"\bmoeA2A(?:Dispatch|Combine)Kernel\b",
        "TensorRT-LLM's and FlashInfer's MoE all-to-all (moeA2ADispatchKernel, "
        "moeA2ACombineKernel)",
    ),
    Rule(
        "nvshmem",
        "comm",
        _HEAD + r"(?:nvshmem|_on_stream_kernel\b)",
        "NVSHMEM's own kernels (nvshmemi_*, alltoall_on_stream_kernel...) and torch's "
        "c10d::nvshmem_extension (allToAllV, exchangeSplitAndOffset)",
    ),
    Rule(
        "symmetric-memory",
        "comm",
        _HEAD + r"(?:\bc10d::symmetric_memory::|multimem_|\b(?:one|two)_shot_all_reduce)",
        "torch symmetric memory: multimem_all_reduce_kernel, one_shot_all_reduce_kernel, "
        "two_shot_all_reduce_kernel, c10d::symmetric_memory::barrier_kernel",
    ),
    Rule(
        "custom-all-reduce",
        "comm",
        _HEAD + r"\bcross_device_reduce_[12]stage\b",
        "vLLM's and SGLang's custom all-reduce for tensor parallelism",
    ),
    Rule(
        "collective-name",
        "comm",
        r"(?i)^(?!triton_)" + _HEAD[1:] + r"(?:all_?reduce|all_?gather|reduce_?scatter"
        r"|all_?to_?all|send_?recv)",
        "any other kernel named for a collective (AllReduce, all_gather, reduce_scatter, "
        "alltoall, SendRecv); not torch.compile's triton_* kernels, which are named after "
        "the ops they fuse",
    ),
    Rule(
        "kineto-collective",
        "comm",
        "",
        "a kernel Kineto links to c10d's record_param_comms: the trace writes 'Collective "
        "name' and the message sizes on it",
    ),
)
#: The rule an op no other rule matches falls to.
DEFAULT = Rule("compute", "compute", "", "everything else", hta=True)


#: Names whose rule a ``Classifier`` remembers (the table is lru-cached: it lives on).
_SEEN_MAX = 1 << 16


class Classifier:
    """The table with the user's patterns first: ``rule_of`` gives the rule that decides."""

    def __init__(self, cli: str = "", config: str = "") -> None:
        own = [
            Rule(CLI_RULE, "comm", cli, "named on the command line (--comm-kernels)"),
            Rule(
                CONFIG_RULE, "comm", config, "the capture's profiler_config.extensions.comm_kernels"
            ),
        ]
        self.rules = tuple(r for r in own if r.pattern) + RULES + (DEFAULT,)
        self._tests = [re.compile(r.pattern).search if r.pattern else None for r in self.rules]
        self._seen: dict[tuple[str, bool], Rule] = {}  # each name's rule, once

    def rule_of(self, name: str, collective: bool = False) -> Rule:
        """The first rule ``name`` matches; ``collective``: the trace gives the op c10d's
        collective arguments."""
        key = (name, collective)
        rule = self._seen.get(key)
        if rule is None:
            rule = self._seen[key] = self._first(name, collective)
            if len(self._seen) > _SEEN_MAX:
                self._seen.clear()
        return rule

    def _first(self, name: str, collective: bool) -> Rule:
        for rule, test in zip(self.rules, self._tests):
            if test is None:
                if rule.kind == "comm" and collective:
                    return rule
            elif test(name):
                return rule
        return DEFAULT

    def kind_of(self, name: str, collective: bool = False) -> str:
        return self.rule_of(name, collective).kind


@functools.lru_cache(maxsize=16)
def classifier(cli: str = "", config: str = "") -> Classifier:
    """The table with these user patterns (each checked by ``pattern_problem`` first)."""
    return Classifier(cli, config)
