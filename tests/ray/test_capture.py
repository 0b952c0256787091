"""On-demand capture through Ray: the job's board, its workers, and ``capture --ray``."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mindspeed_prof.capture.control import Request
from mindspeed_prof.capture.naming import host_name
from mindspeed_prof.cli import main
from mindspeed_prof.cli.common import Exit

CHECK_NS = 200_000_000  # the workers ask every 0.2 s instead of every second: a faster test


class Worker:
    """A Ray worker running steps until told to stop; it keeps its own log."""

    def __init__(self, rank: int, root: str) -> None:
        from mindspeed_prof.ray import ProfilerMixin

        self.logged: list[str] = []
        handler = logging.Handler()
        handler.emit = lambda record: self.logged.append(record.getMessage())  # type: ignore
        logging.getLogger("mindspeed_prof").addHandler(handler)
        self.mixin = ProfilerMixin()
        self.mixin.init_profiler(
            {
                "integrated": {
                    "profile_save_path": root,
                    "mstx": True,
                    "profile_level": "level_none",
                }
            },
            rank=rank,
        )
        self.mixin.profiler._ondemand.interval_ns = CHECK_NS  # type: ignore[union-attr]
        self.steps = 0
        self.stopped = threading.Event()

    def run(self) -> int:
        prof = self.mixin.profiler
        deadline = time.monotonic() + 900  # the fixture stops it; this only if it never does
        while not self.stopped.is_set() and time.monotonic() < deadline:
            self.steps += 1
            with prof.step(self.steps), prof.stage("actor_update"):
                time.sleep(0.01)
        prof.close()
        return self.steps

    def stop(self) -> None:
        self.stopped.set()

    def report(self) -> dict[str, Any]:
        return {
            "captures": [c.to_json() for c in self.mixin.profiler.captures],
            "logged": list(self.logged),
            "steps": self.steps,
        }


@pytest.fixture(scope="module")
def job(ray_cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """This test session's Ray job with a board and two workers running steps."""
    from mindspeed_prof.ray import open_board

    ray = ray_cluster
    root = tmp_path_factory.mktemp("raycap")
    board = open_board()
    remote = ray.remote(num_cpus=0, max_concurrency=2)(Worker)
    workers = [remote.remote(rank, str(root)) for rank in range(2)]
    running = [w.run.remote() for w in workers]
    deadline = time.monotonic() + 300  # a loaded machine: actors may take minutes to start
    while len(ray.get(board.workers.remote())) < len(workers):
        assert time.monotonic() < deadline, "the workers never told the board their step"
        time.sleep(0.2)
    yield {
        "ray": ray,
        "board": board,
        "workers": workers,
        "root": root,
        "address": ray.get_runtime_context().gcs_address,
    }
    ray.get([w.stop.remote() for w in workers])
    ray.get(running)
    for w in workers:
        ray.kill(w)
    ray.kill(board)


def test_a_request_through_ray_reaches_every_worker(
    job: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    ray = job["ray"]
    code = main(["capture", "--ray", job["address"], "--steps", "1", "--timeout", "60"])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    reports = ray.get([w.report.remote() for w in job["workers"]])
    for rank, got in enumerate(reports):
        taken = [c for c in got["captures"] if c.get("request")]
        assert len(taken) == 1, (rank, got["captures"], got["logged"])
        (capture,) = taken
        (path,) = capture["files"]
        assert Path(path).is_file() and len(capture["steps"]) == 1
        assert f"rank {rank} (integrated) on {host_name()}: written: {path}" in out
    assert f"analyse: mindspeed-prof analyse {job['root'] / 'triggered'}\n" in out  # one node


def test_a_request_for_ranks_that_do_not_exist_is_ignored_with_one_warning(
    job: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    ray = job["ray"]
    before = len(ray.get(job["board"].logged.remote()))
    code = main(["capture", f"ray://{job['address']}", "--ranks", "5,7", "--timeout", "30"])
    err = capsys.readouterr().err
    assert code == Exit.NOT_RUNNING
    assert "ignored: no worker matches (ranks [5, 7]" in err and "ranks [0, 1]" in err
    logged = ray.get(job["board"].logged.remote())[before:]
    assert len(logged) == 1 and "ranks [5, 7]" in logged[0]


def test_two_requests_at_once_are_applied_in_order_once(job: dict[str, Any]) -> None:
    ray, board = job["ray"], job["board"]
    first, second = (
        Request.new(60, steps=1, ranks=[0]),
        Request.new(60, steps=1, ranks=[0], stage="actor_update"),
    )
    assert ray.get([board.post.remote(r.to_json()) for r in (first, second)]) == ["", ""]
    deadline = time.monotonic() + 120  # a loaded machine: a worker checks once a second at best
    while time.monotonic() < deadline:
        acks = [ray.get(board.status.remote(r.id))["acks"] for r in (first, second)]
        if all(a and a[0]["status"] == "written" for a in acks):
            break
        time.sleep(0.2)
    time.sleep(0.5)  # more checks: nothing applied twice
    captures = ray.get(job["workers"][0].report.remote())["captures"]
    taken = [
        (c["request"], c["stage"]) for c in captures if c.get("request") in (first.id, second.id)
    ]
    assert taken == [(first.id, "all"), (second.id, "actor_update")]
    assert ray.get(job["workers"][1].report.remote())["steps"] > 0


def test_an_unreachable_cluster_or_no_job_is_one_line(
    job: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["capture", "--ray", "127.0.0.1:1", "--timeout", "1"]) == Exit.NOT_RUNNING
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Ray cluster at 127.0.0.1:1: cannot connect" in err
    assert (
        main(["capture", "--ray", job["address"], "--job", "0abc", "--timeout", "1"])
        == Exit.NOT_RUNNING
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no capture board for Ray job 0abc" in err


def test_a_board_that_is_gone_is_one_warning_and_training_goes_on(job: dict[str, Any]) -> None:
    """Last in this module: it takes the board away."""
    ray = job["ray"]
    ray.kill(job["board"])

    def gone(report: dict[str, Any]) -> list[str]:
        return [m for m in report["logged"] if "capture board" in m and "is gone" in m]

    deadline = time.monotonic() + 60  # checks: the question in flight fails, no one asks again
    steps = ray.get([w.report.remote() for w in job["workers"]])
    while not all(gone(r) for r in steps) and time.monotonic() < deadline:
        time.sleep(0.2)
        steps = ray.get([w.report.remote() for w in job["workers"]])
    time.sleep(1.5)  # more checks would warn again: none does
    reports = ray.get([w.report.remote() for w in job["workers"]])
    for before, after in zip(steps, reports):
        assert len(gone(after)) == 1 and after["steps"] > before["steps"]
