"""``engines``: the kind of an engine, calls made with the arguments a method takes, and our
block stamped into the traces an engine wrote."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from mindspeed_prof.capture.engines import EngineDriver, engine_kind, stamp
from mindspeed_prof.formats.header import CaptureHeader


class _Bare:
    """An engine with a profiler and no configuration to read its folder from."""

    def start_profile(self) -> None:
        pass

    def stop_profile(self) -> None:
        pass


@pytest.mark.parametrize("name", ["t.json", "t.json.gz"])
def test_stamp_puts_our_block_first_and_keeps_the_rest(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    doc = {"distributedInfo": {"rank": 0}, "traceEvents": [{"ph": "X", "name": "k"}] * 3000}
    opener: Any = gzip.open if name.endswith(".gz") else open
    with opener(path, "wt") as f:
        f.write("  " + json.dumps(doc))
    assert stamp(path, CaptureHeader(rank=5, step=2))
    with opener(path, "rt") as f:
        text = f.read()
    assert text.startswith('{"mindspeed_prof": {"rank": 5, "step": 2},')
    assert json.loads(text) == {"mindspeed_prof": {"rank": 5, "step": 2}, **doc}
    assert not stamp(path, CaptureHeader(rank=6))  # already stamped: untouched
    assert json.loads(opener(path, "rt").read())["mindspeed_prof"]["rank"] == 5
    assert [p.name for p in tmp_path.iterdir()] == [name]  # nothing left beside it


def test_stamp_leaves_arrays_alone_and_fills_empty_objects(tmp_path: Path) -> None:
    array, empty = tmp_path / "a.json", tmp_path / "e.json"
    array.write_text('[{"ph": "X"}]')
    empty.write_text("{ }")
    assert not stamp(array, CaptureHeader(rank=1)) and array.read_text() == '[{"ph": "X"}]'
    assert stamp(empty, CaptureHeader(rank=1))
    assert json.loads(empty.read_text()) == {"mindspeed_prof": {"rank": 1}, "traceEvents": []}


def test_kind_from_the_engine_module() -> None:
    class LLM:
        pass

    LLM.__module__ = "vllm.entrypoints.llm"
    assert engine_kind(LLM()) == "vllm"
    assert engine_kind(LLM(), "sglang") == "sglang"
    with pytest.raises(ValueError, match="pass kind="):
        engine_kind(object())


def test_only_the_arguments_a_method_takes_are_passed(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []

    class Old:  # an SGLang release whose start_profile takes no arguments
        def start_profile(self) -> None:
            seen.append({})

        def stop_profile(self) -> None:
            seen.append({"stop": True})

    class New:
        def start_profile(self, **kwargs: Any) -> None:
            seen.append(kwargs)

        def stop_profile(self) -> None:
            pass

    EngineDriver(Old(), "sglang").start(tmp_path / "a")
    EngineDriver(New(), "sglang", with_stack=True).start(tmp_path / "b")
    assert seen[0] == {}
    assert seen[1] == {
        "output_dir": str(tmp_path / "b"),
        "activities": None,
        "with_stack": True,
        "record_shapes": False,
    }


def test_vllm_folder_from_config_or_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VLLM_TORCH_PROFILER_DIR", str(tmp_path / "env"))
    assert EngineDriver(_Bare(), "vllm").vllm_dir() == tmp_path / "env"
    given = EngineDriver(_Bare(), "vllm", profiler_dir=tmp_path / "given")
    assert given.vllm_dir() == tmp_path / "given"
