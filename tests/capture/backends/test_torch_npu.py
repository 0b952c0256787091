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
    prof, _ = build(torch_npu_double, tmp_path, profile_level="level2", profile_export_type="db",
                    profile_with_memory=True, profile_record_shapes=True,
                    profile_with_module=True, profile_with_cpu=False, aic_metrics="l2_cache",
                    data_simplification=False, profile_analysis=True)
    kw = prof.kwargs
    assert [a.name for a in kw["activities"]] == ["NPU"]
    assert kw["record_shapes"] and kw["profile_memory"] and kw["with_modules"] and kw["with_stack"]
    exp = kw["experimental_config"].kwargs
    assert exp["profiler_level"] == "Level2" and exp["export_type"] == "db"
    assert exp["aic_metrics"] == "ACL_AICORE_L2_CACHE" and exp["mstx"] is True
    assert exp["data_simplification"] is False
    handler = kw["on_trace_ready"].args
    assert handler["analyse_flag"] is True and handler["worker_name"].startswith("rank1_")
    assert handler["dir_name"].endswith("integrated")


def test_levels_and_export_spellings(torch_npu_double: Any, tmp_path: Path) -> None:
    for level, expected in [("level_none", "Level_none"), ("level0", "Level0"),
                            ("level1", "Level1")]:
        prof, _ = build(torch_npu_double, tmp_path / level, profile_level=level)
        assert prof.kwargs["experimental_config"].kwargs["profiler_level"] == expected
        assert prof.kwargs["experimental_config"].kwargs["export_type"] == "text"


def test_mstx_ranges_go_to_torch_npu(torch_npu_double: Any, tmp_path: Path) -> None:
    build(torch_npu_double, tmp_path, profile_level="level_none")
    calls = torch_npu_double.npu.mstx_module.CALLS
    assert [c[0] for c in calls] == ["range_start", "range_end"] and calls[0][1] == "r"


def test_analysis_output_written_only_with_profile_analysis(torch_npu_double: Any,
                                                           tmp_path: Path) -> None:
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

