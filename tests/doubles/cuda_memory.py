"""Contract double of ``torch.cuda.memory``: the caching allocator's calls mindspeed-prof makes,
with torch's own signatures (``tests/capture/memory/test_allocator.py`` compares them with the
installed torch), over a fake device whose memory a test moves through ``STATE``:
``allocated``/``reserved`` now, their peaks since the last reset, the history switch, and every
call in ``CALLS``."""

from __future__ import annotations

import pickle
import sys

STATE: dict[str, object] = {}
CALLS: list[tuple[str, object]] = []


def clear() -> None:
    STATE.update(allocated=0, reserved=0, peak_allocated=0, peak_reserved=0, history=None,
                 events=[])
    CALLS.clear()


def use(allocated: int, reserved: int | None = None) -> None:
    """The device now holds ``allocated`` bytes (``reserved``: the allocator's, at least that)."""
    reserved = max(allocated, reserved if reserved is not None else int(STATE["reserved"]))
    STATE.update(allocated=allocated, reserved=reserved,
                 peak_allocated=max(int(STATE["peak_allocated"]), allocated),
                 peak_reserved=max(int(STATE["peak_reserved"]), reserved))
    if STATE["history"]:
        STATE["events"].append(allocated)  # type: ignore[union-attr]


def reset_peak_memory_stats(device=None):
    CALLS.append(("reset_peak_memory_stats", device))
    STATE.update(peak_allocated=STATE["allocated"], peak_reserved=STATE["reserved"])


def max_memory_allocated(device=None):
    return STATE["peak_allocated"]


def max_memory_reserved(device=None):
    return STATE["peak_reserved"]


def _record_memory_history(enabled="all", context="all", stacks="all", max_entries=sys.maxsize,
                           device=None, clear_history=False, compile_context=False,
                           global_record_annotations=False, skip_actions=None):
    CALLS.append(("_record_memory_history", enabled))
    STATE["history"] = enabled
    if enabled is None:
        STATE["events"] = []


def _dump_snapshot(filename="dump_snapshot.pickle", augment_with_fx_traces=False):
    CALLS.append(("_dump_snapshot", filename))
    with open(filename, "wb") as f:
        pickle.dump({"segments": [], "device_traces": [list(STATE["events"])]}, f)  # type: ignore[arg-type]


clear()
