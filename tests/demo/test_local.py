"""The demo's workers as plain processes (Ray would not start): called as actors are, each its
own process and rank, what a worker raises raised in the driver."""

from __future__ import annotations

import os

import pytest

from mindspeed_prof.demo.__main__ import _yaml_knobs
from mindspeed_prof.demo.knobs import checked
from mindspeed_prof.demo.local import ProcessWorker


@pytest.mark.slow
def test_a_worker_process_answers_like_an_actor() -> None:
    demo = checked({**_yaml_knobs(), "prompts": 4, "steps": 2})
    workers = [ProcessWorker(rank, demo, {"integrated": {"profile": False}}) for rank in (0, 1)]
    try:
        for w in workers:
            w.call("train_step", 1)  # both asked first: they run at once
        stats = [w.result() for w in workers]
        assert [s["rank"] for s in stats] == [0, 1] and all(s["step"] == 1 for s in stats)
        workers[0].call("timings")
        assert workers[0].result()["rank"] == 0
        workers[1].call("no_such_method")
        with pytest.raises(AttributeError, match="no_such_method"):
            workers[1].result()
        pids = {w._proc.pid for w in workers}
        assert len(pids) == 2 and os.getpid() not in pids
    finally:
        for w in workers:
            w.close()
    assert not any(w._proc.is_alive() for w in workers)
