"""Perfetto's nesting rule for a Chrome trace's slices, checked independently of the package:
on each (pid, tid), two slices either do not overlap or one holds the other, on the integer
nanosecond grid Perfetto's JSON importer reads ``ts`` and ``dur`` on (a slice that ends even
1 ns past its parent is not nested in it)."""

from __future__ import annotations

import gzip
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import msgspec

__all__ = ["nesting_errors", "timeline_events"]


def timeline_events(path: Path) -> list[dict[str, Any]]:
    """The events of a timeline file (``.json`` or ``.json.gz``)."""
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    doc = msgspec.json.decode(raw)
    events: list[dict[str, Any]] = doc["traceEvents"] if isinstance(doc, dict) else doc
    return events


def nesting_errors(events: Iterable[Mapping[str, Any]], limit: int = 5) -> list[str]:
    """The first ``limit`` slices that overlap a slice of their thread without nesting."""
    lanes: dict[tuple[Any, Any], list[tuple[int, int, str]]] = defaultdict(list)
    for e in events:
        if e.get("ph") == "X":
            start = round(float(e["ts"]) * 1000)
            lanes[(e["pid"], e.get("tid"))].append(
                (start, start + round(float(e["dur"]) * 1000), str(e.get("name")))
            )
    errors: list[str] = []
    for lane, slices in lanes.items():
        slices.sort(key=lambda s: (s[0], -s[1]))
        stack: list[tuple[int, int, str]] = []
        for start, end, name in slices:
            while stack and stack[-1][1] <= start:
                stack.pop()
            if stack and end > stack[-1][1]:
                errors.append(
                    f"{lane}: {name!r} [{start}, {end}] ns ends "
                    f"{end - stack[-1][1]} ns past {stack[-1][2]!r}"
                )
                if len(errors) >= limit:
                    return errors
            stack.append((start, end, name))
    return errors
