"""A profiling fault that repeats on every step is warned about once; training goes on."""

from __future__ import annotations

import logging
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from mindspeed_prof import Profiler
from mindspeed_prof.capture.backends import CaptureTarget
from mindspeed_prof.capture.backends.base import Backend
from mindspeed_prof.config.validate import validate


class _FullDiskSpans:
    """A span recorder whose every flush fails, as on a full disk."""

    step: int | None = None
    flushes = 0

    def range(self, name: str, cat: str = "user_annotation") -> Any:
        import contextlib

        return contextlib.nullcontext()

    def mark(self, name: str) -> None:
        pass

    def add(self, step: int | None, events: list[Any]) -> None:
        pass

    def flush_due(self) -> None:
        self.flush()

    def flush(self) -> None:
        self.flushes += 1
        raise OSError(28, "No space left on device")


class _FullDiskBackend(Backend):
    name = "full_disk"

    def start(self, target: CaptureTarget) -> None:
        self.spans = _FullDiskSpans()  # type: ignore[assignment]

    def stop(self) -> list[Path]:
        return []  # the failing spans object stays: every later flush fails again


def test_repeating_fault_warns_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cfg = validate(
        {
            "integrated": {
                "profile": True,
                "mstx": True,
                "profile_step_end": 100,
                "profile_save_path": str(tmp_path),
            }
        }
    )
    backend = _FullDiskBackend(cfg)
    prof = Profiler(cfg, rank=0, backend=backend)
    trained = []
    with (
        caplog.at_level(logging.WARNING, "mindspeed_prof"),
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always")
        for step in range(1, 6):
            with prof.step(step), prof.stage("actor_update"):
                trained.append(step)
        prof.close()
    assert trained == [1, 2, 3, 4, 5] and prof.failed
    # The fault happened; after it the profiler never touches the failed recorder again.
    assert isinstance(backend.spans, _FullDiskSpans) and backend.spans.flushes == 1
    ours = [w for w in caught if "mindspeed-prof" in str(w.message)]
    assert len(ours) == 1 and "flush failed" in str(ours[0].message)
    assert issubclass(ours[0].category, RuntimeWarning)
    assert len([r for r in caplog.records if "flush failed" in r.getMessage()]) == 1


def test_fault_warning_names_the_error_and_the_roles_strict_field(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The warning (and the log line) says what failed, the error's type and text, that only
    profiling stops, and where ``strict`` is set for this role."""
    cfg = validate(
        {
            "integrated": {
                "profile": True,
                "mstx": True,
                "profile_step_end": 100,
                "profile_save_path": str(tmp_path),
            }
        },
        "actor",
    )
    prof = Profiler(cfg, rank=0, role="actor", backend=_FullDiskBackend(cfg))
    with (
        caplog.at_level(logging.WARNING, "mindspeed_prof"),
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always")
        with prof.step(1):
            pass
        prof.close()
    expected = (
        "mindspeed-prof: capture flush failed (OSError: [Errno 28] No space left on "
        "device); profiling is off for the rest of this run, training goes on "
        "(set profiler_config.actor.strict=true to stop instead)"
    )
    assert [str(w.message) for w in caught] == [expected]
    assert [r.getMessage() for r in caplog.records if "flush failed" in r.getMessage()] == [
        expected
    ]


class _StopFailsBackend(Backend):
    """Starts; its stop fails (the trace could not be written)."""

    name = "stop_fails"

    def start(self, target: CaptureTarget) -> None:
        pass

    def stop(self) -> list[Path]:
        raise OSError("disk gone")


class _BrokenRange:
    def range(self, name: str, cat: str = "user_annotation") -> Any:
        raise RuntimeError("no ranges here")

    def mark(self, name: str) -> None:
        pass


class _BrokenSinkBackend(Backend):
    """A backend whose own range sink fails on every range (the step's, a stage's)."""

    name = "broken_sink"

    def start(self, target: CaptureTarget) -> None:
        pass

    def stop(self) -> list[Path]:
        return []

    def sinks(self) -> list[Any]:
        return [_BrokenRange()]


@pytest.mark.parametrize(
    "backend_type,what,error",
    [
        (_StopFailsBackend, "stop", "RuntimeError: OSError: disk gone"),
        (_BrokenSinkBackend, "range", "RuntimeError: no ranges here"),
    ],
)
def test_a_failing_stop_or_range_sink_is_one_warning_naming_it(
    tmp_path: Path, backend_type: type[Backend], what: str, error: str
) -> None:
    """``from_config`` hands the backend given to the profiler; its failure is warned about
    under its name, with the error."""
    cfg = {
        "integrated": {"profile": True, "stage": "actor_update", "profile_save_path": str(tmp_path)}
    }
    backend = backend_type(validate(cfg))
    prof = Profiler.from_config(cfg, rank=0, backend=backend)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in (1, 2):
            with prof.step(step), prof.stage("actor_update"):
                pass
        prof.close()
    assert [str(w.message) for w in caught] == [
        f"mindspeed-prof: capture {what} failed ({error}); profiling is off for the rest of "
        "this run, training goes on (set profiler_config.extensions.strict=true to stop "
        "instead)"
    ]
    assert prof.failed


@pytest.mark.parametrize("where", ["step", "stage"])
def test_the_fault_warning_points_at_the_trainers_line(tmp_path: Path, where: str) -> None:
    """Python prints a warning with the line that caused it: the trainer's ``with`` line, not
    a line inside mindspeed-prof, however deep the fault was found."""
    cfg = validate(
        {
            "integrated": {
                "profile": True,
                "mstx": True,
                "profile_step_end": 100,
                "profile_save_path": str(tmp_path),
            }
        }
    )
    backend = _BrokenSinkBackend(cfg) if where == "stage" else _FullDiskBackend(cfg)
    prof = Profiler(cfg, rank=0, backend=backend)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        with prof.step(1), prof.stage("actor_update"):
            pass
        prof.close()
    (warning,) = [w for w in caught if "mindspeed-prof" in str(w.message)]
    assert (warning.filename, warning.lineno) == (__file__, line)
