"""Tables at 80 columns: every header whole, no line wider than the terminal, legends for codes."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from mindspeed_prof.analysis.analyse import Captures, analyse
from mindspeed_prof.analysis.readers.labels import ranks_text
from mindspeed_prof.analysis.readers.model import TraceData
from mindspeed_prof.analysis.report.report import report
from mindspeed_prof.analysis.rows import Change, RangeRow, StageRow
from mindspeed_prof.cli.presets import changed_values
from mindspeed_prof.config.presets import PRESETS
from mindspeed_prof.config.schema import STAGES
from mindspeed_prof.views.text import (
    STAGE_CODES,
    count,
    headline,
    print_analysis,
    print_compare,
    print_presets,
    print_ranges,
    print_stage_rank,
    print_sweep,
)

WIDTH = 80


def render(fn: Any, *args: Any, width: int = WIDTH, **kwargs: Any) -> str:
    out = io.StringIO()
    fn(*args, console=Console(file=out, width=width, color_system=None), **kwargs)
    return out.getvalue()


def table_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line[:1] in "┏┃┡│└┗┠├"]


def headers(text: str) -> list[str]:
    """Header cells of every table in ``text`` (the rows between ┏ and ┡)."""
    out: list[str] = []
    inside = False
    for line in text.splitlines():
        if line.startswith("┏"):
            inside = True
        elif line.startswith("┡"):
            inside = False
        elif inside:
            out.extend(cell.strip() for cell in line.strip("┃").split("┃"))
    return out


def split_tables(text: str) -> list[list[str]]:
    """Each table's header cells."""
    return [headers("┏" + part) for part in text.split("┏")[1:]]


def assert_readable(text: str) -> None:
    assert "…" not in text, text  # rich cut something
    assert all(len(line) <= WIDTH for line in table_lines(text)), text


def stage_rows(ranks: int, stages: list[str]) -> list[StageRow]:
    return [
        StageRow(stage=s, rank=r, count=2, total_ms=1234.5678 * (r + 1), mean_ms=1.0, max_ms=1.0)
        for s in stages
        for r in range(ranks)
    ]


def test_count_is_singular_or_plural() -> None:
    assert [count(n, "capture") for n in (0, 1, 2, 1000)] == [
        "0 captures",
        "1 capture",
        "2 captures",
        "1,000 captures",
    ]


@pytest.mark.parametrize("ranks", [1, 2, 4, 8, 16])
def test_stage_rank_table_fits_any_rank_count(ranks: int) -> None:
    text = render(print_stage_rank, stage_rows(ranks, list(STAGES)))
    assert_readable(text)
    cells = headers(text)
    if "stage" in cells:  # stages as rows: every rank a column, every stage name whole
        assert cells == ["stage", *[f"rank {r}" for r in range(ranks)]]
        assert all(s in text for s in STAGES)
    else:  # ranks as rows: stage codes, explained below the table, in parts that fit
        parts = split_tables(text)
        assert all(part[0] == "rank" for part in parts)
        assert [c for part in parts for c in part[1:]] == [STAGE_CODES[s] for s in STAGES]
        assert len(parts) == 1 or all(
            f", {i} of {len(parts)}" in text for i in range(1, len(parts) + 1)
        )
        bodies = [
            [line for line in part.splitlines() if line.startswith("│")]
            for part in text.split("┏")[1:]
        ]
        assert [len(b) for b in bodies] == [ranks] * len(parts)  # a rank a line: no cell wraps
        assert all(f"{STAGE_CODES[s]} = {s}" in text for s in STAGES)
    assert ranks > 2 or "stage" in cells  # the natural layout whenever it fits


def test_unknown_long_stage_names_get_codes_and_a_legend() -> None:
    names = ["a_custom_stage_with_a_long_name", "another_custom_long_stage_name", "short"]
    text = render(print_stage_rank, stage_rows(9, names))
    assert_readable(text)
    assert headers(text) == ["rank", "S1", "S2", "short"]
    assert "S1 = a_custom_stage_with_a_long_name" in text and "short =" not in text


@pytest.mark.parametrize("ms", [12.5, 12_345.678])
def test_straggler_stage_names_are_never_cut(ms: float) -> None:
    """Every stage, the longest too (``reference_compute_log_prob``), whole in the stragglers
    table at 80 columns, or as its code with the legend under the table: never cut mid-name."""
    from types import SimpleNamespace

    from mindspeed_prof.analysis.rows import Straggler
    from mindspeed_prof.views.text.stages import print_stragglers

    rows = [
        Straggler.of("stage", s, step=i, who=(12, ""), ms=ms * 2, others_ms=ms)
        for i, s in enumerate(STAGES)
    ]
    text = render(print_stragglers, rows, "stage", SimpleNamespace(margin=0.15, noise_ms=5.0))
    assert_readable(text)
    body = [
        line.strip("│").split("│")[0].strip() for line in table_lines(text) if line.startswith("│")
    ]
    named = {s: s if s in body else STAGE_CODES[s] for s in STAGES}
    assert body == [named[s] for s in STAGES]  # one line a row: no name folded
    assert all(f"{code} = {s}" in text for s, code in named.items() if code != s)


def test_empty_stage_table_is_one_line_not_a_wrapped_title() -> None:
    text = render(print_stage_rank, [], width=20)
    assert text == "No stage ranges in these captures.\n"


def test_title_never_wraps_in_a_narrow_table() -> None:
    text = render(print_stage_rank, stage_rows(1, ["actor_update"]))
    assert text.splitlines()[0].strip() == "Stage time per rank: total ms (executions)"


def test_analysis_at_80_columns(run_dir: Path) -> None:
    result = analyse(run_dir)
    text = render(print_analysis, report(result))
    assert_readable(text)
    assert ["rank", "step", "total", *[STAGE_CODES[s] for s in STAGES]] in split_tables(text)
    for stage in STAGES:  # the legend names each code once
        assert text.count(f"{STAGE_CODES[stage]} = {stage}") == 1
    assert "skipped" not in text  # the CLI names skipped files on stderr, once


def test_analysis_counts_captures_not_files(run_dir: Path) -> None:
    result = analyse(run_dir)
    files = len(result.traces)
    assert files == 4  # two ranks, one capture each: a torch trace and a range file
    assert render(print_analysis, report(result)).startswith("2 captures under ")


def test_wide_values_wrap_but_headers_stay_whole() -> None:
    rows = stage_rows(3, list(STAGES))
    for r in rows:
        r.total_ms = 123_456_789.0
    text = render(print_stage_rank, rows)
    assert "…" not in text
    assert headers(text)[0] in ("stage", "rank")


def test_compare_at_80_columns() -> None:
    rows = [
        Change(
            kind="stage",
            name=s,
            rank=r,
            a_mean_ms=12_345.6,
            b_mean_ms=23_456.7,
            change=0.9,
            regression=True,
            improvement=False,
            count=1000,
            impact_ms=11_111_100.0,
        )
        for s in STAGES
        for r in range(2)
    ]
    text = render(print_compare, rows, "runs/a/profiler_data", "runs/b/profiler_data")
    assert_readable(text)
    assert headers(text) == ["stage", "rank", "A ms", "B ms", "change", "impact ms"]
    assert "A (baseline): runs/a/profiler_data" in text and "+90.0% slower" in text
    assert "+11,111,100.0" in text


def test_sweep_overrides_and_notes_are_whole_lines() -> None:
    common = "profiler=stage_scoped"
    rows = [
        {
            "job": i,
            "stage": s,
            "status": "completed",
            "captures": int(i != 1),
            "ms_per_step": None,
            "ms_per_stage": 12.5 if i != 1 else None,
            "overrides": [
                common,
                f"profiler_config.integrated.stage={s}",
                f"profiler_config.integrated.profile_level=level{i}",
            ],
            "note": None if i != 1 else f"stage {s} never ran in this job (step 1)",
        }
        for i, s in enumerate(("actor_generate", "reference_compute_log_prob"))
    ]
    text = render(print_sweep, rows, Path("multirun/2026-11-30/10-00-00"))
    assert_readable(text)
    assert headers(text) == ["job", "stage", "status", "captures", "ms/stage"]  # no empty column
    assert "job 0: profiler_config.integrated.profile_level=level0\n" in text
    assert (
        "job 1: profiler_config.integrated.profile_level=level1; stage "
        "reference_compute_log_prob never ran in this job (step 1)\n"
    ) in text
    assert common not in text  # what every job shares is no news


def test_sweep_names_a_failed_job_with_its_error_as_written() -> None:
    rows = [
        {
            "job": i,
            "stage": "all",
            "status": "failed" if i else "completed",
            "captures": 1,
            "ms_per_step": 1.0,
            "ms_per_stage": None,
            "overrides": [f"fail_at={2 * i}"],
            "note": None,
            "error": "KeyError: '[bold]x[/bold]'" if i else None,
        }
        for i in range(2)
    ]
    text = render(print_sweep, rows, Path("multirun/2026-11-30/10-00-00"))
    assert_readable(text)
    assert "job 0: fail_at=0\n" in text
    assert "job 1: fail_at=2; failed: KeyError: '[bold]x[/bold]'\n" in text  # not markup


def test_presets_never_cut_and_list_only_changes() -> None:
    presets = [(n, q, changed_values(f)) for n, (q, f) in PRESETS.items()]
    text = render(print_presets, presets)
    assert_readable(text)
    flat = " ".join(
        " ".join(cell.strip() for cell in line.strip("│").split("│")) for line in text.splitlines()
    )
    for name, question, _ in presets:  # each description whole, word for word
        assert " ".join(question.split()) in " ".join(flat.split()), name
    assert "profile_with_npu" not in text  # mstx_light sets it to its default
    assert changed_values(PRESETS["mstx_light"].fields) == {
        "profile": "true",
        "mstx": "true",
        "profile_level": "level_none",
        "profile_with_cpu": "false",
        "profile_step_start": 2,
        "profile_step_end": 6,
    }


def test_real_torch_npu_capture_renders_memory_tables(tmp_path: Path) -> None:
    """torch_npu's operator_memory.csv gives the top allocating operators (the default view
    crashed on them: their rows used another key than the trace readers')."""
    from npu_fixtures import unpack

    root = tmp_path / "run"
    unpack("text/rank0_ascend_pt", root / "rank0_ascend_pt")
    text = render(print_analysis, report(analyse(root, jobs=1, cache=False)))
    assert "Top allocating operators" in text and "aten::mm" in text
    assert max(len(line) for line in table_lines(text)) <= WIDTH


# -- lists of ranks and steps, the first line, the ranges table ------------------------------


def _parse_ranks(text: str) -> list[int | None]:
    out: list[int | None] = []
    for part in text.split(", ") if text else []:
        if part == "?":
            out.append(None)
        elif "-" in part:
            lo, hi = map(int, part.split("-"))
            assert hi - lo >= 2  # a run of two is written out
            out.extend(range(lo, hi + 1))
        else:
            out.append(int(part))
    return out


@settings(deadline=None)  # timing is not what is tested: a loaded machine must not fail it
@given(st.lists(st.one_of(st.none(), st.integers(0, 300)), max_size=60))
def test_ranks_text_reads_back_as_the_same_ranks(ranks: list[int | None]) -> None:
    text = ranks_text(ranks)
    known = sorted({r for r in ranks if r is not None})
    assert _parse_ranks(text) == known + ([None] if None in ranks else [])


def test_ranks_text_shortens_runs() -> None:
    assert ranks_text(list(range(128))) == "0-127"
    assert ranks_text([3, 0, 1, None, 8, 9]) == "0, 1, 3, 8, 9, ?"


@settings(deadline=None)
@given(root=st.text(alphabet="abc/_-", min_size=1, max_size=120), ranks=st.integers(1, 600))
def test_the_first_line_puts_counts_apart_from_a_long_root(root: str, ranks: int) -> None:
    traces = [TraceData(Path(f"r{r}.pt.trace.json"), "torch", r, "g", 10) for r in range(ranks)]
    result = Captures(root=Path("/" + root), traces=traces)
    lines = headline(report(result), WIDTH)
    where = f"{count(ranks, 'capture')} under {result.root}"
    what = f"{count(ranks, 'rank')} {ranks_text(list(range(ranks)))}, {count(10 * ranks, 'byte')}"
    assert lines in ([f"{where}: {what}"], [f"{where}:", what])
    assert (len(lines) == 1) == (len(where) + 2 + len(what) <= WIDTH)
    assert all(len(line) <= WIDTH for line in lines if str(result.root) not in line)


def test_range_times_never_fold_inside_a_number() -> None:
    rows = [
        RangeRow(
            name=f"[param|pytorch.model.alex_net|{i}|warmup|forward]",
            rank=0,
            stage=None,
            count=2,
            total_ms=43_425.28 * (i + 1),
            self_ms=3.67,
            mean_ms=12_840.44,
            p95_ms=12_840.44,
            max_ms=12_757.09,
        )
        for i in range(3)
    ]
    text = render(lambda console: print_ranges(rows, console))
    body = [line for line in table_lines(text) if line.startswith("│")]
    assert len(body) == 3  # one line a row: no number folded over two lines
    assert all(len(line) <= WIDTH for line in table_lines(text))
    assert "43,425 " in body[0] and "3.67" in body[0]  # a second and more: no decimals


def test_a_stage_too_long_for_the_range_column_is_its_code_with_a_legend() -> None:
    """At 80 columns the range column is narrow: a long stage name is its code (``A.logp``),
    named in full once under the table, never cut in its middle."""
    rows = [
        RangeRow(
            name=name,
            rank=0,
            stage=stage,
            count=2,
            total_ms=43_425.28,
            self_ms=3.67,
            mean_ms=12_840.44,
            p95_ms=12_840.44,
            max_ms=12_757.09,
        )
        for name, stage in (
            ("forward", "actor_compute_log_prob"),
            ("sample", "rollout"),
            ("fwd", "my_own_very_long_stage_name"),
        )
    ]
    text = render(lambda console: print_ranges(rows, console))
    assert "..." not in text and all(len(line) <= WIDTH for line in text.splitlines())
    assert "in A.logp" in text and "in rollout" in text and "in S1" in text
    assert "A.logp = actor_compute_log_prob" in text and "S1 = my_own_very_long_stage_name" in text
    assert "rollout =" not in text  # a name that fits is its own


def test_hour_long_ranges_are_shown_in_seconds() -> None:
    rows = [
        RangeRow(
            name="rollout",
            rank=0,
            stage="actor_generate",
            count=12_345,
            total_ms=3.6e6,
            self_ms=3.6e6,
            mean_ms=3.6e6,
            p95_ms=3.6e6,
            max_ms=3.6e6,
        )
    ]
    text = render(lambda console: print_ranges(rows, console))
    assert text.splitlines()[0].strip().startswith("Custom ranges by total s ")
    (first, *_) = [line for line in table_lines(text) if line.startswith("│")]
    assert first.count("3,600.0") == 5 and all(len(line) <= WIDTH for line in table_lines(text))
