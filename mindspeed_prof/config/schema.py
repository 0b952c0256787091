"""The ``profiler_config`` schema: MindSpeed-RL's fields, our extensions, stages and roles.

A composed ``profiler_config`` holds plain values only (MindSpeed-RL's own code reads it):
``integrated`` MindSpeed-RL's 15 fields, ``extensions`` ours, one section per role for what
differs there. ``validate()`` turns it into one checked, typed ``IntegratedConfig``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any, Literal, TypeAlias

__all__ = [
    "AicMetrics",
    "BackendKind",
    "EXTENSIONS",
    "EXTENSION_FIELDS",
    "ExportType",
    "IntegratedConfig",
    "Level",
    "MINDSPEED_RL_FIELDS",
    "ProfilerConfig",
    "ROLES",
    "ROLE_ALIASES",
    "SECTION",
    "SECTIONS",
    "PHASES",
    "STAGE_ORDER",
    "STAGES",
    "TELEMETRY_SINKS",
    "TRANSITIONS",
    "WEIGHT_SYNC_PARTS",
    "Phase",
    "STAGE_ALIASES",
    "Section",
    "Stage",
    "canonical_role",
    "canonical_stage",
    "field_key",
    "phase_of",
    "stage_names",
    "to_sections",
]


#: One section of ``profiler_config`` as given: field name -> value (``validate`` checks each).
Section: TypeAlias = "dict[str, object]"


class Stage(Enum):
    """What to capture: every step whole (``all``) or one stage per execution.

    MindSpeed-RL's stages (``actor_image_embeds``: its multimodal actor), then verl's own, then
    the transitions between generation and training (``TRANSITIONS``).
    """

    all = "all"
    actor_generate = "actor_generate"
    actor_compute_log_prob = "actor_compute_log_prob"
    reference_compute_log_prob = "reference_compute_log_prob"
    critic_compute_values = "critic_compute_values"
    actor_update = "actor_update"
    critic_update = "critic_update"
    actor_image_embeds = "actor_image_embeds"
    compute_rm_score = "compute_rm_score"
    train_batch = "train_batch"
    forward_backward = "forward_backward"
    # The transitions between generation and training (``TRANSITIONS``).
    weight_sync = "weight_sync"
    reshard = "reshard"
    offload = "offload"
    onload = "onload"
    engine_sleep = "engine_sleep"
    engine_wake = "engine_wake"


#: The RL stages every PPO-style step runs, in that order (tables, sweeps, colours).
STAGES: tuple[str, ...] = (
    "actor_generate",
    "actor_compute_log_prob",
    "reference_compute_log_prob",
    "critic_compute_values",
    "actor_update",
    "critic_update",
)

#: What an RL step does between generation and training, in the words RL frameworks use
#: (verl, slime, NeMo-RL, OpenRLHF): a colocated engine sleeps (frees its memory) and wakes,
#: models are offloaded and onloaded, weights are resharded and synced to the inference engine.
TRANSITIONS: tuple[str, ...] = (
    "weight_sync",
    "reshard",
    "offload",
    "onload",
    "engine_sleep",
    "engine_wake",
)

#: The parts of ``weight_sync``, as ranges inside it, in the order they run.
WEIGHT_SYNC_PARTS: tuple[str, ...] = (
    "pause_generation",
    "gather",
    "transfer",
    "load_weights",
    "cache_reset",
)

#: Every stage the analysis knows by name, in the order tables list them and charts colour
#: them: the RL stages, then the transitions.
STAGE_ORDER: tuple[str, ...] = (*STAGES, *TRANSITIONS)

#: The three parts of an RL step: generation (rollout), training (log-probs, values, updates)
#: and the transitions between them.
Phase: TypeAlias = Literal["generation", "training", "transition"]
PHASES: tuple[Phase, ...] = ("generation", "training", "transition")


def phase_of(stage: str) -> Phase | None:
    """The part of the RL step ``stage`` (ours, or verl's name for one) belongs to; None for a
    name that is none of the known stages."""
    name = STAGE_ALIASES.get(stage, stage)
    if name == "actor_generate":
        return "generation"
    if name in TRANSITIONS:
        return "transition"
    if name in STAGES or name in ("train_batch", "forward_backward"):
        return "training"
    return None  # reward scoring, embeddings, names of the user's own


#: Where ``telemetry`` may send each step's figures: ``metrics`` (``prof.metrics()`` only),
#: ``ray`` (Ray's metrics API), ``tensorboard`` (event files under the save root).
TELEMETRY_SINKS: tuple[str, ...] = ("metrics", "ray", "tensorboard")

#: verl's names for stages that are ours under another name.
STAGE_ALIASES: dict[str, str] = {
    "rollout_generate": "actor_generate",
    "ref_compute_log_prob": "reference_compute_log_prob",
    "compute_values": "critic_compute_values",
}

#: The sections ``profiler_config`` may hold: MindSpeed-RL's ``integrated`` and verl's roles.
ROLES: tuple[str, ...] = ("integrated", "actor", "rollout", "reference", "critic", "reward")
#: verl's role names for ours.
ROLE_ALIASES: dict[str, str] = {"ref": "reference", "reward_model": "reward"}
#: The section of ``profiler_config`` that holds the extension fields (MindSpeed-RL never
#: reads it; ``integrated`` holds MindSpeed-RL's fields only, as its own config class demands).
EXTENSIONS = "extensions"
#: Every section, in the order they are laid over each other.
SECTIONS: tuple[str, ...] = ("integrated", EXTENSIONS, *ROLES[1:])


def canonical_stage(name: str) -> str:
    """Our name of a stage (``rollout_generate`` -> ``actor_generate``); others unchanged."""
    return STAGE_ALIASES.get(name, name)


def field_key(name: str, role: str = "integrated") -> str:
    """Where a field is set for ``role``: ``profiler_config.integrated.<f>`` for MindSpeed-RL's,
    ``profiler_config.extensions.<f>`` for ours, ``profiler_config.<role>.<f>`` for a role."""
    if role != "integrated":
        return f"profiler_config.{role}.{name}"
    return f"profiler_config.{'integrated' if name in MINDSPEED_RL_FIELDS else EXTENSIONS}.{name}"


def canonical_role(name: str) -> str:
    """Our name of a role (``ref`` -> ``reference``); others unchanged."""
    return ROLE_ALIASES.get(name, name)


class Level(Enum):
    """How much the op-level profiler records (``level_none``: ranges only)."""

    level_none = "level_none"
    level0 = "level0"
    level1 = "level1"
    level2 = "level2"


class ExportType(Enum):
    """On-disk format of a capture."""

    text = "text"
    db = "db"


class BackendKind(Enum):
    """Which profiler records the capture."""

    auto = "auto"
    torch_npu = "torch_npu"
    torch = "torch"
    none = "none"


class AicMetrics(Enum):
    """torch_npu AI Core metrics (level1 and level2 only)."""

    none = "none"
    pipe_utilization = "pipe_utilization"
    arithmetic_utilization = "arithmetic_utilization"
    memory = "memory"
    memory_l0 = "memory_l0"
    memory_ub = "memory_ub"
    resource_conflict_ratio = "resource_conflict_ratio"
    l2_cache = "l2_cache"
    memory_access = "memory_access"


#: The key of a field's metadata that names its section of ``profiler_config``.
SECTION = "section"


def _rl(default: Any) -> Any:
    """A field of MindSpeed-RL's own (``profiler_config.integrated``); a field without this
    is an extension (``profiler_config.extensions``)."""
    return field(default=default, metadata={SECTION: "integrated"})


@dataclass
class IntegratedConfig:
    """One role's checked settings: MindSpeed-RL's fields (names and defaults unchanged), then
    the extensions (``profiler_config.extensions`` in a config; each default keeps MindSpeed-RL's
    behaviour)."""

    profile: bool = _rl(False)
    mstx: bool = _rl(False)
    # Four fields typed Any: OmegaConf.structured(IntegratedConfig) has no Union type.
    stage: Any = _rl(Stage.all)  # one Stage (or name), or a list of them
    profile_save_path: str = _rl("./profiler_data")
    profile_export_type: ExportType = _rl(ExportType.text)
    profile_step_start: int = _rl(1)
    profile_step_end: int = _rl(2)
    profile_level: Level = _rl(Level.level0)
    profile_with_memory: bool = _rl(False)
    profile_record_shapes: bool = _rl(False)
    profile_with_cpu: bool = _rl(True)
    profile_with_npu: bool = _rl(True)
    profile_with_module: bool = _rl(False)
    profile_analysis: bool = _rl(False)
    profile_ranks: Any = _rl("all")  # "all" or a sorted list of ranks
    # Extensions.
    backend: BackendKind = BackendKind.auto
    warmup_steps: int = 0  # steps before profile_step_start captured as warmup (MindSpeed-LLM)
    profile_steps: Any = None  # a list of steps instead of the window (verl's steps)
    profile_continuous_steps: bool = True  # false: one capture per step (verl)
    with_stack: bool = False
    data_simplification: bool = True
    aic_metrics: AicMetrics = AicMetrics.pipe_utilization  # as MindSpeed-RL passes it
    strict: bool = False
    # CUDA memory history (profile_with_memory on CUDA), as verl's torch_memory tool.
    trace_alloc_max_entries: int = 100_000
    stack_depth: int = 32
    # Captures nobody planned (flight recorder, anomaly trigger, on-demand, disk budget).
    flight_recorder_steps: int = 0
    anomaly_factor: float = 0.0
    anomaly_window: int = 20
    anomaly_capture_steps: int = 2
    anomaly_max_captures: int = 3
    anomaly_min_ms: float = 5.0  # a slowdown also this far over its median (less is jitter)
    on_demand: bool = True
    max_disk_mb: int = 0
    # The analysis: device kernels this regex finds are communication (readers.classify).
    comm_kernels: str = ""
    # Live telemetry (capture/telemetry): each step's figures on every rank, to the sinks named
    # (TELEMETRY_SINKS; empty: off), every telemetry_every steps; custom ranges timed too.
    telemetry: Any = ()  # sink names
    telemetry_every: int = 1
    telemetry_ranges: bool = False
    # Model facts for MFU (counters, docs/counters.md): forward FLOPs per token (2 x the
    # parameters of a dense model) and the peak TFLOPS of one device; 0: not given.
    model_flops_per_token: float = 0.0
    peak_tflops: float = 0.0
    # Windows inside generation: decode iterations (prof.iteration) of one stage in detail.
    iteration_start: int = 0  # the first iteration captured (the trainer's numbering)
    iteration_count: int = 0  # iterations captured from iteration_start; 0: the whole stage
    iteration_stage: str = "actor_generate"  # the stage whose iterations are windowed
    first_microbatch: bool = False  # only each step's first execution of a captured stage
    # A captured stage's executions (mini-batches) inside a step, as torch.profiler.schedule
    # walks steps: skip_first, then cycles of wait (none), warmup (recorded, discarded) and
    # active (captured); schedule_active 0: every execution; repeat 0: cycles without end.
    schedule_skip_first: int = 0
    schedule_wait: int = 0
    schedule_warmup: int = 0
    schedule_active: int = 0
    schedule_repeat: int = 0
    schedule_stage: str = ""  # the stage the schedule walks ("": every captured stage)
    # Device memory (capture/memory): each stage's peak allocated and reserved bytes as
    # counters; on an out-of-memory error in a stage the allocator's snapshot under
    # <save>/oom_<step>_<stage>_<time>/; profile_with_memory's history over this many captured
    # steps at once (0: one per capture).
    stage_memory: bool = False
    oom_snapshot: bool = False
    memory_window_steps: int = 0
    # The host memory a capture may take, estimated before it starts (capture/estimate);
    # over it, the level is lowered with one line saying why. 0: no limit.
    capture_host_mb: int = 0
    # After the last capture: a shell command on the chosen ranks (None: the captured ones;
    # "all"; a list), and captures moved flat into the save root (verl's relocate_results).
    finish_hook_cmd: str = ""
    finish_hook_ranks: Any = None
    relocate_results: bool = False


#: MindSpeed-RL's fields (``_rl``): the only keys ``profiler_config.integrated`` may hold.
MINDSPEED_RL_FIELDS: tuple[str, ...] = tuple(
    f.name for f in fields(IntegratedConfig) if f.metadata.get(SECTION) == "integrated"
)
#: Our fields: ``profiler_config.extensions`` (or a role's section).
EXTENSION_FIELDS: tuple[str, ...] = tuple(
    f.name for f in fields(IntegratedConfig) if f.name not in MINDSPEED_RL_FIELDS
)


@dataclass
class ProfilerConfig:
    """``profiler_config`` as plain sections: ``integrated`` (MindSpeed-RL's fields),
    ``extensions`` (ours) and one per worker role.

    A role's section holds only what differs (any field, checked the same way); a worker of
    that role profiles with ``integrated`` and ``extensions`` overridden by it.

    The sections are ``dict[str, Any]``, not ``Section``: like ``IntegratedConfig`` this is an
    OmegaConf structured config, whose values may be typed ``Any`` but not ``object``.
    """

    integrated: dict[str, Any] = field(default_factory=dict)
    extensions: dict[str, Any] = field(default_factory=dict)
    actor: dict[str, Any] = field(default_factory=dict)
    rollout: dict[str, Any] = field(default_factory=dict)
    reference: dict[str, Any] = field(default_factory=dict)
    critic: dict[str, Any] = field(default_factory=dict)
    reward: dict[str, Any] = field(default_factory=dict)


def to_sections(cfg: IntegratedConfig) -> dict[str, Section]:
    """Checked settings as plain ``integrated`` and ``extensions`` sections (as JSON writes
    them: enum members by name, stages by name)."""

    def plain(value: object) -> object:
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        return value.value if isinstance(value, Enum) else value

    values = {name: plain(getattr(cfg, name)) for name in IntegratedConfig.__dataclass_fields__}
    return {
        "integrated": {k: values[k] for k in MINDSPEED_RL_FIELDS},
        EXTENSIONS: {k: values[k] for k in EXTENSION_FIELDS},
    }


def stage_names(stage: object) -> tuple[str, ...]:
    """A checked ``stage`` value (one ``Stage`` or name, or a list of them) as names."""
    items: list[object] | tuple[object, ...] = (
        stage if isinstance(stage, (list, tuple)) else [stage]
    )
    return tuple(str(getattr(s, "value", s)) for s in items)
