"""Counters (``C`` events of category ``count``) read from range files and the db export:
calls in one (step, stage) add up, distributions concatenate, hostile records are skipped with
one line naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from counter_fixtures import count, write_db, write_range_file

import mindspeed_prof.analysis.readers.counters as counters
from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.readers import read
from mindspeed_prof.analysis.readers.counters import Count
from mindspeed_prof.analysis.report.tables import tables


def _by_key(counts: list[Count]) -> dict[tuple, Count]:
    return {(c.step, c.stage, c.name): c for c in counts}


def test_calls_add_up_per_step_stage_and_name(tmp_path: Path) -> None:
    events = [
        count("tokens_generated", 100, 1, "actor_generate"),
        count("tokens_generated", 28, 1, "actor_generate"),
        count("tokens_generated", 7, 2, "actor_generate"),
        count("samples_kept", 3, 1, None),
        count("response_length", [5, 6], 1, "actor_generate"),
        count("response_length", [7.5], 1, "actor_generate"),
        count("loose", 1.5, None, None),
        {"ph": "C", "cat": "memory", "name": "HBM", "ts": 1, "args": {"value": 9}},
    ]
    data = read(write_range_file(tmp_path / "rank0_h_1_step1.mstx.trace.json", 0, events))
    got = _by_key(data.counters)
    assert set(got) == {
        (1, "actor_generate", "tokens_generated"),
        (2, "actor_generate", "tokens_generated"),
        (1, None, "samples_kept"),
        (1, "actor_generate", "response_length"),
        (None, None, "loose"),
    }
    gen = got[(1, "actor_generate", "tokens_generated")]
    assert (gen.value, gen.calls, gen.values) == (128.0, 2, None)
    dist = got[(1, "actor_generate", "response_length")]
    assert (dist.value, dist.values) == (None, [5.0, 6.0, 7.5])
    assert got[(None, None, "loose")].value == 1.5
    assert not data.problems and not data.holds_nothing


@pytest.mark.parametrize(
    "args, why",
    [
        ({"value": "12"}, "not a finite number"),
        ({"value": True}, "not a finite number"),
        ({"value": None}, "no value"),
        ({}, "no value"),
        ({"values": [1, "x"]}, "not a finite number"),
        ({"values": "1,2"}, "not a list"),
        ({"value": 1, "values": [1]}, "both value and values"),
        ({"value": 1, "step": "two"}, "is not an integer"),
        ({"value": 1, "step": 1.5}, "is not an integer"),
        ({"value": 1, "stage": 3}, "stage is not a name"),
        ({"value": {"a": 1}}, "not a finite number"),
    ],
)
def test_a_hostile_record_is_skipped_with_one_line_naming_the_file(
    tmp_path: Path, args: dict, why: str
) -> None:
    bad = {"ph": "C", "pid": 1, "tid": 1, "cat": "count", "name": "odd", "ts": 1, "args": args}
    path = write_range_file(
        tmp_path / "rank0.mstx.trace.json",
        0,
        [bad, bad, count("tokens_trained", 4, 1, "actor_update")],
    )
    data = read(path)
    assert [(c.name, c.value) for c in data.counters] == [("tokens_trained", 4.0)]
    (line,) = data.problems
    assert line.startswith(f"{path}: 2 counter events skipped") and why in line


def test_nan_tokens_and_huge_lists_are_skipped(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(counters, "MAX_VALUES", 4)
    path = tmp_path / "rank0.mstx.trace.json"
    write_range_file(
        path,
        0,
        [
            count("response_length", [1, 2, 3, 4, 5], 1, None),
            count("response_length", [1, 2], 1, None),
            count("tokens_generated", 1, 1, None),
            count("w", 1e308, 1, None),
            count("w", 1e308, 1, None),
        ],
    )
    path.write_text(path.read_text().replace('"value": 1,', '"value": NaN,'))
    data = read(path)
    got = _by_key(data.counters)
    assert got[(1, None, "response_length")].values == [1.0, 2.0]
    assert (1, None, "tokens_generated") not in got  # a NaN token: the event is left out
    assert got[(1, None, "w")].value == 1e308  # the second would make the sum infinite
    skipped = [p for p in data.problems if "counter events skipped" in p]
    assert len(skipped) == 1 and "5 values (over 4)" in skipped[0] and str(path) in skipped[0]


def test_values_kept_per_capture_are_bounded(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(counters, "MAX_KEPT", 5)
    data = read(
        write_range_file(
            tmp_path / "rank0.mstx.trace.json",
            0,
            [
                count("response_length", [1, 2, 3], 1, None),
                count("response_length", [4, 5, 6], 2, None),
            ],
        )
    )
    assert [c.values for c in data.counters] == [[1.0, 2.0, 3.0]]
    assert "over 5 distribution values" in data.problems[0]


def test_the_db_export_keeps_counters(tmp_path: Path) -> None:
    events = [
        {
            "ph": "X",
            "cat": "stage",
            "name": "actor_generate",
            "ts": 10.0,
            "dur": 50.0,
            "args": {"step": 1},
        },
        count("tokens_generated", 64, 1, "actor_generate", ts=20.0),
        count("response_length", [3, 9], 1, "actor_generate", ts=21.0),
        count("bad", "x", 1, None, ts=22.0),
    ]
    data = read(write_db(tmp_path / "rank0_h_1_step1.pt.trace.db", 0, events))
    got = _by_key(data.counters)
    assert got[(1, "actor_generate", "tokens_generated")].value == 64.0
    assert got[(1, "actor_generate", "response_length")].values == [3.0, 9.0]
    assert len(data.problems) == 1 and "1 counter event skipped" in data.problems[0]


def test_a_capture_counts_its_range_file_once_beside_its_db(tmp_path: Path) -> None:
    """The range file and the db export of one capture share a stem: counted once."""
    calls = [count("tokens_generated", 64, 1, "actor_generate")]
    write_range_file(tmp_path / "rank0_h_1_step1.mstx.trace.json", 0, calls)
    write_db(tmp_path / "rank0_h_1_step1.pt.trace.db", 0, calls)
    write_range_file(tmp_path / "rank1_h_1_step1.mstx.trace.json", 1, calls)
    rows = tables(analyse(tmp_path)).counters
    assert [(r.rank, r.name, r.value) for r in rows] == [
        (0, "tokens_generated", 64.0),
        (1, "tokens_generated", 64.0),
    ]
    assert rows[0].run == "run-20261202-ledger"


def test_json_writes_a_distribution_as_its_summary(tmp_path: Path) -> None:
    write_range_file(
        tmp_path / "rank0.mstx.trace.json",
        0,
        [count("response_length", [float(v) for v in range(1, 101)], 1, None)],
    )
    (row,) = tables(analyse(tmp_path)).counters
    summary = row.json()["values"]
    assert summary == {
        "n": 100,
        "sum": 5050.0,
        "min": 1.0,
        "p50": 50.5,
        "p99": pytest.approx(99.01),
        "max": 100.0,
    }
    json.dumps(row.json())


def test_counters_survive_the_cache_and_the_workers_encoding(tmp_path: Path, monkeypatch) -> None:
    from mindspeed_prof.analysis import cache

    path = write_range_file(
        tmp_path / "rank0.mstx.trace.json",
        0,
        [
            count("tokens_generated", 12, 1, "actor_generate"),
            count("response_length", [3.0, 4.5], 1, "actor_generate"),
            count("odd", "x"),
        ],
    )
    first = cache.read_cached(path)
    assert cache.cache_path(path).exists()
    monkeypatch.setattr(cache, "read", lambda *a, **k: pytest.fail("read again"))
    again = cache.read_cached(path)  # served from the entry
    assert again.counters == first.counters == read(path).counters
    assert again.problems == first.problems and len(again.problems) == 1
    assert cache.decode(cache.encode(first)).counters == first.counters
