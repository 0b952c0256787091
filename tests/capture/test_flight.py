"""Flight recorder: the last N steps on every rank, dumped on error, signal or request."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from mindspeed_prof import Profiler, mstx
from mindspeed_prof.capture.buffer import RangeBuffer
from mindspeed_prof.capture.flight import FlightRecorder


def make(tmp_path: Path, **fields: Any) -> Profiler:
    cfg = {"profile_save_path": str(tmp_path), "flight_recorder_steps": 3, **fields}
    return Profiler.from_config(cfg, rank=1)


def events(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text())["traceEvents"]


def run(prof: Profiler, steps: range, fail_at: int | None = None) -> None:
    for step in steps:
        with prof.step(step), prof.stage("actor_update"), mstx.range("custom"):
            if step == fail_at:
                raise RuntimeError("boom")


def test_ring_keeps_last_steps_and_extends_the_current_one() -> None:
    ring = FlightRecorder(2, RangeBuffer())
    for step in (1, 2, 2, 3):
        ring.add(step, [(0, 1, step, step + 1)])
    ring.add(4, [])
    assert ring.held_steps() == [2, 3]
    with pytest.raises(ValueError, match="flight_recorder_steps"):
        FlightRecorder(0, RangeBuffer())


def test_request_dumps_last_steps_with_profiling_off(tmp_path: Path) -> None:
    prof = make(tmp_path)
    assert not prof.enabled
    run(prof, range(1, 11))
    path = prof.dump_flight()
    prof.close()
    assert path is not None and path.parent == tmp_path / "flight"
    evs = events(path)
    steps = {e["name"] for e in evs if e["cat"] == "step"}
    assert steps == {"ProfilerStep#8", "ProfilerStep#9", "ProfilerStep#10"}
    assert {e["args"]["step"] for e in evs} == {8, 9, 10}
    assert [e["name"] for e in evs].count("custom") == 3
    assert [e["name"] for e in evs].count("actor_update") == 3
    meta = json.loads(path.read_text())["mindspeed_prof"]
    assert meta["reason"] == "request" and meta["rank"] == 1 and meta["steps"] == [8, 9, 10]
    (record,) = prof.captures
    assert record.trigger == "flight" and record.reason == "request"
    assert record.files == [str(path)]
    assert mstx.active_sink() is None  # close removed the buffer


def test_failing_step_dumps_once_and_analyse_reads_it(tmp_path: Path) -> None:
    from mindspeed_prof.analysis.analyse import analyse

    prof = make(tmp_path)
    with pytest.raises(RuntimeError, match="boom"):
        run(prof, range(1, 6), fail_at=4)
    prof.close()
    (dump,) = (tmp_path / "flight").iterdir()
    assert [c.reason for c in prof.captures] == ["error"]
    assert "ProfilerStep#4" in {e["name"] for e in events(dump)}
    result = analyse(tmp_path)
    assert result.traces and not result.bad
    assert {r.step for r in result.traces[0].ranges if r.kind == "step"} == {2, 3, 4}


def test_stage_error_caught_inside_the_step_dumps(tmp_path: Path) -> None:
    prof = make(tmp_path)
    with prof.step(1):
        try:
            with prof.stage("actor_generate"):
                raise ValueError("bad batch")
        except ValueError:
            pass
    with prof.step(2):
        pass
    prof.close()
    assert [(c.reason, c.step) for c in prof.captures] == [("error", 1)]


def test_flight_off_records_nothing(tmp_path: Path) -> None:
    prof = make(tmp_path, flight_recorder_steps=0)
    run(prof, range(1, 3))
    assert prof.dump_flight() is None and mstx.active_sink() is None
    assert not tmp_path.exists() or list(tmp_path.iterdir()) == []


def test_flight_and_capture_share_one_buffer(tmp_path: Path) -> None:
    prof = make(
        tmp_path,
        profile=True,
        mstx=True,
        profile_level="level_none",
        profile_step_start=2,
        profile_step_end=3,
    )
    run(prof, range(1, 5))
    prof.dump_flight("request")
    prof.close()
    (capture,) = (tmp_path / "integrated").iterdir()
    assert [e["name"] for e in events(capture)].count("custom") == 1
    (dump,) = (tmp_path / "flight").iterdir()
    assert [e["name"] for e in events(dump)].count("custom") == 3


SCRIPT = textwrap.dedent("""
    import sys, time
    from mindspeed_prof import Profiler, mstx
    prof = Profiler.from_config({"flight_recorder_steps": 2,
                                 "profile_save_path": sys.argv[1]}, rank=0)
    for step in range(1, 1000):
        with prof.step(step):
            with mstx.range("work"):
                time.sleep(0.01)
        if step == 3:
            print("READY", flush=True)
""")


def test_sigterm_dumps_the_flight_recorder(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path / "out")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "READY"
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGTERM
    (dump,) = (tmp_path / "out" / "flight").iterdir()
    data = json.loads(dump.read_text())
    assert data["mindspeed_prof"]["reason"] == "signal"
    assert len({e["args"]["step"] for e in data["traceEvents"]}) == 2


def test_a_step_added_in_two_parts_is_one_entry_of_the_ring() -> None:
    ring = FlightRecorder(3, RangeBuffer())
    for step in (7, 8, 9, 9, 10):
        ring.add(step, [(0, 1, step, step + 1)])
    assert ring.held_steps() == [8, 9, 10]


def test_a_range_between_steps_does_not_push_a_step_out_of_the_dump(tmp_path: Path) -> None:
    prof = make(tmp_path)
    for step in range(1, 11):
        with prof.step(step), mstx.range("inside"):
            pass
        with mstx.range("between"):  # counts with the step before it
            pass
    path = prof.dump_flight()
    prof.close()
    assert path is not None
    meta = json.loads(path.read_text())["mindspeed_prof"]
    assert meta["steps"] == [8, 9, 10]
    evs = events(path)
    assert [e["name"] for e in evs].count("inside") == 3
    assert [e["name"] for e in evs].count("between") == 3


def test_a_signal_dumps_the_ring_as_a_signal_dump_in_this_process(tmp_path: Path) -> None:
    """``on_signal`` (what the crash handler calls first) writes the ring with reason
    ``signal``: the in-process twin of the SIGTERM test above."""
    prof = make(tmp_path)
    run(prof, range(1, 3))
    prof.on_signal(signal.SIGTERM)
    prof.close()
    (record,) = prof.captures
    assert (record.reason, record.trigger, record.steps) == ("signal", "flight", [1, 2])
    (dump,) = (tmp_path / "flight").iterdir()
    assert json.loads(dump.read_text())["mindspeed_prof"]["reason"] == "signal"


def test_a_one_step_ring_keeps_the_last_step() -> None:
    ring = FlightRecorder(1, RangeBuffer())
    for step in (1, 2):
        ring.add(step, [(0, 1, step, step + 1)])
    assert ring.held_steps() == [2]


def test_a_stage_failing_outside_any_step_dumps_at_once(tmp_path: Path) -> None:
    prof = make(tmp_path)
    run(prof, range(1, 3))
    with pytest.raises(ValueError), prof.stage("actor_update"):
        raise ValueError("bad batch")
    assert [(c.reason, c.steps) for c in prof.captures] == [("error", [1, 2])]
    prof.close()


def test_a_dump_is_recorded_as_a_whole_steps_flight_capture_of_its_first_step(
    tmp_path: Path,
) -> None:
    prof = Profiler.from_config(
        {"profile_save_path": str(tmp_path), "profile_level": "level1", "flight_recorder_steps": 3},
        rank=1,
        role="actor",
    )
    run(prof, range(1, 11))
    path = prof.dump_flight("request", at=9)
    prof.close()
    (record,) = prof.captures
    assert (record.stage, record.step, record.index, record.rank, record.role) == (
        "all",
        8,
        0,
        1,
        "actor",
    )
    assert (record.backend, record.trigger, record.recorded, record.steps, record.trigger_step) == (
        "flight",
        "flight",
        ["ranges"],
        [8, 9, 10],
        9,
    )
    assert path is not None
    meta = json.loads(path.read_text())["mindspeed_prof"]
    assert (meta["stage"], meta["step"], meta["steps"], meta["trigger_step"], meta["level"]) == (
        "flight",
        8,
        [8, 9, 10],
        9,
        "level1",
    )


def test_an_empty_ring_is_dumped_under_the_current_step_or_0(tmp_path: Path) -> None:
    """Nothing recorded yet: the dump is step 0's before any step, else the open step's."""
    prof = make(tmp_path)
    prof.dump_flight()
    prof.on_step_start(5)  # its range is still open: the ring holds nothing
    prof.dump_flight()
    prof.close()
    assert [(c.step, c.steps) for c in prof.captures] == [(0, []), (5, [])]


def test_a_dump_is_named_after_its_first_step_and_timed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from types import SimpleNamespace

    from mindspeed_prof.capture import flight as flight_module

    prof = make(tmp_path)
    run(prof, range(1, 11))
    clock = iter([100.0, 100.1234567])
    monkeypatch.setattr(flight_module, "time", SimpleNamespace(time=lambda: next(clock)))
    path = prof.dump_flight()
    prof.close()
    assert path is not None and path.name.startswith("rank1_")
    assert path.name.endswith("_step8.mstx.trace.json")
    (record,) = prof.captures
    assert record.seconds == 0.123457


def test_a_dump_that_cannot_be_written_is_a_warning_and_no_path(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    prof = make(blocker)
    run(prof, range(1, 3))
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        assert prof.dump_flight("request") is None
    prof.close()
    (message,) = [r.getMessage() for r in caplog.records if "flight" in r.getMessage()]
    assert message.startswith("mindspeed-prof: flight recorder dump (request) failed: [Errno ")
    assert str(blocker) in message and prof.captures == []


def test_a_signal_dumps_once_though_the_trainers_handler_exits_through_the_step(
    tmp_path: Path,
) -> None:
    """On a signal the ring is dumped ("signal"); the trainer's handler then leaves the open
    stage and step by an exception: that failure is in the dump already, so no "error" dump
    follows. A failure in a later step dumps again."""
    prof = make(tmp_path)
    run(prof, range(1, 3))
    with pytest.raises(SystemExit), prof.step(3), prof.stage("actor_update"):
        prof.on_signal(signal.SIGTERM)  # what the crash handler does first
        raise SystemExit(0)  # the trainer's handler, after its checkpoint
    with pytest.raises(RuntimeError):
        run(prof, range(4, 6), fail_at=5)
    prof.close()
    dumps = {
        json.loads(p.read_text())["mindspeed_prof"]["reason"]: p
        for p in (tmp_path / "flight").iterdir()
    }
    assert sorted(dumps) == ["error", "signal"] and len(list((tmp_path / "flight").iterdir())) == 2
    assert {e["args"]["step"] for e in events(dumps["signal"])} == {1, 2}  # 3 still open
    assert {e["args"]["step"] for e in events(dumps["error"])} == {3, 4, 5}


def test_a_signal_between_steps_does_not_hide_the_next_failure(tmp_path: Path) -> None:
    """A signal with no range open (between steps; a trainer that takes SIGINT and goes on):
    nothing can leave a range by it, so the next step's failure is dumped ("error"); a signal
    inside a stage outside any step hides only that stage's failure."""
    prof = make(tmp_path)
    run(prof, range(1, 3))
    prof.on_signal(signal.SIGINT)
    with pytest.raises(RuntimeError):
        run(prof, range(3, 5), fail_at=4)
    with pytest.raises(KeyboardInterrupt), prof.stage("actor_update"):
        prof.on_signal(signal.SIGINT)
        raise KeyboardInterrupt
    with pytest.raises(RuntimeError):
        run(prof, range(5, 7), fail_at=6)
    prof.close()
    reasons = sorted(
        json.loads(p.read_text())["mindspeed_prof"]["reason"]
        for p in (tmp_path / "flight").iterdir()
    )
    assert reasons == ["error", "error", "signal", "signal"]
