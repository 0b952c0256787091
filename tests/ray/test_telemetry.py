"""``mindspeed_prof.ray.telemetry``: the ``ray`` sink, found by the profiler through
``capture.plugins`` (nothing imports it by hand), and ``gather_metrics`` on the driver."""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mindspeed_prof import Profiler
from mindspeed_prof.capture import plugins
from mindspeed_prof.capture.telemetry.sinks import NotReady
from mindspeed_prof.capture.telemetry.totals import StepRecord
from mindspeed_prof.ray import ProfilerMixin, worker_config
from mindspeed_prof.ray.telemetry import RaySink


def test_ray_not_initialised_waits_with_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The profiler loads the sink's module itself (``telemetry: [ray]``), and a process
    not in Ray warns once, keeps its figures, and neither imports nor starts Ray."""
    from capture_fixtures import fake_clock  # not at the top: Ray's workers import this module

    monkeypatch.delitem(sys.modules, "ray", raising=False)
    monkeypatch.delitem(sys.modules, "mindspeed_prof.ray.telemetry")
    monkeypatch.setattr(plugins, "_SINKS", {})
    with pytest.raises(NotReady):
        RaySink().send(StepRecord(1, 2.0), 0, "integrated")
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"), fake_clock() as clock:
        prof = Profiler.from_config(
            {
                "integrated": {"profile_save_path": str(tmp_path)},
                "extensions": {"telemetry": ["ray"]},
            },
            rank=0,
        )
        for step in (1, 2, 3):
            with prof.step(step), prof.stage("actor_update"):
                clock.advance(10.0 + step)
        prof.close()
    assert [r.getMessage() for r in caplog.records if "telemetry" in r.getMessage()] == [
        "mindspeed-prof: telemetry to ray: this process is not in an initialised Ray job "
        "(ray.init not called, or not a Ray worker); sent once it is"
    ]
    assert "mindspeed_prof.ray.telemetry" in sys.modules and "ray" in plugins._SINKS
    assert prof.metrics()["prof/step/ms"] == pytest.approx(13.0)
    assert "ray" not in sys.modules  # nothing started or imported Ray


class Trainer(ProfilerMixin):
    """A worker whose rank 1 is slow in actor_update; telemetry on, nothing captured."""

    def __init__(self, rank: int, cfg: dict[str, Any]) -> None:
        self.init_profiler(cfg, rank=rank, role="actor")

    def step(self, step: int) -> None:
        prof = self.profiler
        with prof.step(step):
            with prof.stage("actor_generate"):
                time.sleep(0.01)
            with prof.stage("actor_update"):
                time.sleep(0.4 if prof.rank == 1 else 0.01)


def _scrape(ray: Any, deadline_s: float) -> dict[tuple[str, str], float]:
    """``ray_mindspeed_prof_stage_ms`` by (rank, stage) on this node's metrics export port,
    parsed by prometheus_client; polled until both ranks' actor_update is there, or the
    deadline."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    (node,) = [n for n in ray.nodes() if n["Alive"]]
    url = f"http://{node['NodeManagerAddress']}:{node['MetricsExportPort']}/metrics"
    found: dict[tuple[str, str], float] = {}
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        try:
            text = urllib.request.urlopen(url, timeout=5).read().decode()
        except OSError:
            text = ""
        found = {
            (s.labels["rank"], s.labels["stage"]): s.value
            for family in text_string_to_metric_families(text)
            if family.name == "ray_mindspeed_prof_stage_ms"
            for s in family.samples
            if s.labels.get("role") == "actor"
        }
        if {("0", "actor_update"), ("1", "actor_update")} <= found.keys():
            return found
        time.sleep(0.5)
    return found


def test_a_slow_rank_shows_on_rays_metrics_endpoint_and_on_the_driver(
    ray_cluster: Any, tmp_path: Path
) -> None:
    """Telemetry with profile off: each worker's stage times reach Ray's Prometheus endpoint
    tagged with rank, role and stage, and ``gather_metrics`` names the slow rank."""
    from mindspeed_prof.ray import gather_metrics

    ray = ray_cluster
    cfg = worker_config(
        {
            "integrated": {"profile_save_path": str(tmp_path)},
            "extensions": {"telemetry": ["metrics", "ray"], "on_demand": False},
        }
    )
    workers = [ray.remote(Trainer).remote(r, cfg) for r in range(2)]
    for step in (1, 2, 3):
        ray.get([w.step.remote(step) for w in workers], timeout=180)
    spread = gather_metrics(workers)
    assert spread["prof/ranks"] == 2.0
    assert spread["prof/stage/actor_update/ms/slowest_rank"] == 1.0
    assert spread["prof/stage/actor_update/ms/max"] >= 400.0
    assert spread["prof/step/ms/slowest_rank"] == 1.0
    found = _scrape(ray, deadline_s=90.0)
    assert found[("1", "actor_update")] >= 400.0 > found[("0", "actor_update")], found
    assert ("0", "actor_generate") in found and ("1", "actor_generate") in found
    assert list(tmp_path.iterdir()) == []  # telemetry is no capture: nothing written
