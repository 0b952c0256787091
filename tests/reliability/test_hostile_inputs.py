"""Malformed and hostile captures: one clear line each, the rest analysed, memory bounded."""

from __future__ import annotations

import gzip
import json
import resource
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from capture_fixtures import make_run
from helpers import count

from mindspeed_prof.analysis.analyse import analyse_runs
from mindspeed_prof.analysis.report.report import report as make_report
from mindspeed_prof.analysis.report.tables import tables
from mindspeed_prof.views.html import write_report

EV = {"ph": "X", "cat": "user_annotation", "name": "actor_update", "ts": 1.0, "dur": 5.0}


def trace(events: list) -> str:
    return json.dumps({"traceEvents": events})


# name -> (content, readable?) ; readable files must still be analysed, others named once.
CASES: dict[str, tuple[bytes, bool]] = {
    "truncated": (trace([EV] * 3)[:-7].encode(), False),
    "empty": (b"", False),
    "binary": (bytes(range(256)) * 4, False),
    "bad_utf8": (b'{"traceEvents": [{"name": "\xff\xfe", "ph": "X"}]}', False),
    "not_json_text": (b"hello world", False),
    "json_number": (b"42", False),
    "json_string": (b'"traceEvents"', False),
    "wrong_schema_events": (b'{"traceEvents": 5}', False),
    "event_not_object": (b'{"traceEvents": [1, 2, 3]}', False),
    "name_is_number": (trace([{**EV, "name": 5}]).encode(), False),
    "deep_nesting": (b'{"traceEvents": [{"args": ' + b"[" * 50000 + b"]" * 50000 + b"}]}", False),
    "nan_literal": (b'{"traceEvents": [{"ph": "X", "ts": NaN}]}', False),
    "huge_ints": (
        trace(
            [{**EV, "ts": 2**70, "dur": 2**66, "id": 2**64 + 1, "args": {"step": 2**65}}]
        ).encode(),
        True,
    ),
    "string_timestamps": (
        trace([{**EV, "ts": "1764496800000000.250", "dur": "12.5"}]).encode(),
        True,
    ),
    "missing_fields": (trace([{"ph": "X"}, {"name": "x"}, {}]).encode(), True),
    "negative_dur": (trace([{**EV, "dur": -5}]).encode(), True),
    "array_format": (json.dumps([EV, EV]).encode(), True),
    "no_events_key": (b'{"schemaVersion": 1}', True),
    "bom_prefix": (b"\xef\xbb\xbf" + trace([EV]).encode(), False),
    "device_without_steps": (
        trace(
            [
                {
                    "ph": "X",
                    "cat": "kernel",
                    "name": "sgemm",
                    "ts": 1,
                    "dur": 5,
                    "args": {"stream": 7},
                }
            ]
        ).encode(),
        True,
    ),
    "overlapping_collectives": (
        trace(
            [{"ph": "X", "cat": "user_annotation", "ts": 0, "dur": 50, "name": "ProfilerStep#1"}]
            + [
                {
                    "ph": "X",
                    "cat": "kernel",
                    "name": "ncclKernel_x",
                    "ts": t,
                    "dur": 10,
                    "args": {"stream": 9},
                }
                for t in (1, 5)
            ]
        ).encode(),
        True,
    ),
    "html_names": (
        trace(
            [
                {**EV, "name": "<script>alert(1)</script>", "cat": "stage"},
                {**EV, "name": "--><img src=x onerror=alert(2)>", "cat": "cpu_op"},
            ]
        ).encode(),
        True,
    ),
}


def build(root: Path) -> dict[Path, bool]:
    d = root / "integrated"
    d.mkdir(parents=True, exist_ok=True)
    files = {}
    for name, (content, ok) in CASES.items():
        p = d / f"rank7_{name}_step1.pt.trace.json"
        p.write_bytes(content)
        files[p] = ok
    gz = d / "rank7_bad_gzip_step1.pt.trace.json.gz"
    gz.write_bytes(b"\x1f\x8b\x08\x00garbage")
    files[gz] = False
    gz_ok = d / "rank7_good_gzip_step1.pt.trace.json.gz"
    gz_ok.write_bytes(gzip.compress(trace([EV]).encode()))
    files[gz_ok] = True
    db = d / "rank7_not_sqlite_step1.pt.trace.db"
    db.write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)
    files[db] = False
    db2 = d / "rank7_wrong_tables_step1.pt.trace.db"
    con = sqlite3.connect(db2)
    con.execute("CREATE TABLE other(x)")
    con.close()
    files[db2] = False
    cut = d / "rank7_cut_step1.memory_timeline.json.gz"
    cut.write_bytes(gzip.compress(json.dumps([[1, 2, 3], [[0, 8], [0, 16], [0, 8]]]).encode())[:30])
    files[cut] = False
    sparse = d / "rank7_sparse_1gb_step1.pt.trace.json"
    with open(sparse, "wb") as f:
        f.truncate(1024**3)  # 1 GB of holes: must be refused without reading it
    files[sparse] = False
    npu = d / "rank7_h_1_2026_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    npu.mkdir(parents=True)
    (npu / "trace_view.json").write_text("{broken")
    files[npu.parent] = False
    return files


#: Readable files with bad events: named once (as skipped parts), the rest of them analysed.
PARTLY = ("negative_dur", "missing_fields", "overlapping_collectives", "huge_ints")
#: Read whole, but how they were read is worth a note (not a skipped part).
NOTED = ("device_without_steps",)


def _named(files: dict[Path, bool]) -> set[Path]:
    return {p for p, ok in files.items() if not ok or any(k in p.name for k in PARTLY)}


def test_hostile_files_one_line_each_rest_analysed(tmp_path: Path) -> None:
    make_run(tmp_path, ranks=(0,), steps=1)
    files = build(tmp_path)
    count("hostile analysis files tried", len(files))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # the hostile files name no run: they are the run "legacy", apart from the good one
    runs = analyse_runs(tmp_path, run="all")
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    (result,) = [r for r in runs if r.run is not None and r.run.legacy]
    (good,) = [r for r in runs if r.run is not None and not r.run.legacy]
    assert {r.rank for r in tables(good).stage_rank} == {0}  # the good run is still there
    assert grown_mb < 200, f"peak memory grew {grown_mb:.0f} MB"
    bad = {Path(line.split(": ", 1)[0]) for line in result.bad}
    assert bad == _named(files)
    assert len(result.bad) == len(bad)  # one line per file
    assert all("\n" not in line for line in result.bad)
    noted = {Path(line.split(": ", 1)[0]) for line in tables(result).notes}
    assert noted == {p for p in files if any(k in p.name for k in NOTED)}
    read = {t.path for t in result.traces}
    assert {p for p, ok in files.items() if ok} <= read
    assert {r.rank for r in tables(result).stage_rank} == {7}
    report = write_report(make_report(result), tmp_path / "report.html").read_text()
    assert "<script>alert(1)" not in report and "&lt;script&gt;alert(1)" in report
    assert "<img src=x" not in report


def test_cli_exit_code_and_lines(tmp_path: Path) -> None:
    make_run(tmp_path, ranks=(0,), steps=1)
    files = build(tmp_path)
    # the hostile files name no run: they are the run "legacy", apart from the good one
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mindspeed_prof.cli",
            "analyse",
            str(tmp_path),
            "--json",
            "--run",
            "legacy",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 3
    lines = [line for line in proc.stderr.splitlines() if line.startswith("mindspeed-prof: ")]
    assert lines[0].startswith(
        f"mindspeed-prof: 2 runs under {tmp_path}; this is the newest, legacy"
    )
    lines = lines[1:]
    skipped = [line for line in lines if line.startswith("mindspeed-prof: skipped ")]
    assert len(skipped) == len(_named(files))
    assert len(lines) - len(skipped) == len(NOTED)  # each a "note:" line
    json.loads(proc.stdout)
    shutil.rmtree(tmp_path / "integrated")
