"""``analyse --json`` imports what the captures it reads need, not every module it could use:
each module a process imports costs every analysis its start (and its memory)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus"

#: Imported by ``--ray``, by writing a capture (package metadata, the host's name), by reading
#: in worker processes.
NOT_AT_START = ("mindspeed_prof.ray.link", "importlib.metadata", "socket", "multiprocessing")

_PROBE = """
import io, json, os, sys
from contextlib import redirect_stdout
from mindspeed_prof.cli import main
with redirect_stdout(io.StringIO()):
    code = main(["analyse", "--json", "--jobs", "1", sys.argv[1]])
threads = len(os.listdir("/proc/self/task"))  # the native ones too (BLAS's pool)
blas = os.environ.get("OPENBLAS_NUM_THREADS")
print(json.dumps({"code": code, "modules": sorted(sys.modules), "threads": threads, "blas": blas}))
"""


def _probe(root: Path, env: dict[str, str] | None = None) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, str(root)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **(env or {})},
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _imports(root: Path) -> tuple[int, set[str]]:
    got = _probe(root)
    return got["code"], set(got["modules"])


def _loaded(modules: set[str], name: str) -> bool:
    return any(m == name or m.startswith(name + ".") for m in modules)


def test_the_start_and_a_kineto_trace_import_no_cluster_config_or_pool(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    code, modules = _imports(empty)
    assert code == 1
    assert [m for m in NOT_AT_START if _loaded(modules, m)] == []
    assert not _loaded(modules, "numpy")  # a third of the start's time: columns import it
    trace = tmp_path / "trace"
    shutil.copytree(CORPUS / "kineto_nccl_2rank_sampled", trace)
    code, modules = _imports(trace)
    assert code == 0 and _loaded(modules, "numpy")  # the fold's columns
    assert [m for m in NOT_AT_START if _loaded(modules, m)] == []


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="threads counted in /proc")
def test_reading_starts_no_blas_threads_and_keeps_a_users_setting(tmp_path: Path) -> None:
    """numpy's BLAS pool (a thread a core, spinning after its start) cost a fifth of a small
    capture's CPU; the reading commands do no linear algebra and run on the main thread."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    trace = tmp_path / "trace"
    shutil.copytree(CORPUS / "kineto_nccl_2rank_sampled", trace)
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, str(trace)], capture_output=True, text=True, env=env
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["code"] == 0 and "numpy" in got["modules"]
    assert (got["threads"], got["blas"]) == (1, "1")
    assert _probe(trace, {"OPENBLAS_NUM_THREADS": "2"})["blas"] == "2"


def test_a_torch_npu_text_export_without_trace_view_reads_without_numpy(tmp_path: Path) -> None:
    """Its CSVs and JSON need no fold: numpy (a third of a small analysis's memory) stays out
    of the reading; only the report's device rules import it afterwards."""
    from mindspeed_prof.analysis.readers.npu.folder import FILE_NAMES, TRACE_VIEW

    folder = tmp_path / "rank0_ascend_pt"
    shutil.copytree(CORPUS / "npu_text_gpt3_csv_only" / "test_rank_1", folder)
    for packed in folder.rglob("*.xz"):
        import lzma

        packed.with_suffix("").write_bytes(lzma.decompress(packed.read_bytes()))
        packed.unlink()
    assert not list(folder.rglob(FILE_NAMES[TRACE_VIEW]))
    probe = (
        "import sys; from pathlib import Path; "
        "from mindspeed_prof.analysis.readers import read; "
        "d = read(Path(sys.argv[1])); "
        "print(bool(d.device), bool(d.kernels), 'numpy' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, str(folder)], capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["True", "True", "False"]
