"""Captures elsewhere: a Ray worker on a second node wrote to its own disk, and the driver's
``cluster_summary.json`` lists those files. ``analyse`` of the driver's root names the ranks,
the folder and the node, and exits 3; doctor says where they are (not "no capture file found").
A worker Ray restarted is named, with the files its earlier process left.

A faithful double of the second node: rank 1's captures moved out of the root (to a folder
that is then removed: another machine's disk), and the summary written by
``write_cluster_summary`` from entries shaped as ``ProfilerMixin.profiler_summary`` gives them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from capture_fixtures import make_run

from mindspeed_prof.analysis.doctor import doctor
from mindspeed_prof.cli.common import Exit
from mindspeed_prof.formats.cluster import WorkerSummary
from mindspeed_prof.formats.record import CaptureRecord, FileEntry
from mindspeed_prof.ray import write_cluster_summary

NODES = {0: "a1" * 28, 1: "b2" * 28}  # Ray node ids: 56 hex digits
HOSTS = {0: "driver-host", 1: "node-two"}


def _summary(rank: int, files: list[Path], run: str, **more: Any) -> WorkerSummary:
    """A worker's summary as ``profiler_summary`` returns it and ``collect`` marks it."""
    return WorkerSummary(
        run=run,
        rank=rank,
        role="integrated",
        host=HOSTS[rank],
        node=NODES[rank],
        pid=1000 + rank,
        enabled=True,
        failed=False,
        captures=[CaptureRecord(rank=rank, files=[str(f) for f in files])],
        files=[FileEntry(str(f), f.stat().st_size) for f in files],
        **{"status": "ok", **more},
    )


def _run_id(path: Path) -> str:
    return str(json.loads(path.read_bytes())["mindspeed_prof"]["run"])


@pytest.fixture
def two_nodes(tmp_path: Path) -> tuple[Path, Path, list[Path]]:
    """The driver's root (rank 0's captures and the summary) and rank 1's files, moved to
    the second node's folder, which then leaves this machine."""
    root = make_run(tmp_path / "driver" / "profiler_data")
    other = tmp_path / "node2" / "profiler_data" / "integrated"
    other.mkdir(parents=True)
    moved = []
    for f in sorted((root / "integrated").glob("rank1_*")):
        moved.append(Path(shutil.move(str(f), other / f.name)))
    mine = sorted((root / "integrated").glob("rank0_*"))
    run = _run_id(next(p for p in mine if p.name.endswith(".mstx.trace.json")))
    write_cluster_summary(root, [_summary(0, mine, run), _summary(1, moved, run)])
    return root, other, moved


def _analyse(root: Path, *more: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mindspeed_prof.cli", "analyse", str(root), *more],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_analyse_names_the_ranks_whose_captures_are_on_another_node(
    two_nodes: tuple[Path, Path, list[Path]],
) -> None:
    root, other, moved = two_nodes
    shutil.rmtree(other.parent.parent)  # on the other node's disk only
    proc = _analyse(root, "--json")
    assert proc.returncode == Exit.PARTIAL, proc.stderr
    (line,) = [x for x in proc.stderr.splitlines() if "cluster summary" in x]
    assert line.startswith(
        f"mindspeed-prof: rank 1: the cluster summary names {len(moved)} files ("
    )
    assert f"under {other} on node {NODES[1][:12]} (host node-two)" in line
    assert "not on this machine" in line and "--ray" in line
    doc = json.loads(proc.stdout)
    assert doc["ranks"] == [0]
    (away,) = doc["elsewhere"]
    assert (away["rank"], away["node"], away["folder"], away["files"], away["here"]) == (
        1,
        NODES[1],
        str(other),
        len(moved),
        False,
    )
    text = _analyse(root)  # the tables too: one line, exit 3
    assert text.returncode == Exit.PARTIAL and text.stderr.count("cluster summary") == 1


def test_a_folder_on_this_machine_outside_the_root_is_named_too(
    two_nodes: tuple[Path, Path, list[Path]],
) -> None:
    root, other, _ = two_nodes
    proc = _analyse(root)
    assert proc.returncode == Exit.PARTIAL
    assert "that folder is on this machine: analyse it too" in proc.stderr


def test_nothing_is_said_once_the_files_are_under_the_root(
    two_nodes: tuple[Path, Path, list[Path]],
) -> None:
    """Copied under the analysed root (``rsync`` from the node), by name: read, not elsewhere;
    and a copy of the whole root elsewhere still finds its own files."""
    root, other, moved = two_nodes
    for f in moved:
        shutil.copy(f, root / "integrated" / f.name)
    shutil.rmtree(other.parent.parent)
    proc = _analyse(root)
    assert proc.returncode == Exit.OK, proc.stderr
    assert "cluster summary" not in proc.stderr
    copy = root.parent.parent / "copy"
    shutil.copytree(root, copy / "profiler_data")
    shutil.rmtree(root)
    again = _analyse(copy / "profiler_data")
    assert again.returncode == Exit.OK and "cluster summary" not in again.stderr


def test_doctor_says_where_they_are(two_nodes: tuple[Path, Path, list[Path]]) -> None:
    root, other, _ = two_nodes
    shutil.rmtree(other.parent.parent)
    health = doctor(root)
    kinds = {f.kind: f for f in health.findings}
    assert "missing_rank" not in kinds  # not "no capture file found"
    away = kinds["elsewhere"]
    assert away.where == "rank 1" and str(other) in away.message
    assert f"node {NODES[1][:12]} (host node-two)" in away.message


def test_a_restarted_worker_and_its_earlier_files_are_named(
    two_nodes: tuple[Path, Path, list[Path]],
) -> None:
    """Ray restarted rank 1's actor: the summary is its new process's (``restarted``); the
    earlier process's range file is beside it."""
    root, other, moved = two_nodes
    earlier = other / "rank1_node-two_999_abcdef_step1.mstx.trace.json"
    shutil.copy(next(f for f in moved if f.name.endswith(".mstx.trace.json")), earlier)
    run = _run_id(earlier)
    shutil.move(str(other), root / "integrated-node2")  # all of it under the root now
    earlier = root / "integrated-node2" / earlier.name
    files = sorted((root / "integrated-node2").glob("rank1_*"))
    again = [f for f in files if f.name != earlier.name]
    mine = sorted((root / "integrated").glob("rank0_*"))
    write_cluster_summary(
        root,
        [
            _summary(0, mine, run),
            _summary(
                1,
                again,
                run,
                status="restarted",
                restarted=True,
                earlier_files=[FileEntry(str(earlier), earlier.stat().st_size)],
            ),
        ],
    )
    health = doctor(root)
    (restart,) = [f for f in health.findings if f.kind == "worker_restarted"]
    assert restart.where == "rank 1"
    assert "restarted by Ray during the run" in restart.message
    assert earlier.name in restart.message
    proc = _analyse(root)
    assert "rank 1 (host node-two, pid 1001): restarted by Ray" in proc.stderr
    assert "cluster summary" not in proc.stderr  # nothing elsewhere
