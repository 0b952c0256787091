"""A timeline's tracks: one per (host, role, rank), ordered by role then rank, each holding the
captures (a stem's range file and op traces) it is drawn from; and the layout they make with
the clock and the window."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from mindspeed_prof.analysis.readers import TraceData
from mindspeed_prof.analysis.readers.labels import rank_label, rank_order
from mindspeed_prof.analysis.timeline.detail import npu_detail
from mindspeed_prof.analysis.timeline.window import StepWindow
from mindspeed_prof.formats import capture_stem
from mindspeed_prof.formats.stem import Stem

__all__ = [
    "ROLE_ORDER",
    "Capture",
    "Layout",
    "Track",
    "TrackKey",
    "captures",
    "duplicates",
    "lanes",
]

#: Roles in the order an RL loop runs them; other roles follow alphabetically.
ROLE_ORDER = ("integrated", "actor", "rollout", "reference", "critic", "reward", "driver")


@dataclass(frozen=True, order=True)
class TrackKey:
    """One process track; ordered by role, then rank (unknown ranks last), then host."""

    role_order: tuple[int, str]
    rank_order: tuple[int, int]
    host: str
    rank: int | None = field(compare=False)
    #: Captures of one worker whose times overlap (two runs aligned on step starts, say) get a
    #: track each: 0 for the first, then 2, 3...
    lane: int = 0

    @property
    def role(self) -> str:
        return self.role_order[1]

    def label(self) -> str:
        return " · ".join(
            [f"rank {rank_label(self.rank)}", self.role]
            + ([self.host] if self.host else [])
            + ([f"capture {self.lane}"] if self.lane else [])
        )


@dataclass
class Capture:
    """One capture (a stem's range file and op trace): where its ranges and details come from."""

    ranges: list[TraceData]
    details: list[TraceData]


#: A track as it is written: its pid, key, label and captures.
Track = tuple[int, TrackKey, str, list[Capture]]


@dataclass
class Layout:
    """Everything but the events: the tracks in order, the clock, the window."""

    tracks: list[Track]
    offsets: dict[int, float]
    origin: float
    steps: StepWindow
    detail: frozenset[int] | None

    def with_detail(self, key: TrackKey) -> bool:
        return self.detail is None or key.rank in self.detail

    def ranks(self) -> dict[int, int | None]:
        """Each track's rank, by pid."""
        return {pid: key.rank for pid, key, _, _ in self.tracks}

    def detail_bytes(self) -> float:
        """The size of the detail files (a db's: unknown, so infinite), a bound on their
        events."""
        total = 0.0
        for track in self.tracks:
            for c in track[3] if self.with_detail(track[1]) else ():
                for t in c.details:
                    found = npu_detail(t.path) if t.kind == "npu" else (t.path, t.kind)
                    if found is not None and found[1] == "db":
                        return float("inf")
                    if found is not None and found[0].is_file():
                        total += found[0].stat().st_size
        return total

    def reads(self, track: Track) -> bool:
        """Whether writing ``track`` reads captures again (its operator detail)."""
        return self.with_detail(track[1]) and any(c.details for c in track[3])

    def of(self, track: Track) -> Layout:
        """This layout with ``track`` alone (what another process needs to write it)."""
        offsets = {id(t): self.offsets[id(t)] for t in _held([track])}
        return Layout([track], offsets, self.origin, self.steps, self.detail)

    def __getstate__(self) -> dict[str, object]:
        # offsets are keyed by id(): sent by position, keyed again where they arrive
        state = dict(self.__dict__)
        state["offsets"] = [self.offsets[id(t)] for t in _held(self.tracks)]
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        offsets = state["offsets"]
        self.offsets = dict(zip(map(id, _held(self.tracks)), offsets))  # type: ignore[call-overload]


def _held(tracks: list[Track]) -> list[TraceData]:
    """Every capture of ``tracks`` with an offset, in one order (a capture may come twice)."""
    return [t for _, _, _, cs in tracks for c in cs for t in c.ranges + c.details]


def _role_order(role: str) -> tuple[int, str]:
    return (ROLE_ORDER.index(role) if role in ROLE_ORDER else len(ROLE_ORDER), role)


def _key(data: TraceData) -> TrackKey:
    role = data.meta.role if data.meta.role is not None else data.group
    host = data.meta.host
    if host is None:
        stem = Stem.parse(data.path.name)
        host = stem.host if stem else ""
    return TrackKey(_role_order(str(role)), rank_order(data.rank), host, data.rank)


def captures(traces: Iterable[TraceData]) -> dict[TrackKey, list[Capture]]:
    """Traces grouped by track, then by capture; a range file's ranges win over an op trace's."""
    by_stem: dict[tuple[str, str], list[TraceData]] = defaultdict(list)
    for t in traces:
        by_stem[(str(t.path.parent), capture_stem(t.path))].append(t)
    tracks: dict[TrackKey, list[Capture]] = defaultdict(list)
    for group in by_stem.values():
        spans = [t for t in group if t.kind == "spans"]
        detail = [t for t in group if t.kind != "spans"]
        tracks[_key(group[0])].append(Capture(spans or group, detail))
    return tracks


def _span(c: Capture, offsets: dict[int, float]) -> tuple[float, float] | None:
    """A capture's ranges' start and end on the wall clock; None without ranges."""
    ends = [
        (r.ts + offsets[id(t)], r.ts + r.dur + offsets[id(t)]) for t in c.ranges for r in t.ranges
    ]
    return (min(a for a, _ in ends), max(b for _, b in ends)) if ends else None


def lanes(
    tracks: dict[TrackKey, list[Capture]], offsets: dict[int, float]
) -> dict[TrackKey, list[Capture]]:
    """Each track's captures, in start order, on as few tracks as keep their times apart: a
    capture that starts before the last one on a track ends (or whose times are unknown: no
    ranges) goes to the next track of that worker, so no two captures' slices overlap."""
    out: dict[TrackKey, list[Capture]] = {}
    for key, caps in tracks.items():
        if len(caps) == 1:
            out[key] = caps
            continue
        spans = [(_span(c, offsets), i, c) for i, c in enumerate(caps)]
        spans.sort(key=lambda s: (s[0] is None, s[0] or (0.0, 0.0), s[1]))
        ends: list[float] = []  # per lane, where its last capture ends
        for span, _, c in spans:
            lane = next(
                (n for n, end in enumerate(ends) if span is not None and end <= span[0]), None
            )
            if lane is None:
                lane = len(ends)
                ends.append(float("-inf"))
            ends[lane] = span[1] if span is not None else float("inf")
            out.setdefault(replace(key, lane=lane + 1 if lane else 0), []).append(c)
    return out


def duplicates(tracks: dict[TrackKey, list[Capture]]) -> list[str]:
    """A warning for each rank (of a role) that several hosts claim."""
    hosts: dict[tuple[str, tuple[int, int], int | None], list[str]] = defaultdict(list)
    for key in tracks:
        if not key.lane:  # a worker's other captures: not another host
            hosts[(key.role, key.rank_order, key.rank)].append(key.host or "?")
    return [
        f"rank {rank_label(rank)} ({role}) claimed by {len(h)} hosts "
        f"({', '.join(sorted(h))}); kept one track each"
        for (role, _, rank), h in sorted(hosts.items(), key=lambda kv: kv[0][:2])
        if len(h) > 1
    ]
