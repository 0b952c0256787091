"""``EnginePart``: a rollout engine's own profiler started and stopped with each capture.

``prof.attach_engine(llm)`` adds one. Each capture (the iteration window's iterations, or the
stage, or the step when no window is set) starts the engine's profiler just before our own and
stops it once ours is written; the engine's traces go to
``<save>/<role>/engine/rank<r>_step<s>_<stage>[_<index>]_<pid>_<token>/``, get our
``mindspeed_prof`` block (run, rank, step, stage, engine; ``engines.stamp``) and are listed in
the capture's manifest entry (``files``, ``engine``). A fault in the engine's calls is logged
once and leaves training, and our own capture, as they are (also with ``strict``).
"""

from __future__ import annotations

import os
from pathlib import Path

from mindspeed_prof.capture.engines import EngineDriver, stamp
from mindspeed_prof.capture.naming import inside, process_token, safe_name
from mindspeed_prof.capture.part import Host, Part, Starting
from mindspeed_prof.capture.plan import Capture
from mindspeed_prof.capture.record import CaptureRecord

__all__ = ["EnginePart"]


class EnginePart(Part):
    live = False

    def __init__(self, host: Host, driver: EngineDriver) -> None:
        self.host, self.driver = host, driver
        self.running: tuple[Capture, Path] | None = None
        #: Every engine trace kept, in capture order.
        self.files: list[Path] = []
        #: Captures whose traces were not there at the engine's stop: looked for again at the
        #: next capture's end and at close (vLLM may flush after ``stop_profile`` returns).
        self.late: list[tuple[CaptureRecord, Path]] = []

    def before_capture(self, starting: Starting) -> None:
        if starting.skip or self.running is not None:
            return
        capture, host = starting.capture, self.host
        name = (
            f"rank{host.rank}_step{capture.step}_{safe_name(capture.stage, 'stage')}"
            f"{f'_{capture.index}' if capture.index else ''}_{os.getpid()}_"
            f"{process_token()}"
        )
        try:
            folder = inside(host.save_root, host.role, "engine", name)
            self.driver.start(folder)
        except Exception as err:
            self._warn("start", err)
            return
        self.running = (capture, folder)

    def on_capture(self, record: CaptureRecord, error: str) -> None:
        running = self.running
        if running is None:
            return
        capture = running[0]
        if (record.stage, record.step, record.index) != (
            capture.stage,
            capture.step,
            capture.index,
        ):
            return
        self.running = None
        self._stop()
        earlier, self.late = self.late, []
        for record_late, folder in earlier:
            if not self._collect(record_late, folder):
                self.late.append((record_late, folder))
        if not self._collect(record, running[1]):
            self.late.append((record, running[1]))  # an engine that writes after its stop

    def on_close(self) -> None:
        if self.running is not None:  # a capture that never ended: the engine stops anyway
            self.running = None
            self._stop()
        for record, folder in self.late:  # last look, before the manifest is written
            self._collect(record, folder)
        self.late = []

    def _collect(self, record: CaptureRecord, folder: Path) -> bool:
        """The capture's engine traces stamped and listed in its record; whether any came."""
        try:
            files = [f for f in self.driver.collect(folder) if str(f) not in record.files]
            block = self.host.metadata(record.stage, record.step)
            block.engine = self.driver.kind
            if record.iterations:
                block.iterations = list(record.iterations)
            for path in files:
                stamp(path, block)
        except Exception as err:
            self._warn("collect", err)
            return True  # not looked for again
        self.files.extend(files)
        record.files.extend(str(f) for f in files)
        record.engine = self.driver.kind
        return bool(files)

    def _stop(self) -> None:
        try:
            self.driver.stop()
        except Exception as err:
            self._warn("stop", err)

    def _warn(self, what: str, err: Exception) -> None:
        self.host.warn_once(
            f"engine-{what}",
            f"mindspeed-prof: the {self.driver.kind} engine's "
            f"profiler {what} failed ({type(err).__name__}: {err}); training "
            "and mindspeed-prof's own captures go on",
        )
