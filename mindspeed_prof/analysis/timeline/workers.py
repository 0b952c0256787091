"""A timeline's tracks written one at a time, those that read captures again in worker
processes: ``timeline --jobs``.

Reading a track's operator detail again (every event of its captures, once more to count
them for the budget) is the timeline's cost; each such track is written by a worker into a
file of its own beside the output, and the parent copies those files in, in track order,
writing the other tracks itself. Every track has a writer of its own, in one process or in
several, so the file is the same byte for byte whatever ``jobs`` is: its events, then ``,``
before the next track's. The budget's statistics are counted the same way, merged in track
order (the order ``plan`` breaks ties in).
"""

from __future__ import annotations

import os
from collections.abc import Generator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

from mindspeed_prof.analysis.timeline.budget import Plan, Stats, Tally
from mindspeed_prof.analysis.timeline.emit import emit
from mindspeed_prof.analysis.timeline.event import Out
from mindspeed_prof.analysis.timeline.tracks import Layout
from mindspeed_prof.analysis.timeline.writer import JsonWriter, Over
from mindspeed_prof.jsonio import open_regular

__all__ = ["POOL_MIN_BYTES", "Written", "count_tracks", "write_tracks"]

#: Below this many bytes of captures to read again, one process writes every track.
POOL_MIN_BYTES = 16 << 20
_COPY = 1 << 20  # bytes copied at a time from a worker's file


@dataclass
class Written:
    """What the tracks came to: JSON bytes, events (``slices`` of them ``X``), what the
    budget did; when counted for it, the detail's statistics."""

    bytes: int = 0
    count: int = 0
    slices: int = 0
    tally: Tally = field(default_factory=Tally)
    stats: Stats | None = None
    problems: list[str] = field(default_factory=list)  # captures whose detail was not read

    def add(self, other: Written) -> None:
        self.bytes += other.bytes
        self.count += other.count
        self.slices += other.slices
        self.tally.merged += other.tally.merged
        self.tally.slices += other.tally.slices
        self.tally.left_out += other.tally.left_out
        self.problems += other.problems
        if self.stats is not None and other.stats is not None:
            _merge(self.stats, other.stats)


def _merge(into: Stats, more: Stats) -> None:
    """``more`` (another track's: its keys are its own) added after ``into``'s."""
    into.cell_bytes.update(more.cell_bytes)
    into.thread_counts.update(more.thread_counts)
    into.longest.update(more.longest)
    into.step_us.update(more.step_us)
    into.operators += more.operators


class _Joined:
    """The output, with ``,`` before the first bytes of each track after the first that had
    any."""

    def __init__(self, f: Out) -> None:
        self._f = f
        self.fresh = True
        self.any = False
        self.commas = 0

    def write(self, data: bytes, /) -> object:
        if data and self.fresh:
            self.fresh = False
            if self.any:
                self._f.write(b",")
                self.commas += 1
            self.any = True
        return self._f.write(data)


def write_tracks(
    f: Out,
    layout: Layout,
    plan: Plan | None,
    jobs: int = 1,
    limit: int | None = None,
    scratch: Path | None = None,
) -> Written:
    """Every track's events into ``f`` as JSON array elements, in track order; ``Over`` past
    ``limit`` bytes. Tracks that read captures go to ``jobs`` processes where there are
    enough bytes to read, each into a file named ``scratch`` + ``.track<i>.tmp``."""
    out = _Joined(f)
    done = Written()
    tracks = _tracks(layout, plan, jobs, limit, scratch, out, counting=False)
    with closing(tracks):  # past the limit: the workers stopped now, not when collected
        for written, path in tracks:
            _copy(out, written, path, done)
            if limit is not None and done.bytes + out.commas > limit:
                raise Over
    done.bytes += out.commas
    return done


def _copy(out: _Joined, written: Written, path: Path | None, done: Written) -> None:
    """A worker's file copied into ``out`` (and removed); what it came to added to ``done``."""
    if path is not None:
        try:
            fd = open_regular(path)
            try:
                out.fresh = True
                while chunk := os.read(fd, _COPY):
                    out.write(chunk)
            finally:
                os.close(fd)
        finally:
            path.unlink(missing_ok=True)
    done.add(written)


def count_tracks(layout: Layout, jobs: int = 1, scratch: Path | None = None) -> Written:
    """The bytes of every track's events but their detail, and the detail's statistics."""
    done = Written(stats=Stats())
    tracks = 0
    for written, _ in _tracks(layout, None, jobs, None, scratch, None, counting=True):
        done.add(written)
        tracks += written.count > 0
    done.bytes += max(tracks - 1, 0)  # the commas between them
    return done


def _tracks(
    layout: Layout,
    plan: Plan | None,
    jobs: int,
    limit: int | None,
    scratch: Path | None,
    out: _Joined | None,
    counting: bool,
) -> Generator[tuple[Written, Path | None], None, None]:
    """Each track written (``out``; None: counted only), in order: what it came to, and the
    worker's file holding it (None: written to ``out`` here)."""
    reads = [i for i, t in enumerate(layout.tracks) if layout.reads(t)]
    if jobs <= 1 or len(reads) <= 1 or scratch is None or layout.detail_bytes() < POOL_MIN_BYTES:
        for track in layout.tracks:
            if out is not None:
                out.fresh = True
            yield _track(layout.of(track), plan, out, limit, counting), None
        return
    from mindspeed_prof.pool import next_result, workers

    names = {i: f"{scratch}.track{i}.tmp" for i in reads}
    jobs_args = [(layout.of(layout.tracks[i]), plan, names[i], limit, counting) for i in reads]
    try:
        with workers(min(jobs, len(reads))) as (pool, stop):
            results = pool.imap(_in_worker, jobs_args)
            at = set(reads)
            for i, track in enumerate(layout.tracks):
                if i in at:
                    written, name = next_result(results, stop)
                    yield written, None if name is None else Path(name)
                else:
                    if out is not None:
                        out.fresh = True
                    yield _track(layout.of(track), plan, out, limit, counting), None
    finally:
        for name in names.values():  # files of tracks not copied in (an error, Ctrl-C)
            Path(name).unlink(missing_ok=True)


def _track(
    one: Layout, plan: Plan | None, out: Out | None, limit: int | None, counting: bool
) -> Written:
    """The one track of ``one`` written to ``out`` (None: counted), or counted for the budget."""
    w = JsonWriter(out, limit)
    tally = Tally()
    stats = Stats() if counting else None
    problems = emit(w, one, plan, tally, stats)
    w.flush()
    return Written(w.bytes, w.count, w.slices, tally, stats, problems)


def _in_worker(
    job: tuple[Layout, Plan | None, str, int | None, bool],
) -> tuple[Written, str | None]:
    one, plan, name, limit, counting = job
    if counting:
        return _track(one, plan, None, limit, counting), None
    with open(name, "wb") as f:
        written = _track(one, plan, f, limit, counting)
    return written, name
