"""Signals: SIGTERM and SIGINT flush the capture and keep their effect; SIGKILL loses one step."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from mindspeed_prof.capture import crash

SCRIPT = textwrap.dedent("""
    import signal, sys, time, torch
    # As an interactive run has them, even when pytest was started with SIGINT ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    from mindspeed_prof import Profiler, mstx
    prof = Profiler.from_config({"integrated": {"profile": True, "mstx": True,
        "profile_level": sys.argv[2], "profile_step_start": 1, "profile_step_end": 1000,
        "profile_save_path": sys.argv[1]}}, rank=0)
    for step in range(1, 1000):
        with prof.step(step):
            with prof.stage("actor_generate"):
                torch.randn(8, 8) @ torch.randn(8, 8)
        if step == 3:
            print("READY", flush=True)
        time.sleep(0.02)
""")


def start(tmp_path: Path, level: str) -> subprocess.Popen[str]:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path / "out"), level],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.strip() == "READY", proc.stderr.read() if proc.stderr else line
    time.sleep(0.1)
    return proc


def steps_in(path: Path) -> set[str]:
    events = json.loads(path.read_text())["traceEvents"]
    return {e["name"] for e in events if e["name"].startswith("ProfilerStep#")}


# Python ends an unhandled KeyboardInterrupt by re-raising SIGINT, so both exit by signal.
@pytest.mark.slow
@pytest.mark.parametrize(
    "sig,code", [(signal.SIGTERM, -signal.SIGTERM), (signal.SIGINT, -signal.SIGINT)]
)
def test_signal_flushes_then_keeps_its_effect(tmp_path: Path, sig: int, code: int) -> None:
    proc = start(tmp_path, "level0")
    proc.send_signal(sig)
    proc.wait(timeout=60)
    assert proc.returncode == code
    files = sorted((tmp_path / "out" / "integrated").iterdir())
    assert {f.name.split(".", 1)[1] for f in files} == {"pt.trace.json", "mstx.trace.json"}
    for f in files:
        assert {"ProfilerStep#1", "ProfilerStep#3"} <= steps_in(f)


@pytest.mark.slow
def test_sigkill_keeps_spans_up_to_last_completed_step(tmp_path: Path) -> None:
    proc = start(tmp_path, "level_none")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    spans, claim = sorted(
        (tmp_path / "out" / "integrated").iterdir(), key=lambda p: p.name.startswith(".")
    )
    assert {"ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3"} <= steps_in(spans)
    assert claim.name == f".{spans.name.split('.')[0]}.claim"  # killed: the stem stays taken


# -- the handler itself, called in this process (the real handlers come back after each test) --
class _Watched:
    """A live profiler double: writes down the signal it is told about and its close."""

    def __init__(self, name: str, log: list[tuple[Any, ...]], fail: bool = False) -> None:
        self.name, self.log, self.fail = name, log, fail

    def on_signal(self, signum: int) -> None:
        self.log.append(("signal", self.name, signum))
        if self.fail:
            raise RuntimeError("dump failed")

    def close(self) -> None:
        self.log.append(("close", self.name))
        if self.fail:
            raise OSError("close failed")


class _CloseOnly:
    """A closable without ``on_signal``: it is only closed."""

    def __init__(self, log: list[tuple[Any, ...]]) -> None:
        self.log = log

    def close(self) -> None:
        self.log.append(("close", "plain"))


@pytest.fixture
def kills(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """``os.kill`` written down instead of sent: no handler under test can end this process."""
    sent: list[tuple[Any, ...]] = []

    def kill(pid: int, signum: int) -> None:
        sent.append((pid, signum))

    monkeypatch.setattr(os, "kill", kill)
    return sent


def _live(monkeypatch: pytest.MonkeyPatch, profilers: list[Any], previous: dict[int, Any]) -> None:
    monkeypatch.setattr(crash, "_live", weakref.WeakSet(profilers))
    monkeypatch.setattr(crash, "_previous", previous)


def test_handler_tells_every_profiler_then_runs_the_trainers_handler_at_once(
    monkeypatch: pytest.MonkeyPatch, kills: list[tuple[Any, ...]]
) -> None:
    """Every live profiler hears the signal (one failing does not stop the others), then the
    handler ours replaced (the trainer's) gets it, with nothing closed before it: closing
    exports the captures, which is what the trainer's checkpoint must not wait for. When
    that handler returns, training goes on: still nothing is closed, nothing is sent."""
    log: list[tuple[Any, ...]] = []

    def previous(signum: int, frame: FrameType | None) -> None:
        log.append(("previous", signum, frame))

    profilers = [_Watched("a", log), _CloseOnly(log), _Watched("c", log, fail=True)]
    _live(monkeypatch, profilers, {signal.SIGTERM: previous})
    frame = sys._getframe()
    crash._on_signal(signal.SIGTERM, frame)
    assert sorted(log[:2]) == [("signal", "a", signal.SIGTERM), ("signal", "c", signal.SIGTERM)]
    assert log[2:] == [("previous", signal.SIGTERM, frame)]
    assert kills == []


def test_a_trainers_handler_that_exits_closes_the_captures_at_exit(
    monkeypatch: pytest.MonkeyPatch, kills: list[tuple[Any, ...]]
) -> None:
    """The trainer's handler raises ``SystemExit``: it propagates from ours unchanged, and the
    exit hook closes every live profiler afterwards (after the handler, not before)."""
    log: list[tuple[Any, ...]] = []

    def checkpoint_then_exit(signum: int, frame: FrameType | None) -> None:
        log.append(("previous", signum))
        raise SystemExit(0)

    profilers = [_Watched("a", log)]
    _live(monkeypatch, profilers, {signal.SIGTERM: checkpoint_then_exit})
    with pytest.raises(SystemExit):
        crash._on_signal(signal.SIGTERM, None)
    crash._close_all()  # what atexit runs
    assert log == [("signal", "a", signal.SIGTERM), ("previous", signal.SIGTERM), ("close", "a")]
    assert kills == []


def test_handler_without_a_previous_one_resends_the_signal_to_its_default(
    monkeypatch: pytest.MonkeyPatch, kills: list[tuple[Any, ...]]
) -> None:
    """No handler was replaced (or it was ``SIG_DFL``): after closing, the default action is
    put back and the signal sent again to this process, so it ends as it would have."""
    log: list[tuple[Any, ...]] = []
    profilers = [_Watched("a", log)]
    _live(monkeypatch, profilers, {signal.SIGINT: signal.SIG_IGN})
    crash._on_signal(signal.SIGTERM, None)
    assert log == [("signal", "a", signal.SIGTERM), ("close", "a")]
    assert kills == [(os.getpid(), signal.SIGTERM)]
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    _live(monkeypatch, profilers, {signal.SIGTERM: signal.SIG_DFL})
    crash._on_signal(signal.SIGTERM, None)
    assert kills == [(os.getpid(), signal.SIGTERM)] * 2


def test_handler_keeps_an_ignored_signal_ignored(
    monkeypatch: pytest.MonkeyPatch, kills: list[tuple[Any, ...]]
) -> None:
    """``SIG_IGN`` before ours: the profilers still close, nothing is sent, nothing changes."""
    log: list[tuple[Any, ...]] = []
    profilers = [_Watched("a", log)]
    _live(monkeypatch, profilers, {signal.SIGTERM: signal.SIG_IGN})
    before = signal.getsignal(signal.SIGTERM)
    crash._on_signal(signal.SIGTERM, None)
    assert log == [("signal", "a", signal.SIGTERM), ("close", "a")]
    assert kills == [] and signal.getsignal(signal.SIGTERM) is before


# -- watch and unwatch: handlers and the exit hook while a profiler is live ------------------
@pytest.fixture
def exit_hooks(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Callable[..., Any]]]:
    """The ``atexit`` registrations and removals crash makes, written down instead of made."""
    import atexit

    calls: list[tuple[str, Callable[..., Any]]] = []
    monkeypatch.setattr(atexit, "register", lambda func: calls.append(("register", func)))
    monkeypatch.setattr(atexit, "unregister", lambda func: calls.append(("unregister", func)))
    return calls


def _mine(signum: int, frame: FrameType | None) -> None:
    """A trainer's own handler, there before any profiler."""


def test_watch_installs_once_and_unwatch_of_the_last_puts_everything_back(
    monkeypatch: pytest.MonkeyPatch, exit_hooks: list[tuple[str, Any]]
) -> None:
    log: list[tuple[Any, ...]] = []
    first, second = _CloseOnly(log), _CloseOnly(log)
    _live(monkeypatch, [], {})
    signal.signal(signal.SIGTERM, _mine)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    crash.watch(first)
    crash.watch(second)
    assert exit_hooks == [("unregister", crash._close_all), ("register", crash._close_all)]
    assert signal.getsignal(signal.SIGTERM) is crash._on_signal
    assert signal.getsignal(signal.SIGINT) is crash._on_signal
    assert crash._previous == {signal.SIGTERM: _mine, signal.SIGINT: signal.SIG_IGN}
    crash.unwatch(first)
    assert len(exit_hooks) == 2 and signal.getsignal(signal.SIGTERM) is crash._on_signal
    crash.unwatch(second)
    assert exit_hooks[2:] == [("unregister", crash._close_all)]
    assert signal.getsignal(signal.SIGTERM) is _mine
    assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN and crash._previous == {}


def test_watch_keeps_a_signal_already_handled_and_installs_the_others(
    monkeypatch: pytest.MonkeyPatch, exit_hooks: list[tuple[str, Any]]
) -> None:
    _live(monkeypatch, [], {signal.SIGTERM: signal.SIG_DFL})
    signal.signal(signal.SIGINT, _mine)
    crash.watch(_CloseOnly([]))
    assert crash._previous == {signal.SIGTERM: signal.SIG_DFL, signal.SIGINT: _mine}
    assert signal.getsignal(signal.SIGINT) is crash._on_signal


def test_unwatch_puts_the_default_back_where_no_python_handler_was(
    monkeypatch: pytest.MonkeyPatch, exit_hooks: list[tuple[str, Any]]
) -> None:
    """``None`` (a handler not set from Python) comes back as ``SIG_DFL``; a handler someone
    chained to ours after it is left in place, with what ours replaced."""
    watched = _CloseOnly([])
    _live(monkeypatch, [watched], {signal.SIGTERM: None, signal.SIGINT: signal.SIG_IGN})
    signal.signal(signal.SIGTERM, crash._on_signal)
    signal.signal(signal.SIGINT, _mine)  # chained to ours
    crash.unwatch(watched)
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    assert signal.getsignal(signal.SIGINT) is _mine
    assert crash._previous == {signal.SIGINT: signal.SIG_IGN}


def test_off_the_main_thread_only_the_exit_hook_is_set(
    monkeypatch: pytest.MonkeyPatch, exit_hooks: list[tuple[str, Any]]
) -> None:
    watched = _CloseOnly([])
    _live(monkeypatch, [], {})
    before = signal.getsignal(signal.SIGTERM)
    for call in (crash.watch, crash.unwatch):
        worker = threading.Thread(target=call, args=(watched,))
        worker.start()
        worker.join()
    assert [name for name, _ in exit_hooks] == ["unregister", "register", "unregister"]
    assert signal.getsignal(signal.SIGTERM) is before and crash._previous == {}


# -- forks: what a child inherits is disowned there ------------------------------------------
def test_in_a_forked_child_every_profiler_is_disowned_and_the_trainers_handlers_are_back(
    tmp_path: Path, exit_hooks: list[tuple[str, Any]]
) -> None:
    """What the fork hook does in the child, run here: the live profiler's range file is left
    byte for byte as the parent wrote it (closing and signals write nothing), its ranges go
    nowhere, no flight dump is made, an idle profiler never wakes, the trainer's handler is
    back and the exit hook gone."""
    from mindspeed_prof import Profiler, current, mstx

    signal.signal(signal.SIGTERM, _mine)
    prof = Profiler.from_config(
        {
            "integrated": {
                "profile": True,
                "mstx": True,
                "profile_level": "level_none",
                "profile_step_start": 1,
                "profile_step_end": 10,
                "profile_save_path": str(tmp_path),
            },
            "extensions": {"flight_recorder_steps": 2},
        },
        rank=0,
    )
    with prof.step(1), prof.stage("actor_update"):
        pass
    prof.on_step_start(2)
    prof.on_stage_start("actor_update")
    idle = Profiler.from_config({"profile_save_path": str(tmp_path / "idle")}, rank=0)
    prof.flush_ranges()  # the parent's writer thread done: the file as the parent left it
    (path,) = [
        p for p in (tmp_path / "integrated").iterdir() if not p.name.startswith(".")
    ]  # not the claim
    before = path.read_bytes()
    assert signal.getsignal(signal.SIGTERM) is crash._on_signal and mstx.sinks()
    crash._in_child()
    idle.wake()  # an on-demand request seen in the child: the idle profiler stays off
    with idle.step(1):
        pass
    assert not idle._live and len(crash._live) == 0 and not (tmp_path / "idle").exists()
    assert signal.getsignal(signal.SIGTERM) is _mine and crash._previous.get(signal.SIGTERM) is None
    assert ("unregister", crash._close_all) == exit_hooks[-1] and len(crash._live) == 0
    assert mstx.sinks() == ()
    with mstx.range("in_child"):
        pass
    prof.on_signal(signal.SIGTERM)
    assert prof.dump_flight("request") is None
    prof.on_stage_end("actor_update")
    prof.on_step_end(2)
    prof.close()
    crash._close_all()
    assert path.read_bytes() == before and not (tmp_path / "flight").exists()
    assert current() is not prof and prof.captures == []


def test_a_profiler_made_in_another_process_is_disowned_at_its_first_action(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child forked where no fork hook ran (``fork()`` from C) has another pid: the
    profiler's first start or stop, its close and the exit hook then write nothing."""
    from mindspeed_prof import Profiler

    prof = Profiler.from_config(
        {
            "integrated": {
                "profile": True,
                "mstx": True,
                "profile_level": "level_none",
                "stage": "actor_update",
                "profile_step_start": 1,
                "profile_step_end": 10,
                "profile_save_path": str(tmp_path),
            }
        },
        rank=0,
    )
    prof.on_step_start(1)
    prof.on_stage_start("actor_update")
    (path,) = [
        p for p in (tmp_path / "actor_update").iterdir() if not p.name.startswith(".")
    ]  # not the claim
    before = path.read_bytes()
    real = os.getpid()
    monkeypatch.setattr(os, "getpid", lambda: real + 1)
    crash._close_all()
    assert prof._live
    prof.on_stage_end("actor_update")  # the capture's stop: the profiler is disowned instead
    assert not prof._live and prof.captures == []
    prof.close()
    assert path.read_bytes() == before


def test_a_signal_during_a_fork_waits_for_the_trainers_handler_in_the_child_and_ours_in_the_parent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While our handlers are installed, the forking thread blocks SIGTERM and SIGINT across
    the fork: a signal sent meanwhile is held, not handled (Python drops one that reaches a
    child before its own fork handling, with our handler inherited: a pool's new worker
    terminated before it ran lived on, and ``Pool.terminate`` waited for it forever). After
    the fork the mask is as it was, and the held signal is handled."""
    got: list[int] = []

    def previous(signum: int, frame: FrameType | None) -> None:
        got.append(signum)

    _live(monkeypatch, [], {signal.SIGTERM: previous, signal.SIGINT: signal.default_int_handler})
    monkeypatch.setattr(crash, "_mask", [])
    before = signal.signal(signal.SIGTERM, crash._on_signal)
    try:
        crash._before_fork()
        assert {signal.SIGTERM, signal.SIGINT} <= signal.pthread_sigmask(signal.SIG_BLOCK, [])
        signal.pthread_kill(threading.get_ident(), signal.SIGTERM)
        time.sleep(0.01)
        assert got == []  # held
        crash._unblock()
        deadline = time.monotonic() + 5
        while not got and time.monotonic() < deadline:
            time.sleep(0.001)
        assert got == [signal.SIGTERM]
        assert signal.SIGTERM not in signal.pthread_sigmask(signal.SIG_BLOCK, [])
    finally:
        signal.signal(signal.SIGTERM, before)
    monkeypatch.setattr(crash, "_previous", {})
    crash._before_fork()  # no handler of ours installed: nothing blocked
    assert crash._mask == [] and signal.SIGTERM not in signal.pthread_sigmask(signal.SIG_BLOCK, [])


@pytest.mark.slow
def test_a_child_terminated_before_it_runs_takes_the_default_effect(tmp_path: Path) -> None:
    """A real fork under a live profiler: the parent sends SIGTERM to the child at once (it
    has not run yet, or is still in its fork handling), 40 times; every child dies of it, as
    without the profiler."""
    script = tmp_path / "forks.py"
    script.write_text(
        textwrap.dedent(f"""
        import os, signal, sys, time
        from mindspeed_prof import Profiler
        prof = Profiler.from_config({{"integrated": {{"profile": True, "mstx": True,
            "profile_level": "level_none", "profile_step_start": 1, "profile_step_end": 9,
            "profile_save_path": {str(tmp_path / "out")!r}}}}}, rank=0)
        prof.on_step_start(1)
        codes = []
        for _ in range(40):
            pid = os.fork()
            if pid == 0:
                time.sleep(5)
                os._exit(0)
            os.kill(pid, signal.SIGTERM)
            _, status = os.waitpid(pid, 0)
            codes.append(os.waitstatus_to_exitcode(status))
        prof.on_step_end(1)
        prof.close()
        print(sorted(set(codes)))
        """)
    )
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [f"[-{signal.SIGTERM.value}]"]
