"""``compare A B``: the CI gate at its edge, warnings when runs differ, warmup left out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mindspeed_prof.testing.kineto import span, write_cuda_trace, write_trace

from mindspeed_prof.cli import main


def _run(root: Path, update_us: float = 10_000.0, range_us: float = 2000.0, first: float = 1.0,
         ranks: tuple[int, ...] = (0,), steps: tuple[int, ...] = (1, 2, 3), **meta) -> Path:
    """Steps with actor_update (``first`` x longer in the first step) holding a range ``fwd``."""
    for rank in ranks:
        events = []
        for step in steps:
            t, k = step * 1_000_000, first if step == steps[0] else 1.0
            events += [span(f"ProfilerStep#{step}", t, 900_000),
                       span("actor_update", t + 10, update_us * k),
                       span("fwd", t + 20, range_us * k)]
        write_trace(root / f"rank{rank}_h_1_step1.pt.trace.json", events,
                    mindspeed_prof={"rank": rank, "level": "level1", **meta})
    return root


@pytest.mark.parametrize(("b_us", "code"), [(11_000.0 * (1 - 1e-6), 0), (11_000.0 * (1 + 1e-6), 4)])
def test_fail_over_at_its_edge(tmp_path: Path, b_us: float, code: int, capsys) -> None:
    a = _run(tmp_path / "a", update_us=10_000.0)
    b = _run(tmp_path / "b", update_us=b_us)
    assert main(["compare", str(a), str(b), "--fail-over", "0.1"]) == code
    err = capsys.readouterr().err
    assert ("slower: stage 'actor_update' rank 0" in err) == (code == 4)
    assert main(["compare", str(a), str(b)]) == 0  # no gate without --fail-over


def test_fail_over_on_a_range(tmp_path: Path, capsys) -> None:
    a = _run(tmp_path / "a")
    b = _run(tmp_path / "b", range_us=2000.0 * 1.051)
    assert main(["compare", str(a), str(b), "--fail-over", "0.05"]) == 4
    assert "range 'fwd' rank 0" in capsys.readouterr().err
    assert main(["compare", str(a), str(b), "--fail-over", "0.06"]) == 0


def test_warns_once_per_difference(tmp_path: Path, capsys) -> None:
    a = _run(tmp_path / "a", ranks=(0, 1))
    b = _run(tmp_path / "b", ranks=(0,), steps=(1, 2), level="level0")
    assert main(["compare", str(a), str(b)]) == 0
    lines = [x for x in capsys.readouterr().err.splitlines() if "warning" in x]
    assert [x.split("runs differ in ")[1].split(":")[0] for x in lines] == [
        "steps", "level", "ranks"]


def test_warmup_left_out_unless_asked(tmp_path: Path) -> None:
    meta = {"window": [1, 3], "warmup_steps": 1}
    a = _run(tmp_path / "a", **meta)
    b = _run(tmp_path / "b", first=5.0, **meta)  # only the warmup step is slower
    assert main(["compare", str(a), str(b), "--fail-over", "0.01"]) == 0
    assert main(["compare", str(a), str(b), "--fail-over", "0.01", "--include-warmup"]) == 4


def test_json_has_stages_ranges_device_memory(tmp_path: Path, capsys) -> None:
    a = write_cuda_trace(tmp_path / "a" / "rank0.pt.trace.json", seed=1).parent
    b = write_cuda_trace(tmp_path / "b" / "rank0.pt.trace.json", seed=2).parent
    assert main(["compare", str(a), str(b), "--json", "--fail-over", "100"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"rows", "ranges", "device", "memory", "warnings", "slower"} <= set(out)
    (dev,) = out["device"]
    assert dev["rank"] == 0 and dev["a_compute_ms"] > 0 and dev["b_comm_ms"] > 0
    assert {r["stage"] for r in out["rows"]} and out["slower"] == []
    assert main(["compare", str(a), str(b)]) == 0
    text = capsys.readouterr().out
    assert "Device ms per step" in text and "->" in text
