"""``mindspeed-prof analyse`` against the reference tools, whole processes on the real captures
of the corpus (``tests/fixtures/corpus``; each set copied out and its ``*.xz`` expanded first).

torch_npu sets: ``mindspeed-prof analyse SET --json`` against ``msprof-analyze cluster -d COPY
-m all -o OUT`` (Ascend's tool; the comparison of their figures is
``tests/analysis/test_msprof_reference.py``), on every set msprof-analyze reads: the level0-2
text and db exports, the 4-rank qwen3 set and the GPT-3 set with its folders renamed
``*_ascend_pt`` (as published, msprof-analyze finds no ranks in it). CUDA sets: against a
process that imports HTA and runs ``TraceAnalysis(SET, include_last_profiler_step=True)
.get_temporal_breakdown()`` (the figures compared in
``tests/analysis/readers/device/test_breakdown.py``), on the multi-step Kineto traces HTA loads.
Ours answers more from the same run (every section of
``--json``: stages, steps, device split, communication, top kernels, memory...); msprof-analyze
gives the step split and communication, HTA the device split.

Time: the sum over the sets of each process's wall time, the median of the repeats for each
set (each of ours a first analysis: its cache entries deleted before it; msprof-analyze on a
fresh copy each time, since it writes into its input). Peak RSS: the largest single process, as
``ru_maxrss`` of ``RUSAGE_CHILDREN`` in a small launcher process: the kernel folds each reaped
process's peak into its parent's, so for msprof-analyze, which forks a pool of workers for
each of its recipes, it is the largest of the main process and every worker (ours forks
reading workers too, HTA a pool for parsing); the largest over the sets. The detail also gives
the peak of the whole process tree's summed RSS, sampled every 20 ms (psutil), which counts the
pages forked workers share once per process. Goals: 0.2x the time, 0.5x the memory.

The command's own start: ``mindspeed-prof analyse --json EMPTY`` (a folder with no capture: its
imports, argument parsing and discovery, exit 1), run the same way right after each of ours,
its CPU time (user and system, as the launcher reaps it: a short process's wall time on this
loaded machine is mostly waiting for a core) summed over the sets, against the reference's
whole process tree's CPU time (HTA goal 0.15x, msprof-analyze goal 0.05x; the wall-time
ratio in the detail): what every analysis pays before it reads, against what the reference
takes. The
readers and what they use (numpy, sqlite3) are imported only when a capture needs them.
``--quick``: one set each (npu_text_level0, kineto_nccl_2rank_sampled), one repeat.

Our package's bytecode is compiled first (``compileall``), as ``pip install`` leaves an
installed package, and as HTA's and msprof-analyze's are in site-packages: run from a checkout
where the environment sets ``PYTHONDONTWRITEBYTECODE``, every process would otherwise compile
our modules again (0.12 s of CPU, 14-17% of an analysis of these sets).
"""

from __future__ import annotations

import compileall
import json
import lzma
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

from benchmarks.report import Report

__all__ = ["run"]

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "corpus"
NPU = [
    "npu_text_level0",
    "npu_text_level1",
    "npu_text_level2",
    "npu_db_level0",
    "npu_db_level1",
    "npu_db_level2",
    "npu_text_qwen3_4rank_pp2",
    "npu_text_gpt3_csv_only",
]
CUDA = [
    "kineto_nccl_v100_rank1_of_2",
    "kineto_trace_diff/control",
    "kineto_trace_diff/test",
    "kineto_nccl_2rank_sampled",
    "kineto_cuda_v100_ns_resolution",
    "kineto_nccl_rank0_of_2",
    "kineto_nccl_rank0_of_16",
    "kineto_tb_resnet50_2021",
]

HTA = textwrap.dedent("""
    import logging, sys
    logging.disable(logging.WARNING)
    from hta.trace_analysis import TraceAnalysis
    df = TraceAnalysis(trace_dir=sys.argv[1], include_last_profiler_step=True
                       ).get_temporal_breakdown(visualize=False)
    assert len(df), "no ranks"
""")

# Runs the command, sampling the summed RSS of its process tree; prints its wall time, the
# largest single process's peak (ru_maxrss of the reaped tree) and the sampled tree peak.
_LAUNCHER = textwrap.dedent("""
    import json, resource, subprocess, sys, tempfile, time
    try:
        import psutil
    except ImportError:
        psutil = None
    t0 = time.perf_counter()
    log = tempfile.TemporaryFile(mode="w+")  # not a pipe: a chatty child would fill it
    ok = {int(c) for c in sys.argv[1].split(",")}
    p = subprocess.Popen(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=log, text=True)
    tree = 0
    while p.poll() is None:
        if psutil is not None:
            try:
                top = psutil.Process(p.pid)
                rss = top.memory_info().rss
                for child in top.children(recursive=True):
                    try:
                        rss += child.memory_info().rss
                    except psutil.Error:
                        pass
                tree = max(tree, rss)
            except psutil.Error:
                pass
        time.sleep(0.02)
    wall = time.perf_counter() - t0
    if p.returncode not in ok:
        log.seek(0)
        sys.exit(log.read()[-2000:])
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"wall_s": wall, "rss_kb": use.ru_maxrss, "cpu_s": use.ru_utime +
                      use.ru_stime, "tree_kb": tree // 1024 if psutil else None}))
""")


def _measure(cmd: list[str], ok: str = "0") -> dict[str, Any]:
    """``cmd`` run by the launcher; an exit status outside ``ok`` (e.g. "0,3") is an error."""
    out = subprocess.run(
        [sys.executable, "-c", _LAUNCHER, ok, *cmd],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def _unpack(name: str, dest: Path) -> Path:
    shutil.copytree(CORPUS / name, dest)
    for packed in dest.rglob("*.xz"):
        packed.with_suffix("").write_bytes(lzma.decompress(packed.read_bytes()))
        packed.unlink()
    if name == "npu_text_gpt3_csv_only":  # test_rank_<r> -> rank<r>_ascend_pt
        for folder in sorted(dest.iterdir()):
            folder.rename(dest / f"rank{folder.name.rsplit('_', 1)[1]}_ascend_pt")
    return dest


def _exe(name: str) -> str | None:
    beside = Path(sys.executable).with_name(name)
    return str(beside) if beside.is_file() else shutil.which(name)


def _ours(root: Path) -> dict[str, Any]:
    from mindspeed_prof.formats import CACHE

    for entry in root.rglob(f"*{CACHE}"):  # a first analysis, not a cache hit
        entry.unlink()
    exe = _exe("mindspeed-prof")
    cmd = [exe] if exe else [sys.executable, "-m", "mindspeed_prof.cli"]
    # exit 3: a part of a capture skipped (the GPT-3 set's one short CSV row), as documented
    return _measure([*cmd, "analyse", str(root), "--json"], ok="0,3")


def _start(empty: Path) -> dict[str, Any]:
    """``analyse --json`` on a folder with no capture (exit 1): the command's own start."""
    exe = _exe("mindspeed-prof")
    cmd = [exe] if exe else [sys.executable, "-m", "mindspeed_prof.cli"]
    return _measure([*cmd, "analyse", str(empty), "--json"], ok="1")


def _msprof(root: Path, work: Path) -> dict[str, Any]:
    exe = _exe("msprof-analyze")
    if exe is None:
        raise RuntimeError("msprof-analyze not installed (it is in the test extra)")
    shutil.rmtree(work, ignore_errors=True)
    data = work / "in" / root.name
    shutil.copytree(root, data)
    # (MSPROF_ANALYZE_LOG_FILE is unset: its log goes to stderr, which the launcher drops)
    got = _measure(
        [exe, "cluster", "-d", str(data), "-m", "all", "-o", str(work / "out"), "--force"]
    )
    result = work / "out" / "cluster_analysis_output"
    if not result.is_dir() or not any(result.iterdir()):  # it exits 0 on errors
        raise RuntimeError(f"msprof-analyze wrote nothing for {root.name}")
    return got


def _hta(root: Path) -> dict[str, Any]:
    return _measure([sys.executable, "-c", HTA, str(root)])


def _side(runs: dict[str, list[dict[str, Any]]]) -> tuple[float, int, int | None, str]:
    """Summed median wall, the largest peak RSS, the largest tree peak, per-set detail."""
    walls = {name: statistics.median(r["wall_s"] for r in rs) for name, rs in runs.items()}
    rss = max(r["rss_kb"] for rs in runs.values() for r in rs)
    trees = [r["tree_kb"] for rs in runs.values() for r in rs if r["tree_kb"] is not None]
    return (
        sum(walls.values()),
        rss,
        max(trees) if trees else None,
        ", ".join(f"{name.split('/')[-1]} {s:.2f}" for name, s in walls.items()),
    )


def _compare(
    report: Report,
    what: str,
    other: str,
    ours: dict[str, list[dict[str, Any]]],
    theirs: dict[str, list[dict[str, Any]]],
    answers: str,
) -> None:
    t_ours, rss_ours, tree_ours, per_ours = _side(ours)
    t_them, rss_them, tree_them, per_them = _side(theirs)
    n = len(ours)
    report.add(
        f"`mindspeed-prof analyse --json` on the corpus' {what}: time",
        f"{other}, whole process",
        t_ours / t_them,
        0.2,
        f"{t_ours:.2f} s vs {t_them:.2f} s over {n} set{'s' * (n > 1)} "
        f"(ours: {per_ours}; theirs: {per_them} s); {answers}",
    )
    tree = (
        f"; whole process tree, summed: {tree_ours / 1024:.0f} MB vs {tree_them / 1024:.0f} MB"
        if tree_ours and tree_them
        else ""
    )
    report.add(
        f"`mindspeed-prof analyse --json` on the corpus' {what}: peak RSS",
        f"{other}, its largest process",
        rss_ours / rss_them,
        0.5,
        f"{rss_ours / 1024:.0f} MB vs {rss_them / 1024:.0f} MB{tree}",
    )


def run(report: Report) -> None:
    compileall.compile_dir(CORPUS.parents[2] / "mindspeed_prof", quiet=1)  # as installed
    npu = NPU[:1] if report.quick else NPU
    cuda = CUDA[3:4] if report.quick else CUDA
    reps = 1 if report.quick else 3
    tmp = Path(tempfile.mkdtemp(prefix="bench-ref-"))
    try:
        sets = {name: _unpack(name, tmp / "sets" / name.replace("/", "-")) for name in npu + cuda}
        ours: dict[str, list[dict[str, Any]]] = {n: [] for n in sets}
        start: dict[str, list[dict[str, Any]]] = {n: [] for n in sets}
        empty = tmp / "empty"
        empty.mkdir()
        msprof: dict[str, list[dict[str, Any]]] = {n: [] for n in npu}
        hta: dict[str, list[dict[str, Any]]] = {n: [] for n in cuda}
        missing: dict[str, str] = {}
        for rep in range(reps):
            for name in npu:
                ours[name].append(_ours(sets[name]))
                start[name].append(_start(empty))
                if "msprof" not in missing and (rep < 2 or report.quick):  # 10-30 s a call
                    try:
                        msprof[name].append(_msprof(sets[name], tmp / "msprof"))
                    except (RuntimeError, subprocess.CalledProcessError) as err:
                        missing["msprof"] = str(err).strip().splitlines()[-1][:100]
            for name in cuda:
                ours[name].append(_ours(sets[name]))
                start[name].append(_start(empty))
                if "hta" not in missing:
                    try:
                        hta[name].append(_hta(sets[name]))
                    except subprocess.CalledProcessError as err:
                        missing["hta"] = (err.stderr or str(err)).strip().splitlines()[-1][:100]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for key, what, other, names, theirs, answers in (
        (
            "msprof",
            "torch_npu sets",
            "msprof-analyze cluster -m all",
            npu,
            msprof,
            "theirs: step split and communication; ours: every --json section",
        ),
        (
            "hta",
            "CUDA traces",
            "HTA temporal breakdown",
            cuda,
            hta,
            "theirs: the temporal breakdown; ours: every --json section",
        ),
    ):
        if key in missing:
            for fig, goal in (("time", 0.2), ("peak RSS", 0.5)):
                report.add(
                    f"`mindspeed-prof analyse --json` on the corpus' {what}: {fig}",
                    other,
                    float("nan"),
                    goal,
                    f"{other.split()[0]} not runnable here: {missing[key]}",
                )
            continue
        _compare(report, what, other, {n: ours[n] for n in names}, theirs, answers)
        _start_figure(
            report,
            what,
            other,
            {n: start[n] for n in names},
            theirs,
            0.05 if key == "msprof" else 0.15,
        )


def _start_figure(
    report: Report,
    what: str,
    other: str,
    start: dict[str, list[dict[str, Any]]],
    theirs: dict[str, list[dict[str, Any]]],
    goal: float,
) -> None:
    def cpu(runs: dict[str, list[dict[str, Any]]]) -> float:
        return float(sum(statistics.median(r["cpu_s"] for r in rs) for rs in runs.values()))

    t_start, rss, _, _ = _side(start)
    t_them = _side(theirs)[0]
    c_start, c_them = cpu(start), cpu(theirs)
    n = len(start)
    report.add(
        f"`mindspeed-prof analyse`'s own start (imports, discovery), the corpus' {what}: CPU time",
        f"{other}, whole process tree, CPU time",
        c_start / c_them,
        goal,
        f"{c_start:.2f} s vs {c_them:.2f} s of CPU over {n} set{'s' * (n > 1)} "
        f"({c_start / n:.3f} s a start; peak RSS {rss / 1024:.0f} MB); wall: "
        f"{t_start:.2f} s vs {t_them:.2f} s ({t_start / t_them:.3f}x)",
    )
