"""``Capturer``: one capture at a time: where it goes, its backend, its ranges and its record.

The profiler decides when (its ``Scheduler``) and with which config (its parts); this module
turns a start into files under the save root and a stop into a ``CaptureRecord``:

- ``<save>/<role>/`` for whole steps (``stage: all``), ``<save>/<stage>/`` per stage execution
  (``<save>/<role>/<stage>/`` for a role other than ``integrated``); unplanned captures the
  same under ``<save>/triggered/``;
- stems ``rank<r>_<host>_<pid>_<token>_step<s>[_<index>]``, claimed with ``O_EXCL`` at the
  start (``naming.claim_stem``), the claim released once the files are written: never one
  another process or job took.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path

from mindspeed_prof.capture.backends import Backend, CaptureTarget, select_backend
from mindspeed_prof.capture.naming import inside, release_stem, safe_name
from mindspeed_prof.capture.part import Host, Starting
from mindspeed_prof.capture.plan import ALL
from mindspeed_prof.capture.ranges import RangeTap
from mindspeed_prof.capture.record import CaptureRecord
from mindspeed_prof.capture.spans import SpanRecorder
from mindspeed_prof.formats.header import header_json

__all__ = ["Capturer"]


class Capturer:
    """Starts and stops the backend of the one active capture.

    ``backend`` records captures made with the profiler's own config (chosen on first use when
    None); a capture whose config differs (an on-demand request, a lowered level) gets a
    backend of its own.
    """

    def __init__(self, host: Host, tap: RangeTap, backend: Backend | None = None) -> None:
        self.host = host
        self._tap = tap
        self._backend = backend
        self.active: Backend | None = None
        self.record: CaptureRecord | None = None
        self._spans: SpanRecorder | None = None
        self._target: CaptureTarget | None = None
        self._started = 0.0
        #: At a step end: the range file written out (at most ten times a second); the range
        #: file's own method while one is written (a step end calls it with no frame between).
        self.flush_due: Callable[[], None] = _nothing

    def start(self, starting: Starting) -> None:
        """Start the backend for ``starting``; raises what the backend raised (the backend,
        if any, stays ``active`` so that ``abort`` stops whatever it started)."""
        host, capture, cfg = self.host, starting.capture, starting.cfg
        directory = [host.role] if capture.stage == ALL or host.role != "integrated" else []
        if capture.stage != ALL:
            directory.append(safe_name(capture.stage, "stage"))
        metadata = host.metadata(capture.stage, capture.step)
        if capture.trigger:
            directory.insert(0, "triggered")
            metadata.trigger = capture.trigger
        metadata.level = cfg.profile_level.value
        header_json(metadata)  # a header that cannot be written fails here, before any file
        folder = inside(host.save_root, *directory)
        target = CaptureTarget(
            folder,
            host.new_stem(folder, capture.step, capture.index),
            host.rank,
            host.role,
            capture,
            metadata,
        )
        self._target = target
        backend = self._backend_for(starting)
        self.active = backend
        backend.start(target)
        self._started = time.time()
        self.record = CaptureRecord(
            stage=capture.stage,
            step=capture.step,
            index=capture.index,
            rank=host.rank,
            role=host.role,
            backend=backend.name,
            level=cfg.profile_level.value,
            trigger=capture.trigger,
            request=starting.request,
            recorded=backend.records(),
        )
        spans = backend.spans
        if spans is not None:  # the range file is fed from the profiler's range buffer
            self._tap.drain(host.step_now)
            spans.buffer = self._tap.listen(spans.add)
            spans.step = host.step_now
            self._spans, self.flush_due = spans, spans.flush_due
        self._tap.attach([s for s in backend.sinks() if s is not spans])

    def _backend_for(self, starting: Starting) -> Backend:
        if starting.cfg is not self.host.cfg:
            return select_backend(starting.cfg)  # this capture only
        if self._backend is None:
            self._backend = select_backend(self.host.cfg)
        return self._backend

    def flush(self) -> None:
        """The range file written out now (on a signal)."""
        if self._spans is not None:
            self._spans.flush()

    def stop(self, reason: str) -> tuple[CaptureRecord | None, str]:
        """End the active capture: its record (None when none ran) and "" or what failed."""
        record, backend = self.record, self.active
        warmup = self._target is not None and self._target.capture.warmup
        self._end()
        if record is None or backend is None:
            return None, ""
        record.reason = reason
        record.warmup_steps = [s for s in record.steps if self.host.plan.is_warmup(s)]
        flushing = time.perf_counter()
        try:
            files = backend.stop()
        except Exception as err:
            return record, f"{type(err).__name__}: {err}"
        finally:
            self._release()
        record.flush_seconds = round(time.perf_counter() - flushing, 6)
        if warmup:  # a schedule's warmup (torch.profiler.schedule's): its data discarded
            _discard(files)
            return None, ""
        record.files = [str(f) for f in files]
        record.seconds = round(time.time() - self._started, 6)
        return record, ""

    def abort(self) -> None:
        """Profiling failed: the active backend stopped, whatever it wrote left as it is."""
        backend = self.active
        self._end()
        if backend is not None:
            try:
                backend.stop()
            except Exception:
                pass
        self._release()

    def _release(self) -> None:
        """The capture's files are written (or never will be): its stem's claim goes."""
        target, self._target = self._target, None
        if target is not None:
            release_stem(target.directory, target.stem)

    def disown(self) -> None:
        """In a forked child: the capture forgotten, its backend never stopped (the parent's)."""
        self.record, self.active, self._spans, self._backend = None, None, None, None
        self.flush_due = _nothing

    def _end(self) -> None:
        spans, self._spans, self.flush_due = self._spans, None, _nothing
        self.record, self.active = None, None
        self._tap.detach()
        self._tap.drain(self.host.step_now)
        if spans is not None:
            self._tap.unlisten(spans.add)


def _nothing() -> None:
    pass


def _discard(paths: list[Path]) -> None:
    """A warmup's files and folders, removed (what cannot be is left)."""
    for path in paths:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
