"""The device's peak from the name a Kineto trace records, and MFU's peak taken from it only
where no flag or header gives one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mindspeed_prof.analysis.counts import model_facts
from mindspeed_prof.analysis.readers.kineto.chrome import read_json as read_chrome
from mindspeed_prof.analysis.readers.kineto.device_peak import device_name, peak_tflops


@pytest.mark.parametrize(
    ("name", "peak"),
    [
        ("NVIDIA H100 80GB HBM3", 989.0),
        ("NVIDIA H100 PCIe", 756.0),
        ("NVIDIA H200", 989.0),
        ("NVIDIA H20", 148.0),
        ("NVIDIA A100-SXM4-80GB", 312.0),
        ("NVIDIA A10", 125.0),
        ("NVIDIA L40S", 362.0),
        ("NVIDIA L40", 181.0),
        ("NVIDIA GB200", 2500.0),
        ("NVIDIA B200", 2250.0),
        ("AMD Instinct MI300X", 1307.0),
        ("NVIDIA GeForce GTX 1080", None),
    ],
)
def test_each_name_gives_its_own_peak_and_never_a_neighbours(name: str, peak: float | None) -> None:
    assert peak_tflops(name) == peak


def test_a_name_is_read_only_where_every_device_shares_it() -> None:
    one = {"id": 0, "name": "NVIDIA H100 80GB HBM3"}
    assert device_name([one, {**one, "id": 1}]) == "NVIDIA H100 80GB HBM3"
    assert device_name([one, {"id": 1, "name": "NVIDIA A100-SXM4-80GB"}]) is None
    assert device_name("H100") is None and device_name([{"name": 7}]) is None
    assert device_name(None) is None


def _trace(path: Path, device: str | None, model: dict[str, float] | None = None) -> Path:
    doc: dict[str, object] = {
        "traceEvents": [
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "aten::mm",
                "pid": 1,
                "tid": 1,
                "ts": 0.0,
                "dur": 5.0,
            }
        ]
    }
    if device is not None:
        doc["deviceProperties"] = [{"id": 0, "name": device, "totalGlobalMem": 85e9}]
    if model is not None:
        doc["mindspeed_prof"] = {"kind": "spans", "model": model}
    path.write_text(json.dumps(doc))
    return path


def test_mfu_takes_the_devices_peak_only_where_nothing_gives_one(tmp_path: Path) -> None:
    h100 = read_chrome(_trace(tmp_path / "a.json", "NVIDIA H100 80GB HBM3"), "g", 1)
    plain = read_chrome(_trace(tmp_path / "b.json", None, {"flops_per_token": 2e9}), "g", 1)
    facts = model_facts([h100, plain])
    assert (facts.peak_tflops, facts.peak_from) == (989.0, "device NVIDIA H100 80GB HBM3")
    assert facts.flops_per_token == 2e9
    given = model_facts([h100, plain], peak_tflops=400.0)
    assert (given.peak_tflops, given.peak_from) == (400.0, "flag")
    headed = read_chrome(_trace(tmp_path / "c.json", None, {"peak_tflops": 312.0}), "g", 1)
    assert model_facts([h100, headed]).peak_from == "header"
    a100 = read_chrome(_trace(tmp_path / "d.json", "NVIDIA A100-SXM4-80GB"), "g", 1)
    assert model_facts([h100, a100]).peak_tflops is None  # two devices: which peak is unknown
    unknown = read_chrome(_trace(tmp_path / "e.json", "NVIDIA GeForce GTX 1080"), "g", 1)
    assert model_facts([unknown]).peak_tflops is None
