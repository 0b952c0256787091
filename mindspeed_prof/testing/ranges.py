"""Range files (``*.mstx.trace.json``) as the span recorder writes them, of any size, for tests
and benchmarks: per step a ``ProfilerStep#N`` range, the six stages and four custom ranges in
each (on another thread), one event a line, the file closed."""

from __future__ import annotations

import json
from pathlib import Path

from mindspeed_prof.config.schema import STAGES

__all__ = ["write_range_file"]

_LINE = (
    '{"ph": "X", "pid": 1, "tid": %d, "cat": "%s", "name": "%s", "ts": %de-3, '
    '"dur": %de-3, "args": {"step": %d}}'
)


def _event(tid: int, cat: str, name: str, t: int, dur: int, step: int) -> str:
    """One complete event; ``t`` and ``dur`` in nanoseconds, written as microseconds the way
    the recorder writes them (``1234e-3``: integer nanoseconds with JSON's exponent)."""
    return _LINE % (tid, cat, name, t, dur, step)


def write_range_file(path: Path, size: float, rank: int = 0) -> Path:
    """Write steps to ``path`` until it holds about ``size`` bytes (at least one step): each
    about 4.4 kB, 35 ranges. ``rank`` is named in the header."""
    head = {
        "schemaVersion": 1,
        "distributedInfo": {"rank": rank},
        "mindspeed_prof": {"kind": "spans", "format": 2, "rank": rank},
    }
    t, step, written = 1_700_000_000_000_000, 0, 0
    with open(path, "w") as f:
        f.write(json.dumps(head)[:-1] + ', "traceEvents": [\n')
        sep = ""
        while written < size or not step:
            step += 1
            lines, t0 = [], t
            for stage in STAGES:
                s0 = t
                for k in range(4):
                    lines.append(
                        _event(2, "user_annotation", f"range{k}", t, 1_900_567 + 1_000 * k, step)
                    )
                    t += 2_000_000 + 17_000 * k
                lines.append(_event(1, "stage", stage, s0, t - s0, step))
                t += 1_000_000
            lines.append(_event(1, "step", f"ProfilerStep#{step}", t0, t - t0, step))
            text = sep + ",\n".join(lines)
            sep = ",\n"
            f.write(text)
            written += len(text)
        f.write('\n], "closed": true}\n')
    return path
