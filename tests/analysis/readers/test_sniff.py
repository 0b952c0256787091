"""What a file is, by content: every corpus file told apart, whatever its name, at a bounded cost."""

from __future__ import annotations

import gzip
import json
import lzma
import os
import pickle
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from corpus import SETS

from mindspeed_prof.analysis.readers import BadFile, discover, jsonscan, read, sniff
from mindspeed_prof.analysis.readers.npu import FILE_NAMES
from mindspeed_prof.analysis.readers.sniff import (
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

#: torch_npu's output files the readers do not read, and what else a torch_npu folder holds.
_NOT_READ = {"l2_cache.csv", "static_op_mem.csv", "profiler_info", "profiler_metadata.json"}


@pytest.fixture(scope="module")
def corpus(corpus_set: Callable[[str], Path]) -> Path:
    """Every corpus set, unpacked side by side."""
    (root,) = {corpus_set(name).parent for name in SETS}
    return root


def test_every_corpus_file_is_told_apart_by_content(corpus: Path) -> None:
    """Kineto traces are traces, the execution trace is not one; each torch_npu file is the
    kind torch_npu names it (so its name could be anything), profiler_info is nothing read."""
    by_name = {name: kind for kind, name in FILE_NAMES.items()}
    seen: dict[str, set[str | None]] = {}
    for path in sorted(p for p in corpus.rglob("*") if p.is_file()):
        kind = kind_of(path)
        seen.setdefault(SETS[path.relative_to(corpus).parts[0]]["kind"], set()).add(kind)
        name = path.name
        if name.startswith("profiler_info") or name in _NOT_READ:
            assert kind is None, path
        elif name.startswith("ascend_pytorch_profiler"):
            assert kind == PROFILER_DB
        elif name in by_name:
            # trace_view.json is a list of events; which one is torch_npu's is read from its
            # processes (test_npu_lone); operator_details is recognised, not read
            assert kind == (TRACE_LIST if by_name[name] == "trace_view" else by_name[name]), path
        elif name == "operator_details.csv":
            assert kind == "operator_details"
        elif name.endswith("_et.json.gz"):
            assert kind == EXECUTION_TRACE
        else:
            assert kind == TRACE, path
    assert seen["kineto_cuda"] >= {TRACE, EXECUTION_TRACE}
    assert {"kernel_details", "step_trace_time", "communication", "communication_matrix",
            "api_statistic", "op_statistic", "memory_record", "operator_memory",
            "npu_module_mem", TRACE_LIST, "analysis_db"} <= seen["npu_text"]
    assert {PROFILER_DB, "analysis_db"} <= seen["npu_db"]


def _kineto(corpus: Path) -> dict[str, Any]:
    raw = (corpus / "kineto_cuda_event_sync" / "event_sync_trace.json.gz").read_bytes()
    doc: dict[str, Any] = json.loads(gzip.decompress(raw))
    return doc


def test_a_large_metadata_object_first_is_skipped_to_traceevents(corpus: Path,
                                                                  tmp_path: Path) -> None:
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
    assert DECIDE_BYTES < path.stat().st_size
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
    for name, content in [("a", raw), ("b.gz", gzip.compress(raw)), ("c.json", lzma.compress(raw)),
                          ("d.pickle", gzip.compress(raw))]:
        (tmp_path / name).write_bytes(content)
        assert kind_of(tmp_path / name) == TRACE, name


@pytest.mark.parametrize("content, kind", [
    (b'[{"name": "a", "args": {"ph": 1}, "ph": "X", "ts": 1}]', TRACE_LIST),
    (b'  [\n {"ph": "M"}]', TRACE_LIST),
    (b"[]", None), (b"[1, 2]", None), (b"[[1, 2], [[3]]]", None), (b'[{"name": "a"}]', None),
    (b'{"traceEvents": {"a": 1}}', None),  # not an array of events
    (b'{"nodes": [], "traceEvents": []}', TRACE),  # "nodes" without "schema": look on
    (b'{"schema": "1.0", "nodes": [], "traceEvents": []}', EXECUTION_TRACE),
    (b'{"lr": 0.1, "events": []}', None), (b"", None), (b"not json", None),
    (b'{"traceEvents": [', TRACE),  # cut short: a trace, which its reader names as cut short
    (b'{"step": {"collective": {"hcom_x": {"Communication Time Info": {}}}}}',
     "communication"),
    (b'{"step3": {"p2p": {}, "collective": {"op@1": {"0-1": {"Transport Type": "HCCS"}}}}}',
     "communication_matrix"),
    (b'{"step3": {"p2p": {"a": 1}}, "other": 2}', None),
])
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
    header = ["Device_id", "Op Name", "OP Type", "Task Type", "Task Start Time(us)",
              "Task Duration(us)", "Task Wait Time(us)", "Block Num"]
    assert kind_of(_csv(tmp_path, header)) == OP_SUMMARY


class _Evil:
    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, ("touch pwned",))


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_snapshot_pickles_by_their_first_key(tmp_path: Path, protocol: int) -> None:
    path = tmp_path / "x.pkl"
    for doc, kind in [({"segments": [], "device_traces": [[]]}, SNAPSHOT),
                      ({"device_traces": []}, SNAPSHOT),  # one item: no MARK
                      ({"x": 1, "segments": []}, PICKLE), ({}, PICKLE),
                      ([{"segments": []}], PICKLE),
                      ({"segments": _Evil()}, SNAPSHOT),  # refused by the unpickler (memory)
                      (_Evil(), PICKLE), (os.system, PICKLE)]:
        path.write_bytes(pickle.dumps(doc, protocol=protocol))
        assert kind_of(path) == kind, doc
    assert not (tmp_path / "pwned").exists()


def test_sqlite_files_by_their_tables(tmp_path: Path, corpus: Path) -> None:
    ours = write_db({"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1}]},
                    tmp_path / "x.bin")
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
