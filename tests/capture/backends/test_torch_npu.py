"""``backend: torch_npu`` against the torch-npu 2.14.0 contract double in tests/doubles."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from mindspeed_prof.capture.backends import select_backend
from mindspeed_prof.capture.backends.torch_npu import TorchNpuBackend
from mindspeed_prof.config.validate import validate
from mindspeed_prof.testing.backend_suite import BackendConformance

DOUBLES = str(Path(__file__).resolve().parents[2] / "doubles")


@pytest.fixture(autouse=True)
def torch_npu_double(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(DOUBLES)
    for name in [m for m in sys.modules if m == "torch_npu" or m.startswith("torch_npu.")]:
        monkeypatch.delitem(sys.modules, name)
    import torch_npu

    assert torch_npu.__version__.endswith("double")
    torch_npu.profiler.profiler.CREATED.clear()
    torch_npu.npu.mstx_module = sys.modules["torch_npu.npu.mstx"]
    torch_npu.npu.mstx_module.CALLS.clear()
    yield torch_npu
    for name in [m for m in sys.modules if m == "torch_npu" or m.startswith("torch_npu.")]:
        sys.modules.pop(name, None)


class TestTorchNpuBackend(BackendConformance):
    backend_cls = TorchNpuBackend

    def load(self, path: Path) -> None:
        assert path.is_dir() and path.name.endswith("_ascend_pt")
        assert (path / "FRAMEWORK").is_dir() and list(path.glob("PROF_*"))
        (info,) = path.glob("profiler_info*.json")  # profiler_info.json without RANK
        json.loads(info.read_text())


def build(torch_npu: Any, tmp_path: Path, **fields: Any) -> tuple[Any, list[Path]]:
    suite = TestTorchNpuBackend()
    backend = suite.make_backend(**fields)
    backend.start(suite.target(tmp_path, rank=1))
    for sink in backend.sinks():
        with sink.range("r"):
            pass
    files = [Path(p) for p in backend.stop()]
    return torch_npu.profiler.profiler.CREATED[-1], files


def test_every_field_is_mapped(torch_npu_double: Any, tmp_path: Path) -> None:
    prof, _ = build(
        torch_npu_double,
        tmp_path,
        profile_level="level2",
        profile_export_type="db",
        profile_with_memory=True,
        profile_record_shapes=True,
        profile_with_module=True,
        profile_with_cpu=False,
        aic_metrics="l2_cache",
        data_simplification=False,
        profile_analysis=True,
    )
    kw = prof.kwargs
    assert [a.name for a in kw["activities"]] == ["NPU"]
    assert kw["record_shapes"] and kw["profile_memory"] and kw["with_modules"]
    assert not kw["with_stack"]  # module info is not stacks (MindSpeed-RL sets no with_stack)
    exp = kw["experimental_config"].kwargs
    assert exp["profiler_level"] == "Level2" and exp["export_type"] == "db"
    assert exp["aic_metrics"] == "ACL_AICORE_L2_CACHE" and exp["msprof_tx"] is True
    assert exp["data_simplification"] is False
    handler = kw["on_trace_ready"].args
    assert handler["analyse_flag"] is True and handler["worker_name"].startswith("rank1_")
    assert handler["dir_name"].endswith("integrated")
    prof, _ = build(torch_npu_double, tmp_path / "stack", with_stack=True)
    assert prof.kwargs["with_stack"] and not prof.kwargs["with_modules"]


def test_arguments_are_mindspeed_rls(torch_npu_double: Any, tmp_path: Path) -> None:
    """MindSpeed-RL's get_grpo_profiler (utils.py:518-591): activities NPU then CPU,
    with_modules=profile_with_module, no with_stack; _ExperimentalConfig(aic_metrics=
    PipeUtilization, profiler_level, export_type, data_simplification=True, msprof_tx=mstx)
    and nothing else; the trace handler's analyse_flag=profile_analysis."""
    from torch_npu.profiler.experimental_config import _ExperimentalConfig

    defaults = {k: v for k, v in _ExperimentalConfig().kwargs.items()}
    for mstx in (False, True):
        prof, _ = build(torch_npu_double, tmp_path / str(mstx), mstx=mstx, profile_level="level1")
        kw = prof.kwargs
        assert [a.name for a in kw["activities"]] == ["NPU", "CPU"]
        assert (
            kw["with_modules"],
            kw["with_stack"],
            kw["record_shapes"],
            kw["profile_memory"],
            kw["with_flops"],
        ) == (False,) * 5
        exp = kw["experimental_config"].kwargs
        assert exp["aic_metrics"] == "ACL_AICORE_PIPE_UTILIZATION" and exp["msprof_tx"] is mstx
        assert (exp["profiler_level"], exp["export_type"], exp["data_simplification"]) == (
            "Level1",
            "text",
            True,
        )
        changed = {k for k, v in exp.items() if v != defaults[k]}
        assert changed <= {"profiler_level", "msprof_tx"}, changed
        assert kw["on_trace_ready"].args["analyse_flag"] is False


def test_no_ai_core_metrics_where_torch_npu_drops_them(
    torch_npu_double: Any, tmp_path: Path
) -> None:
    # torch_npu resets them to none with a warning at level0 and level_none: none is passed
    for level in ("level_none", "level0"):
        prof, _ = build(torch_npu_double, tmp_path / level, profile_level=level)
        assert prof.kwargs["experimental_config"].kwargs["aic_metrics"] == "ACL_AICORE_NONE"


def test_id_ranges_go_to_torch_npu_mstx(torch_npu_double: Any, tmp_path: Path) -> None:
    import threading

    from mindspeed_prof import mstx

    suite = TestTorchNpuBackend()
    backend = suite.make_backend(profile_level="level_none")
    backend.start(suite.target(tmp_path))
    for sink in backend.sinks():
        mstx.add_sink(sink)
    try:
        range_id = mstx.range_start("your_tag_name")
        t = threading.Thread(target=mstx.range_end, args=(range_id,))
        t.start()
        t.join()
    finally:
        mstx.set_sink(None)
    backend.stop()
    calls = torch_npu_double.npu.mstx_module.CALLS
    (start,) = [c for c in calls if c[0] == "range_start"]
    assert start[1] == "your_tag_name" and ("range_end", start[3], "default") in calls


def test_levels_and_export_spellings(torch_npu_double: Any, tmp_path: Path) -> None:
    for level, expected in [
        ("level_none", "Level_none"),
        ("level0", "Level0"),
        ("level1", "Level1"),
    ]:
        prof, _ = build(torch_npu_double, tmp_path / level, profile_level=level)
        assert prof.kwargs["experimental_config"].kwargs["profiler_level"] == expected
        assert prof.kwargs["experimental_config"].kwargs["export_type"] == "text"


def test_mstx_ranges_go_to_torch_npu(torch_npu_double: Any, tmp_path: Path) -> None:
    build(torch_npu_double, tmp_path, profile_level="level_none")
    calls = torch_npu_double.npu.mstx_module.CALLS
    assert [c[0] for c in calls] == ["range_start", "range_end"] and calls[0][1] == "r"


def test_analysis_output_written_only_with_profile_analysis(
    torch_npu_double: Any, tmp_path: Path
) -> None:
    _, off = build(torch_npu_double, tmp_path / "a")
    _, on = build(torch_npu_double, tmp_path / "b", profile_analysis=True)
    assert not (off[0] / "ASCEND_PROFILER_OUTPUT").exists()
    assert (on[0] / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").is_file()


def test_auto_selects_torch_npu_when_an_npu_is_present(torch_npu_double: Any) -> None:
    cfg = validate({"integrated": {"profile": True}})
    assert select_backend(cfg).name == "torch_npu"
    torch_npu_double.npu.AVAILABLE = False
    try:
        assert select_backend(cfg).name == "torch"
    finally:
        torch_npu_double.npu.AVAILABLE = True


def test_auto_falls_back_when_torch_npu_does_not_import(monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as m:  # undone before the fixture removes the double
        m.setitem(sys.modules, "torch_npu", None)  # import raises ImportError
        cfg = validate({"integrated": {"profile": True}})
        assert select_backend(cfg).name == "torch"


def test_a_capture_records_its_run_for_the_analysis(torch_npu_double: Any, tmp_path: Path) -> None:
    """torch_npu keeps what ``add_metadata_json`` is given in ``profiler_metadata.json``: the
    run id and the rest of our header go there, and the reader takes them, so a torch_npu
    folder is told apart from another run's like every other capture."""
    from mindspeed_prof import Profiler
    from mindspeed_prof.analysis.analyse import analyse

    prof = Profiler.from_config(
        {"profile": True, "profile_analysis": True, "profile_save_path": str(tmp_path)},
        rank=0,
        run="run-a",
    )
    with prof.step(1):
        pass
    prof.close()
    (folder,) = [Path(f) for c in prof.captures for f in c.files]
    meta = json.loads((folder / "profiler_metadata.json").read_text())["mindspeed_prof"]
    assert (meta["run"], meta["rank"], meta["step"]) == ("run-a", 0, 1)
    result = analyse(tmp_path)
    assert result.run is not None and result.run.id == "run-a"
