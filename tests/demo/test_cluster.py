"""The demo's Ray cluster on a busy machine (Ray's start failing, through a double of
``ray.init``), a running cluster to join, and where Ray's metrics are."""

from __future__ import annotations

from typing import Any

import pytest

from mindspeed_prof.demo import cluster
from mindspeed_prof.demo.cluster import ATTEMPTS, NODE_WAIT_S, Cluster, endpoints, start

#: What Ray 2.60 raises when its node does not register in time (ray/_private/node.py).
TIMED_OUT = (
    "The current node timed out during startup. This could happen because some of "
    "the raylet failed to startup or the GCS has become overloaded."
)


class Init:
    """``ray.init``: fails the first ``fails`` calls as Ray does on a busy machine."""

    def __init__(self, fails: int) -> None:
        self.fails, self.calls = fails, []  # type: ignore[var-annotated]

    def __call__(self, **kwargs: Any) -> None:
        self.calls.append(kwargs)
        if len(self.calls) <= self.fails:
            raise Exception(TIMED_OUT)  # noqa: TRY002 - Ray's own type


@pytest.fixture
def ray(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Ray not started in this process, whatever the session did; no shutdown reaches it."""
    import ray

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "shutdown", lambda: None)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    return ray


def test_a_start_that_times_out_once_is_tried_again_and_said(ray: Any) -> None:
    said: list[str] = []
    init = Init(fails=1)
    assert start(2, None, said.append, init) == Cluster(connected=True)
    assert len(init.calls) == 2 and all(c["address"] == "local" for c in init.calls)
    assert init.calls[0]["num_cpus"] == 2
    assert said == [
        f"mindspeed-prof demo: Ray did not start (Exception: {TIMED_OUT}); trying "
        f"once more (Ray gives its node {NODE_WAIT_S} s: a busy machine may need "
        "longer)"
    ]


def test_a_start_that_never_comes_runs_plain_processes_said_in_one_line(ray: Any) -> None:
    said: list[str] = []
    init = Init(fails=99)
    assert start(2, None, said.append, init) is None
    assert len(init.calls) == ATTEMPTS == 2  # one retry, bounded
    assert said[-1] == (
        f"mindspeed-prof demo: Ray did not start in 2 tries (Exception: {TIMED_OUT}): running "
        "the 2 workers as plain processes instead, without Ray (no capture --ray, no Ray "
        "metrics; RAY_ADDRESS=HOST:PORT joins a running cluster)"
    )


def test_a_start_that_works_says_nothing(ray: Any) -> None:
    said: list[str] = []
    assert start(3, None, said.append, Init(fails=0)) == Cluster(connected=True)
    assert said == []


def test_a_cluster_asked_for_is_joined_or_one_line(
    ray: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RAY_ADDRESS (or demo.ray_address): joined, never replaced by a cluster of the demo's."""
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.9:6379")
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"CPU": 8.0})
    init = Init(fails=0)
    assert start(2, None, print, init) == Cluster(connected=True)
    assert init.calls == [
        {"address": "10.0.0.9:6379", "log_to_driver": True, "configure_logging": False}
    ]
    assert start(2, "auto", print, init) == Cluster(connected=True)
    assert init.calls[-1]["address"] == "auto"  # the knob over the variable
    with pytest.raises(SystemExit) as stop:
        start(2, None, print, Init(fails=1))
    assert str(stop.value) == (
        f"mindspeed-prof demo: cannot join the Ray cluster at 10.0.0.9:6379 (Exception: "
        f"{TIMED_OUT}); unset RAY_ADDRESS (or demo.ray_address) to let the demo start its own"
    )
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"CPU": 1.0})
    with pytest.raises(
        SystemExit,
        match=r"has 1 CPUs; the demo's 2 workers take one each "
        r"\(demo.workers=1, or add nodes\)$",
    ):
        start(2, None, print, Init(fails=0))


def test_a_running_session_is_used_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    import ray

    monkeypatch.setattr(ray, "is_initialized", lambda: True)
    assert start(2, "10.0.0.9:1", print, Init(fails=99)) == Cluster(connected=False)


def test_what_a_failed_start_left_running_is_stopped() -> None:
    """The half-made node in the failing frames has its processes killed."""
    from ray._private.node import Node

    killed: list[dict[str, bool]] = []

    class Half(Node):  # type: ignore[misc]
        def __init__(self) -> None:  # noqa: D107 - no Ray processes: only the failing frame
            raise Exception(TIMED_OUT)  # noqa: TRY002

        def kill_all_processes(self, **kwargs: bool) -> None:
            killed.append(kwargs)

    try:
        Half()
    except Exception as err:  # noqa: BLE001
        cluster._stop_what_was_started(err.__traceback__)
    assert killed == [{"check_alive": False, "allow_graceful": False}]


def test_endpoints_are_each_alive_nodes_metrics_port() -> None:
    nodes = [
        {"NodeManagerAddress": "10.0.0.1", "MetricsExportPort": 51234, "Alive": True},
        {"NodeManagerAddress": "10.0.0.2", "MetricsExportPort": 8080, "Alive": False},
        {"NodeManagerAddress": "10.0.0.3", "MetricsExportPort": 0},
    ]
    assert endpoints(nodes) == ["http://10.0.0.1:51234/metrics"]
