"""``--ray``: captures read on the nodes that hold them (the test session's Ray cluster)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from capture_fixtures import make_run

from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.cluster import Unreachable, connect
from mindspeed_prof.analysis.readers import discover
from mindspeed_prof.cli import main


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_run(tmp_path_factory.mktemp("cl"), ranks=(0, 1, 2, 3, 4, 5), steps=2,
                    profile_level="level_none", slow={(3, "actor_update"): 1})
    (root / "integrated" / "rank9_broken.pt.trace.json").write_text('{"traceEvents": [')
    return root


def alive_nodes(ray: Any) -> set[str]:
    return {n["NodeID"] for n in ray.nodes() if n["Alive"]}


def test_ray_gives_the_local_answer_read_on_every_node(ray_cluster: Any, run: Path) -> None:
    nodes = alive_nodes(ray_cluster)
    here = analyse(run, jobs=1, cache=False)
    there = analyse(run, ray="auto", cache=False)
    assert json.dumps(there.to_json(), default=str) == json.dumps(here.to_json(), default=str)
    placed = there.placement
    assert [p["path"] for p in placed] == [str(p) for p in discover(run)]  # each read once
    assert len(placed) == 7  # six range files and the broken one
    assert {p["node"] for p in placed} == nodes  # on a shared disk, every node reads some


def test_workers_report_their_node(ray_cluster: Any, tmp_path: Path) -> None:
    from mindspeed_prof.ray import ProfilerMixin

    @ray_cluster.remote(num_cpus=0)
    class Worker(ProfilerMixin):
        def __init__(self) -> None:
            self.init_profiler({"integrated": {"profile": True, "mstx": True,
                                               "profile_level": "level_none",
                                               "profile_save_path": str(tmp_path)}}, rank=0)

        def step(self) -> None:
            with self.profiler.step(1):
                pass

    worker = Worker.remote()
    ray_cluster.get(worker.step.remote())
    summary = ray_cluster.get(worker.profiler_summary.remote())
    assert summary["node"] in alive_nodes(ray_cluster) and summary["files"]


def test_an_unreachable_address_is_one_line_and_exit_2(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(Unreachable, match="127.0.0.1:1"):
        connect("127.0.0.1:1")
    assert main(["analyse", str(tmp_path), "--ray", "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Ray cluster at 127.0.0.1:1: cannot connect" in err
    assert main(["timeline", str(tmp_path), "-o", str(tmp_path / "t.json"),
                 "--ray", "ray://127.0.0.1:1"]) == 2
