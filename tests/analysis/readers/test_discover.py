"""Discovery: every capture whatever its name, found by content (``sniff``), read the same."""

from __future__ import annotations

import gzip
import json
import lzma
import shutil
import tempfile
from pathlib import Path
from typing import Any, cast

import msgspec
import pytest
import torch
from corpus import CORPUS, SETS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.cache import encode
from mindspeed_prof.analysis.readers import TraceData, discover, read
from mindspeed_prof.analysis.report.tables import tables
from mindspeed_prof.cli import main


@pytest.fixture(scope="module")
def torch_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A trace written by torch.profiler itself (as another trainer would), 2 steps."""
    path = tmp_path_factory.mktemp("torch") / "trace.json"
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(2):
            with torch.profiler.record_function("actor_update"):
                torch.randn(8, 8) @ torch.randn(8, 8)
            prof.step()
    prof.export_chrome_trace(str(path))
    return path


def test_other_trainers_traces_are_found_by_content(torch_trace: Path, tmp_path: Path) -> None:
    raw = torch_trace.read_bytes()
    (tmp_path / "rank-3.json.gz").write_bytes(gzip.compress(raw))
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "worker0.1700000000.pt.trace.json").write_bytes(raw)
    (tmp_path / "a" / "anything.json").write_bytes(raw)
    not_traces = {
        "config.json": b'{"lr": 0.1}',
        "list.json": b"[1, 2]",
        "broken.json.gz": b"not gzip",
        "events.json": b'{"events": []}',
        "manifest.json": raw,
        "rank0.summary.json": raw,
        "analysis.json": raw,
        ".hidden.json": raw,
    }
    for name, content in not_traces.items():
        (tmp_path / name).write_bytes(content)
    found = [p.relative_to(tmp_path).as_posix() for p in discover(tmp_path)]
    assert found == ["a/anything.json", "a/b/worker0.1700000000.pt.trace.json", "rank-3.json.gz"]
    result = analyse(tmp_path)
    assert result.bad == [] and tables(result).ranks == [3, None]
    by_file = {i.file: i for i in tables(result).inventory}
    assert by_file["rank-3.json.gz"].events > 0


def test_a_stage_recorded_with_record_function_counts(torch_trace: Path, tmp_path: Path) -> None:
    shutil.copy(torch_trace, tmp_path / "trace.json")
    rows = tables(analyse(tmp_path)).stage_rank
    assert [(r.stage, r.count) for r in rows] == [("actor_update", 2)]


def test_torch_npu_folders_are_one_capture_each(npu, tmp_path: Path) -> None:
    shutil.copytree(npu("text/rank1_ascend_pt"), tmp_path / "w1_ascend_pt")
    shutil.copytree(npu("text/rank1_ascend_pt"), tmp_path / "renamed")  # not *_ascend_pt
    found = [p.relative_to(tmp_path).as_posix() for p in discover(tmp_path)]
    assert found == ["renamed", "w1_ascend_pt"]
    assert list(discover(tmp_path / "w1_ascend_pt")) == [tmp_path / "w1_ascend_pt"]
    for folder in ("w1_ascend_pt", "renamed"):  # its output named: the capture it belongs to
        output = tmp_path / folder / "ASCEND_PROFILER_OUTPUT"
        assert list(discover(output)) == [tmp_path / folder]


def test_ids_above_2_53_and_string_timestamps_parse(tmp_path: Path) -> None:
    doc = {
        "traceEvents": [
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "ProfilerStep#1",
                "ts": "1736408883686740.710",
                "dur": 500.5,
                "pid": 2**60,
                "tid": 2**64 + 1,
                "id": 2**70,
                "args": {"Sequence number": 2**63},
            },
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "aten::mm",
                "ts": "1736408883686750.000",
                "dur": "20",
                "pid": 2**60,
                "tid": 2**64 + 1,
            },
        ]
    }
    path = tmp_path / "rank1.json"
    path.write_text(json.dumps(doc))
    (result,) = analyse(tmp_path).traces
    assert [r.step for r in result.ranges] == [1] and result.ops["aten::mm"].count == 1


# --- Found by content: any name, any key order, a large metadata object first, list form,
# plain, gzip or xz ---

#: Small real Kineto traces of the corpus (each under 50 KB stored), decoded once.
_SMALL = [
    name
    for name, s in SETS.items()
    if s["kind"].startswith("kineto") and s["stored_bytes"] < 50_000
]


def _corpus_traces() -> dict[str, dict[str, Any]]:
    out = {}
    for name in _SMALL:
        for path in sorted((CORPUS / SETS[name]["path"]).rglob("*.*")):
            raw = path.read_bytes()
            raw = lzma.decompress(raw) if path.name.endswith(".xz") else raw
            raw = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
            doc = json.loads(raw)
            if isinstance(doc, dict) and "traceEvents" in doc:
                out[f"{name}/{path.name}"] = doc
    assert len(out) >= 10
    return out


_TRACES = _corpus_traces()


def _metadata(kib: int) -> dict[str, Any]:
    """A metadata object of about ``kib`` KiB, nested as writers make them."""
    return {
        f"run{i}": {"config": {"lr": 0.1 * i, "layers": list(range(8))}, "note": "n" * 60}
        for i in range(kib * 1024 // 160 + 1)
    }


def test_a_large_metadata_object_first_is_found_by_every_command(tmp_path: Path, capsys) -> None:
    """Symptom 1: ``no captures under DIR`` from analyse, timeline, doctor and compare."""
    doc = _TRACES["kineto_rocm_mi250/mi250_minitoy_train_ROCm6_2_kineto.json.gz"]
    meta = _metadata(30)
    assert len(json.dumps(meta)) > 25_000
    for run in ("a", "b"):
        (tmp_path / run).mkdir()
        (tmp_path / run / "trace.json").write_text(json.dumps({"metadata": meta, **doc}))
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    assert main(["analyse", a, "-j", "1"]) == 0
    assert f"1 capture under {a}" in capsys.readouterr().out
    assert main(["timeline", a, "-o", str(tmp_path / "t.json"), "-j", "1"]) == 0
    timeline = json.loads((tmp_path / "t.json").read_text())
    assert any(e.get("ph") == "X" for e in timeline["traceEvents"])
    capsys.readouterr()
    assert main(["doctor", a]) == 0
    assert "captures: 1 (rank ?: 1)" in capsys.readouterr().out
    assert main(["compare", a, b]) == 0
    assert "Device ms per step, A -> B" in capsys.readouterr().out


def _answer(data: TraceData) -> dict[str, Any]:
    """Everything read from a capture but where it lies (path, size, folder)."""
    out, *_ = msgspec.msgpack.decode(encode(data))  # (its ranges as columns: as a list here)
    out["ranges"] = [list(r) for r in data.ranges]
    for key in ("path", "size", "group"):
        out.pop(key)
    return cast(dict[str, Any], json.loads(json.dumps(out).replace(str(data.path), "<path>")))


_NAMES = st.text(alphabet="abcdxyz_-0", min_size=1, max_size=8).map(lambda s: "t" + s)
_SUFFIXES = st.sampled_from(["", ".json", ".json.gz", ".gz", ".bin", ".db", ".csv", ".pkl"])


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    which=st.sampled_from(sorted(_TRACES)),
    data=st.data(),
    name=_NAMES,
    suffix=_SUFFIXES,
    form=st.sampled_from(["object", "list"]),
    meta_kib=st.sampled_from([0, 30, 300]),
    packing=st.sampled_from(["plain", "gzip", "xz"]),
)
def test_any_corpus_trace_rewritten_is_found_and_read_the_same(
    which: str, data: st.DataObject, name: str, suffix: str, form: str, meta_kib: int, packing: str
) -> None:
    """A real trace with its top-level keys (and each event's keys) reordered, a large metadata
    object first, as a bare list of events, plain or compressed, under any name: found below
    a folder beside files that are not captures, and read to the answer of the same content
    written plainly (a list carries only the events: the answer of an object holding only
    them)."""
    doc = _TRACES[which]
    events = doc["traceEvents"]
    keys = data.draw(st.permutations(list(doc)))
    if data.draw(st.booleans()):
        events = [dict(reversed(list(e.items()))) if isinstance(e, dict) else e for e in events]
    if form == "list":
        reference: dict[str, Any] = {"traceEvents": doc["traceEvents"]}
        variant: Any = events
    else:
        reference = doc
        variant = {k: events if k == "traceEvents" else doc[k] for k in keys}
        if meta_kib:
            variant = {"metadata": _metadata(meta_kib), **variant}
    raw = json.dumps(variant).encode()
    raw = {"plain": raw, "gzip": gzip.compress(raw, 1), "xz": lzma.compress(raw, preset=0)}[packing]
    with tempfile.TemporaryDirectory() as tmp:
        ref, var = Path(tmp) / "ref", Path(tmp) / "var" / "deep"
        ref.mkdir()
        var.mkdir(parents=True)
        (ref / (name + suffix)).write_text(json.dumps(reference))
        (var / (name + suffix)).write_bytes(raw)
        (var / "config.json").write_text('{"lr": 0.1, "traceEvents": 3}')
        (var / "notes.csv").write_text("a,b\n1,2\n")
        assert list(discover(var.parent)) == [var / (name + suffix)]
        assert _answer(read(var / (name + suffix))) == _answer(read(ref / (name + suffix)))
