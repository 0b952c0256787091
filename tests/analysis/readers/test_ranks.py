"""Ranks: from the capture, its name or its manifest, else unknown; clashing claims kept apart."""

from __future__ import annotations

import gzip
import json
import shutil
import time
from pathlib import Path

import pytest

from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.readers import read
from mindspeed_prof.analysis.readers.labels import rank_label
from mindspeed_prof.analysis.report.tables import tables

OUT = "ASCEND_PROFILER_OUTPUT"


def _rankless(npu, dest: Path, info: dict | None = None) -> Path:
    """The rank-0 text capture as torch_npu writes it without RANK or torch.distributed."""
    folder = Path(shutil.copytree(npu("text/rank1_ascend_pt"), dest))
    old = folder / "profiler_info_1.json"
    doc = json.loads(old.read_bytes())
    doc.pop("rank_id")
    old.unlink()
    (folder / "profiler_info.json").write_text(json.dumps({**doc, **(info or {})}))
    return folder


def test_profiler_info_without_a_rank_is_unknown_not_zero(npu, tmp_path: Path) -> None:
    data = read(_rankless(npu, tmp_path / "w_ascend_pt"))
    assert data.rank is None and data.device and data.meta.level == "level1"


@pytest.mark.parametrize("rank_id", [3, "3"])  # torch_npu writes RANK's string as it is
def test_rank_id_inside_profiler_info_json(npu, tmp_path: Path, rank_id) -> None:
    assert read(_rankless(npu, tmp_path / "w_ascend_pt", {"rank_id": rank_id})).rank == 3


def test_two_rankless_workers_are_kept_apart_not_summed(npu, tmp_path: Path) -> None:
    a = _rankless(npu, tmp_path / "hostA_111_20250101000000000_ascend_pt")
    _rankless(npu, tmp_path / "hostB_222_20250101000000000_ascend_pt")
    shutil.copy(npu("text/rank0_ascend_pt") / OUT / "trace_view.json", a / OUT)  # steps on A
    result = analyse(tmp_path)
    assert tables(result).ranks == [None]
    (warning,) = tables(result).warnings
    assert warning.startswith("rank ?, step 50: claimed by 2 captures (hostA, hostB)")
    steps = tables(result).per_step
    assert [(r.rank, r.source, r.step) for r in steps] == [(None, "hostA", 50)]
    step_ms = next(x for x in read(a).ranges if x.kind == "step").dur / 1000.0
    assert steps[0].total == pytest.approx(step_ms)  # not twice it
    rows = [row for t in result.traces for row in t.device]
    assert sorted(r.source for r in rows) == ["hostA", "hostB"]


def test_one_rank_and_step_in_two_folders_are_kept_apart(npu, tmp_path: Path) -> None:
    for run in ("run1", "run2"):
        shutil.copytree(npu("text/rank0_ascend_pt"), tmp_path / run / "rank0_ascend_pt")
    result = analyse(tmp_path)
    (warning,) = tables(result).warnings
    assert "rank 0, step 50: claimed by 2 captures" in warning and "run1" in warning
    steps = tables(result).per_step
    assert len(steps) == 2 and steps[0].total == pytest.approx(steps[1].total)
    assert steps[0].total is not None
    assert {r.source for r in steps} == {"run1/rank0_ascend_pt", "run2/rank0_ascend_pt"}


def test_two_ranks_of_one_run_do_not_clash(npu, tmp_path: Path) -> None:
    for name in ("text/rank0_ascend_pt", "text/rank1_ascend_pt"):
        shutil.copytree(npu(name), tmp_path / name.split("/")[1])
    result = analyse(tmp_path)
    assert tables(result).ranks == [0, 1] and tables(result).warnings == []
    assert [(r.rank, r.step) for r in tables(result).per_step] == [(0, 50)]
    assert tables(result).per_step[0].source == ""


def _trace(path: Path, **top) -> Path:
    doc = {
        "traceEvents": [
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "ProfilerStep#2",
                "ts": 10,
                "dur": 100,
                "pid": 1,
                "tid": 1,
            }
        ],
        **top,
    }
    raw = json.dumps(doc).encode()
    path.write_bytes(gzip.compress(raw) if path.name.endswith(".gz") else raw)
    return path


def test_chrome_trace_rank_order(tmp_path: Path) -> None:
    named = _trace(tmp_path / "rank-3.json.gz")
    assert read(named).rank == 3
    assert read(_trace(tmp_path / "rank_3.json", distributedInfo={"rank": 5})).rank == 5
    assert read(_trace(tmp_path / "worker0.1700000000.pt.trace.json")).rank is None
    assert read(_trace(tmp_path / "frank1.json")).rank is None  # "rank" inside a word


def test_manifest_gives_the_rank_when_the_trace_does_not(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "integrated").mkdir(parents=True)
    trace = _trace(run / "integrated" / "trace.json")
    (run / "manifest.rank2.json").write_text(
        json.dumps({"rank": 2, "files": [{"path": "integrated/trace.json", "bytes": 1}]})
    )
    data = read(trace)
    assert data.rank == 2 and {r.rank for r in data.ranges} == {2}
    (run / "manifest.json").write_text(
        json.dumps({"rank": 0, "files": [{"path": "integrated/trace.json", "bytes": 1}]})
    )
    assert read(trace).rank is None  # two manifests claim it: unknown, not a guess


def test_rank_label() -> None:
    assert [rank_label(None), rank_label(3), rank_label(3, "host-b")] == ["?", "3", "3 (host-b)"]


def test_captures_of_different_stages_of_one_step_complete_each_other(tmp_path: Path) -> None:
    """stage_scoped with several stages: one folder per stage, the same rank and step."""
    for stage in ("actor_generate", "actor_update"):
        (tmp_path / stage).mkdir()
        (tmp_path / stage / "rank0.json").write_text(
            json.dumps(
                {
                    "traceEvents": [
                        {
                            "ph": "X",
                            "cat": "user_annotation",
                            "name": stage,
                            "ts": 10,
                            "dur": 50,
                            "pid": 1,
                            "tid": 1,
                            "args": {"step": 4},
                        }
                    ]
                }
            )
        )
    result = analyse(tmp_path)
    assert tables(result).warnings == []
    assert [(r.rank, r.step, r.stages) for r in tables(result).per_step] == [
        (0, 4, {"actor_generate": 0.05, "actor_update": 0.05})
    ]


def _role_run(root: Path, role: str, stage: str, sleep_s: float, warmup: int = 0) -> None:
    """Rank 0 of ``role``: steps 1-2, each one ``stage`` of ``sleep_s`` seconds."""
    from mindspeed_prof import Profiler
    from mindspeed_prof.config.validate import validate

    cfg = validate(
        {
            "profile": True,
            "mstx": True,
            "profile_step_start": 1 + warmup,
            "profile_step_end": 3,
            "profile_save_path": str(root),
            "warmup_steps": warmup,
        }
    )
    with Profiler(cfg, rank=0, role=role) as prof:
        for step in (1, 2):
            with prof.step(step), prof.stage(stage):
                time.sleep(sleep_s)


def test_roles_that_share_a_rank_are_kept_apart_without_a_warning(tmp_path: Path) -> None:
    """verl numbers each role's ranks from 0, and a driver is rank 0 too: nothing is summed."""
    _role_run(tmp_path, "actor", "actor_update", 0.03, warmup=1)
    _role_run(tmp_path, "rollout", "actor_generate", 0.06)
    _role_run(tmp_path, "driver", "critic_update", 0.0)
    result = analyse(tmp_path)
    assert tables(result).warnings == []
    rows = {(r.source, r.step): r for r in tables(result).per_step}
    assert sorted(rows) == [
        (role, step) for role in ("actor", "driver", "rollout") for step in (1, 2)
    ]
    for step in (1, 2):  # each role's step is its own length, not the three added up
        actor, rollout, driver = (
            rows[(role, step)].total for role in ("actor", "rollout", "driver")
        )
        assert actor is not None and rollout is not None and driver is not None
        assert 30 <= actor < 60
        assert 60 <= rollout < 90
        assert driver < 30
        assert "actor_generate" not in rows[("actor", step)].stages
    # the actor's warmup step is its own, not the rollout's or the driver's at rank 0
    assert [key for key, r in rows.items() if r.warmup] == [("actor", 1)]
    assert tables(result).warmup == {(0, 1)}
    assert {(r.stage, r.source) for r in tables(result).stage_rank} == {
        ("actor_update", "actor"),
        ("actor_generate", "rollout"),
        ("critic_update", "driver"),
    }


def test_one_role_at_ranks_0_and_1_is_not_labelled(tmp_path: Path) -> None:
    _role_run(tmp_path / "a", "actor", "actor_update", 0.0)
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    result = analyse(tmp_path / "a")
    assert tables(result).warnings == [] and all(r.source == "" for r in tables(result).per_step)
