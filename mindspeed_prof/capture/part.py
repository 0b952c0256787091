"""``Part``: one job of the profiler (flight recorder, anomaly trigger, on-demand requests, disk
budget), told about trainer events by ``Profiler`` through one protocol, Composer-style.

A part asks things of its profiler through ``Host``: queue an unplanned capture, dump the
flight recorder, warn once. Every hook has a no-op default, so a part implements only what it
needs; ``live`` says whether it needs the step and stage hooks at all (a profiler whose plan and
parts need none of them costs a ``nullcontext`` per hook).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from mindspeed_prof.config.schema import IntegratedConfig
from mindspeed_prof.formats.anomaly import Anomaly
from mindspeed_prof.formats.header import CaptureHeader

if TYPE_CHECKING:
    from mindspeed_prof.capture.plan import Capture, CapturePlan, Trigger
    from mindspeed_prof.capture.record import CaptureRecord

__all__ = ["Host", "Part", "Starting", "stage_hooked"]


@dataclass
class Starting:
    """A capture about to start: parts may change the config it records with (an on-demand
    request's level, the disk budget's lower level), end a whole-steps window's capture after
    ``steps`` steps (the window goes on in a capture of its own), or skip it (``skip``: why)."""

    capture: Capture
    trigger: Trigger | None
    cfg: IntegratedConfig
    skip: str = ""
    steps: int = 0

    @property
    def request(self) -> str:
        """The on-demand request this capture answers ("" when none)."""
        return self.trigger.ident if self.trigger is not None else ""


class Host(Protocol):
    """What a part may use of its profiler."""

    cfg: IntegratedConfig
    rank: int
    role: str
    save_root: Path
    plan: CapturePlan
    failed: bool
    captures: list[CaptureRecord]
    triggers: list[Anomaly]

    @property
    def step_now(self) -> int | None: ...

    @property
    def run(self) -> tuple[str, str]: ...

    @property
    def capturing(self) -> bool: ...

    @property
    def step_open(self) -> bool: ...

    @property
    def busy(self) -> bool: ...

    def metadata(self, stage: str, step: int) -> CaptureHeader: ...

    def new_stem(self, folder: Path, step: int, index: int) -> str: ...

    def refresh_rank(self) -> int: ...

    def request(self, trigger: Trigger) -> None: ...

    def dump_flight(self, reason: str, at: int | None = None) -> Path | None: ...

    def wake(self) -> None: ...

    def warn_once(self, key: str, message: str) -> None: ...

    def count(self, name: str, value: float | list[float]) -> None: ...

    def flush_ranges(self) -> None: ...


class Part:
    """The hooks a ``Profiler`` calls on each of its parts, in order."""

    #: Whether the step and stage hooks must run for this part.
    live: bool = True

    def on_step_start(self, step: int) -> None:
        """A step begins (before a planned capture of it starts)."""

    def on_step_end(self, step: int, took_ns: int | None, failed: bool) -> None:
        """A step ended; ``took_ns`` its length (None when its range was not open)."""

    def on_stage_start(self, stage: str, step: int | None) -> None:
        """A stage began (its range is open on the calling thread)."""

    def before_stage_end(self, stage: str, step: int | None, failed: bool) -> None:
        """A stage is ending: its range still open on the calling thread (a count made now is
        the stage's); ``failed``: an exception leaves it (``sys.exc_info()`` holds it)."""

    def on_stage_end(self, stage: str, step: int | None, took_ns: int | None, failed: bool) -> None:
        """A stage ended; ``took_ns`` as for a step."""

    def on_count(
        self, name: str, value: float | list[float], step: int | None, stage: str | None
    ) -> None:
        """A checked count (``Profiler.count``; a list: a distribution), in ``step`` (None
        outside a step) and the calling thread's innermost ``stage`` (None outside one);
        called whether or not anything records, from any thread."""

    def before_capture(self, starting: Starting) -> None:
        """A capture is about to start: change ``starting.cfg`` or set ``starting.skip``."""

    def on_capture(self, record: CaptureRecord, error: str) -> None:
        """A capture ended (``error`` "" when it was written) or did not start (``error``
        why, ``record.files`` empty)."""

    def on_signal(self, signum: int) -> None:
        """SIGTERM or SIGINT, before the profiler closes."""

    def on_close(self) -> None:
        """The profiler closed: no more events."""


def stage_hooked(part: Part) -> bool:
    """Whether ``part`` has a stage-start or a before-stage-end hook of its own."""
    kind = type(part)
    return part.live and (
        kind.on_stage_start is not Part.on_stage_start
        or kind.before_stage_end is not Part.before_stage_end
    )
