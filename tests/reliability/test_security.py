"""Nothing read from disk is unpickled or evaluated; no name places files outside the save root."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch
from helpers import count

import mindspeed_prof
from mindspeed_prof import Profiler
from mindspeed_prof.capture.naming import inside, safe_name

PACKAGE = Path(mindspeed_prof.__file__).parent
FORBIDDEN_CALLS = {
    ("pickle", "load"),
    ("pickle", "loads"),
    ("yaml", "load"),
    ("yaml", "unsafe_load"),
    ("marshal", "loads"),
    ("torch", "load"),
}


def test_no_pickle_eval_or_unsafe_yaml_in_the_package() -> None:
    found = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                f = node.func
                if isinstance(f, ast.Name) and f.id in ("eval", "exec"):
                    found.append(f"{path.name}: {f.id}")
                if (
                    isinstance(f, ast.Attribute)
                    and isinstance(f.value, ast.Name)
                    and (f.value.id, f.attr) in FORBIDDEN_CALLS
                ):
                    found.append(f"{path.name}: {f.value.id}.{f.attr}")
    assert found == []


@pytest.mark.parametrize("role", ["../../etc", "/abs/path", "a/b", "..", "x\\y", "ok_role"])
def test_role_cannot_leave_save_root(tmp_path: Path, role: str) -> None:
    count("path escapes tried")
    root = tmp_path / "save"
    try:
        prof = Profiler.from_config(
            {"integrated": {"profile": True, "mstx": True, "profile_save_path": str(root)}},
            rank=0,
            role=role,
        )
    except ValueError:
        return  # refused outright is fine too
    with prof.step(1):
        torch.randn(2, 2)
    prof.close()
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert written and all(root in p.parents for p in written)


@pytest.mark.parametrize("name", ["../x", "/etc/passwd", "a/../../b", "...", "host\x00name"])
def test_safe_name_is_one_component(name: str) -> None:
    count("path escapes tried")
    try:
        cleaned = safe_name(name)
    except ValueError:
        return
    assert "/" not in cleaned and "\\" not in cleaned and cleaned not in (".", "..")
    assert not cleaned.startswith(".")


def test_inside_refuses_escape(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="would leave the save root"):
        inside(tmp_path, "..", "x")
    assert inside(tmp_path, "integrated") == (tmp_path / "integrated").resolve()


def test_hostile_stage_and_host_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("socket.gethostname", lambda: "../../evil/host")
    prof = Profiler.from_config(
        {"integrated": {"profile": True, "mstx": True, "profile_save_path": str(tmp_path / "s")}},
        rank=0,
    )
    with prof.step(1), prof.stage("../../outside"):
        pass
    prof.close()
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert files and all((tmp_path / "s") in p.parents for p in files)
    assert all("/" not in p.name for p in files)
