"""``--ray``: captures read on the nodes that hold them (the test session's Ray cluster)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from capture_fixtures import make_run

from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.readers import discover
from mindspeed_prof.analysis.report.report import document
from mindspeed_prof.ray.cluster import reader


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_run(
        tmp_path_factory.mktemp("cl"),
        ranks=(0, 1, 2, 3, 4, 5),
        steps=2,
        profile_level="level_none",
        slow={(3, "actor_update"): 1},
    )
    (root / "integrated" / "rank9_broken.pt.trace.json").write_text('{"traceEvents": [')
    return root


def alive_nodes(ray: Any) -> set[str]:
    return {n["NodeID"] for n in ray.nodes() if n["Alive"]}


def test_ray_gives_the_local_answer_read_on_every_node(ray_cluster: Any, run: Path) -> None:
    nodes = alive_nodes(ray_cluster)
    here = analyse(run, jobs=1, cache=False)
    there = analyse(run, cluster=reader("auto"), cache=False)
    assert json.dumps(document(there), default=str) == json.dumps(document(here), default=str)
    placed = there.placement
    assert [p["path"] for p in placed] == [str(p) for p in discover(run)]  # each read once
    assert len(placed) == 7  # six range files and the broken one
    assert {p["node"] for p in placed} == nodes  # on a shared disk, every node reads some


def test_workers_report_their_node(ray_cluster: Any, tmp_path: Path) -> None:
    from mindspeed_prof.ray import ProfilerMixin

    @ray_cluster.remote(num_cpus=0)
    class Worker(ProfilerMixin):
        def __init__(self) -> None:
            self.init_profiler(
                {
                    "integrated": {
                        "profile": True,
                        "mstx": True,
                        "profile_level": "level_none",
                        "profile_save_path": str(tmp_path),
                    }
                },
                rank=0,
            )

        def step(self) -> None:
            with self.profiler.step(1):
                pass

    worker = Worker.remote()  # type: ignore[attr-defined]
    ray_cluster.get(worker.step.remote())
    summary = ray_cluster.get(worker.profiler_summary.remote())
    assert summary.node in alive_nodes(ray_cluster) and summary.files


TWO_NODES = """
import json, os, shutil, sys
from pathlib import Path

import ray
from ray._common.utils import get_ray_address_file, reset_ray_address
from ray.cluster_utils import Cluster

from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.ray import ProfilerMixin, collect, write_cluster_summary
from mindspeed_prof.ray.cluster import reader

out = Path(sys.argv[1])
homes = {"a": out / "home-a", "b": out / "home-b"}  # each node's own disk: `~` on that node
published = Path(get_ray_address_file(None))
before = published.read_text() if published.exists() else None
cluster = Cluster(initialize_head=True, head_node_args={
    "num_cpus": 1, "resources": {"node_a": 4}, "env_vars": {"HOME": str(homes["a"])}})
if before is None:  # the cluster published its address for `ray.init()`: not for others
    reset_ray_address()
else:
    published.write_text(before)
cluster.add_node(num_cpus=1, resources={"node_b": 4}, env_vars={"HOME": str(homes["b"])})
cluster.wait_for_nodes(timeout=180)
ray.init(address=cluster.address, configure_logging=False, log_to_driver=False)
try:
    nodes = {n["Resources"].get("node_a") and "a" or "b": n["NodeID"] for n in ray.nodes()
             if n["Alive"]}

    class Worker(ProfilerMixin):
        def __init__(self, rank):
            self.init_profiler({"integrated": {
                "profile": True, "mstx": True, "profile_level": "level_none",
                "profile_step_start": 1, "profile_step_end": 3,
                "profile_save_path": "~/run"}}, rank=rank)

        def steps(self):
            for step in (1, 2):
                with self.profiler.step(step):
                    for stage in ("actor_generate", "actor_update"):
                        with self.profiler.stage(stage):
                            sum(range(20000 * (1 + self.profiler.rank)))

    workers = [ray.remote(num_cpus=0, resources={f"node_{n}": 1})(Worker).remote(rank)
               for rank, n in enumerate("ab")]
    ray.get([w.steps.remote() for w in workers], timeout=180)
    summary = json.loads(write_cluster_summary(out, collect(workers)).read_text())
    there = analyse("~/run", cluster=reader(cluster.address), cache=False)
    merged = out / "merged"  # the same captures, gathered on one disk
    for home in homes.values():
        shutil.copytree(home / "run", merged, dirs_exist_ok=True)
    here = analyse(merged, jobs=1, cache=False)
    from mindspeed_prof.analysis.report.report import document
    from mindspeed_prof.cli import main
    assert main(["timeline", "~/run", "-o", str(out / "t.json"), "--ray", cluster.address]) == 0
    events = json.loads((out / "t.json").read_text())["traceEvents"]
    (out / "result.json").write_text(json.dumps({
        "nodes": nodes, "homes": {k: str(v) for k, v in homes.items()},
        "summary": summary, "placement": there.placement,
        "there": document(there), "here": document(here),  # analyse --json, verdict first
        "tracks": [e["args"]["name"] for e in events if e.get("name") == "process_name"],
        "steps": sorted((e["pid"], e["name"]) for e in events
                        if e.get("ph") == "X" and e["name"].startswith("ProfilerStep"))},
        default=str))
finally:
    ray.shutdown()
    cluster.shutdown()
"""


@pytest.mark.ray
def test_two_nodes_read_their_own_disks(tmp_path: Path) -> None:
    """Two Ray nodes (``ray.cluster_utils.Cluster``, in a subprocess so the session's cluster is
    untouched), each with its own disk: workers placed by node write under their node's ``~``;
    the cluster summary and ``analyse --ray`` say which node holds which capture, the answer
    is the one ``analyse`` gives on one disk, and ``timeline --ray`` has both ranks' tracks."""
    script = tmp_path / "two_nodes.py"
    script.write_text(TWO_NODES)
    # the nodes' homes hold no token; the workers' one run as a launcher sets it (else each
    # worker's id is its own, unless an earlier test of this session exported one)
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "MINDSPEED_PROF_RUN": "two-nodes"}
    env.pop("RAY_ADDRESS", None)
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=420,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / "result.json").read_text())
    nodes, homes = result["nodes"], result["homes"]
    assert sorted(nodes) == ["a", "b"] and nodes["a"] != nodes["b"]
    holder = {}  # capture path -> the node that wrote it, from the cluster summary
    for worker in result["summary"]["workers"]:
        n = "ab"[worker["rank"]]
        assert worker["node"] == nodes[n]
        (f,) = worker["files"]
        assert f["path"].startswith(homes[n] + os.sep) and f["bytes"] > 0
        holder[f["path"]] = worker["node"]
    placed = {p["path"]: p["node"] for p in result["placement"]}
    assert placed == holder  # each capture read on the node that holds it, once
    there, here = result["there"], result["here"]
    assert there.pop("root") == "~/run" and here.pop("root") == str(tmp_path / "merged")
    # what to run next names the root it was given, quoted for a shell (~ too: capture expands it)
    there_next = json.dumps(there["verdict"].pop("next")).replace(shlex.quote("~/run"), "ROOT")
    assert there_next == json.dumps(here["verdict"].pop("next")).replace(
        shlex.quote(str(tmp_path / "merged")), "ROOT"
    )
    assert there == here and here["ranks"] == [0, 1]
    host = result["summary"]["workers"][0]["host"]
    assert result["tracks"] == [f"rank {r} · integrated · {host}" for r in (0, 1)]  # timeline --ray
    assert len({pid for pid, _ in result["steps"]}) == 2 and len(result["steps"]) == 4


# -- the driver's decisions, in-process (no cluster) -----------------------------------------


def test_a_capture_several_nodes_hold_goes_to_the_least_loaded() -> None:
    """Worked by hand: A lists all three first (A 220); B then takes c1 (B 100, A 120) and c2
    (B 150, A 70); for c3 B's 150 is not below A's 70, so A keeps it."""
    from mindspeed_prof.ray.cluster import assign

    c1, c2, c3 = ("/s/c1", 100, 1), ("/s/c2", 50, 2), ("/s/c3", 70, 3)
    shared = [c1, c2, c3]
    assert assign([("A", "ha", "/s", shared), ("B", "hb", "/s", shared)]) == {
        c1: "B",
        c2: "B",
        c3: "A",
    }


def test_a_capture_one_node_holds_is_read_there_whatever_its_load() -> None:
    from mindspeed_prof.ray.cluster import assign

    big, own, shared = ("/a/big", 10**9, 1), ("/b/own", 5, 1), ("/s/x", 10, 1)
    owner = assign([("A", "ha", "/a", [big, shared]), ("B", "hb", "/b", [own, shared])])
    assert owner == {big: "A", own: "B", shared: "B"}  # B's 5 bytes < A's 10**9 + 10
    assert assign([]) == {}


def test_on_a_tie_the_first_node_keeps_the_capture() -> None:
    from mindspeed_prof.ray.cluster import assign

    x, z = ("/s/x", 10, 1), ("/b/z", 10, 2)
    owner = assign([("A", "", "/s", [x]), ("B", "", "/s", [z, x])])
    assert owner == {x: "A", z: "B"}  # B has 10 after z, as many as A: x stays with A


def test_a_node_holds_its_captures_but_not_memory_files(tmp_path: Path) -> None:
    from mindspeed_prof.ray.cluster import holdings

    root = tmp_path / "run"
    trace = root / "integrated" / "rank0_h_1_step1.pt.trace.json"
    trace.parent.mkdir(parents=True)
    trace.write_text('{"traceEvents": []}')
    (trace.parent / "rank0_h_1_step1.memory_timeline.json.gz").write_bytes(b"")
    (trace.parent / "rank0_h_1_step1.memory_snapshot.pickle").write_bytes(b"")
    os.utime(trace, ns=(1_000_000_000, 2_000_000_000))
    assert holdings(str(root)) == (str(root), [(str(trace), 19, 2_000_000_000)])


def test_a_node_without_the_root_holds_nothing_and_reads_tilde_as_its_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mindspeed_prof.ray.cluster import holdings

    monkeypatch.setenv("HOME", str(tmp_path))
    assert holdings("~/nowhere") == (str(tmp_path / "nowhere"), [])
