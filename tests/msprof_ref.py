"""msprof-analyze (Ascend's analysis tool, PyPI ``msprof-analyze``, in the ``test`` extra) as a
reference for the torch_npu figures: run as a subprocess on a copy of a capture, its output
parsed into plain dicts, every time in milliseconds.

- :func:`cluster` runs ``msprof-analyze cluster -d COPY -m MODE -o OUT`` and reads
  ``cluster_analysis_output``: a text export's ``cluster_step_trace_time.csv`` and
  ``cluster_communication.json``, or a db export's ``cluster_analysis.db``
  (``ClusterStepTraceTime``, ``ClusterCommunicationTime`` + ``ClusterCommunicationBandwidth``,
  and the recipes' ``ClusterTimeSummary`` and ``SlowRank``).
- :func:`advisor_overall` runs ``msprof-analyze advisor computation -d COPY --agent`` on one
  rank folder and reads its Overall Summary (Computing, Uncovered Communication, Free, E2E).

The tool exits 0 even when it logged an ERROR and wrote nothing, so each function raises
:class:`MsprofError` (with the ERROR lines) when the output it needs is missing. It writes into
its input without ``-o`` and deletes an existing output folder in db modes: it only ever sees a
copy. Its ``--version`` prints a build URL with a credential in it: never call it.

Units: torch_npu's step-trace figures are microseconds (ms here); its communication files are
already ms; sizes are MB as torch_npu writes them (1024**2 bytes), bandwidth GB/s (= MB/ms).
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "Cluster",
    "MsprofError",
    "advisor_overall",
    "cluster",
    "cluster_from_json",
    "cluster_to_json",
    "executable",
]

US = 1000.0  # microseconds per millisecond
OUTPUT = "cluster_analysis_output"

#: cluster_step_trace_time.csv column -> key (us there, ms here).
STEP_CSV = {
    "Computing": "computing",
    "Communication(Not Overlapped)": "comm_not_overlapped",
    "Overlapped": "overlapped",
    "Communication": "communication",
    "Free": "free",
    "Stage": "stage",
    "Bubble": "bubble",
    "Preparing": "preparing",
}
#: ClusterStepTraceTime (db) column -> key.
STEP_DB = {
    "computing": "computing",
    "communication_not_overlapped": "comm_not_overlapped",
    "overlapped": "overlapped",
    "communication": "communication",
    "free": "free",
    "stage": "stage",
    "bubble": "bubble",
    "preparing": "preparing",
}
#: ClusterTimeSummary (recipe cluster_time_summary) column -> key (us there, ms here).
SUMMARY = {
    "stepTime": "step_time",
    "computation": "computing",
    "communicationNotOverlapComputation": "comm_not_overlapped",
    "communicationOverlapComputation": "overlapped",
    "communication": "communication",
    "free": "free",
    "memory": "memory",
    "memoryNotOverlapComputationCommunication": "memory_not_overlapped",
}
#: Communication times, as cluster_communication.json and ClusterCommunicationTime name them.
TIME_JSON = {
    "Elapse Time(ms)": "elapse_ms",
    "Wait Time(ms)": "wait_ms",
    "Transit Time(ms)": "transit_ms",
    "Synchronization Time(ms)": "sync_ms",
    "Idle Time(ms)": "idle_ms",
}
TIME_DB = {
    "elapsed_time": "elapse_ms",
    "wait_time": "wait_ms",
    "transit_time": "transit_ms",
    "synchronization_time": "sync_ms",
    "idle_time": "idle_ms",
}
#: The advisor's Overall Summary rows -> key (ms as it prints them, 3 decimals).
OVERALL = {
    "Computing Time": "computing",
    "Uncovered Communication Time": "comm_not_overlapped",
    "-- Wait": "comm_wait",
    "Free Time": "free",
    "E2E Time": "e2e",
}


class MsprofError(RuntimeError):
    """msprof-analyze is missing, or did not write what was asked for (its ERROR lines)."""


def executable() -> str:
    """The ``msprof-analyze`` console script of this environment (the test extra installs it)."""
    beside = Path(sys.executable).with_name("msprof-analyze")
    found = str(beside) if beside.is_file() else shutil.which("msprof-analyze")
    if found is None:
        raise MsprofError(
            "msprof-analyze is not installed: it is in the test extra (pip install -e '.[test]')"
        )
    return found


def _run(args: list[str], work: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "AGENT_MODE"}
    env["MSPROF_ANALYZE_LOG_FILE"] = str(work / "msprof_analyze.log")  # not into $TMPDIR
    env["TQDM_DISABLE"] = "1"
    proc = subprocess.run(
        [executable(), *args],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    (work / "stdout.log").write_text(proc.stdout)
    (work / "stderr.log").write_text(proc.stderr)
    return proc


def _errors(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [ln for ln in (proc.stderr + proc.stdout).splitlines() if "[ERROR]" in ln]
    return "\n".join(lines[:10]) or f"exit {proc.returncode}, no ERROR line"


def _copy(src: Path, work: Path) -> Path:
    """``src`` (a folder of rank folders, or one) copied to ``work/in/<name>``."""
    work.mkdir(parents=True, exist_ok=True)
    dest = work / "in" / src.name
    shutil.copytree(src, dest)
    return dest


@dataclass
class Cluster:
    """What ``cluster`` wrote, parsed; keys are (rank, step) and (rank, step, op)."""

    kind: str  # "text" or "db": what msprof-analyze took the input for
    #: (rank, step) -> computing, comm_not_overlapped, overlapped, communication, free, stage,
    #: bubble, preparing (ms): each rank's step trace as msprof-analyze gathered it.
    steps: dict[tuple[int, int | None], dict[str, float]] = field(default_factory=dict)
    #: (rank, step, op instance) -> elapse_ms, wait_ms, transit_ms, sync_ms, idle_ms, group,
    #: links {link type: size_mb, time_ms, bandwidth_gbps}. "Total Op Info" is left out.
    comm: dict[tuple[int, int | None, str], dict[str, Any]] = field(default_factory=dict)
    #: (rank, step) -> ClusterTimeSummary's figures (ms); the cluster_time_summary recipe.
    time_summary: dict[tuple[int, int | None], dict[str, float]] = field(default_factory=dict)
    #: rank -> votes; the slow_rank recipe (empty: no slow rank found).
    slow_rank: dict[int, int] = field(default_factory=dict)


def cluster_to_json(c: Cluster) -> dict[str, Any]:
    """A :class:`Cluster` as JSON (its keys as lists): :func:`cluster_from_json` reads it."""
    return {
        "kind": c.kind,
        "steps": [[*k, v] for k, v in c.steps.items()],
        "comm": [[*k, v] for k, v in c.comm.items()],
        "time_summary": [[*k, v] for k, v in c.time_summary.items()],
        "slow_rank": [[k, v] for k, v in c.slow_rank.items()],
    }


def cluster_from_json(doc: dict[str, Any]) -> Cluster:
    return Cluster(
        doc["kind"],
        steps={(r, s): v for r, s, v in doc["steps"]},
        comm={(r, s, op): v for r, s, op, v in doc["comm"]},
        time_summary={(r, s): v for r, s, v in doc["time_summary"]},
        slow_rank={r: v for r, v in doc["slow_rank"]},
    )


def cluster(src: Path, work: Path, mode: str = "all", timeout: float = 300.0) -> Cluster:
    """``msprof-analyze cluster -m MODE`` on a copy of ``src`` (under ``work``), parsed.

    Text exports support ``all`` (and the communication modes) only; recipes need the db
    export. A folder whose ranks hold ``analysis.db`` is read as db, text files or not.
    """
    data = _copy(src, work)
    out = work / "out"
    proc = _run(["cluster", "-d", str(data), "-m", mode, "-o", str(out), "--force"], work, timeout)
    result = out / OUTPUT
    if not result.is_dir() or not any(result.iterdir()):
        raise MsprofError(f"cluster -m {mode} on {src.name}: no output\n{_errors(proc)}")
    parsed = read_output(result)
    need = {"all": "steps", "cluster_time_summary": "time_summary", "slow_rank": "slow_rank"}
    if mode in need and not getattr(parsed, need[mode]):
        raise MsprofError(
            f"cluster -m {mode} on {src.name}: nothing of it in {result}\n{_errors(proc)}"
        )
    return parsed


def _step(value: Any) -> int | None:
    """``50``, ``'50'``, ``'step50'`` -> 50; empty or negative -> None."""
    m = re.fullmatch(r"(?:step)?(-?\d+)", str(value).strip()) if value is not None else None
    return int(m.group(1)) if m and int(m.group(1)) >= 0 else None


def _float(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def read_output(result: Path) -> Cluster:
    """A ``cluster_analysis_output`` folder: its text files, else ``cluster_analysis.db``."""
    if (result / "cluster_step_trace_time.csv").is_file() or (
        result / "cluster_communication.json"
    ).is_file():
        return _read_text(result)
    db = result / "cluster_analysis.db"
    if not db.is_file():
        raise MsprofError(f"{result}: neither text files nor cluster_analysis.db")
    return _read_db(db)


def _read_text(result: Path) -> Cluster:
    res = Cluster("text")
    path = result / "cluster_step_trace_time.csv"
    if path.is_file():
        with open(path, newline="") as fh:
            for row in csv.DictReader(fh):
                if row.get("Type", "rank").strip() != "rank":  # pipeline-stage max rows
                    continue
                res.steps[(int(row["Index"]), _step(row["Step"]))] = {
                    key: v / US
                    for col, key in STEP_CSV.items()
                    if (v := _float(row.get(col))) is not None
                }
    path = result / "cluster_communication.json"
    if path.is_file():
        for _group, steps in json.loads(path.read_text()).items():
            for step, ops in steps.items():
                for op_key, per_rank in ops.items():
                    op, _, group = op_key.partition("@")
                    if op == "Total Op Info":
                        continue
                    for rank, info in per_rank.items():
                        times = info.get("Communication Time Info", {})
                        entry: dict[str, Any] = {
                            key: float(times.get(col) or 0.0) for col, key in TIME_JSON.items()
                        }
                        entry["group"] = group
                        entry["links"] = {
                            link: {
                                "size_mb": float(v.get("Transit Size(MB)") or 0.0),
                                "time_ms": float(v.get("Transit Time(ms)") or 0.0),
                                "bandwidth_gbps": _float(v.get("Bandwidth(GB/s)")),
                            }
                            for link, v in (info.get("Communication Bandwidth Info") or {}).items()
                        }
                        res.comm[(int(rank), _step(step), op)] = entry
    return res


def _read_db(path: Path) -> Cluster:
    res = Cluster("db")
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}

        def rows(table: str) -> list[dict[str, Any]]:
            if table not in tables:
                return []
            return [dict(r) for r in con.execute(f'SELECT * FROM "{table}"')]

        for row in rows("ClusterStepTraceTime"):
            if row["type"] == "rank":
                res.steps[(int(row["index"]), _step(row["step"]))] = {
                    key: v / US
                    for col, key in STEP_DB.items()
                    if (v := _float(row.get(col))) is not None
                }
        for row in rows("ClusterCommunicationTime"):
            if row["hccl_op_name"] == "Total Op Info":
                continue
            entry: dict[str, Any] = {key: float(row[col] or 0.0) for col, key in TIME_DB.items()}
            entry["group"] = row["group_name"]
            entry["links"] = {}
            res.comm[(int(row["rank_id"]), _step(row["step"]), row["hccl_op_name"])] = entry
        for row in rows("ClusterCommunicationBandwidth"):
            # one row per op, link type and packet size: size, time and bandwidth repeat
            found = res.comm.get((int(row["rank_id"]), _step(row["step"]), row["hccl_op_name"]))
            if found is not None:
                found["links"][row["band_type"]] = {
                    "size_mb": float(row["transit_size"] or 0.0),
                    "time_ms": float(row["transit_time"] or 0.0),
                    "bandwidth_gbps": _float(row["bandwidth"]),
                }
        for row in rows("ClusterTimeSummary"):
            res.time_summary[(int(row["rank"]), _step(row["step"]))] = {
                key: v / US
                for col, key in SUMMARY.items()
                if (v := _float(row.get(col))) is not None
            }
        for row in rows("SlowRank"):
            res.slow_rank[int(row["rankId"])] = int(row["slowAffectCount"])
    finally:
        con.close()
    return res


def advisor_overall(rank_folder: Path, work: Path, timeout: float = 300.0) -> dict[str, float]:
    """The advisor's Overall Summary of one rank (``advisor computation --agent``), in ms:
    computing, comm_not_overlapped, comm_wait, free, e2e. Its own computation: from
    trace_view.json's Overlap Analysis lanes (text) or the db's raw TASK, COMPUTE_TASK_INFO
    and COMMUNICATION_OP rows (db), over the whole capture."""
    data = _copy(rank_folder, work)
    proc = _run(
        [
            "advisor",
            "computation",
            "-d",
            str(data),
            "-o",
            str(work / "out"),
            "-l",
            "en",
            "--force",
            "--agent",
        ],
        work,
        timeout,
    )
    try:
        doc = json.loads(proc.stdout)
        table = doc["message"]["Overall Summary"]
    except (ValueError, KeyError, TypeError):
        raise MsprofError(
            f"advisor on {rank_folder.name}: no Overall Summary\n{_errors(proc)}"
        ) from None
    head = table["headers"]
    out = {}
    for values in table["data"]:
        row = dict(zip(head, values))
        key = OVERALL.get(str(row["Performance Index"]).strip())
        if key and key not in out:  # "-- Wait" appears once, under Uncovered Communication
            out[key] = float(row["Duration(ms)"])
    if set(out) != set(OVERALL.values()):
        raise MsprofError(
            f"advisor on {rank_folder.name}: Overall Summary lacks "
            f"{sorted(set(OVERALL.values()) - set(out))}"
        )
    return out
