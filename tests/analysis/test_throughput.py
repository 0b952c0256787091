"""Throughput per stage, rank and step from counters: tokens/s and samples/s of each rank's
own stage time, the spread across ranks, the trend over steps, MFU (never over 100%)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from counter_fixtures import rl_run

from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.counts import Model
from mindspeed_prof.analysis.report.settings import Settings
from mindspeed_prof.analysis.report.tables import tables
from mindspeed_prof.analysis.throughput import StageThroughput, ThroughputRow, _trend, mfu
from mindspeed_prof.cli import main
from mindspeed_prof.views.words import throughput_line


def _gen_ms(rank: int, step: int, stage: str) -> float:
    """Rank 2 generates at half speed; the update stage takes 50 ms everywhere."""
    if stage == "actor_update":
        return 50.0
    return 200.0 if rank == 2 else 100.0


def _calls(rank: int, step: int) -> list:
    return [
        ("tokens_generated", 1000 * step, "actor_generate"),  # grows with the step
        ("tokens_trained", 800, "actor_update"),
        ("samples_kept", 6, None),
        ("samples_dropped", 2, None),
    ]


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return rl_run(
        tmp_path,
        ranks=(0, 1, 2),
        stage_ms=_gen_ms,
        calls=_calls,
        model={"flops_per_token": 1e9, "peak_tflops": 10.0},
    )


def test_rates_per_rank_and_step_by_hand(run: Path) -> None:
    rows = {(r.stage, r.rank, r.step): r for r in tables(analyse(run)).throughput.rows}
    g = rows[("actor_generate", 2, 3)]
    assert (g.seconds, g.tokens, g.samples) == (pytest.approx(0.2), 3000.0, 8.0)
    assert g.tokens_per_s == pytest.approx(15_000.0) and g.samples_per_s == pytest.approx(40.0)
    assert g.counted_in == "stage"  # tokens in the stage (samples came from the step)
    u = rows[("actor_update", 0, 1)]
    assert (u.tokens, u.samples, u.tokens_per_s) == (800.0, 6.0, pytest.approx(16_000.0))
    # MFU: 800 tokens x 1e9 x 3 / (0.05 s x 10e12) = 4.8: over the peak, not a share
    assert u.mfu is None and str(u.mfu_note).startswith("over the peak (4.80x)")
    # generation: 1000 x 1e9 / (0.1 x 10e12) = 1.0 on rank 0 in step 1
    assert rows[("actor_generate", 0, 1)].mfu == pytest.approx(1.0)
    assert rows[("actor_generate", 0, 2)].mfu is None


def test_spread_slowest_rank_and_trend(run: Path) -> None:
    gen, upd = tables(analyse(run)).throughput.stages
    assert gen.stage == "actor_generate" and (gen.ranks, gen.steps) == (3, 3)
    # ranks 0 and 1: 6000 tokens in 0.3 s; rank 2: 6000 in 0.6 s
    assert gen.tokens_per_s == pytest.approx(20_000.0)
    assert (gen.min_tokens_per_s, gen.max_tokens_per_s) == (
        pytest.approx(10_000.0),
        pytest.approx(20_000.0),
    )
    assert gen.slowest_rank == 2
    # per step the median rank: 10,000 -> 20,000 -> 30,000 tok/s: slope 10,000 a step
    assert (gen.first_tokens_per_s, gen.last_tokens_per_s) == (
        pytest.approx(10_000.0),
        pytest.approx(30_000.0),
    )
    # three steps: a slope, but too few for a trend (Mann-Kendall at 5% needs five)
    assert gen.slope == pytest.approx(10_000.0) and gen.change is None
    # MFU pooled: 18,000 tokens x 1e9 / (1.2 s x 1e13) = 1.5: over the peak
    assert gen.mfu is None and "over the peak" in (gen.mfu_note or "")
    assert upd.tokens_per_s == pytest.approx(16_000.0) and upd.slope == pytest.approx(0.0)


def _trend_of(per_step: list[float]) -> StageThroughput:
    row = StageThroughput(stage="actor_generate", ranks=1, steps=len(per_step))
    rows = [
        ThroughputRow(stage="actor_generate", rank=0, step=i, seconds=1.0, tokens_per_s=v)
        for i, v in enumerate(per_step, start=1)
    ]
    _trend(row, rows)
    return row


@pytest.mark.parametrize(
    ("per_step", "change"),
    [
        ([100.0, 110.0, 120.0, 130.0, 140.0, 150.0], pytest.approx(0.5)),  # +10 a step from 100
        ([150.0, 140.0, 130.0, 120.0, 110.0, 100.0], pytest.approx(-50 / 150)),
        ([100.0, 103.0, 98.0, 101.0, 99.0, 102.0], None),  # noise about a level
        ([100.0, 101.0, 100.0, 30.0, 100.0, 101.0], None),  # one stalled step
        ([100.0, 110.0, 120.0, 130.0], None),  # four steps: too few to tell
    ],
)
def test_a_trend_is_said_only_where_the_steps_rise_or_fall_beyond_their_noise(
    per_step: list[float], change: object
) -> None:
    row = _trend_of(per_step)
    assert row.change == change
    assert (row.first_tokens_per_s, row.last_tokens_per_s) == (per_step[0], per_step[-1])
    assert row.slope is not None


def test_flags_override_the_header_and_mfu_by_hand(run: Path) -> None:
    result = analyse(run)
    given = Settings(peak_tflops=1000.0)
    gen, upd = tables(result, given).throughput.stages
    assert gen.mfu == pytest.approx(18_000 * 1e9 / (1.2 * 1000e12))
    assert upd.mfu == pytest.approx(3 * 7200 * 1e9 / (0.45 * 1000e12))  # 9 rank-steps
    assert (
        tables(result, given).throughput.model.peak_from == "flag"
        and tables(result, given).throughput.model.flops_from == "header"
    )
    line = throughput_line(tables(result, given).throughput.stages)
    assert line == (
        "actor_generate 20,000 tok/s per rank (slowest rank 2: 10,000), MFU 2%; "
        "actor_update 16,000 tok/s per rank, MFU 5%"
    )


def test_mfu_needs_both_facts_and_says_why() -> None:
    assert mfu(10.0, 1.0, "actor_generate", Model()) == (
        None,
        "no FLOPs per token (--flops-per-token, or model_flops_per_token)",
    )
    assert str(mfu(10.0, 1.0, "actor_generate", Model(flops_per_token=1.0))[1]).startswith(
        "no peak"
    )
    assert mfu(None, 1.0, "x", Model(flops_per_token=1.0, peak_tflops=1.0)) == (
        None,
        "no tokens counted",
    )
    value, note = mfu(1e9, 1.0, "critic_update", Model(flops_per_token=100.0, peak_tflops=1.0))
    assert note is None and value == pytest.approx(0.3)


def test_hostile_and_disagreeing_model_blocks_are_not_used(tmp_path: Path) -> None:
    rl_run(
        tmp_path / "a",
        ranks=(0,),
        calls=_calls,
        model={"flops_per_token": "big", "peak_tflops": -1},
    )
    result = analyse(tmp_path / "a")
    model = tables(result).throughput.model
    assert (model.flops_per_token, model.peak_tflops) == (None, None)
    # the string is dropped on reading the header (one problem naming the file and key), the
    # negative number when the model facts are taken
    assert len(model.problems) == 1 and "peak_tflops=-1.0: allowed" in model.problems[0]
    (odd,) = [p for p in tables(result).problems if "model.flops_per_token" in p]
    assert odd.startswith(str(result.traces[0].path)) and "wrong type" in odd
    rl_run(tmp_path / "b", ranks=(0,), calls=_calls, model={"flops_per_token": 1e9})
    rl_run(tmp_path / "b2", ranks=(1,), calls=_calls, model={"flops_per_token": 2e9})
    for f in (tmp_path / "b2").iterdir():
        f.rename(tmp_path / "b" / f.name)
    model = tables(analyse(tmp_path / "b")).throughput.model
    assert model.flops_per_token is None and "disagree" in model.problems[0]


def test_counts_outside_a_stage_go_to_generation_and_update(tmp_path: Path) -> None:
    rl_run(
        tmp_path,
        ranks=(0,),
        steps=(1,),
        calls=lambda rank, step: [("tokens_generated", 500, None), ("tokens_trained", 400, None)],
        stages=("actor_generate", "actor_compute_log_prob", "actor_update"),
    )
    rows = {r.stage: r for r in tables(analyse(tmp_path)).throughput.rows}
    assert set(rows) == {"actor_generate", "actor_update"}  # log prob counted nothing
    assert (rows["actor_generate"].tokens, rows["actor_generate"].counted_in) == (500.0, "step")
    assert rows["actor_update"].tokens == 400.0


def test_warmup_steps_are_left_out(tmp_path: Path) -> None:
    rl_run(tmp_path, ranks=(0,), steps=(1, 2, 3), calls=_calls)
    for f in tmp_path.iterdir():  # steps 1 is warmup before a window starting at 2
        doc = json.loads(f.read_text())
        doc["mindspeed_prof"].update(window=[2, 4], warmup_steps=1)
        f.write_text(json.dumps(doc))
    assert {r.step for r in tables(analyse(tmp_path)).throughput.rows} == {2, 3}


def test_no_counters_no_throughput_anywhere(tmp_path: Path, capsys) -> None:
    rl_run(tmp_path, ranks=(0, 1))
    result = analyse(tmp_path)
    assert tables(result).throughput.rows == [] and tables(result).throughput.stages == []
    assert tables(result).ledger is None
    assert main(["analyse", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Throughput per rank" not in out and "RL ledger" not in out
    assert "  throughput  " not in out and "Long tail" not in out
    assert main(["analyse", str(tmp_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["counters"], doc["throughput"]["rows"], doc["ledger"]) == ([], [], None)
    assert doc["verdict"]["throughput"] == []


@pytest.mark.parametrize(
    "flag, value, said",
    [
        ("--peak-tflops", "0", "allowed a finite number over 0"),
        ("--peak-tflops", "nan", "allowed a finite number over 0"),
        ("--peak-tflops", "1e9", "no device's peak"),
        ("--flops-per-token", "-5", "allowed a finite number over 0"),
        ("--flops-per-token", "many", "not a number"),
    ],
)
def test_model_flags_are_validated(run: Path, capsys, flag: str, value: str, said: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["analyse", str(run), flag, value])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}" in err and said in err


def test_the_verdict_line_and_text_never_print_mfu_over_100(run: Path, capsys) -> None:
    assert main(["analyse", str(run), "--flops-per-token", "1e9"]) == 0
    out = capsys.readouterr().out
    flat = " ".join(out.split())
    assert (
        "throughput actor_generate 20,000 tok/s per rank (slowest rank 2: 10,000), MFU "
        "not shown: over the peak" in flat
    )
    assert "150%" not in flat and "480%" not in flat
    assert main(["analyse", str(run), "--peak-tflops", "100"]) == 0
    flat = " ".join(capsys.readouterr().out.split())
    assert "MFU 15%" in flat  # 18,000 x 1e9 / (1.2 x 1e14)
