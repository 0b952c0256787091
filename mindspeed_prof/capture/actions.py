"""The profiler's capture actions: the scheduler's starts and stops run by the capturer, the
parts and ``on_capture`` callbacks told, a failure turned into profiling off (or a raise with
``strict: true``). Mixed into ``Profiler``, whose state they use."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING

from mindspeed_prof.capture.part import Starting
from mindspeed_prof.capture.plan import Action, Start, Stop
from mindspeed_prof.capture.record import CaptureRecord
from mindspeed_prof.capture.scopes import trainer_stacklevel
from mindspeed_prof.config.schema import field_key

if TYPE_CHECKING:
    from mindspeed_prof.capture.capturer import Capturer
    from mindspeed_prof.capture.part import Part
    from mindspeed_prof.capture.plan import Scheduler
    from mindspeed_prof.capture.ranges import RangeTap
    from mindspeed_prof.config.schema import IntegratedConfig

__all__ = ["CaptureActions", "OnCapture", "ProfilerError"]

log = logging.getLogger("mindspeed_prof")

#: Called with each capture's record once its files are written.
OnCapture = Callable[[CaptureRecord], None]


class ProfilerError(RuntimeError):
    """A capture failed and ``strict: true`` asked to stop training."""


class CaptureActions:
    """``_apply`` the scheduler's actions, and ``_fail``, for ``Profiler``."""

    if TYPE_CHECKING:  # the profiler's, which these use
        cfg: IntegratedConfig
        rank: int
        role: str
        failed: bool
        captures: list[CaptureRecord]
        on_capture: list[OnCapture]
        parts: list[Part]
        _sched: Scheduler
        _tap: RangeTap
        _capturer: Capturer

        @property
        def owned(self) -> bool: ...

        def disown(self) -> None: ...

    def _apply(self, actions: list[Action]) -> None:
        if actions and not self.owned:  # a child forked where no fork hook ran (see crash)
            self.disown()
            return
        for action in actions:
            if isinstance(action, Stop):
                self._stop(action)
            elif isinstance(action, Start):
                self._start(action)

    def _start(self, action: Start) -> None:
        if self.failed:
            return
        capture = action.capture
        starting = Starting(capture, self._sched.trigger if capture.trigger else None, self.cfg)
        for part in self.parts:
            part.before_capture(starting)
        if starting.skip:
            self._tell(self._unstarted(starting), starting.skip)
            return
        try:
            self._capturer.start(starting)
            if starting.steps:  # the rest of the window in a capture of its own
                self._sched.cut = capture.step + starting.steps - 1
        except Exception as err:
            self._tell(self._unstarted(starting), f"{type(err).__name__}: {err}")  # never ""
            self._fail("start", err)

    def _stop(self, action: Stop) -> None:
        record, error = self._capturer.stop(action.reason)
        if record is None:
            return
        self.captures.append(record)
        self._tell(record, error)
        if error:
            self._fail("stop", RuntimeError(error))
            return
        for callback in self.on_capture:
            try:
                callback(record)
            except Exception as err:
                log.warning("mindspeed-prof: after capture %s: %s", record.files, err)

    def _unstarted(self, starting: Starting) -> CaptureRecord:
        capture = starting.capture
        return CaptureRecord(
            stage=capture.stage,
            step=capture.step,
            index=capture.index,
            rank=self.rank,
            role=self.role,
            backend="none",
            trigger=capture.trigger,
            request=starting.request,
        )

    def _tell(self, record: CaptureRecord, error: str) -> None:
        for part in self.parts:
            part.on_capture(record, error)

    def _fail(self, what: str, err: Exception) -> None:
        if self.cfg.strict:
            raise ProfilerError(f"mindspeed-prof: capture {what} failed: {err}") from err
        if not self.failed:
            message = (
                f"mindspeed-prof: capture {what} failed ({type(err).__name__}: {err}); "
                "profiling is off for the rest of this run, training goes on "
                f"(set {field_key('strict', self.role)}=true to stop instead)"
            )
            log.warning(message)
            warnings.warn(message, RuntimeWarning, stacklevel=trainer_stacklevel())
        self.failed = True
        self._capturer.abort()
        self._tap.stop()
