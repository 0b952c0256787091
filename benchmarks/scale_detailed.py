"""Scale, detailed captures: ``analyse``, ``doctor`` and ``timeline`` on 64, 256 and 1,024
ranks of level1 Kineto traces (5 MB a rank, 4 steps) and of torch_npu text exports (2.5 MB a
rank, the real capture renumbered), made by ``scale_roots`` (cached between runs).

Each command is a whole process, run by a small launcher that reports its wall time, its CPU
seconds (``getrusage(RUSAGE_CHILDREN)``: the command and the reading workers it reaped) and its
peak RSS (``ru_maxrss``: the largest single process; each worker is counted apart). ``analyse
--json --jobs 2`` runs first with every cache entry deleted (a first analysis: every file
decoded), then again (every entry a hit: what is left when nothing is decoded: discovery,
the cache's loads and the analysis across ranks). ``doctor --json``; ``timeline --detail all``
at the default ``--max-mb`` (256). ``--ray``: ``analyse --ray`` on a local cluster of two
nodes (``ray.cluster_utils.Cluster``, one CPU each), at 64 ranks of Kineto traces, against
``--jobs 2`` on the same root; its Ray workers are not the launcher's children, so only its
wall time counts.

Figures: growth from the smallest to the largest root, time (CPU seconds: the machine's two cores
are shared by other work, so wall time varies with it) over the rank ratio (goal 1.1: linear or
better, give or take the 10% that CPU seconds vary between runs on a busy machine) and peak RSS
over the smallest root's (goal 1.25: flat); 1,024 Kineto ranks analysed in 2 minutes on 2 cores
(goal 1), judged on CPU seconds over 2 (the wall time of an idle two-core machine; the wall time
here is in the detail). The planted slow rank must be the verdict's straggler (the torch_npu roots
hold one step, too few to name one: there, the rank the verdict gives as furthest behind) and the
planted slow link's ranks named by a finding (``ok``/``MISSED`` in the detail); torch_npu's matrix
link rows (``--json`` ``comm``, kind ``link``) must put the slow link lowest. The timeline must be
under its budget with every rank's steps and stages and at least its 16 longest operators.
``timeline --detail all --jobs 2`` against ``--jobs 1`` on the middle Kineto root (256 ranks),
each read cold: wall time (goal 0.75x on two cores: reading and writing the tracks in two
processes) and the two files compared byte for byte.
``--quick``: 4 and 10 ranks, no Ray.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.report import Report
from benchmarks.scale_roots import STEPS, kineto_root, npu_root, slow_link, slow_rank
from mindspeed_prof.analysis.judgement.noise import MIN_STEPS

__all__ = ["run"]

_LAUNCHER = """
import json, resource, subprocess, sys, time
t0 = time.perf_counter()
with open(sys.argv[1], "wb") as out:
    rc = subprocess.run(sys.argv[2:], stdout=out, stderr=subprocess.DEVNULL).returncode
use = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps([rc, time.perf_counter() - t0, use.ru_utime + use.ru_stime, use.ru_maxrss]))
"""


def _cli() -> list[str]:
    return [sys.executable, "-m", "mindspeed_prof.cli"]


def measure(args: list[str], out: Path, tree: Path | None = None) -> dict[str, float]:
    """``mindspeed-prof ARGS`` with stdout to ``out``: rc, wall s, CPU s, peak RSS MB; the
    package of the checkout ``tree`` (default: this one)."""
    tree = tree or Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.run(
        [sys.executable, "-c", _LAUNCHER, str(out), *_cli(), *args],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        timeout=3600,
    )
    rc, wall, cpu, rss = json.loads(proc.stdout)
    return {"rc": rc, "wall": wall, "cpu": cpu, "rss": rss / 1024}


def _uncache(root: Path) -> None:
    for entry in root.rglob(".*analysis-cache"):
        entry.unlink()


def _named(doc: dict[str, Any], ranks: int) -> tuple[bool, bool]:
    """Is the planted slow rank the verdict's straggler (on fewer than ``MIN_STEPS`` steps,
    where none is named, the rank it gives as furthest behind); is a link rank named in a
    finding?"""
    v = doc["verdict"]
    straggler = v.get("behind") or v.get("straggler") or {}
    if not straggler and 0 < v["steps"] < MIN_STEPS:
        straggler = v.get("one_off") or {}
    a, b = slow_link(ranks)
    link = any(f"rank {a}" in f["title"] or f"rank {b}" in f["title"] for f in doc["findings"])
    return straggler.get("rank") == slow_rank(ranks), link


def _matrix_lowest(doc: dict[str, Any], ranks: int) -> bool:
    """torch_npu: the lowest-bandwidth HCCS link of the matrix is the planted one."""
    rows = [
        c
        for c in doc["comm"]
        if c["kind"] == "link" and c.get("transport") == "HCCS" and c.get("bandwidth_gbps")
    ]
    if not rows:
        return False
    low = min(rows, key=lambda c: c["bandwidth_gbps"])
    return {int(x) for x in low["link"].split("-")} == set(slow_link(ranks))


def _timeline_ok(path: Path, ranks: int, steps: int, stages: bool) -> str:
    """Every rank's steps, its stages (where the captures have some) and 16 operators (not
    merged) on its track, read back a batch of events at a time."""
    from mindspeed_prof.analysis.readers.kineto.chrome import stream_events

    counts: dict[str, dict[Any, int]] = {"steps": {}, "stages": {}, "ops": {}}
    for batch in stream_events(path):
        for ev in batch:
            if ev.ph != "X" or not isinstance(ev.tid, int):
                continue
            bucket = {1: "steps", 2: "stages"}.get(ev.tid)
            if ev.tid >= 10 and ev.cat != "merged":
                bucket = "ops"
            if bucket is not None:
                counts[bucket][ev.pid] = counts[bucket].get(ev.pid, 0) + 1
    whole = (
        len(counts["steps"]) == ranks
        and all(n == steps for n in counts["steps"].values())
        and (not stages or len(counts["stages"]) == ranks)
        and len(counts["ops"]) == ranks
        and all(n >= 16 for n in counts["ops"].values())
    )
    return "ok" if whole else "MISSED"


def _one(
    kind: str,
    ranks: int,
    root: Path,
    tmp: Path,
    rows: dict[str, Any],
    parts: tuple[str, ...] = ("analyse", "doctor", "timeline"),
) -> None:
    out = tmp / f"{kind}-{ranks}.json"
    row: dict[str, Any] = rows.setdefault(f"{kind}-{ranks}", {})
    row["input_mb"] = sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / 1e6
    if "analyse" in parts:
        _uncache(root)
        row["first"] = measure(["analyse", "--json", "--jobs", "2", str(root)], out)
        doc = json.loads(out.read_text())
        rank_ok, link_ok = _named(doc, ranks)
        row["checks"] = {"slow rank": rank_ok, "slow link": link_ok}
        if kind == "npu":
            row["checks"]["matrix link"] = _matrix_lowest(doc, ranks)
        row["warm"] = measure(["analyse", "--json", "--jobs", "2", str(root)], out)
        _uncache(root)
    if "doctor" in parts:
        row["doctor"] = measure(["doctor", "--json", str(root)], out)
    if "timeline" in parts:
        trace = tmp / f"{kind}-{ranks}.timeline.json"
        row["timeline"] = measure(
            ["timeline", str(root), "-o", str(trace), "--detail", "all", "--jobs", "2"], out
        )
        size = trace.stat().st_size if trace.exists() else 0
        row["timeline_mb"] = size / 1e6
        row["timeline_whole"] = (
            _timeline_ok(trace, ranks, STEPS if kind == "kineto" else 1, kind == "kineto")
            if size
            else "MISSED"
        )
        trace.unlink(missing_ok=True)
    line = json.dumps({f"{kind}-{ranks}": row, "parts": parts})
    print(f"scale_detailed {line}", file=sys.stderr, flush=True)
    if os.environ.get("MINDSPEED_PROF_SCALE_LOG"):  # each root's numbers as soon as they are
        with open(os.environ["MINDSPEED_PROF_SCALE_LOG"], "a") as f:
            f.write(line + "\n")


def _ray(root: Path, tmp: Path) -> dict[str, float]:
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        _uncache(root)
        return measure(["analyse", "--json", "--ray", cluster.address, str(root)], tmp / "ray.json")
    finally:
        _uncache(root)
        cluster.shutdown()


def _text(m: dict[str, float]) -> str:
    return f"{m['wall']:.1f} s wall, {m['cpu']:.1f} s CPU, {m['rss']:.0f} MB"


def run(report: Report) -> None:
    sizes = (4, 10) if report.quick else (64, 256, 1024)
    tmp = Path(tempfile.mkdtemp(prefix="mindspeed-prof-scale-detailed-"))
    rows: dict[str, Any] = {}
    try:
        for kind, make in (("kineto", kineto_root), ("npu", npu_root)):
            for ranks in sizes:
                _one(kind, ranks, make(ranks), tmp, rows)
            _figures(report, kind, sizes, rows)
        _timeline_jobs(report, sizes[1], kineto_root(sizes[1]), tmp)
        if not report.quick:
            ray = _ray(kineto_root(64), tmp)
            jobs = rows["kineto-64"]["first"]
            report.add(
                "analyse --ray, 2 local nodes, 64 Kineto ranks: wall time",
                "--jobs 2 on the same root",
                ray["wall"] / jobs["wall"],
                None,
                f"{ray['wall']:.1f} s vs {jobs['wall']:.1f} s (exit {ray['rc']:.0f})",
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _timeline_jobs(report: Report, ranks: int, root: Path, tmp: Path) -> None:
    """``timeline --detail all`` with ``--jobs 2`` against ``--jobs 1`` on one root, each read
    cold (cache entries deleted first): wall time, and whether the files are the same bytes."""
    got = {}
    for jobs in (2, 1):
        _uncache(root)
        trace = tmp / f"jobs{jobs}.timeline.json"
        args = ["timeline", str(root), "-o", str(trace), "--detail", "all", "--jobs", str(jobs)]
        got[jobs] = (measure(args, tmp / "jobs.out"), trace.read_bytes() if trace.exists() else b"")
        trace.unlink(missing_ok=True)
    _uncache(root)
    (two, a), (one, b) = got[2], got[1]
    report.add(
        f"timeline --detail all --jobs 2, {ranks} kineto ranks: wall time",
        "--jobs 1 on the same root",
        two["wall"] / max(one["wall"], 1e-9),
        0.75,
        f"{two['wall']:.1f} s vs {one['wall']:.1f} s ({two['cpu']:.1f} vs {one['cpu']:.1f} s "
        f"CPU); the same file byte for byte: {'ok' if a == b and a else 'MISSED'}",
    )


def _figures(report: Report, kind: str, sizes: tuple[int, ...], rows: dict[str, Any]) -> None:
    """Growth of each command from the smallest to the largest root it ran on; the largest
    root's time, checks and timeline."""
    for label, key in (
        ("analyse --jobs 2 (first)", "first"),
        ("analyse (cache hits)", "warm"),
        ("doctor", "doctor"),
        ("timeline --detail all", "timeline"),
    ):
        have = [n for n in sizes if key in rows.get(f"{kind}-{n}", {})]
        if len(have) < 2:
            continue
        a, b = rows[f"{kind}-{have[0]}"][key], rows[f"{kind}-{have[-1]}"][key]
        what = f"{have[0]} -> {have[-1]} {kind} ranks"
        report.add(
            f"{label}, {what}: CPU time growth",
            "the rank ratio",
            (b["cpu"] / max(a["cpu"], 1e-9)) / (have[-1] / have[0]),
            1.1,
            f"{have[-1]}: {_text(b)}; {have[0]}: {_text(a)}",
        )
        report.add(
            f"{label}, {what}: peak RSS growth",
            f"{have[0]} ranks",
            b["rss"] / max(a["rss"], 1e-9),
            1.25,
            f"{b['rss']:.0f} MB vs {a['rss']:.0f} MB",
        )
    hi = rows.get(f"{kind}-{sizes[-1]}", {})
    if "first" in hi:
        first = hi["first"]
        report.add(
            f"analyse --jobs 2, {sizes[-1]} {kind} ranks ({hi['input_mb']:,.0f} MB): "
            "CPU s / 2 cores",
            "2 minutes",
            first["cpu"] / 2 / 120.0,
            1.0 if kind == "kineto" else None,
            f"{_text(first)}; {hi['input_mb'] / max(first['cpu'], 1e-9):.1f} MB per "
            "CPU s; "
            + ", ".join(f"{k}: {'ok' if v else 'MISSED'}" for k, v in hi["checks"].items()),
        )
    big = [n for n in sizes if "timeline" in rows.get(f"{kind}-{n}", {})]
    if big:
        row = rows[f"{kind}-{big[-1]}"]
        report.add(
            f"timeline --detail all, {big[-1]} {kind} ranks: size",
            "--max-mb 256",
            row["timeline_mb"] / 256.0,
            1.0,
            f"{row['timeline_mb']:.1f} MB from {row['input_mb']:,.0f} MB; steps, "
            f"stages, 16 longest per rank: {row['timeline_whole']}; "
            f"{_text(row['timeline'])}",
        )
