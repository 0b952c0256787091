"""Trainers that run stages on threads: stages are per thread, crossing is recorded, memory stays
bounded when every step starts new threads."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from helpers import count

from mindspeed_prof import Profiler, mstx

STEPS = 20


def _profiler(tmp_path: Path, **fields: Any) -> Profiler:
    return Profiler.from_config(
        {
            "integrated": {
                "profile": True,
                "mstx": True,
                "profile_level": "level_none",
                "profile_step_start": 1,
                "profile_step_end": STEPS + 1,
                "profile_save_path": str(tmp_path),
                **fields,
            }
        },
        rank=0,
    )


def _crossing_step(prof: Profiler, tids: dict[str, int]) -> None:
    """Two threads in ``prof.stage`` at once; the one that entered first leaves first, while
    the other is still inside (barriers force the order)."""
    entered, left = threading.Barrier(2, timeout=30), threading.Barrier(2, timeout=30)

    def actor() -> None:
        tids["actor_update"] = threading.get_native_id()
        with prof.stage("actor_update"):
            entered.wait()
            entered.wait()  # the critic is inside now
        left.wait()

    def critic() -> None:
        tids["critic_update"] = threading.get_native_id()
        entered.wait()
        with prof.stage("critic_update"):
            entered.wait()
            left.wait()  # the actor has left

    threads = [threading.Thread(target=actor), threading.Thread(target=critic)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_two_threads_crossing_stages_are_each_recorded_every_step(tmp_path: Path) -> None:
    prof = _profiler(tmp_path)
    seen: list[dict[str, int]] = []
    for step in range(1, STEPS + 1):
        tids: dict[str, int] = {}
        with prof.step(step):
            _crossing_step(prof, tids)
        seen.append(tids)
        assert prof._tap.open_count == 0
    prof.close()
    count("thread crossings", STEPS)
    assert not prof.failed
    (path,) = (tmp_path / "integrated").iterdir()
    events = json.loads(path.read_text())["traceEvents"]
    for step, tids in enumerate(seen, 1):
        mine = {e["name"]: e for e in events if e["args"]["step"] == step}
        assert set(mine) == {f"ProfilerStep#{step}", "actor_update", "critic_update"}
        actor, critic = mine["actor_update"], mine["critic_update"]
        assert (actor["tid"], critic["tid"]) == (tids["actor_update"], tids["critic_update"])
        actor_end, critic_end = actor["ts"] + actor["dur"], critic["ts"] + critic["dur"]
        assert actor["ts"] < critic["ts"] < actor_end < critic_end  # crossed
        assert mine[f"ProfilerStep#{step}"]["tid"] == threading.get_native_id()
    assert len(events) == 3 * STEPS


def test_a_captured_stage_entered_by_two_threads_at_once_is_one_capture(tmp_path: Path) -> None:
    """A stage-scoped capture: both threads inside the target stage together; the capture
    starts with the first, ends with the last, and holds both threads' ranges."""
    prof = _profiler(tmp_path, stage="actor_update")
    inside, done = threading.Barrier(2, timeout=30), threading.Barrier(2, timeout=30)

    def worker() -> None:
        with prof.stage("actor_update"):
            with mstx.range("work"):
                inside.wait()
            done.wait()

    for step in (1, 2):
        with prof.step(step):
            threads = [threading.Thread(target=worker) for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    prof.close()
    assert [(c.step, c.index, c.reason) for c in prof.captures] == [
        (1, 0, "stage_end"),
        (2, 0, "stage_end"),
    ]
    for capture in prof.captures:
        (path,) = capture.files
        events = json.loads(Path(path).read_text())["traceEvents"]
        assert [e["name"] for e in events].count("work") == 2
        assert len({e["tid"] for e in events if e["name"] == "work"}) == 2


def test_a_new_thread_every_step_keeps_ranges_keys_and_caches_bounded(tmp_path: Path) -> None:
    """The flight recorder on, every step's stage and ranges on a thread of its own: what the
    profiler holds (open ranges, range keys, mstx's per-thread caches) does not grow with the
    steps."""
    prof = Profiler.from_config(
        {"profile_save_path": str(tmp_path), "flight_recorder_steps": 4}, rank=0
    )

    def stage() -> None:
        with prof.stage("actor_update"):
            with mstx.range("forward"):
                pass
            mstx.range_end(mstx.range_start("by_id"))

    held = []
    for step in range(1, 3001):
        with prof.step(step):
            t = threading.Thread(target=stage)
            t.start()
            t.join()
        if step % 500 == 0:
            buffer = prof._tap.buffer
            assert buffer is not None
            held.append((prof._tap.open_count, len(buffer.keys), len(buffer._ids)))
            assert len(mstx._Cache.registry) <= 2 * threading.active_count() + 64
    path = prof.dump_flight()
    prof.close()
    count("threads started", 3000)
    assert held == [(0, 4, 4)] * 6  # step, stage, "forward", "by_id": one key each
    assert path is not None
    events = json.loads(path.read_text())["traceEvents"]
    assert len({e["tid"] for e in events if e["name"] == "forward"}) == 4  # one per step
