"""RL findings on captures made by our own Profiler (backend none, range files): planted
effects are found with their numbers, no effect finds nothing, and each threshold's edge is
tried from both sides.

Most captures run on a fake clock (the profiler's ``perf_counter_ns`` advanced by the test),
so a stage lasts exactly what the test says and an edge can be tried to the microsecond; a few
run on the real clock with sleeps, the way a trainer would.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Union

import pytest
from helpers import answered
from hypothesis import given, settings
from hypothesis import strategies as st

import mindspeed_prof.capture.ranges as ranges_mod
import mindspeed_prof.capture.spans as spans_mod
from mindspeed_prof import Profiler
from mindspeed_prof.analysis.analyse import Captures, analyse
from mindspeed_prof.analysis.findings import Finding, find, rl
from mindspeed_prof.analysis.findings import ranks as ranks_rules
from mindspeed_prof.analysis.findings.rl import coverage, report
from mindspeed_prof.analysis.readers.model import Range, TraceData
from mindspeed_prof.analysis.report.settings import Settings
from mindspeed_prof.analysis.report.tables import tables
from mindspeed_prof.cli import main
from mindspeed_prof.formats.header import read_header

#: A step's plan: a stage and its ms, or ms outside every stage.
Item = Union[tuple[str, float], float]

GEN, LOGP, REF, VAL, UPD, CUPD = (
    "actor_generate",
    "actor_compute_log_prob",
    "reference_compute_log_prob",
    "critic_compute_values",
    "actor_update",
    "critic_update",
)


class Clock:
    """The profiler's clock, moved only by ``advance`` (or, ``real``, by sleeping)."""

    def __init__(self) -> None:
        self.ns = 1_000_000_000_000
        self.real = False

    def __call__(self) -> int:
        return self.ns

    def advance(self, ms: float) -> None:
        if self.real:
            time.sleep(ms / 1000.0)
        else:
            self.ns += round(ms * 1e6)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[Clock]:
    c = Clock()
    monkeypatch.setattr(ranges_mod, "perf_counter_ns", c)
    monkeypatch.setattr(spans_mod, "perf_counter_ns", c)
    yield c


@pytest.fixture
def real() -> Clock:
    c = Clock()
    c.real = True
    return c


def run(
    root: Path, clock: Clock, plan: list[list[Item]], rank: int = 0, role: str = "integrated"
) -> None:
    """One worker's capture of ``plan`` (a list of steps) through ``Profiler.from_config``."""
    prof = Profiler.from_config(
        {
            "integrated": {
                "profile": True,
                "mstx": True,
                "profile_level": "level_none",
                "profile_step_end": len(plan) + 1,
                "profile_save_path": str(root),
            },
            "extensions": {"backend": "none"},
        },
        rank=rank,
        role=role,
    )
    for step, items in enumerate(plan, 1):
        with prof.step(step):
            for item in items:
                if isinstance(item, tuple):
                    with prof.stage(item[0]):
                        clock.advance(item[1])
                else:
                    clock.advance(item)
    prof.close()


def rule_of(result: Captures, rule: rl.Rule, given: Settings | None = None) -> list[Finding]:
    found = rule(*answered(result, given))
    for f in found:
        assert "\n" not in f.title and f.severity in ("high", "medium", "low")
        assert f.impact_ms is not None and f.impact_ms > 0 and f.source and f.suggestion
    return found


# -- (a) time no stage covers ----------------------------------------------------------------


def test_uncovered_time_found_with_where_it_lies(tmp_path: Path, clock: Clock) -> None:
    """Steps of 1 + 40 + 12 + 45 + 2 = 100 ms: 15 ms in no stage, 12 of them between
    generation and the update (a weight sync, say), on both ranks; rank 1 has 3 ms more."""
    for rank, extra in ((0, 0.0), (1, 3.0)):
        run(tmp_path, clock, [[1, (GEN, 40), 12 + extra, (UPD, 45), 2]] * 3, rank=rank)
    (f,) = rule_of(analyse(tmp_path, cache=False), rl.uncovered)
    assert f.rule == "rl.uncovered" and f.ranks == [0, 1] and f.severity == "medium"
    assert f.impact_ms == pytest.approx(18.0, abs=1e-3)
    assert f.title == (
        "18.0 ms per step (17% of the step) is in no stage on rank 1 (of 2 "
        "ranks): most between actor_generate and actor_update (15.0 ms)"
    )
    lines = f.detail.splitlines()
    assert lines[0] == (
        "rank 1: 18.0 of 103.0 ms per step (steps 1-3) in no stage: between "
        "actor_generate and actor_update 15.0, after actor_update 2.0, "
        "before actor_generate 1.0 ms"
    )
    assert lines[1].startswith("rank 0: 15.0 of 100.0 ms per step")
    assert "rank1_" in f.source and "rank0_" in f.source


def test_a_gap_in_most_steps_is_a_cost_per_step_and_in_a_few_is_not(
    tmp_path: Path, clock: Clock
) -> None:
    """A rank descheduled for 40 ms between two stages in 1 or 2 steps of 4 is not time no
    stage covers per step; the same gap in 3 of 4 is, at 40 ms (what most steps spent)."""
    for gapped in (1, 2, 3):
        folder = tmp_path / str(gapped)
        run(folder, clock, [[(GEN, 50), 40 * (k < gapped), (UPD, 50)] for k in range(4)])
        got = rl.uncovered(*answered(analyse(folder, cache=False)))
        if gapped < 3:
            assert got == [], gapped
            continue
        (f,) = got
        assert f.impact_ms == pytest.approx(40.0, abs=1e-3)
        assert f.title.endswith("most between actor_generate and actor_update (40.0 ms)")


def test_uncovered_counts_overlapping_and_nested_stages_once(tmp_path: Path, clock: Clock) -> None:
    """A stage inside another covers nothing more: 2 ms before, 50 ms of generation holding
    a 20 ms log-prob stage, 48 ms update: 2 ms in no stage of 100."""
    prof = Profiler.from_config(
        {
            "integrated": {
                "profile": True,
                "mstx": True,
                "profile_level": "level_none",
                "profile_step_end": 3,
                "profile_save_path": str(tmp_path),
            },
            "extensions": {"backend": "none"},
        },
        rank=0,
    )
    for step in (1, 2):
        with prof.step(step):
            clock.advance(2)
            with prof.stage(GEN):
                clock.advance(15)
                with prof.stage(LOGP):
                    clock.advance(20)
                clock.advance(15)
            with prof.stage(UPD):
                clock.advance(48)
    prof.close()
    (f,) = rule_of(analyse(tmp_path, cache=False), rl.uncovered)
    assert f.impact_ms == pytest.approx(2.0, abs=1e-3)
    assert f.title.endswith("most before actor_generate (2.0 ms)")


@pytest.mark.parametrize(
    ("gap", "step_ms", "noise_ms", "found"),
    [
        (1.01, 100, 1.0, True),
        (0.99, 100, 1.0, False),  # the 1 ms floor
        (3.01, 300, 1.0, True),
        (2.99, 300, 1.0, False),  # 1% of a 300 ms step
        (5.01, 100, 5.0, True),
        (4.99, 100, 5.0, False),  # --noise-ms 5
    ],
)
def test_uncovered_at_the_noise_floor(
    tmp_path: Path, clock: Clock, gap: float, step_ms: float, noise_ms: float, found: bool
) -> None:
    half = (step_ms - gap) / 2
    run(tmp_path, clock, [[(GEN, half), gap, (UPD, half)]] * 2)
    result = analyse(tmp_path, cache=False)
    given = Settings(noise_ms=noise_ms)
    got = rule_of(result, rl.uncovered, given)
    assert bool(got) is found
    if found:
        assert got[0].impact_ms == pytest.approx(gap, abs=2e-3)


def test_no_gap_no_finding_and_steps_without_stages_are_not_uncovered(
    tmp_path: Path, clock: Clock
) -> None:
    run(tmp_path / "a", clock, [[(GEN, 50), (UPD, 50)]] * 3)
    run(tmp_path / "b", clock, [[30.0]] * 3)  # a step that records no stage at all
    for root in (tmp_path / "a", tmp_path / "b"):
        assert rl.uncovered(*answered(analyse(root, cache=False))) == []


def test_uncovered_on_the_real_clock(tmp_path: Path, real: Clock) -> None:
    """Sleeps: a 60 ms gap between two 20 ms stages is found; stages back to back are not
    (what the profiler's hooks take between them is microseconds, under the 1 ms floor)."""
    run(tmp_path / "gap", real, [[(GEN, 20), 60, (UPD, 20)]] * 2)
    (f,) = rule_of(analyse(tmp_path / "gap", cache=False), rl.uncovered)
    assert f.impact_ms is not None
    # a sleep wakes late, never early: on a loaded machine by tens of milliseconds
    assert 60 <= f.impact_ms < 160 and "between actor_generate and actor_update" in f.title
    run(tmp_path / "none", real, [[(GEN, 150), (UPD, 150)]] * 2)
    assert rl.uncovered(*answered(analyse(tmp_path / "none", cache=False))) == []


_stage = st.tuples(st.integers(-50, 250), st.integers(0, 120), st.sampled_from([GEN, UPD]))


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 200), st.lists(_stage, max_size=8))
def test_gaps_agree_with_a_microsecond_grid(dur: int, stages: list) -> None:
    """Any stages (overlapping, outside the step, empty): the step's time in no stage is what
    a 1 us grid counts, never negative, and its parts add up to it."""
    step = Range(0, "step", "ProfilerStep#1", 1, 0.0, float(dur))
    rs = [Range(0, "stage", name, 1, float(ts), float(d)) for ts, d, name in stages]
    left, where = coverage._gaps(step, rs)
    grid = sum(1 for t in range(dur) if not any(r.ts <= t < r.ts + r.dur for r in rs))
    assert left == pytest.approx(grid) and left >= 0
    assert sum(where.values()) == pytest.approx(left)


# -- (b) a stage's share growing -------------------------------------------------------------


def _growing(gen: list[float], upd: float = 60.0) -> list[list[Item]]:
    return [[(GEN, g), (UPD, upd)] for g in gen]


def test_growing_stage_found_with_its_slope(tmp_path: Path, clock: Clock) -> None:
    """Generation 40 + 5 ms a step over 9 steps: +5.0 ms per step (the Theil-Sen slope),
    judged by a rank test; the update, constant, has no trend though its share falls."""
    run(tmp_path, clock, _growing([40.0 + 5 * k for k in range(9)]))
    (f,) = rule_of(analyse(tmp_path, cache=False), rl.growing_stage)
    assert f.rule == "rl.growing_stage" and f.ranks == [0] and f.stage == GEN
    assert f.title == (
        "actor_generate grows +5.0 ms per step over steps 1-9 on rank 0 (40.0 "
        "-> 80.0 ms; +40.0 ms per step by now)"
    )
    assert f.impact_ms == pytest.approx(40.0)
    assert f.detail.splitlines()[0].startswith(
        "rank 0: +5.00 ms per step over steps 1-9 (9 steps), 40.0 -> 80.0 ms on the fitted line"
    )
    # no response lengths were counted: nothing says responses grow
    assert "response length" not in f.suggestion and "mindspeed-prof compare" in f.suggestion


def test_a_constant_stage_whose_share_moves_is_never_growing(tmp_path: Path, clock: Clock) -> None:
    """The issue's loop: actor_update 10.2 ms in every step while the other stage shrinks, so
    its share grows from 43% to 52%: no finding."""
    run(tmp_path, clock, [[(GEN, 13.5 - k), (UPD, 10.2)] for k in range(9)])
    assert rl.growing_stage(*answered(analyse(tmp_path, cache=False))) == []


@pytest.mark.parametrize(
    ("gen", "found"),
    [
        ([50 + 9.9 * k / 6 for k in range(7)], False),  # GROWTH_REL: 20% of where it began
        ([50 + 10.1 * k / 6 for k in range(7)], True),
        ([1 + 0.9 * k / 6 for k in range(7)], False),  # the floor: 0.9 vs 1.1 ms
        ([1 + 1.1 * k / 6 for k in range(7)], True),
        ([40 + 6 * k for k in range(6)], False),  # six steps in order: 1 in 720, not 1%
        ([40, 60, 42, 62, 44, 64, 46, 66], False),  # a zig-zag
        ([70 - 5 * k for k in range(9)], False),  # shrinking
    ],
)
def test_growing_stage_edges(tmp_path: Path, clock: Clock, gen: list[float], found: bool) -> None:
    run(tmp_path, clock, _growing(gen))
    got = [f for f in rl.growing_stage(*answered(analyse(tmp_path, cache=False))) if f.stage == GEN]
    assert bool(got) is found


def test_a_growing_stage_with_one_stall_is_still_growing_and_a_stall_is_no_trend(
    tmp_path: Path, clock: Clock
) -> None:
    run(tmp_path / "grows", clock, _growing([40.0 + 6 * k + 90 * (k == 2) for k in range(12)]))
    (f,) = rl.growing_stage(*answered(analyse(tmp_path / "grows", cache=False)))
    assert f.title.startswith("actor_generate grows +6.0 ms per step")
    run(tmp_path / "flat", clock, _growing([40.0 + 90 * (k == 7) for k in range(9)]))
    assert rl.growing_stage(*answered(analyse(tmp_path / "flat", cache=False))) == []


def test_responses_growing_are_said_only_where_they_grow(tmp_path: Path, clock: Clock) -> None:
    for grows in (True, False):
        root = tmp_path / str(grows)
        prof = Profiler.from_config(
            {
                "integrated": {
                    "profile": True,
                    "mstx": True,
                    "profile_level": "level_none",
                    "profile_step_end": 10,
                    "profile_save_path": str(root),
                },
                "extensions": {"backend": "none"},
            },
            rank=0,
        )
        for step in range(1, 10):
            with prof.step(step), prof.stage(GEN):
                prof.count("response_length", [100 + 20 * step * grows] * 4)
                clock.advance(40 + 6 * step)
        prof.close()
        (f,) = rl.growing_stage(*answered(analyse(root, cache=False)))
        assert ("responses counted grow longer" in f.suggestion) is grows


# -- (c) imbalance between roles -------------------------------------------------------------


def _roles(root: Path, clock: Clock, per_role: dict[str, list[Item]], steps: int = 3) -> None:
    for role, items in per_role.items():
        for rank in (0, 1):  # each role numbers its ranks from 0
            run(root, clock, [items] * steps, rank=rank, role=role)


def test_role_imbalance_found(tmp_path: Path, clock: Clock) -> None:
    """Actor 200 ms of stages per step, reference 50, critic 400: the critic is 3.2x the
    other roles' median (125 ms)."""
    _roles(
        tmp_path,
        clock,
        {
            "actor": [(GEN, 100), (UPD, 100)],
            "reference": [(REF, 50)],
            "critic": [(VAL, 60), (CUPD, 340)],
        },
    )
    (f,) = rule_of(analyse(tmp_path, cache=False), rl.role_imbalance)
    assert f.rule == "rl.role_imbalance" and f.ranks == [0, 1] and f.severity == "high"
    assert f.title == (
        "role critic spends 400.0 ms per step in its stages against 125.0 ms "
        "for the other roles (actor, reference): 3.2x, +275.0 ms"
    )
    lines = f.detail.splitlines()
    assert lines[0] == (
        "critic: 400.0 ms per step in its stages (critic_update 340.0, "
        "critic_compute_values 60.0) on ranks 0 (critic), 1 (critic)"
    )
    assert lines[2].startswith("reference: 50.0 ms per step")
    assert f.impact_ms == pytest.approx(275.0, abs=1e-3)
    assert "give critic more devices" in f.suggestion


@pytest.mark.parametrize(("critic_ms", "found"), [(150.1, True), (149.9, False)])
def test_role_imbalance_at_its_margin(
    tmp_path: Path, clock: Clock, critic_ms: float, found: bool
) -> None:
    _roles(tmp_path, clock, {"actor": [(GEN, 100)], "critic": [(VAL, critic_ms)]})
    assert bool(rl.role_imbalance(*answered(analyse(tmp_path, cache=False)))) is found


def test_no_roles_no_imbalance(tmp_path: Path, clock: Clock) -> None:
    """One process holding every stage (integrated) has no roles to weigh; nor do balanced
    roles."""
    run(tmp_path / "one", clock, [[(GEN, 100), (REF, 5), (UPD, 300)]] * 3)
    _roles(tmp_path / "even", clock, {"actor": [(GEN, 100)], "reference": [(REF, 90)]})
    for root in (tmp_path / "one", tmp_path / "even"):
        assert rl.role_imbalance(*answered(analyse(root, cache=False))) == []


# -- (d) the generation long tail ------------------------------------------------------------


def _tail(
    root: Path,
    clock: Clock,
    slow_rank: dict[int, int],
    slow_ms: float = 200.0,
    ranks: int = 4,
    steps: int = 4,
) -> None:
    base = 40.0 if slow_ms < 100 else 100.0
    for rank in range(ranks):
        run(
            root,
            clock,
            [
                [(GEN, slow_ms if slow_rank.get(s) == rank else base), (UPD, 50)]
                for s in range(1, steps + 1)
            ],
            rank=rank,
        )


def test_generation_tail_that_moves_between_ranks(tmp_path: Path, clock: Clock) -> None:
    """Each step another rank generates 200 ms against the others' 100: long rollouts."""
    _tail(tmp_path, clock, {1: 1, 2: 2, 3: 3, 4: 0})
    (f,) = rule_of(analyse(tmp_path, cache=False), rl.generation_tail)
    assert f.rule == "rl.generation_tail" and f.ranks == [0, 1, 2, 3] and f.severity == "high"
    assert f.title == (
        "actor_generate waits for its slowest rank: +100.0 ms per step (median "
        "of 4 steps, 2.0x the others), and the slowest rank changes (0, 1, 2, 3)"
    )
    assert f.detail.splitlines()[0] == "step 1: rank 1 200.0 ms against 100.0 ms on the others"
    assert "response lengths" in f.suggestion


def test_one_rank_slowest_in_every_step_is_a_straggler_not_a_tail(
    tmp_path: Path, clock: Clock
) -> None:
    _tail(tmp_path, clock, {1: 2, 2: 2, 3: 2, 4: 2})
    result = analyse(tmp_path, cache=False)
    assert rl.generation_tail(*answered(result)) == []
    (f,) = ranks_rules.straggler(*answered(result))
    assert f.ranks == [2] and f.stage == GEN and f.impact_ms == pytest.approx(100.0)
    assert f.title.startswith(
        "rank 2 is behind the other ranks at stage actor_generate: "
        "+100.0 ms per step (median of 4 steps"
    )


@pytest.mark.parametrize(("slow_ms", "found"), [(120.1, True), (119.9, False)])
def test_generation_tail_at_the_margin(
    tmp_path: Path, clock: Clock, slow_ms: float, found: bool
) -> None:
    _tail(tmp_path, clock, {1: 1, 2: 2, 3: 3}, slow_ms=slow_ms, steps=3)
    assert bool(rl.generation_tail(*answered(analyse(tmp_path, cache=False)))) is found


def test_generation_tail_needs_most_steps_and_other_ranks(tmp_path: Path, clock: Clock) -> None:
    """One long step in four is a one-off, not a tail of the phase; one rank has nothing to
    wait for; two ranks cannot tell a tail from noise."""
    _tail(tmp_path / "once", clock, {2: 1})
    _tail(tmp_path / "alone", clock, {1: 0, 2: 0}, ranks=1)
    _tail(tmp_path / "two", clock, {1: 0, 2: 1, 3: 0, 4: 1}, ranks=2)
    for root in (tmp_path / "once", tmp_path / "alone", tmp_path / "two"):
        assert rl.generation_tail(*answered(analyse(root, cache=False))) == []


def test_generation_tail_on_the_real_clock(tmp_path: Path, real: Clock) -> None:
    """Sleeps: each step another of four ranks generates 400 ms against the others' 100. The
    margin is for a loaded machine's late wake-ups, which the rule reads as noise: at load 10
    on 2 cores a 40 ms sleep woke late enough that a 99 ms tail stayed under three times the
    row's noise (found nothing, once in a CI run)."""
    _tail(tmp_path, real, {1: 0, 2: 1, 3: 2, 4: 3}, slow_ms=400.0, ranks=4, steps=4)
    (f,) = rule_of(analyse(tmp_path, cache=False), rl.generation_tail)
    assert f.impact_ms is not None
    assert 200 < f.impact_ms < 450 and f.title.endswith("the slowest rank changes (0, 1, 2, 3)")


# -- every rule, and the views ---------------------------------------------------------------


def test_warmup_steps_are_left_out(tmp_path: Path, clock: Clock) -> None:
    """Warmup steps 1 and 2 hold the only gaps: nothing, unless counted (then two steps
    of three have one)."""
    prof = Profiler.from_config(
        {
            "integrated": {
                "profile": True,
                "mstx": True,
                "profile_level": "level_none",
                "profile_step_start": 3,
                "profile_step_end": 4,
                "profile_save_path": str(tmp_path),
            },
            "extensions": {"backend": "none", "warmup_steps": 2},
        },
        rank=0,
    )  # warmup: steps 1 and 2
    for step in (1, 2, 3):
        with prof.step(step):
            with prof.stage(GEN):
                clock.advance(50)
            clock.advance(30 if step <= 2 else 0)
            with prof.stage(UPD):
                clock.advance(50)
    prof.close()
    result = analyse(tmp_path, cache=False)
    assert tables(result).warmup == {(0, 1), (0, 2)} and rl.uncovered(*answered(result)) == []
    given = Settings(include_warmup=True)
    assert rule_of(result, rl.uncovered, given)


def test_rl_findings_in_analyse_text_and_json(
    tmp_path: Path, clock: Clock, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    for rank in range(4):
        run(
            tmp_path,
            clock,
            [[(GEN, 100 + 100 * (rank == s % 4)), 20, (UPD, 50)] for s in range(1, 5)],
            rank=rank,
        )
    assert main(["analyse", str(tmp_path), "--json"]) == 0
    rules = [f["rule"] for f in json.loads(capsys.readouterr().out)["findings"]]
    assert {"rl.uncovered", "rl.generation_tail"} <= set(rules)
    assert main(["analyse", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "in no stage on rank" in out and "waits for its slowest rank" in out


_ranges = st.lists(
    st.tuples(
        st.sampled_from(["step", "stage", "range"]),
        st.sampled_from([GEN, UPD, REF, "ProfilerStep#1"]),
        st.integers(0, 5),
        st.integers(0, 2),
        st.floats(-1e3, 1e6),
        st.floats(0, 1e6),
    ),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(_ranges, st.lists(st.sampled_from(["actor", "critic", "", 7]), min_size=1, max_size=3))
def test_any_ranges_never_crash_a_rule(ranges: list, roles: list) -> None:
    """Whatever ranges and roles the captures hold (steps without stages, stages without steps,
    zero lengths, a role that is not a name, read as the header reader reads it): every RL
    rule answers, with finite numbers."""
    traces = []
    for k, role in enumerate(roles):
        rs = [
            Range(rank, kind, name, step, ts, dur)
            for kind, name, step, rank, ts, dur in ranges
            if rank % len(roles) == k
        ]
        traces.append(
            TraceData(
                Path(f"/r/{k}.json"),
                "spans",
                k,
                "x",
                1,
                ranges=rs,
                meta=read_header({"role": role}, f"/r/{k}.json")[0],
            )
        )
    result = Captures(root=Path("/r"), traces=traces)
    for rule in rl.RULES:
        for f in rule(*answered(result)):
            assert f.impact_ms is not None and f.impact_ms == f.impact_ms
            assert f.impact_ms not in (float("inf"), float("-inf"))
    found, notes = find(*answered(result))
    assert notes == []


def test_detail_shows_four_lines_then_how_many_more_then_how() -> None:
    lines = [f"step {n}: rank 0" for n in range(6)]
    assert report.detail(lines, "how", of="steps").splitlines() == [
        *lines[:4],
        "... and 2 more steps",
        "how",
    ]
    assert report.detail(lines[:4], "how").splitlines() == [*lines[:4], "how"]
