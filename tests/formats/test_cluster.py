"""``cluster_summary.json``: rows written in the order the readers of earlier versions saw,
read back typed; a row or an entry of the wrong shape costs only itself and is named in one
line; whatever the file holds, reading it never raises."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from mindspeed_prof.formats.cluster import (
    LostWorker,
    Missing,
    WorkerSummary,
    read_cluster_summary,
)
from mindspeed_prof.formats.record import CaptureRecord, FileEntry
from mindspeed_prof.jsonio import Refused
from mindspeed_prof.ray import write_cluster_summary

#: The keys of each row, in the order the summary was first written (a dict per row).
ANSWERED = [
    "run",
    "rank",
    "role",
    "host",
    "node",
    "pid",
    "enabled",
    "failed",
    "captures",
    "files",
    "stage_rank",
    "per_step",
    "status",
]
LOST = ["rank", "worker", "actor", "status", "error", "captures", "files", "stage_rank", "per_step"]


def _rows() -> list[WorkerSummary | LostWorker]:
    record = CaptureRecord(stage="all", step=2, rank=0, steps=[2], files=["/a/t.json"])
    return [
        WorkerSummary(
            run="r1",
            rank=0,
            role="integrated",
            host="h",
            node="",
            pid=7,
            enabled=True,
            captures=[record],
            files=[FileEntry("/a/t.json", 10)],
            stage_rank=[{"stage": "s", "rank": 0}],
            status="ok",
        ),
        WorkerSummary(
            run="r1",
            rank=1,
            pid=8,
            restarted=True,
            earlier_files=[],
            status="restarted",
            worker=1,
            actor="cd" * 16,
        ),
        LostWorker(rank=2, worker=2, actor="ab" * 16, status="died", error="gone"),
        WorkerSummary(run="r1", rank=3),  # not through collect: no status
    ]


def test_rows_keep_their_keys_in_order_and_read_back_equal(tmp_path: Path) -> None:
    path = write_cluster_summary(tmp_path, _rows())
    doc = json.loads(path.read_text())
    ok, restarted, died, local = doc["workers"]
    assert list(ok) == ANSWERED and list(died) == LOST
    assert list(restarted) == [
        *ANSWERED[:10],
        "restarted",
        "earlier_files",
        *ANSWERED[10:],
        "worker",
        "actor",
    ]
    assert list(local) == ANSWERED[:-1] and local["node"] == "" and local["failed"] is False
    assert doc["missing"] == [  # what the driver has no summary of, and the restarted one
        {
            "rank": 1,
            "worker": 1,
            "actor": "cd" * 16,
            "status": "restarted",
            "error": "restarted by Ray; its earlier processes left 0 files (earlier_files)",
        },
        {"rank": 2, "worker": 2, "actor": "ab" * 16, "status": "died", "error": "gone"},
    ]
    told: list[Refused] = []
    summary = read_cluster_summary(path, told.append)
    assert summary is not None and not told
    assert summary.workers == _rows() and summary.stage_rank == [{"stage": "s", "rank": 0}]
    assert summary.missing == [
        Missing(
            rank=1,
            worker=1,
            actor="cd" * 16,
            status="restarted",
            error="restarted by Ray; its earlier processes left 0 files (earlier_files)",
        ),
        Missing(rank=2, worker=2, actor="ab" * 16, status="died", error="gone"),
    ]
    again = write_cluster_summary(tmp_path / "again", summary.workers)
    assert again.read_bytes() == path.read_bytes()


def test_an_odd_row_or_entry_costs_only_itself_and_is_named(tmp_path: Path) -> None:
    path = tmp_path / "cluster_summary.json"
    path.write_text(
        json.dumps(
            {
                "workers": [
                    {"rank": "one", "run": "r"},
                    "not a row",
                    {
                        "rank": 1,
                        "run": "r",
                        "files": [{"path": 3}, {"path": "/a", "bytes": 2}],
                        "future_key": {"x": 1},
                    },
                    {"rank": 2, "status": "timeout", "worker": 2},
                ],
                "missing": 5,
            }
        )
    )
    told: list[Refused] = []
    summary = read_cluster_summary(path, told.append)
    assert summary is not None
    assert summary.workers == [
        WorkerSummary(rank=1, run="r", files=[FileEntry("/a", 2)]),
        LostWorker(rank=2, status="timeout", worker=2),
    ]
    (line,) = [str(t) for t in told]
    assert line.startswith(f"{path}: left out workers[0].rank: expected int | null, got str; ")
    assert "workers[1]: expected object, got str" in line and "\n" not in line
    assert line.endswith(
        "; workers[2].files[0].path: expected str, got int (and 1 more); the rest read"
    )  # missing: not a list


def test_a_file_that_is_not_a_summary_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "cluster_summary.json"
    told: list[Refused] = []
    for text in ("{", "[1]"):
        path.write_text(text)
        assert read_cluster_summary(path, told.append) is None
    os.symlink(path, tmp_path / "link.json")
    assert read_cluster_summary(tmp_path / "link.json", told.append) is None
    assert read_cluster_summary(tmp_path / "absent.json", told.append) is None
    assert [t.reason for t in told] == [
        "not a cluster summary: not JSON",
        "not a cluster summary: not a JSON object",
        "a symbolic link, not followed",
    ]


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    *WorkerSummary.__struct_fields__,
                    *LostWorker.__struct_fields__,
                    "path",
                    "bytes",
                    "stage",
                    "x",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(
    doc=st.dictionaries(
        st.sampled_from(["workers", "stage_rank", "missing", "x"]),
        st.lists(JSONISH, max_size=3) | JSONISH,
    )
)
def test_whatever_the_file_holds_reading_it_never_raises(doc: dict[str, object]) -> None:
    told: list[Refused] = []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "cluster_summary.json"
        path.write_text(json.dumps(doc))
        summary = read_cluster_summary(path, told.append)
    assert summary is not None and len(told) <= 1
    assert all(isinstance(w, (WorkerSummary, LostWorker)) for w in summary.workers)
    assert all("\n" not in str(t) for t in told)
