"""MindSpeed-RL ``profiler_config:`` blocks load unchanged."""

from __future__ import annotations

import textwrap

from omegaconf import OmegaConf

from mindspeed_prof.config import ExportType, Level, Stage, validate

SPEC_FULL = """
profiler_config:
  integrated:
    profile: false
    mstx: false
    stage: all
    profile_save_path: ./profiler_data
    profile_export_type: text
    profile_step_start: 1
    profile_step_end: 2
    profile_level: level1
    profile_with_memory: false
    profile_record_shapes: false
    profile_with_cpu: true
    profile_with_npu: true
    profile_with_module: false
    profile_analysis: false
    profile_ranks: all
"""

SPEC_DPO = """
profiler_config:
  integrated:
    profile: true
    profile_save_path: ./profiler_data
    profile_export_type: text
    profile_step_start: 1
    profile_step_end: 2
    profile_level: level1
    profile_with_memory: false
    profile_record_shapes: false
    profile_with_cpu: true
    profile_ranks: all
"""

STAGE_DB = """
profiler_config:
  integrated:
    profile: true
    stage: actor_update
    profile_ranks: [0]
    profile_export_type: db
    profile_analysis: true
"""


def load(text: str):
    return validate(OmegaConf.create(textwrap.dedent(text)).profiler_config)


def test_spec_full_block() -> None:
    c = load(SPEC_FULL)
    assert c.profile is False and c.profile_level is Level.level1 and c.stage is Stage.all


def test_spec_dpo_block() -> None:
    c = load(SPEC_DPO)
    assert c.profile and c.profile_ranks == "all" and c.profile_with_npu is True


def test_stage_db_block() -> None:
    c = load(STAGE_DB)
    assert c.stage is Stage.actor_update and c.profile_ranks == [0]
    assert c.profile_export_type is ExportType.db and c.profile_analysis


STAGE_LIST = """
profiler_config:
  integrated:
    profile: true
    stage: [actor_generate, actor_update]
    profile_step_start: 2
    profile_step_end: 3
"""


def test_stage_list_block() -> None:
    assert load(STAGE_LIST).stage == [Stage.actor_generate, Stage.actor_update]
