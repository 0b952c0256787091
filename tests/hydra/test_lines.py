"""What a profiled Hydra job says and which of its processes says it (``hydra.lines``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mindspeed_prof.formats.manifest import Manifest
from mindspeed_prof.hydra import lines

RANKS = st.one_of(st.just("all"), st.lists(st.integers(0, 40), max_size=6, unique=True))


@given(world=st.integers(2, 32), ranks=RANKS)
def test_exactly_one_rank_of_a_job_tells_where(world: int, ranks: object) -> None:
    """Whatever ``profile_ranks`` names: one rank of the job reports, the lowest named one it
    has (else rank 0, to say that none matched)."""
    reporters = [r for r in range(world) if lines.reports(r, ranks, world)]
    assert len(reporters) == 1
    named = [r for r in ranks if r < world] if isinstance(ranks, list) else []
    assert reporters == [min(named) if named else 0]


@given(rank=st.integers(0, 64), ranks=RANKS, world=st.sampled_from([None, 1]))
def test_a_job_of_one_process_always_tells(rank: int, ranks: object, world: int | None) -> None:
    """A script, or a Ray driver whose workers' ranks ``profile_ranks`` names."""
    assert lines.reports(rank, ranks, world)


def test_the_world_is_torch_distributeds_else_world_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert lines.world_size() is None
    for text, size in (("8", 8), (" 2 ", 2), ("0", None), ("two", None), ("٣", None)):
        monkeypatch.setenv("WORLD_SIZE", text)
        assert lines.world_size() == size, text


def test_typed_fields_are_the_command_lines_profiler_config_fields() -> None:
    got = lines.typed_fields(
        [
            "profiler_config=stage_scoped",
            "profiler_config.integrated.stage=actor_generate",
            "++profiler_config.extensions.anomaly_factor=2",
            "+profiler_config.actor.stage=x",
            "demo.steps=3",
            "profiler_config.integrated={stage: x}",
            "hydra.run.dir=a",
        ]
    )
    assert got == {
        "stage": "+profiler_config.actor.stage=x",
        "anomaly_factor": "++profiler_config.extensions.anomaly_factor=2",
    }


def test_profiling_off_is_said_with_how_to_turn_it_on() -> None:
    typed = lines.typed_fields(["profiler_config.integrated.stage=actor_generate"])
    assert lines.off_note(False, typed) == (
        "mindspeed-prof: profiling is off (profile: false), so "
        "profiler_config.integrated.stage=actor_generate captures nothing; to profile, pick a "
        "preset: profiler_config=stage_scoped (mindspeed-prof presets lists them), or add "
        "profiler_config.integrated.profile=true"
    )
    assert lines.off_note(True, typed) is None  # on: nothing to say
    # what works without profile (the flight recorder), or profile itself set: nothing either
    assert (
        lines.off_note(
            False, lines.typed_fields(["profiler_config.extensions.flight_recorder_steps=3"])
        )
        is None
    )
    assert (
        lines.off_note(
            False,
            lines.typed_fields(
                [
                    "profiler_config.integrated.profile=false",
                    "profiler_config.integrated.stage=actor_update",
                ]
            ),
        )
        is None
    )
    window = lines.typed_fields(["profiler_config.integrated.profile_step_end=9"])
    assert "profiler_config=mstx_light" in str(lines.off_note(False, window))


@pytest.mark.parametrize(
    "ranks,world,note",
    [
        (
            [7],
            2,
            "mindspeed-prof: profile_ranks [7] names no rank of this job (ranks 0-1): nothing "
            "will be captured",
        ),
        (
            [1, 7, 9],
            4,
            "mindspeed-prof: profile_ranks [1, 7, 9]: this job has no rank 7, 9 (ranks 0-3)",
        ),
        ([1], 2, None),
        ("all", 2, None),
        ([7], None, None),
        ([7], 1, None),
    ],
)
def test_ranks_the_job_has_not_are_named(
    ranks: object, world: int | None, note: str | None
) -> None:
    assert lines.ranks_note(ranks, world) == note


def test_the_tensorboard_command_points_at_the_telemetry_folder(tmp_path: Path) -> None:
    save = tmp_path / "my runs" / "profiler_data"
    assert lines.telemetry_note(("metrics",), save, tmp_path) is None
    assert lines.telemetry_note(("metrics", "tensorboard"), save, tmp_path) == (
        "mindspeed-prof: live figures, every step: tensorboard --logdir "
        "'my runs/profiler_data/telemetry'"
    )


def _manifest(**integrated: object) -> Manifest:
    return Manifest(
        status="completed",
        rank=0,
        profiler_config={
            "integrated": {
                "profile": True,
                "profile_step_start": 2,
                "profile_step_end": 4,
                **integrated,
            }
        },
    )


@pytest.mark.parametrize(
    "manifest,world,line",
    [
        (
            _manifest(profile=False),
            None,
            "nothing captured in p: profiling was off (profile: false)",
        ),
        (
            _manifest(profile_ranks=[1]),
            None,
            "nothing captured in p: no rank of profile_ranks [1] wrote a capture here",
        ),
        (
            _manifest(profile_ranks=[7]),
            2,
            "nothing captured in p: profile_ranks [7] names no rank of this job (ranks 0-1)",
        ),
        (_manifest(), None, "nothing captured in p: none of steps 2 to 3 ran in this job"),
        (
            _manifest(profile_step_end=3),
            None,
            "nothing captured in p: step 2 never ran in this job",
        ),
    ],
)
def test_the_last_line_says_why_nothing_was_captured(
    tmp_path: Path, manifest: Manifest, world: int | None, line: str
) -> None:
    assert lines.where_line(tmp_path / "p", tmp_path, manifest, False, world) == (
        f"mindspeed-prof: {line}"
    )
