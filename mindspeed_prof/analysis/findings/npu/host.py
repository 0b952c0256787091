"""The host side: waits for the device, run-time compilation, and synchronous launches."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mindspeed_prof.analysis.findings.common import one_line, ranks_of
from mindspeed_prof.analysis.findings.finding import Finding
from mindspeed_prof.analysis.findings.npu.captures import (
    MS,
    facts_of,
    files_of,
    host_step_ms,
    npu_captures,
    steps_of,
)
from mindspeed_prof.analysis.findings.npu.layout import COMPILE_FIX
from mindspeed_prof.analysis.readers.labels import rank_label
from mindspeed_prof.analysis.readers.model import TraceData
from mindspeed_prof.analysis.readers.npu.facts import api_name, is_sync
from mindspeed_prof.analysis.readers.ratio import ratio

if TYPE_CHECKING:
    from mindspeed_prof.analysis.report.captures import Captures
    from mindspeed_prof.analysis.report.settings import Settings
    from mindspeed_prof.analysis.report.tables import Tables

__all__ = [
    "COMPILE_APIS",
    "HOST_WAIT_SHARE",
    "LAUNCH_SYNC_RATIO",
    "HostCalls",
    "compile_calls",
    "host_wait",
    "host_waits",
    "launch_blocking",
    "runtime_compile",
    "synchronize_stream",
]

# -- host side

#: A host that waits on the device for this share of its step is reported (ours).
HOST_WAIT_SHARE = 0.1
HOST_WAIT_MIN_MS = 1.0
#: Host operators that block on the device (tensor.item(), .cpu(), printing a device tensor).
BLOCKING_OPS = ("aten::_local_scalar_dense", "aten::item", "aten::_to_copy", "aten::copy_")
COMPILE_APIS = ("aclopCompileAndExecute", "opCompile")
COMPILE_MIN_MS = 1.0
#: synchronize.yaml: synchronizations right after a launch, per launch, above this.
LAUNCH_SYNC_RATIO = 0.5


@dataclass
class HostCalls:
    """CANN API calls of one kind: per API (calls, total us, longest us) over the capture,
    its steps and its host step (ms)."""

    apis: dict[str, tuple[int, float, float | None]]
    steps: int
    step_ms: float | None

    @property
    def us(self) -> float:
        return sum(us for _, us, _ in self.apis.values())

    @property
    def per_step_ms(self) -> float:
        return self.us / self.steps / MS


def _calls(t: TraceData, pick: Callable[[str], bool]) -> HostCalls | None:
    longest = facts_of(t).api_max_us
    apis: dict[str, tuple[int, float, float | None]] = {}
    for name, tally in t.runtime.items():
        api = api_name(name)
        if pick(api):
            n, us, most = apis.get(api, (0, 0.0, longest.get(api)))
            apis[api] = (n + tally.count, us + tally.total, most)
    if not apis:
        return None
    return HostCalls(apis, steps_of(t), host_step_ms(t))


def host_waits(t: TraceData) -> HostCalls | None:
    """The ACL calls that block the host on a stream (aclrtSynchronizeStream*)."""
    return _calls(t, is_sync)


def compile_calls(t: TraceData) -> HostCalls | None:
    """aclopCompileAndExecute and opCompile: operators compiled (and run) at run time."""
    return _calls(t, lambda api: api in COMPILE_APIS)


def _api_lines(calls: HostCalls) -> list[str]:
    return [
        f"{api}: {n} call{'s' * (n != 1)}, {us / MS:,.1f} ms"
        + (f", longest {most / MS:,.1f} ms" if most is not None else "")
        for api, (n, us, most) in sorted(calls.apis.items(), key=lambda kv: -kv[1][1])
    ]


def host_wait(captures: Captures, tables: Tables, settings: Settings) -> list[Finding]:
    found = []
    for t in npu_captures(captures):
        w = host_waits(t)
        if (
            w is not None
            and w.step_ms
            and w.per_step_ms >= HOST_WAIT_MIN_MS
            and ratio(w.per_step_ms, w.step_ms, 0.0) >= HOST_WAIT_SHARE
        ):
            found.append((t, w))
    if not found:
        return []
    t, w = max(found, key=lambda f: ratio(f[1].per_step_ms, f[1].step_ms, 0.0))
    assert w.step_ms
    share = ratio(w.per_step_ms, w.step_ms, 0.0)
    api, (n, _, most) = max(w.apis.items(), key=lambda kv: kv[1][1])
    longest = f", longest {most / MS:,.1f} ms" if most is not None else ""
    lines = []
    for o, ow in found:
        lines.append(
            f"rank {rank_label(o.rank)} ({ow.per_step_ms:,.1f} ms of a "
            f"{ow.step_ms or 0:,.1f} ms step): " + "; ".join(_api_lines(ow))
        )
        blockers = [(op, o.ops[op]) for op in BLOCKING_OPS if op in o.ops]
        if blockers:
            lines.append(
                f"  host operators that wait on rank {rank_label(o.rank)}: "
                + ", ".join(
                    f"{op} {tl.count} calls {tl.total / MS:,.1f} ms self" for op, tl in blockers
                )
            )
    if len(found) > 1:
        lines.append(f"all ranks: {sum(ow.us for _, ow in found) / MS:,.1f} ms")
    traces = [f[0] for f in found]
    return [
        one_line(
            Finding(
                rule="npu.host_wait",
                title=f"The host waited on the device {w.per_step_ms:,.1f} ms per step on rank "
                f"{rank_label(t.rank)} ({share:.0%} of its {w.step_ms:,.1f} ms step): {api} "
                f"{n} call{'s' * (n != 1)}{longest}",
                detail="\n".join(lines),
                suggestion="Keep the host ahead of the device: avoid tensor.item(), .cpu() and "
                "printing device tensors inside the step (aten::_local_scalar_dense), or "
                "move them after the next step's launches",
                severity="high" if share >= 0.5 else "medium",
                source=files_of(captures, traces, "api"),
                ranks=ranks_of(traces),
            )
        )
    ]


def runtime_compile(captures: Captures, tables: Tables, settings: Settings) -> list[Finding]:
    found = [
        (t, c)
        for t in npu_captures(captures)
        if (c := compile_calls(t)) is not None
        and "aclopCompileAndExecute" in c.apis
        and _compile_ms(c) >= COMPILE_MIN_MS
    ]
    if not found:
        return []
    t, c = max(found, key=lambda f: _compile_ms(f[1]))
    n = c.apis["aclopCompileAndExecute"][0]
    per_step = _compile_ms(c)
    of = (
        f" ({share:.0%} of its {c.step_ms:,.1f} ms step)"
        if (share := ratio(per_step, c.step_ms, None)) is not None
        else ""
    )
    inner = c.apis.get("opCompile")
    compiling = f"; opCompile {inner[1] / c.steps / MS:,.1f} ms of it" if inner else ""
    lines = [f"rank {rank_label(o.rank)}: " + "; ".join(_api_lines(oc)) for o, oc in found]
    if len(found) > 1:
        every = sum(oc.apis["aclopCompileAndExecute"][1] for _, oc in found) / MS
        lines.append(f"all ranks: aclopCompileAndExecute {every:,.1f} ms")
    traces = [f[0] for f in found]
    return [
        one_line(
            Finding(
                rule="npu.runtime_compile",
                title=f"Operators compiled at run time on rank {rank_label(t.rank)}: "
                f"aclopCompileAndExecute {per_step:,.1f} ms per step in {n} call"
                f"{'s' * (n != 1)}{of}{compiling}",
                detail="\n".join(lines),
                suggestion=f"Disable JIT compilation: {COMPILE_FIX}; where shapes stay dynamic, "
                "HOST_CACHE_CAPACITY and ACLNN_CACHE_LIMIT keep compiled operators",
                severity="medium" if ratio(per_step, c.step_ms, 0.0) >= 0.05 else "low",
                impact_ms=per_step,
                source=files_of(captures, traces, "api"),
                ranks=ranks_of(traces),
            )
        )
    ]


def _compile_ms(c: HostCalls) -> float:
    """aclopCompileAndExecute per step (opCompile runs inside it)."""
    return c.apis.get("aclopCompileAndExecute", (0, 0.0, None))[1] / c.steps / MS


def launch_blocking(t: TraceData) -> tuple[int, int, int] | None:
    """(node launches, stream synchronizations, synchronizations right after a launch)."""
    order = facts_of(t).launch_sync
    return (order[0], order[1], order[2]) if order and len(order) == 3 else None


def synchronize_stream(captures: Captures, tables: Tables, settings: Settings) -> list[Finding]:
    out = []
    for t in npu_captures(captures):
        ls = launch_blocking(t)
        if ls is None or not ls[0] or ls[2] / ls[0] <= LAUNCH_SYNC_RATIO:
            continue
        launches, syncs, after = ls
        out.append(
            one_line(
                Finding(
                    rule="npu.synchronize_stream",
                    title=f"The host synchronizes after {after / launches:.0%} of its {launches} "
                    f"operator launches on rank {rank_label(t.rank)} ({syncs} stream "
                    "synchronizations): operators run one at a time",
                    detail=(
                        f"{after} of {syncs} aclrtSynchronizeStream calls come right after a node "
                        "launch"
                    ),
                    suggestion="Check ASCEND_LAUNCH_BLOCKING: if it is 1, unset it and restart the "
                    "job",
                    severity="high",
                    source=files_of(captures, [t], "order"),
                    ranks=[t.rank],
                )
            )
        )
    return out
