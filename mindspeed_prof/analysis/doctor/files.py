"""``doctor``'s cheap checks of our own files, before any reader: an empty or truncated capture,
a JSON file refused or unreadable, and hosts whose first common step starts too far apart."""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

from mindspeed_prof.analysis.doctor.health import Health, Problem, ProblemKind
from mindspeed_prof.formats import SPANS
from mindspeed_prof.jsonio import Refused, open_regular, read_json

__all__ = ["check_capture", "check_skew", "first_steps", "load", "refused"]

_TAIL_BYTES = 64


def load(path: Path, follow: bool = False) -> object:
    """A JSON file (bounded; through a link only when ``follow``, as for a capture); None when
    it is missing, refused (a link, a FIFO, a device, too large) or not JSON."""
    try:
        return read_json(path, follow=follow)
    except (OSError, ValueError):  # Refused is a ValueError
        return None


def refused(health: Health, err: Refused) -> None:
    rel = str(Path(err.path).relative_to(health.root))
    health.findings.append(Problem("unreadable", rel, f"{rel}: not read: {err.reason}"))


def check_capture(path: Path) -> tuple[ProblemKind, str] | None:
    size = path.stat().st_size
    if size == 0:
        return "empty", "empty file"
    if path.name.endswith(".gz") or path.name.endswith(".db"):
        return None  # binary: their readers say what is wrong
    try:
        fd = open_regular(path, follow=True)  # no FIFO put there since it was listed
    except (OSError, Refused) as err:
        return "unreadable", str(getattr(err, "reason", err))
    try:
        tail = os.pread(fd, _TAIL_BYTES, max(0, size - _TAIL_BYTES)).rstrip()
    finally:
        os.close(fd)
    if not tail.endswith(b"}"):
        return "truncated", "truncated (the file does not end a JSON document; killed mid-write?)"
    if path.name.endswith(SPANS) and size < 4096:
        data = load(path, follow=True)
        if (
            isinstance(data, dict)
            and not data.get("traceEvents")
            and (data.get("closed") or "format" not in (data.get("mindspeed_prof") or {}))
        ):
            return "empty", "no ranges recorded (did the window's steps run?)"
    return None


def first_steps(path: Path, out: dict[tuple[str, int], float]) -> None:
    data = load(path, follow=True)
    if not isinstance(data, dict):
        return
    host = str(data.get("mindspeed_prof", {}).get("host", "?"))
    for event in data.get("traceEvents", []):
        if event.get("cat") == "step":
            step = event.get("args", {}).get("step")
            if isinstance(step, int):
                key = (host, step)
                out[key] = min(out.get(key, float("inf")), float(event.get("ts", 0)))


def check_skew(health: Health, first_step: dict[tuple[str, int], float], skew_ms: float) -> None:
    by_step: dict[int, dict[str, float]] = defaultdict(dict)
    for (host, step), ts in first_step.items():
        by_step[step][host] = ts
    for step in sorted(by_step):
        hosts = by_step[step]
        if len(hosts) < 2:
            continue
        early, late = min(hosts, key=hosts.__getitem__), max(hosts, key=hosts.__getitem__)
        gap_ms = (hosts[late] - hosts[early]) / 1000
        if gap_ms > skew_ms:
            health.findings.append(
                Problem(
                    "clock_skew",
                    f"{early}, {late}",
                    f"hosts {early} and {late}: step {step} starts {gap_ms:.0f} ms apart (over "
                    f"{skew_ms:g} ms): clocks out of sync, so cross-host timelines are shifted",
                )
            )
        return  # the first step seen on several hosts is enough
