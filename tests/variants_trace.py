"""What each part of a ``variants.Recipe`` does to a Chrome (Kineto) trace's content: keys
reordered, a metadata object first, times shifted or given fractions, the trace cut at a step.
"""

from __future__ import annotations

import math
import random
import re
import string
from decimal import Decimal
from typing import Any

import msgspec

__all__ = [
    "FRACTION_US",
    "RANK_IN_NAME",
    "metadata",
    "name_rank",
    "number",
    "retime",
    "shuffled",
    "split",
    "steps_of",
    "trace_rank",
]

_ENCODE = msgspec.json.Encoder(decimal_format="number")
#: A rank in a file or folder name, as the readers take it (``rank3_``, ``rank-3.``).
RANK_IN_NAME = re.compile(r"(?:^|[^a-z0-9])rank[-_]?(\d+)(?=[^0-9]|$)", re.IGNORECASE)
#: Kineto's categories of device work (``readers.events.DEVICE_CATS``, written out here so
#: the variants do not lean on the package they test).
_DEVICE = {
    "kernel",
    "gpu_memcpy",
    "gpu_memset",
    "Kernel",
    "Memcpy",
    "Memset",
    "gpu_user_annotation",
}
_STEP = re.compile(r"^ProfilerStep#(\d+)$")
#: The grid of the fractions ``retime`` adds (us): 2**-20 us, about a thousandth of a ns.
FRACTION_US = Decimal(1) / Decimal(2**20)


def shuffled(node: Any, rng: random.Random, mode: int) -> Any:
    """Every object's keys reversed (``mode`` 1) or shuffled (2), at every depth."""
    if isinstance(node, dict):
        keys = list(node)[::-1]
        if mode == 2:
            rng.shuffle(keys)
        return {k: shuffled(node[k], rng, mode) for k in keys}
    if isinstance(node, list):
        return [shuffled(x, rng, mode) for x in node]
    return node


def metadata(size: int, rng: random.Random) -> dict[str, Any]:
    """A nested object of about ``size`` bytes of JSON: strings, numbers, lists."""
    out: dict[str, Any] = {}
    n = 0
    while n < size:
        key = f"k{len(out):06d}"
        text = "".join(rng.choices(string.ascii_letters + ' "\\{}[],:', k=200))
        out[key] = {
            "text": text,
            "values": [rng.random() for _ in range(8)],
            "nested": {"n": len(out), "list": [{"ts": 1, "dur": 2}]},
        }
        n += len(_ENCODE.encode(out[key])) + len(key) + 4
    return out


def number(x: Any) -> Decimal | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return Decimal(repr(x)) if isinstance(x, float) else Decimal(x)


def retime(
    events: list[Any],
    rng: random.Random,
    fraction_ns: float = 0.0,
    shift_us: float = 0.0,
    quantise_us: float = 0.0,
) -> None:
    """Fractions, shift or quantisation of every event's ``ts`` and ``dur``, in place.

    A fraction is a multiple of ``FRACTION_US`` (2**-20 us), growing with the value it is
    added to: ties stay ties and order stays order, and sums of times a trace's own span
    apart stay exact in doubles (two equal streams of ops stay equally busy)."""
    most = int(Decimal(repr(fraction_ns)) / 1000 / FRACTION_US)
    add: dict[Decimal, Decimal] = {}
    longer: dict[Decimal, Decimal] = {}
    if fraction_ns:
        for key, out in (("ts", add), ("dur", longer)):
            values = sorted(
                {t for e in events if isinstance(e, dict) and (t := number(e.get(key))) is not None}
            )
            cuts = sorted(rng.randint(0, most) for _ in values)
            out.update((t, FRACTION_US * c) for t, c in zip(values, cuts))
    shift = Decimal(repr(shift_us)) if shift_us else Decimal(0)
    grid = quantise_us
    for e in events:
        if not isinstance(e, dict):
            continue
        ts = number(e.get("ts"))
        if ts is not None:
            t = ts + add.get(ts, Decimal(0))
            if grid:  # where the shifted time lands, brought back (exact in doubles)
                t = Decimal(repr(float(t + Decimal(repr(grid))) - grid))
            e["ts"] = t + shift
        dur = number(e.get("dur"))
        if dur is not None and fraction_ns:
            e["dur"] = dur + longer[dur]


def name_rank(name: str) -> int | None:
    m = RANK_IN_NAME.search(name)
    return int(m.group(1)) if m else None


def trace_rank(doc: dict[str, Any], name: str) -> tuple[int | None, bool]:
    """The rank a trace records (``distributedInfo.rank``, else in its name), and whether it
    is recorded inside (not only in the name)."""
    info = doc.get("distributedInfo")
    r = info.get("rank") if isinstance(info, dict) else None
    if isinstance(r, str) and r.strip().isdigit():
        r = int(r.strip())
    if isinstance(r, int) and not isinstance(r, bool) and r >= 0:
        return r, True
    return name_rank(name), False


def steps_of(doc: dict[str, Any]) -> list[tuple[Decimal, int]]:
    """A trace's host ``ProfilerStep#<n>`` ranges (start, n), in time order (Kineto copies
    them onto the device as ``gpu_user_annotation``: not those)."""
    return sorted(
        (ts, int(m.group(1)))
        for e in doc["traceEvents"]
        if isinstance(e, dict)
        and (m := _STEP.match(str(e.get("name", ""))))
        and e.get("ph") == "X"
        and e.get("cat") not in _DEVICE
        and (ts := number(e.get("ts"))) is not None
    )


def split(doc: dict[str, Any], rng: random.Random) -> tuple[list[dict[str, Any]], int, int] | None:
    """Two traces cut at the start of a step (not the first), and the numbers of the steps
    either side of the cut; None with fewer than 2 steps."""
    events = doc["traceEvents"]
    steps = steps_of(doc)
    if len(steps) < 2:
        return None
    at = rng.randrange(1, len(steps))
    cut, before, after = steps[at][0], steps[at - 1][1], steps[at][1]
    side: dict[Any, int] = {}  # correlation -> the side its launch went to

    def first(e: dict[str, Any]) -> bool:
        ts = number(e.get("ts"))
        return ts is None or ts < cut

    for e in events:
        if isinstance(e, dict) and e.get("cat") not in _DEVICE and e.get("ph") == "X":
            corr = (e.get("args") or {}).get("correlation")
            if corr is not None:
                side[corr] = 0 if first(e) else 1
    halves: list[list[Any]] = [[], []]
    for e in events:
        if not isinstance(e, dict) or e.get("ph") == "M":
            halves[0].append(e)
            halves[1].append(e)
            continue
        corr = (e.get("args") or {}).get("correlation") if isinstance(e.get("args"), dict) else None
        if e.get("cat") in _DEVICE and corr in side:
            halves[side[corr]].append(e)
        elif e.get("ph") in ("s", "f") and e.get("id") in side:
            halves[side[e["id"]]].append(e)
        else:
            halves[0 if first(e) else 1].append(e)
    return [{**doc, "traceEvents": h} for h in halves], before, after
