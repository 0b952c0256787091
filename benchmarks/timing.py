"""Timing helpers: per-call medians, paired A/B ratios with a confidence interval, subprocesses."""

from __future__ import annotations

import gc
import json
import math
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Paired", "first_analysis", "per_call_ns", "timed_run"]

_Z95 = statistics.NormalDist().inv_cdf(0.975)


def per_call_ns(fn: Callable[[int], None], n: int, repeats: int) -> float:
    """Median over ``repeats`` of the time per call of ``fn(n)`` (which loops n times)."""
    times = []
    for _ in range(repeats):
        gc.disable()  # as timeit does: a collection landing in one side's loop is noise
        try:
            t0 = time.perf_counter_ns()
            fn(n)
            times.append((time.perf_counter_ns() - t0) / n)
        finally:
            gc.enable()
    return statistics.median(times)


@dataclass
class Paired:
    """Interleaved A/B pairs: the ratio B/A as a geometric mean with a 95% interval.

    Pairs are run A,B then B,A alternately, so drift and order effects hit both sides alike;
    ``run`` adds pairs until the interval's half-width is at most ``resolve`` (relative) or
    ``budget_s`` is spent.
    """

    a: list[float] = field(default_factory=list)
    b: list[float] = field(default_factory=list)

    def run(
        self,
        once_a: Callable[[], float],
        once_b: Callable[[], float],
        *,
        min_pairs: int,
        resolve: float,
        budget_s: float,
    ) -> Paired:
        t_end = time.perf_counter() + budget_s
        while len(self.a) < min_pairs or (
            self.half_width() > resolve and time.perf_counter() < t_end
        ):
            if len(self.a) % 2:
                b = once_b()
                a = once_a()
            else:
                a = once_a()
                b = once_b()
            self.a.append(a)
            self.b.append(b)
        return self

    def _logs(self) -> list[float]:
        return [math.log(b / a) for a, b in zip(self.a, self.b)]

    @property
    def ratio(self) -> float:
        return math.exp(statistics.fmean(self._logs()))

    def half_width(self) -> float:
        logs = self._logs()
        if len(logs) < 3:
            return math.inf
        return math.expm1(_Z95 * statistics.stdev(logs) / math.sqrt(len(logs)))

    @property
    def ci(self) -> tuple[float, float]:
        logs = self._logs()
        h = _Z95 * statistics.stdev(logs) / math.sqrt(len(logs))
        m = statistics.fmean(logs)
        return (math.exp(m - h), math.exp(m + h))

    def describe(self, unit: float = 1e3, suffix: str = "ms") -> str:
        return (
            f"{statistics.median(self.b) * unit:.2f} {suffix} vs "
            f"{statistics.median(self.a) * unit:.2f} {suffix} (medians), "
            f"{len(self.a)} interleaved pairs"
        )


# Runs ``cmd`` in a child and reports the child's wall time (process start included) and
# peak RSS. The launcher is a small interpreter, so the child's peak does not include the
# benchmark process's own memory (ru_maxrss of a forked child starts from its parent's).
_LAUNCHER = """
import json, resource, subprocess, sys, time
t0 = time.perf_counter()
out = subprocess.run(sys.argv[1:], capture_output=True, text=True)
wall = time.perf_counter() - t0
if out.returncode:
    sys.exit(out.stderr[-2000:])
print(json.dumps({"wall_s": wall, "rss_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
                  "stdout": out.stdout}))
"""


def timed_run(cmd: Sequence[str], cwd: str | None = None) -> dict[str, object]:
    """``cmd``'s wall seconds (``wall_s``), peak RSS (``rss_kb``) and its whole stdout (an
    ``analyse --json`` document is read back from it)."""
    out = subprocess.run(
        [sys.executable, "-c", _LAUNCHER, *cmd],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
        cwd=cwd,
    )
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def first_analysis(cmd: Sequence[str], captures: Path) -> dict[str, object]:
    """``timed_run(cmd)`` as a first analysis of ``captures``: their cache entries deleted
    before, so a repeat pays the reading (and the entry's writing) again, not a cache hit."""
    from mindspeed_prof.formats import CACHE

    folder = captures if captures.is_dir() else captures.parent
    for entry in folder.rglob(f"*{CACHE}"):
        entry.unlink()
    return timed_run(cmd)
