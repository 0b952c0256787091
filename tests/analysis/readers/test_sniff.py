"""What a file is, by content: every corpus file told apart, any name, at a bounded cost."""

from __future__ import annotations

import gzip
import json
import lzma
import os
import pickle
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from corpus import SETS

from mindspeed_prof.analysis.readers import BadFile, discover, jsonscan, read, sniff
from mindspeed_prof.analysis.readers.kineto.memory import load_snapshot
from mindspeed_prof.analysis.readers.npu.folder import FILE_NAMES
from mindspeed_prof.analysis.readers.sniff import (
    CHROME,
    DECIDE_BYTES,
    EXECUTION_TRACE,
    OP_SUMMARY,
    PICKLE,
    PROFILER_DB,
    SNAPSHOT,
    TORCH_DB,
    TRACE,
    TRACE_LIST,
    decide,
    kind_of,
)
from mindspeed_prof.formats.sqlite_trace import write_db

#: Files of the corpus not named as torch_npu names them, and what each is.
_OTHER_CSV = {"l2_cache.csv": None, "static_op_mem.csv": None, "test.csv": "kernel_details"}
#: msprof's CSVs, named ``<kind>_<timestamp>.csv``: the kind each is (task_time: none read).
_MSPROF_CSV = {
    "op_summary": "op_summary",
    "op_statistic": "op_statistic",
    "api_statistic": "api_statistic",
    "task_time": None,
}


@pytest.fixture(scope="module")
def corpus(corpus_set: Callable[[str], Path]) -> Path:
    """Every corpus set, unpacked side by side."""
    (root,) = {corpus_set(name).parent for name in SETS}
    return root


#: What torch.profiler and our range files write (written out here, not the package's): their
#: categories, and the top-level keys only they write.
_TORCH_CATS = {
    "cpu_op",
    "kernel",
    "gpu_memcpy",
    "gpu_memset",
    "cuda_runtime",
    "cuda_driver",
    "cuda_sync",
    "python_function",
    "user_annotation",
    "gpu_user_annotation",
    "ac2g",
    "async_cpu_to_gpu",
    "async",
    "async_gpu",
    "cpu_instant_event",
    "fwdbwd",
    "Trace",
    "overhead",
    "mtia_runtime",
    "mtia_ccp_events",
    "cuda_profiler_range",
    "Operator",
    "Kernel",
    "Runtime",
    "Memcpy",
    "Memset",
    "stage",
    "step",
    "range",
    "mark",
    "count",
    "iteration",
}
_TORCH_KEYS = {"schemaVersion", "deviceProperties", "distributedInfo", "mindspeed_prof"}


def _whose(events: list[Any], torch: str) -> str:
    """Of the first 256 events: torch's when one has a torch category or a ProfilerStep name,
    another tool's (``chrome``) when one is a duration, counter or instant event."""
    first = [e for e in events[:256] if isinstance(e, dict)]
    if any(
        e.get("cat") in _TORCH_CATS or str(e.get("name", "")).startswith("ProfilerStep#")
        for e in first
    ):
        return torch
    return CHROME if any(e.get("ph") in set("XBECiIben") for e in first) else torch


def _reference(path: Path) -> str | None:
    """What a corpus file is, from the whole of it: JSON parsed whole, a pickle loaded (by the
    plain-containers unpickler), a SQLite file's tables, a CSV by the name torch_npu gives it."""
    raw = path.read_bytes()
    if raw.startswith(b"SQLite format 3"):
        with sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True) as con:
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
        return (
            PROFILER_DB
            if "PYTORCH_API" in tables
            else "analysis_db"
            if ("StepTraceTime" in tables)
            else None
        )
    if raw[:1] == b"\x80":
        snap = load_snapshot(raw)
        return SNAPSHOT if isinstance(snap, dict) and "segments" in snap else None
    raw = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    try:
        doc = json.loads(raw)
    except ValueError:  # a CSV
        names = {name: kind for kind, name in FILE_NAMES.items()}
        if path.name == "operator_details.csv":
            return "operator_details"
        msprof = re.fullmatch(r"([a-z_]+)_\d+\.csv", path.name)
        if msprof and msprof.group(1) in _MSPROF_CSV:
            return _MSPROF_CSV[msprof.group(1)]
        return names[path.name] if path.name in names else _OTHER_CSV[path.name]
    if isinstance(doc, list):
        if not (doc and isinstance(doc[0], dict) and "ph" in doc[0]):
            return None
        return _whose(doc, TRACE_LIST)
    if not isinstance(doc, dict):
        return None
    if isinstance(doc.get("traceEvents"), list):
        return TRACE if _TORCH_KEYS & set(doc) else _whose(doc["traceEvents"], TRACE)
    if "schema" in doc and "nodes" in doc:
        return EXECUTION_TRACE
    ops = [
        op
        for step in doc.values()
        if isinstance(step, dict)
        for group in step.values()
        if isinstance(group, dict)
        for op in group.values()
    ]
    if doc and all(re.fullmatch(r"step\d*", k) for k in doc) and ops:
        if any("Communication Time Info" in op for op in ops):
            return "communication"
        if any(
            "Transport Type" in link for op in ops for link in op.values() if isinstance(link, dict)
        ):
            return "communication_matrix"
    return None


@pytest.mark.slow  # every corpus file, read whole
def test_every_corpus_file_is_what_reading_it_whole_says(corpus: Path) -> None:
    """Each file of every corpus set is the kind a whole read of it finds: Kineto traces
    (whatever their names), the execution trace (not a trace), each torch_npu file as
    torch_npu names it, snapshots; profiler_info and other JSON are nothing."""
    seen: set[str | None] = set()
    for path in sorted(
        p
        for p in corpus.rglob("*")
        if p.is_file()
        and not p.name.startswith(".")  # a cache other tests may leave
        and not p.name.endswith(("-shm", "-wal"))
    ):  # a reader's, beside a db
        kind = kind_of(path)
        assert kind == _reference(path), path
        seen.add(kind)
    assert {
        TRACE,
        TRACE_LIST,
        CHROME,
        EXECUTION_TRACE,
        PROFILER_DB,
        "analysis_db",
        "kernel_details",
        "step_trace_time",
        "communication",
        "communication_matrix",
        "api_statistic",
        "op_statistic",
        "memory_record",
        "operator_memory",
        "npu_module_mem",
        "operator_details",
        None,
    } <= seen


def _kineto(corpus: Path) -> dict[str, Any]:
    raw = (corpus / "kineto_cuda_event_sync" / "event_sync_trace.json.gz").read_bytes()
    doc: dict[str, Any] = json.loads(gzip.decompress(raw))
    return doc


def test_a_large_metadata_object_first_is_skipped_to_traceevents(
    corpus: Path, tmp_path: Path
) -> None:
    doc = _kineto(corpus)
    meta = {f"key{i}": {"value": "v" * 40, "list": list(range(20))} for i in range(300)}
    path = tmp_path / "anything.bin"
    path.write_text(json.dumps({"metadata": meta, **doc}))
    before = len(json.dumps({"metadata": meta}))
    assert before > 25_000
    decision = decide(path)
    assert decision.kind == TRACE and not decision.undecided
    # what precedes traceEvents, and at most one chunk past it
    assert decision.read <= before + len(json.dumps(doc)[:200]) + jsonscan.CHUNK


def test_a_100_mb_value_before_traceevents_is_decided_at_the_bound(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    with open(path, "wb") as f:
        f.write(b'{"metadata": {"blob": "')
        for _ in range(100):
            f.write(b"x" * (1 << 20))
        f.write(b'"}, "traceEvents": []}')
    decision = decide(path)
    assert decision == (None, DECIDE_BYTES, True)  # undecided: not a capture
    assert path.stat().st_size > DECIDE_BYTES
    assert list(discover(tmp_path)) == []
    with pytest.raises(BadFile, match=f"no traceEvents array in its first {DECIDE_BYTES} bytes"):
        read(path)  # named directly: the reader refuses it at the same bound


def test_a_gzip_bomb_is_not_inflated_past_the_bound(tmp_path: Path) -> None:
    member = gzip.compress(b"x" * (8 << 20), compresslevel=9)
    path = tmp_path / "bomb.json"  # a gzip named as plain JSON: told by its first bytes
    path.write_bytes(gzip.compress(b'{"metadata": "') + member * 256)  # 2 GiB inflated
    assert path.stat().st_size < 5 << 20
    decision = decide(path)
    assert decision.undecided and decision.kind is None and decision.read == DECIDE_BYTES


def test_compressed_and_plain_traces_under_any_name(corpus: Path, tmp_path: Path) -> None:
    raw = json.dumps(_kineto(corpus)).encode()
    for name, content in [
        ("a", raw),
        ("b.gz", gzip.compress(raw)),
        ("c.json", lzma.compress(raw)),
        ("d.pickle", gzip.compress(raw)),
    ]:
        (tmp_path / name).write_bytes(content)
        assert kind_of(tmp_path / name) == TRACE, name


@pytest.mark.parametrize(
    "content, kind",
    [
        (b'[{"name": "a", "args": {"ph": 1}, "ph": "X", "ts": 1}]', CHROME),  # no torch category
        (b'[{"name": "a", "cat": "cpu_op", "ph": "X", "ts": 1}]', TRACE_LIST),
        (b'  [\n {"ph": "M"}]', TRACE_LIST),
        (b"[]", None),
        (b"[1, 2]", None),
        (b"[[1, 2], [[3]]]", None),
        (b'[{"name": "a"}]', None),
        (b'{"traceEvents": {"a": 1}}', None),  # not an array of events
        (b'{"nodes": [], "traceEvents": []}', TRACE),  # "nodes" without "schema": look on
        (b'{"schema": "1.0", "nodes": [], "traceEvents": []}', EXECUTION_TRACE),
        (b'{"lr": 0.1, "events": []}', None),
        (b"", None),
        (b"not json", None),
        (b'{"traceEvents": [', TRACE),  # cut short: a trace, which its reader names as cut short
        (b'{"step": {"collective": {"hcom_x": {"Communication Time Info": {}}}}}', "communication"),
        (
            b'{"step3": {"p2p": {}, "collective": {"op@1": {"0-1": {"Transport Type": "HCCS"}}}}}',
            "communication_matrix",
        ),
        (b'{"step3": {"p2p": {"a": 1}}, "other": 2}', None),
    ],
)
def test_json_shapes(tmp_path: Path, content: bytes, kind: str | None) -> None:
    path = tmp_path / "f"
    path.write_bytes(content)
    assert kind_of(path) == kind


def _csv(tmp_path: Path, header: list[str], bom: bool = False) -> Path:
    path = tmp_path / "f.txt"
    text = ",".join(header) + "\n1,2\n"
    path.write_bytes(("\ufeff" if bom else "").encode() + text.encode())
    return path


@pytest.mark.parametrize("kind", list(sniff.CSV_COLUMNS))
def test_csv_kinds_by_their_columns_in_any_order(tmp_path: Path, kind: str) -> None:
    columns = list(sniff.CSV_COLUMNS[kind])
    assert kind_of(_csv(tmp_path, ["Extra", *reversed(columns)], bom=True)) == kind
    assert kind_of(_csv(tmp_path, columns[1:])) != kind  # one column short


def test_msprof_op_summary_header(tmp_path: Path) -> None:
    """torch_npu's own list of op_summary's columns (CsvHeaders.OP_SUMMARY_SHOW_HEADERS)."""
    header = [
        "Device_id",
        "Op Name",
        "OP Type",
        "Task Type",
        "Task Start Time(us)",
        "Task Duration(us)",
        "Task Wait Time(us)",
        "Block Num",
    ]
    assert kind_of(_csv(tmp_path, header)) == OP_SUMMARY


class _Evil:
    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, ("touch pwned",))


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_snapshot_pickles_by_their_first_key(tmp_path: Path, protocol: int) -> None:
    path = tmp_path / "x.pkl"
    for doc, kind in [
        ({"segments": [], "device_traces": [[]]}, SNAPSHOT),
        ({"device_traces": []}, SNAPSHOT),  # one item: no MARK
        ({"x": 1, "segments": []}, PICKLE),
        ({}, PICKLE),
        ([{"segments": []}], PICKLE),
        ({"segments": _Evil()}, SNAPSHOT),  # refused by the unpickler (memory)
        (_Evil(), PICKLE),
        (os.system, PICKLE),
    ]:
        path.write_bytes(pickle.dumps(doc, protocol=protocol))
        assert kind_of(path) == kind, doc
    assert not (tmp_path / "pwned").exists()


def test_sqlite_files_by_their_tables(tmp_path: Path, corpus: Path) -> None:
    wal = corpus / "npu_db_level1" / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    assert kind_of(wal / "ascend_pytorch_profiler_0.db") == PROFILER_DB  # a db in WAL mode:
    assert not list(wal.glob("*-shm")) and not list(wal.glob("*-wal"))  # nothing made beside
    ours = write_db(
        {"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1}]}, tmp_path / "x.bin"
    )
    assert kind_of(ours) == TORCH_DB
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as con:
        con.execute("CREATE TABLE t(a)")
    assert kind_of(other) is None
    (tmp_path / "broken.db").write_bytes(b"SQLite format 3\x00" + b"\x00" * 50)
    assert kind_of(tmp_path / "broken.db") is None


def test_what_cannot_be_read_is_nothing(tmp_path: Path) -> None:
    assert decide(tmp_path) == (None, 0, False)  # a folder
    assert decide(tmp_path / "missing") == (None, 0, False)
    (tmp_path / "bad.gz").write_bytes(b"\x1f\x8b" + b"\x00" * 20)  # a broken gzip
    assert kind_of(tmp_path / "bad.gz") is None
