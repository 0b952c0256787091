"""The environment variables msprof-analyze flags on a torch_npu capture."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from mindspeed_prof.analysis.findings.common import one_line, ranks_of
from mindspeed_prof.analysis.findings.finding import Finding, Severity
from mindspeed_prof.analysis.findings.npu.captures import (
    facts_of,
    files_of,
    grouped,
    npu_captures,
    on_ranks,
)
from mindspeed_prof.analysis.readers.model import (
    TraceData,
)

if TYPE_CHECKING:
    from mindspeed_prof.analysis.report.captures import Captures
    from mindspeed_prof.analysis.report.settings import Settings
    from mindspeed_prof.analysis.report.tables import Tables

__all__ = ["ENV_RULES", "EnvIssue", "EnvRule", "env_issues", "env_vars"]

# -- environment


#: When msprof-analyze flags a variable torch_npu recorded (environment_variable_checker.py),
#: why, and what to set. Values are as recorded ("" = unset); non-numbers count as 0, as there.
class EnvRule(NamedTuple):
    """One variable's rule: whether a recorded value is flagged, why, and what to set."""

    flags: Callable[[str], bool]
    why: str
    fix: str


ENV_RULES: dict[str, EnvRule] = {
    "ASCEND_GLOBAL_LOG_LEVEL": EnvRule(
        lambda v: v != "" and _int(v) != 3,
        "log level below error (0 debug, 1 info, 2 warning) slows training",
        "export ASCEND_GLOBAL_LOG_LEVEL=3",
    ),
    "HCCL_RDMA_TC": EnvRule(
        lambda v: v != "",
        "sets the DSCP of RoCE packets",
        "check it against the network's (default 132)",
    ),
    "HCCL_RDMA_SL": EnvRule(
        lambda v: v != "",
        "sets the RDMA NIC priority; it must match the NIC's PFC priority",
        "check it against the PFC priority (default 4)",
    ),
    "ACLNN_CACHE_LIMIT": EnvRule(
        lambda v: v == "" or _int(v) < 10000,
        "caches few aclnn operators (default 10000 or fewer)",
        "export ACLNN_CACHE_LIMIT=100000",
    ),
    "HOST_CACHE_CAPACITY": EnvRule(
        lambda v: v == "" or _int(v) == 0,
        "the dynamic-shape host cache is off",
        "export HOST_CACHE_CAPACITY=20",
    ),
    "PYTORCH_NPU_ALLOC_CONF": EnvRule(
        lambda v: "expandable_segments:True" not in v,
        "the allocator cannot grow segments: memory fragments",
        "export PYTORCH_NPU_ALLOC_CONF=expandable_segments:True",
    ),
    "ASCEND_LAUNCH_BLOCKING": EnvRule(
        lambda v: v != "" and _int(v) == 1,
        "every operator runs synchronously (a debugging mode)",
        "unset ASCEND_LAUNCH_BLOCKING",
    ),
    "HCCL_ALGO": EnvRule(
        lambda v: v != "",
        "fixes the cross-server algorithm instead of letting HCCL choose",
        "unset HCCL_ALGO",
    ),
}


def _int(value: str) -> int:
    """``value`` as an integer (``int(float(...))``); 0 where it is no finite number (a word,
    ``inf``, ``nan``)."""
    try:
        return int(float(value))
    except (ValueError, OverflowError):
        return 0


@dataclass
class EnvIssue:
    """The variables of one capture that ``ENV_RULES`` flags, with their recorded values."""

    flagged: dict[str, str]

    def key(self) -> list[tuple[str, str]]:
        return sorted(self.flagged.items())


def env_issues(t: TraceData) -> EnvIssue | None:
    """None where the capture records no environment or nothing is flagged."""
    env = facts_of(t).env
    if env is None:
        return None
    flagged = {
        k: env[k]
        for k in ENV_RULES  # the rules' order
        if k in env and ENV_RULES[k].flags(env[k])
    }
    return EnvIssue(flagged) if flagged else None


def env_vars(captures: Captures, tables: Tables, settings: Settings) -> list[Finding]:
    out = []
    per_rank = [(t, e) for t in npu_captures(captures) if (e := env_issues(t)) is not None]
    for group in grouped(per_rank):
        traces = [t for t, _ in group]
        flagged = group[0][1].flagged
        names = ", ".join(f"{k}={v!r}" if v else f"{k} unset" for k, v in flagged.items())
        severity: Severity = (
            "high"
            if "ASCEND_LAUNCH_BLOCKING" in flagged
            else "medium"
            if "ASCEND_GLOBAL_LOG_LEVEL" in flagged
            else "low"
        )
        out.append(
            one_line(
                Finding(
                    rule="npu.env_vars",
                    title=(
                        f"{len(flagged)} environment variable{'s' * (len(flagged) != 1)} off their "
                        f"recommended values on {on_ranks(traces)}: {names}"
                    ),
                    detail="\n".join(f"{k}={v!r}: {ENV_RULES[k].why}" for k, v in flagged.items()),
                    suggestion="; ".join(ENV_RULES[k].fix for k in flagged),
                    severity=severity,
                    source=files_of(captures, traces, "env"),
                    ranks=ranks_of(traces),
                )
            )
        )
    return out
