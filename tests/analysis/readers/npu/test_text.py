"""torch_npu's text export, read and checked against the CSVs and JSON torch_npu wrote."""

from __future__ import annotations

import csv
import json
import re
import shutil
from collections import defaultdict
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from npu_fixtures import unpack

from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.readers import MAX_BYTES, read
from mindspeed_prof.analysis.readers.model import Alloc, CommRow, Memory, Tally
from mindspeed_prof.analysis.readers.npu.text import MB
from mindspeed_prof.analysis.report.tables import tables

OUT = "ASCEND_PROFILER_OUTPUT"


def _csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("name", ["text/rank0_ascend_pt", "text/rank1_ascend_pt"])
def test_device_rows_are_step_trace_time(npu, name: str) -> None:
    folder = npu(name)
    (ref,) = _csv(folder / OUT / "step_trace_time.csv")
    (row,) = read(folder).device
    assert row.step == int(ref["Step"])
    for key, col in (
        ("compute_ms", "Computing"),
        ("comm_ms", "Communication"),
        ("overlap_ms", "Overlapped"),
        ("idle_ms", "Free"),
        ("comm_exposed_ms", "Communication(Not Overlapped)"),
        ("step_ms", "Stage"),
        ("preparing_ms", "Preparing"),
    ):
        assert getattr(row, key) == pytest.approx(float(ref[col]) / 1000.0, rel=1e-12), key
    # compute + comm - overlap + idle is the step on the device (torch_npu's Stage column)
    assert row.compute_ms + row.comm_ms - row.overlap_ms + row.idle_ms == (
        pytest.approx(row.step_ms, rel=1e-6)
    )
    assert row.memcpy_ms is None  # torch_npu does not split copies out: not invented


def test_kernels_are_op_statistic_and_hccl_is_communication(npu) -> None:
    folder = npu("text/rank0_ascend_pt")
    kernels = read(folder).kernels
    stats = _csv(folder / OUT / "op_statistic.csv")
    assert stats
    for ref in stats:
        kernel = kernels[ref["OP Type"]]
        assert kernel.count == int(ref["Count"]), ref["OP Type"]
        assert kernel.total == pytest.approx(float(ref["Total Time(us)"]), abs=0.01), ref["OP Type"]
    (step,) = _csv(folder / OUT / "step_trace_time.csv")
    # op_statistic leaves HCCL out; its kernels add up to the step's Communication
    hccl = [v for k, v in kernels.items() if k.startswith("hcom_")]
    assert sum(t.total for t in hccl) == pytest.approx(float(step["Communication"]), abs=0.01)
    assert len(kernels) == len(stats) + len(hccl)


def test_kernels_from_op_statistic_when_kernel_details_is_missing(npu, tmp_path: Path) -> None:
    folder = unpack("text/rank1_ascend_pt", tmp_path / "r1_ascend_pt")
    (folder / OUT / "kernel_details.csv").unlink()
    kernels = read(folder).kernels
    stats = _csv(folder / OUT / "op_statistic.csv")
    assert {k: v.count for k, v in kernels.items()} == {
        r["OP Type"]: int(r["Count"]) for r in stats
    }


def test_level0_kernels_are_named_by_task(npu) -> None:
    folder = npu("level0/rank0_ascend_pt")
    rows = _csv(folder / OUT / "kernel_details.csv")
    assert {r["Type"] for r in rows} == {"N/A"}
    data = read(folder)
    names: defaultdict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for r in rows:  # level0: each task under its own name (an HCCL op's less its instance)
        name = (
            re.sub(r"__\d+(_\d+)*$", "_", r["Name"])
            if r["Name"].startswith("hcom_")
            else (r["Name"])
        )
        names[name][0] += 1
        names[name][1] += float(r["Duration(us)"])
    assert any(k.startswith("hcom_") for k in names) and not any(
        re.search(r"_\d+$", k) for k in names if k.startswith("hcom_")
    )
    assert {k: (t.count, round(t.total, 3)) for k, t in data.kernels.items()} == {
        k: (c, round(us, 3)) for k, (c, us) in names.items()
    }
    assert data.meta.level == "level0"


def test_kernel_name_is_the_type_else_the_task_name() -> None:
    from mindspeed_prof.analysis.readers.npu.text import kernel_name

    assert kernel_name(" MatMul ", "aclnnMm_MatMul") == "MatMul"
    assert kernel_name("n/a", " aclnnMm_MatMul ") == "aclnnMm_MatMul"
    assert kernel_name(None, "Conv") == kernel_name("", "Conv") == "Conv"
    assert kernel_name("N/A", None) == kernel_name(None, "") == "?"
    # level0 writes no type: an HCCL task is named by its type, its instance number dropped
    assert kernel_name("N/A", "hcom_allReduce__868_0_1") == "hcom_allReduce_"
    assert kernel_name(None, "hcom_broadcast__483_0") == "hcom_broadcast_"
    assert kernel_name("N/A", "trans_TransData_23") == "trans_TransData_23"  # no instance number


def test_kernel_details_rows_without_a_time_are_left_out(npu, tmp_path: Path) -> None:
    """A zero-length kernel is a kernel; an empty or N/A duration is not counted."""
    folder = unpack("level0/rank0_ascend_pt", tmp_path / "w_ascend_pt")
    path = folder / OUT / "kernel_details.csv"
    rows = _csv(path)
    with open(path, "a", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, list(rows[0]))
        for name, dur in (("Zero", "0"), ("Empty", ""), ("NA", "N/A"), ("Negative", "-1")):
            w.writerow({**rows[0], "Name": name, "Duration(us)": dur})
    kernels = read(folder).kernels
    assert kernels["Zero"] == Tally(1, 0.0)
    assert not {"Empty", "NA", "Negative"} & set(kernels)
    assert sum(t.count for t in kernels.values()) == len(rows) + 1


def test_comm_rows_follow_communication_json(npu) -> None:
    folder = npu("text/rank0_ascend_pt")
    doc = json.loads((folder / OUT / "communication.json").read_bytes())
    ops = {k: v for k, v in doc["step50"]["collective"].items() if k != "Total Op Info"}
    (row,) = [r for r in read(folder).comm if r.kind == "collective"]
    assert (row.name, row.step, row.count) == ("hcom_allReduce_", 50, len(ops))
    infos = [op["Communication Time Info"] for op in ops.values()]
    for key, col in (
        ("elapse_ms", "Elapse Time(ms)"),
        ("wait_ms", "Wait Time(ms)"),
        ("transit_ms", "Transit Time(ms)"),
        ("sync_ms", "Synchronization Time(ms)"),
        ("idle_ms", "Idle Time(ms)"),
    ):
        assert getattr(row, key) == pytest.approx(sum(i[col] for i in infos), rel=1e-9)
    (step,) = _csv(folder / OUT / "step_trace_time.csv")
    assert row.elapse_ms == pytest.approx(float(step["Communication"]) / 1000.0, rel=1e-6)
    # size and bandwidth over RDMA and SDMA, as torch_npu's own "Total Op Info" sums them
    total = doc["step50"]["collective"]["Total Op Info"]["Communication Bandwidth Info"]
    size = sum(total[link]["Transit Size(MB)"] for link in ("RDMA", "SDMA"))
    time = sum(total[link]["Transit Time(ms)"] for link in ("RDMA", "SDMA"))
    assert row.size_mb == pytest.approx(size, rel=1e-12) and size > 400
    assert row.bandwidth_gbps == pytest.approx(size / time, rel=1e-12)


def _comm_op(bandwidth: dict) -> dict:
    return {
        "Communication Time Info": {"Elapse Time(ms)": 1.0},
        "Communication Bandwidth Info": bandwidth,
    }


def test_comm_bandwidth_links_by_hand(npu, tmp_path: Path) -> None:
    """SDMA, where written, already sums HCCS, PCIE and SIO; older exports have only those."""
    folder = unpack("text/rank1_ascend_pt", tmp_path / "w_ascend_pt")
    path = folder / OUT / "communication.json"
    link = lambda mb, ms: {"Transit Size(MB)": mb, "Transit Time(ms)": ms}  # noqa: E731
    path.write_text(
        json.dumps(
            {
                "step3": {
                    "collective": {
                        # RDMA 1 MB in 1 ms + SDMA 4 MB in 2 ms; HCCS and PCIE (parts of SDMA) not
                        # added again
                        "hcom_allReduce__1_0_1@1": _comm_op(
                            {
                                "RDMA": link(1, 1),
                                "SDMA": link(4, 2),
                                "HCCS": link(3, 1.5),
                                "PCIE": link(1, 0.5),
                            }
                        ),
                        # no SDMA: RDMA 1 MB + HCCS 2 MB + PCIE 1 MB + SIO 1 MB in 0.5 ms in all
                        # (under 1 ms)
                        "hcom_broadcast__2_0_1@2": _comm_op(
                            {
                                "RDMA": link(1, 0.0625),
                                "HCCS": link(2, 0.25),
                                "PCIE": link(1, 0.125),
                                "SIO": link(1, 0.0625),
                                "LOCAL": link(9, 1),
                                "SDMA ": link(9, 1),
                            }
                        ),
                        "hcom_reduce__5_0_1@5": _comm_op({"HCCS": link(None, None)}),
                        "hcom_allGather__3_0_1@3": _comm_op({"SDMA": "not an object"}),
                        "hcom_allGather__4_0_1@4": {
                            "Communication Time Info": {
                                "Elapse Time(ms)": 2.0,
                                "Wait Time(ms)": 0.5,
                                "Transit Time(ms)": 1.0,
                                "Synchronization Time(ms)": 0.25,
                                "Idle Time(ms)": 0.125,
                            }
                        },
                    }
                }
            }
        )
    )
    rows = {
        r.name: (
            r.count,
            r.size_mb,
            r.bandwidth_gbps,
            r.elapse_ms,
            r.wait_ms,
            r.transit_ms,
            r.sync_ms,
            r.idle_ms,
        )
        for r in read(folder).comm
        if r.kind == "collective"
    }
    assert rows == {
        "hcom_allReduce_": (1, 5.0, 5.0 / 3.0, 1.0, 0.0, 0.0, 0.0, 0.0),
        "hcom_broadcast_": (1, 5.0, 10.0, 1.0, 0.0, 0.0, 0.0, 0.0),
        "hcom_reduce_": (1, 0.0, None, 1.0, 0.0, 0.0, 0.0, 0.0),
        "hcom_allGather_": (2, 0.0, None, 3.0, 0.5, 1.0, 0.25, 0.125),
    }
    # per link type: every type that carried data, as written, with its own bandwidth
    links = {
        r.name: {k: (v.size_mb, v.time_ms, v.bandwidth_gbps) for k, v in (r.links or {}).items()}
        for r in read(folder).comm
        if r.kind == "collective"
    }
    assert links == {
        "hcom_allReduce_": {
            "RDMA": (1, 1, 1),
            "SDMA": (4, 2, 2),
            "HCCS": (3, 1.5, 2),
            "PCIE": (1, 0.5, 2),
        },
        "hcom_broadcast_": {
            "RDMA": (1, 0.0625, 16),
            "HCCS": (2, 0.25, 8),
            "PCIE": (1, 0.125, 8),
            "SIO": (1, 0.0625, 16),
            "LOCAL": (9, 1, 9),
            "SDMA ": (9, 1, 9),
        },
        "hcom_reduce_": {},
        "hcom_allGather_": {},
    }
    path.write_text(
        json.dumps(
            {  # parts that are not objects passed over, the rest read
                "step1": [],
                "step2": {
                    "p2p": [],
                    "collective": {
                        "Total Op Info": _comm_op({}),
                        "hcom_send__1@1": "not an object",
                        "hcom_allReduce__2@2": _comm_op({}),
                    },
                },
            }
        )
    )
    assert [(r.name, r.step, r.count) for r in read(folder).comm if r.kind == "collective"] == [
        ("hcom_allReduce_", 2, 1)
    ]
    path.write_text("[1, 2]")
    assert read(folder).problems == [f"{path}: not an object of steps; file skipped"]


def test_npu_memory_timeline_thinned_keeping_the_peak() -> None:
    from mindspeed_prof.analysis.readers.npu.memory import TIMELINE_POINTS, memory_summary

    n = 3 * TIMELINE_POINTS + 1
    records: list[tuple[str, float, float | None, float | None]] = [
        ("PTA", float(us), float(us % 5), 1.0) for us in range(n)
    ]
    records[700] = ("PTA", 700.0, 10.0**6, 1.0)
    summary = memory_summary(list(reversed(records)), [], [])
    assert summary is not None
    timeline = summary.timeline
    stride = n / TIMELINE_POINTS
    assert [int(p[0]) for p in timeline] == sorted(
        {int(i * stride) for i in range(TIMELINE_POINTS)} | {700}
    )
    assert timeline[1] == [3.0, 3.0, 1.0]  # every 3rd point, time order
    few = memory_summary(records[:TIMELINE_POINTS], [], [])
    assert few is not None and len(few.timeline) == TIMELINE_POINTS


def test_communication_matrix_links_are_kept_as_written(npu) -> None:
    folder = npu("text/rank0_ascend_pt")
    doc = json.loads((folder / OUT / "communication_matrix.json").read_bytes())
    written = sorted(
        (
            op.split("@")[0],
            link,
            50,
            i["Transport Type"],
            1,
            i["Transit Size(MB)"],
            i["Transit Time(ms)"],
            i["Bandwidth(GB/s)"],
        )
        for op, links in doc["step50"]["collective"].items()
        for link, i in links.items()
    )
    assert len(written) > 8
    rows = sorted(
        (r.name, r.link, r.step, r.transport, r.count, r.size_mb, r.transit_ms, r.bandwidth_gbps)
        for r in read(folder).comm
        if r.kind == "link"
    )
    assert rows == written


def test_communication_matrix_of_odd_shapes(npu, tmp_path: Path) -> None:
    """Parts that are not objects are passed over, the rest is read; missing sizes are 0."""
    folder = unpack("text/rank1_ascend_pt", tmp_path / "w_ascend_pt")
    path = folder / OUT / "communication_matrix.json"
    path.write_text(
        json.dumps(
            {
                "step7": {
                    "p2p": [],
                    "collective": {
                        "odd@1": [],
                        "allreduce-top1@9": {
                            "0-1": "not an object",
                            "1-0": {"Transport Type": "HCCS"},
                        },
                    },
                },
                "step8": "not an object",
            }
        )
    )
    links = [r for r in read(folder).comm if r.kind == "link"]
    assert links == [
        CommRow(
            name="allreduce-top1",
            kind="link",
            step=7,
            link="1-0",
            transport="HCCS",
            count=1,
            size_mb=0.0,
            transit_ms=0.0,
            bandwidth_gbps=None,
        )
    ]
    path.write_text("{cut")
    data = read(folder)
    assert data.problems == [f"{path}: not readable JSON (JSONDecodeError); file skipped"]


def test_memory_peaks_and_top_ops_follow_the_memory_csvs(npu) -> None:
    folder = npu("text/rank0_ascend_pt")
    memory = _memory(read(folder).memory)
    records = _csv(folder / OUT / "memory_record.csv")
    framework = [r for r in records if r["Component"] == "PTA+GE"]
    assert memory.component == "PTA+GE"
    assert (
        memory.peak_allocated_bytes == max(float(r["Total Allocated(MB)"]) for r in framework) * MB
    )
    assert memory.peak_reserved_bytes == max(float(r["Total Reserved(MB)"]) for r in framework) * MB
    assert memory.components["PTA"]["peak_allocated_bytes"] < memory.peak_allocated_bytes
    assert max(p[1] for p in memory.timeline) == memory.peak_allocated_bytes
    per_op: dict[str, float] = defaultdict(float)
    for r in _csv(folder / OUT / "operator_memory.csv"):
        per_op[r["Name"]] += float(r["Size(KB)"]) * 1024
    top = max(per_op, key=per_op.__getitem__)
    assert (memory.top_ops[0].op, memory.top_ops[0].bytes) == (top, per_op[top])
    assert memory.modules and all(v > 0 for v in memory.modules.values())


def _memory(memory: Memory | None) -> Memory:
    assert memory is not None and memory.source == "torch_npu"
    return memory


def test_runtime_is_api_statistic(npu) -> None:
    folder = npu("text/rank0_ascend_pt")
    runtime = read(folder).runtime
    rows = _csv(folder / OUT / "api_statistic.csv")
    assert {r["API Name"] for r in rows} == set(runtime)
    assert sum(t.count for t in runtime.values()) == sum(int(r["Count"]) for r in rows)


def test_a_folder_of_csvs_only_is_analysed_without_a_false_warning(npu, tmp_path: Path) -> None:
    unpack("text/rank1_ascend_pt", tmp_path / "run" / "w1_ascend_pt")
    result = analyse(tmp_path / "run")
    (data,) = result.traces
    assert data.ranges == [] and data.device and data.kernels and data.comm
    assert tables(result).warnings == [] and result.bad == []
    assert tables(result).ranks == [1]


def _copy(npu, tmp_path: Path) -> Path:
    return Path(shutil.copytree(npu("text/rank0_ascend_pt"), tmp_path / "w0_ascend_pt"))


def test_a_renamed_column_is_one_line_and_the_rest_is_read(npu, tmp_path: Path) -> None:
    folder = _copy(npu, tmp_path)
    path = folder / OUT / "step_trace_time.csv"
    (ref,) = _csv(path)
    path.write_text(path.read_text().replace("Computing", "Compute"))
    result = analyse(tmp_path)
    (line,) = result.bad
    assert str(path) in line and "'Computing'" in line
    (data,) = result.traces
    assert data.kernels and data.comm and data.memory and data.ranges
    # the device breakdown then comes from trace_view.json's Overlap Analysis, within 0.1 us
    (row,) = data.device
    for key, col in (
        ("compute_ms", "Computing"),
        ("comm_ms", "Communication"),
        ("overlap_ms", "Overlapped"),
        ("idle_ms", "Free"),
    ):
        assert getattr(row, key) == pytest.approx(float(ref[col]) / 1000.0, abs=1e-4), key


def test_a_memory_file_cut_short_keeps_the_rows_before_the_cut(npu, tmp_path: Path) -> None:
    folder = _copy(npu, tmp_path)
    path = folder / OUT / "memory_record.csv"
    text = path.read_text()
    path.write_text(text[: len(text) // 2].rsplit(",", 3)[0])  # stops mid-row
    (line,) = analyse(tmp_path).bad
    assert str(path) in line and "cut short" in line
    rows = _csv(path)[:-1]
    framework = [float(r["Total Allocated(MB)"]) for r in rows if r["Component"] == "PTA+GE"]
    assert _memory(read(folder).memory).peak_allocated_bytes == max(framework) * MB


def test_broken_communication_json_is_one_line(npu, tmp_path: Path) -> None:
    folder = _copy(npu, tmp_path)
    path = folder / OUT / "communication.json"
    path.write_bytes(path.read_bytes()[:100])
    result = analyse(tmp_path)
    assert [str(path) in b for b in result.bad] == [True]
    assert result.traces[0].device and result.traces[0].kernels


def test_a_stage_recorded_as_cpu_op_gets_ranges_and_a_device_row(npu, tmp_path: Path) -> None:
    """The real trace with one stage added the way torch_npu writes record_function ranges."""
    folder = _copy(npu, tmp_path)
    path = folder / OUT / "trace_view.json"
    events = json.loads(path.read_bytes())
    step = next(e for e in events if e.get("name") == "ProfilerStep#50")
    events.append({**step, "name": "actor_update", "args": {}})
    path.write_text(json.dumps(events))
    data = read(folder)
    (stage,) = [r for r in data.ranges if r.kind == "stage"]
    assert (stage.name, stage.step, stage.dur) == ("actor_update", 50, step["dur"])
    step_row, stage_row = data.device
    assert stage_row.stage == "actor_update" and stage_row.step == 50
    for key in ("compute_ms", "comm_ms", "overlap_ms", "idle_ms"):
        assert getattr(stage_row, key) == pytest.approx(getattr(step_row, key), abs=1e-4), key


def test_a_capture_with_nothing_readable_is_skipped_in_one_line(tmp_path: Path) -> None:
    out = tmp_path / "w_ascend_pt" / OUT
    out.mkdir(parents=True)
    (out / "step_trace_time.csv").write_text("Step,Compute\n1,2\n")
    (line,) = analyse(tmp_path).bad
    assert line.startswith(f"{out.parent}: nothing readable (step_trace_time.csv: no column")


def test_trace_view_read_a_slice_at_a_time_gives_the_same_answer(
    npu, tmp_path: Path, monkeypatch
) -> None:
    """torch_npu names the host process after its events: slices of 4 kB still place every
    event, and every fact equals the one decoded whole."""
    import mindspeed_prof.analysis.readers.stream as stream_mod

    folder = unpack("text/rank0_ascend_pt", tmp_path / "w_ascend_pt")
    whole = read(folder)
    monkeypatch.setattr(stream_mod, "CHUNK", 4096)
    sliced = read(folder)
    assert whole.events == sliced.events == 10112
    for key in ("ranges", "ops", "kernels", "runtime", "device", "comm", "problems"):
        assert getattr(sliced, key) == getattr(whole, key), key
    assert whole.ops and whole.ranges and whole.device


def test_a_trace_view_that_is_not_json_is_one_line(npu, tmp_path: Path) -> None:
    folder = Path(shutil.copytree(npu("text/rank1_ascend_pt"), tmp_path / "w_ascend_pt"))
    with open(folder / OUT / "trace_view.json", "wb") as f:
        f.truncate(MAX_BYTES + 1)  # holes: never read whole, refused at its first bytes
    result = analyse(tmp_path)
    (line,) = result.bad
    assert line == (
        f"{folder / OUT / 'trace_view.json'}: not JSON (starts with "
        f"{bytes(8)!r}); host ranges and ops skipped"
    )
    assert result.traces[0].device


_CUT = ["step_trace_time.csv", "kernel_details.csv", "op_statistic.csv", "communication.json"]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(name=st.sampled_from(_CUT), fraction=st.floats(0.0, 1.0))
def test_any_file_cut_anywhere_is_at_most_one_line(
    npu, tmp_path_factory, name: str, fraction: float
) -> None:
    """Whatever the cut, the folder reads (or is skipped) and names the file in one line."""
    root = tmp_path_factory.mktemp("cut")
    folder = Path(shutil.copytree(npu("text/rank1_ascend_pt"), root / "w_ascend_pt"))
    path = folder / OUT / name
    raw = path.read_bytes()
    path.write_bytes(raw[: int(len(raw) * fraction)])
    result = analyse(root)
    assert len(result.bad) <= 1 and all("\n" not in b for b in result.bad)
    assert all(name in b for b in result.bad)
    if result.traces:  # the other files were still read
        assert result.traces[0].kernels or name in ("kernel_details.csv", "op_statistic.csv")


@pytest.mark.parametrize("name", ["text/rank0_ascend_pt", "text/rank1_ascend_pt"])
def test_op_statistic_alone_gives_the_kernels_once(npu, tmp_path: Path, name: str) -> None:
    """Without kernel_details.csv, op_statistic.csv is the kernels: trace_view's device events
    are not added on top; a row missing its count or total is left out, not half-read."""
    folder = unpack(name, tmp_path / "w_ascend_pt")
    (folder / OUT / "kernel_details.csv").unlink()
    stats = _csv(folder / OUT / "op_statistic.csv")
    with open(folder / OUT / "op_statistic.csv", "a", newline="", encoding="utf-8") as f:
        csv.DictWriter(f, list(stats[0])).writerow(
            {**stats[0], "OP Type": "HalfRow", "Count": "3", "Total Time(us)": ""}
        )
    data = read(folder)
    assert {k: (t.count, round(t.total, 2)) for k, t in data.kernels.items()} == {
        r["OP Type"]: (int(r["Count"]), round(float(r["Total Time(us)"]), 2)) for r in stats
    }
    assert data.problems == []


def test_op_statistic_without_a_column_falls_back_to_trace_view(npu, tmp_path: Path) -> None:
    folder = unpack("text/rank0_ascend_pt", tmp_path / "w_ascend_pt")
    (folder / OUT / "kernel_details.csv").unlink()
    stats = folder / OUT / "op_statistic.csv"
    stats.write_text(
        stats.read_text(encoding="utf-8").replace("Total Time(us)", "Total"), encoding="utf-8"
    )
    data = read(folder)
    assert data.problems == [
        f"{stats}: no column 'Total Time(us)' (has: OP Type, Core Type, "
        "Count, Total, Min Time(us), Avg Time(us), Max Time(us), "
        "Ratio(%)); file skipped"
    ]
    events = json.loads((folder / OUT / "trace_view.json").read_bytes())
    hardware = {
        e["pid"]
        for e in events
        if e.get("ph") == "M"
        and e.get("name") == "process_name"
        and e["args"]["name"] == "Ascend Hardware"
    }
    control = {"EVENT_RECORD", "EVENT_WAIT", "PROFILING_ENABLE", "PROFILING_DISABLE"}
    tasks = [e for e in events if e.get("ph") == "X" and e["pid"] in hardware]
    kernels = [e for e in tasks if e["name"] not in control]  # the runtime's: not kernels
    assert len(tasks) - len(kernels) == 28  # 16 event records, 10 waits, profiling on and off
    assert sum(t.count for t in data.kernels.values()) == len(kernels) > 0
    assert not control & set(data.kernels)


def test_kernel_details_without_a_column_falls_back_to_op_statistic(npu, tmp_path: Path) -> None:
    folder = unpack("text/rank1_ascend_pt", tmp_path / "w_ascend_pt")
    details = folder / OUT / "kernel_details.csv"
    details.write_text(
        details.read_text(encoding="utf-8").replace("Duration(us)", "Dur"), encoding="utf-8"
    )
    data = read(folder)
    (problem,) = data.problems
    assert problem.startswith(f"{details}: no column 'Duration(us)' (has: ")
    stats = _csv(folder / OUT / "op_statistic.csv")
    assert {k: t.count for k, t in data.kernels.items()} == {
        r["OP Type"]: int(r["Count"]) for r in stats
    }


def test_api_statistic_without_a_column_falls_back_to_trace_view(npu, tmp_path: Path) -> None:
    folder = unpack("text/rank0_ascend_pt", tmp_path / "w_ascend_pt")
    api = folder / OUT / "api_statistic.csv"
    whole = read(folder).runtime
    assert {k: t.count for k, t in whole.items()} == {
        r["API Name"]: int(r["Count"]) for r in _csv(api)
    }
    with open(api, "a", newline="", encoding="utf-8") as f:  # no time: not half-counted
        f.write("acl,NoTime,,3,,,,\n")
    assert "NoTime" not in read(folder).runtime
    api.write_text(api.read_text(encoding="utf-8").replace("Time(us)", "Time"), encoding="utf-8")
    data = read(folder)
    (problem,) = data.problems
    assert problem.startswith(f"{api}: no column 'Time(us)' (has: Level, API Name, Time")
    events = json.loads((folder / OUT / "trace_view.json").read_bytes())
    cann = {
        e["pid"]
        for e in events
        if e.get("ph") == "M" and e.get("name") == "process_name" and e["args"]["name"] == "CANN"
    }
    calls = [e for e in events if e.get("ph") == "X" and e["pid"] in cann]
    assert sum(t.count for t in data.runtime.values()) == len(calls) > 0


def _step_trace(folder: Path, header: list[str], rows: list[list[str]]) -> Path:
    path = folder / OUT / "step_trace_time.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([header, *rows])
    return path


def test_step_trace_rows_by_hand(npu, tmp_path: Path) -> None:
    """Columns as written (Communication need not be Not Overlapped + Overlapped); a cluster
    file's stage rows and a row with an empty time left out, the rows after them still read."""
    folder = unpack("text/rank1_ascend_pt", tmp_path / "w_ascend_pt")
    path = _step_trace(
        folder,
        [
            "Step",
            "Type",
            "Computing",
            "Communication(Not Overlapped)",
            "Overlapped",
            "Communication",
            "Free",
            "Stage",
        ],
        [
            ["1", "stage", "1", "1", "1", "1", "1", "1"],
            ["2", "rank", "100", "30", "20", "60", "10", "145"],
            ["3", "rank", "100", "", "20", "60", "10", "145"],
            ["4", "", "200", "40", "10", "50", "0", "250"],
        ],
    )
    data = read(folder)
    assert [
        (r.step, r.compute_ms, r.comm_exposed_ms, r.overlap_ms, r.comm_ms, r.idle_ms, r.step_ms)
        for r in data.device
    ] == [(2, 0.1, 0.03, 0.02, 0.06, 0.01, 0.145), (4, 0.2, 0.04, 0.01, 0.05, 0.0, 0.25)]
    assert data.problems == [f"{path}: step '3' has empty times; row skipped"]
    path = _step_trace(
        folder, ["Computing", "Communication(Not Overlapped)", "Free"], [["1", "", "1"]]
    )
    assert read(folder).problems == [f"{path}: step '?' has empty times; row skipped"]


@pytest.mark.parametrize(
    ("drop", "overlap_ms", "comm_ms"),
    [
        ("Overlapped", 0.03, 0.06),  # derived: Communication - Not Overlapped
        ("Communication", 0.02, 0.05),
    ],
)  # derived: Not Overlapped + Overlapped
def test_step_trace_of_an_older_export_derives_the_missing_column(
    npu, tmp_path: Path, drop: str, overlap_ms: float, comm_ms: float
) -> None:
    folder = unpack("text/rank1_ascend_pt", tmp_path / "w_ascend_pt")
    header = [
        "Step",
        "Computing",
        "Communication(Not Overlapped)",
        "Overlapped",
        "Communication",
        "Free",
    ]
    rows = [
        ["7", "100", "30", "20", "60", "10"],
        ["8", "100", "30", "0", "30", "10"],
    ]  # nothing overlapped: Communication = exposed
    keep = [i for i, h in enumerate(header) if h != drop]
    _step_trace(folder, [header[i] for i in keep], [[r[i] for i in keep] for r in rows])
    row, quiet = read(folder).device
    assert (row.step, row.overlap_ms, row.comm_ms) == (7, overlap_ms, comm_ms)
    assert (quiet.step, quiet.overlap_ms, quiet.comm_ms) == (8, 0.0, 0.03)
    assert row.step_ms is None  # no Stage column: not invented


def test_npu_memory_summary_by_hand() -> None:
    from mindspeed_prof.analysis.readers.npu.memory import memory_summary

    records = [
        ("APP", 5.0, 10.0, 20.0),
        ("PTA", 3.0, 100.0, 200.0),
        ("PTA", 1.0, None, None),
        ("PTA", 2.0, 50.0, 300.0),
        ("PTA", 2.0, None, 1.0),
        ("Z", 4.0, None, None),
    ]
    ops = [("mm", 1024.0), ("mm", 4096.0), ("add", 3000.0), ("big", 5000.0)]
    ops += [(f"op{i}", 100.0 - i) for i in range(20)]
    modules = [("HCCL", 30.0), ("HCCL", 10.0), ("APP", 20.0), ("SLOG", 0.0)]
    out = _memory(memory_summary(records, ops, modules))
    assert out.component == "PTA"  # no PTA+GE: the allocator, not the first component
    assert (out.peak_allocated_bytes, out.peak_reserved_bytes) == (100, 300)
    assert out.components == {
        "APP": {"peak_allocated_bytes": 10, "peak_reserved_bytes": 20},
        "PTA": {"peak_allocated_bytes": 100, "peak_reserved_bytes": 300},
        "Z": {"peak_allocated_bytes": 0, "peak_reserved_bytes": 0},
    }
    # PTA only, in time order (equal times as written), empty sizes as 0
    assert out.timeline == [
        [1.0, 0.0, 0.0],
        [2.0, 50.0, 300.0],
        [2.0, 0.0, 1.0],
        [3.0, 100.0, 200.0],
    ]
    assert out.top_ops[:4] == [  # by bytes in all (mm: 5120), not by the largest one
        Alloc(op="mm", count=2, bytes=5120, max_bytes=4096),
        Alloc(op="big", count=1, bytes=5000, max_bytes=5000),
        Alloc(op="add", count=1, bytes=3000, max_bytes=3000),
        Alloc(op="op0", count=1, bytes=100, max_bytes=100),
    ]
    assert len(out.top_ops) == 20
    assert list(out.modules.items()) == [("HCCL", 30), ("APP", 20)]  # highest, 0 left out
    assert (
        _memory(memory_summary([("GE", 1.0, 7.0, 8.0), ("APP", 1.0, 9.0, 9.0)], [], [])).component
        == "GE"
    )  # neither PTA+GE nor PTA: the first written
    assert (
        _memory(
            memory_summary([("PTA", 1.0, 7.0, 8.0), ("PTA+GE", 1.0, 9.0, 9.0)], [], [])
        ).component
        == "PTA+GE"
    )
    assert memory_summary([], [], []) is None  # nothing recorded: no memory facts


def _write_csv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([header, *rows])
    return path


def test_npu_memory_files_by_hand(npu, tmp_path: Path) -> None:
    from mindspeed_prof.analysis.readers.npu.text import MB

    folder = unpack("text/rank1_ascend_pt", tmp_path / "w_ascend_pt")
    out = folder / OUT
    _write_csv(
        out / "operator_memory.csv",
        ["Name", "Size(KB)"],
        [["mm", "0.5"], ["mm", "0"], ["add", "-1"], ["sub", ""]],
    )
    assert read(folder).memory == Memory(
        source="torch_npu", top_ops=[Alloc(op="mm", count=1, bytes=512, max_bytes=512)]
    )  # a file alone is read
    (out / "operator_memory.csv").unlink()
    _write_csv(out / "npu_module_mem.csv", ["Component", "Total Reserved(MB)"], [["HCCL", "2"]])
    assert read(folder).memory == Memory(source="torch_npu", modules={"HCCL": 2 * MB})
    _write_csv(
        out / "memory_record.csv",
        ["Component", "Timestamp(us)", "Total Allocated(MB)", "Total Reserved(MB)"],
        [["PTA", "1", "1", ""], ["PTA", "", "9", "9"]],
    )  # no time: not a point
    memory = _memory(read(folder).memory)
    assert (memory.peak_allocated_bytes, memory.peak_reserved_bytes) == (MB, 0)
    assert memory.timeline == [[1.0, float(MB), 0.0]]


@pytest.mark.parametrize(
    ("name", "column"),
    [
        ("memory_record.csv", "Timestamp(us)"),
        ("operator_memory.csv", "Size(KB)"),
        ("npu_module_mem.csv", "Total Reserved(MB)"),
    ],
)
def test_npu_memory_file_without_a_column_is_one_line(
    npu, tmp_path: Path, name: str, column: str
) -> None:
    folder = unpack("text/rank1_ascend_pt", tmp_path / "w_ascend_pt")
    path = _write_csv(folder / OUT / name, ["Component", "Name"], [["PTA", "mm"]])
    data = read(folder)
    assert data.problems == [f"{path}: no column {column!r} (has: Component, Name); file skipped"]
    assert data.memory is None
