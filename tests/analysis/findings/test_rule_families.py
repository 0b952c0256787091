"""``find`` runs the torch_npu family of rules only where a capture is torch_npu's: on any other
its rules find nothing, so leaving them out changes no answer."""

from __future__ import annotations

import shutil
from pathlib import Path

from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.findings import npu, rules
from mindspeed_prof.analysis.report.settings import Settings
from mindspeed_prof.analysis.report.tables import tables

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "corpus"


def test_npu_rules_run_for_npu_captures_and_find_nothing_on_others(tmp_path: Path) -> None:
    shutil.copytree(CORPUS / "kineto_nccl_2rank_sampled", tmp_path / "cuda")
    cuda = analyse(tmp_path / "cuda", cache=False)
    assert cuda.traces and all(t.npu is None for t in cuda.traces)
    settings = Settings()
    table = tables(cuda, settings)
    assert [rule(cuda, table, settings) for rule in npu.RULES] == [[] for _ in npu.RULES]
    assert not set(npu.RULES) & set(rules(cuda))
    assert set(npu.RULES) <= set(rules())
    shutil.copytree(CORPUS / "npu_text_gpt3_csv_only" / "test_rank_1", tmp_path / "r1_ascend_pt")
    for packed in (tmp_path / "r1_ascend_pt").rglob("*.xz"):
        import lzma

        packed.with_suffix("").write_bytes(lzma.decompress(packed.read_bytes()))
        packed.unlink()
    ascend = analyse(tmp_path / "r1_ascend_pt", cache=False)
    assert ascend.traces and set(npu.RULES) <= set(rules(ascend))
