"""``compare A B``: two runs side by side per stage and rank, regressions flagged."""

from __future__ import annotations

from typing import Any

from mindspeed_prof.analysis.analyse import Analysis
from mindspeed_prof.analysis.readers.model import rank_order

__all__ = ["compare", "DEFAULT_THRESHOLD"]

#: B is a regression when its mean stage time exceeds A's by more than this fraction.
DEFAULT_THRESHOLD = 0.1


def compare(a: Analysis, b: Analysis, threshold: float = DEFAULT_THRESHOLD) -> list[dict[str, Any]]:
    """One row per (stage, rank) present in either run: mean ms in A and B, change, flag."""
    rows_a = {(r["stage"], r["rank"]): r for r in a.stage_rank()}
    rows_b = {(r["stage"], r["rank"]): r for r in b.stage_rank()}
    out = []
    for key in sorted(rows_a.keys() | rows_b.keys(), key=lambda k: (k[0], rank_order(k[1]))):
        ra, rb = rows_a.get(key), rows_b.get(key)
        ma = ra["mean_ms"] if ra else None
        mb = rb["mean_ms"] if rb else None
        change = (mb - ma) / ma if ma and mb is not None else None
        out.append({"stage": key[0], "rank": key[1], "a_mean_ms": ma, "b_mean_ms": mb,
                    "change": change,
                    "regression": change is not None and change > threshold,
                    "improvement": change is not None and change < -threshold})
    return out
