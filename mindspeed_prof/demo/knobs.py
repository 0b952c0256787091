"""The demo's knobs (``demo.*``), checked before anything runs: one line naming the knob, its
value and what is allowed (a knob a typo names gets the closest one)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import msgspec

from mindspeed_prof.config.schema import STAGE_ORDER
from mindspeed_prof.config.validate import did_you_mean

__all__ = ["DemoConfig", "checked", "problem", "unknown"]


class DemoConfig(msgspec.Struct, kw_only=True):
    """The ``demo`` section of the demo's config (``conf/demo.yaml`` says what each is)."""

    workers: int
    steps: int
    prompts: int
    group: int
    length: int
    vocab: int
    hidden: int
    actor_lr: float
    critic_lr: float
    ppo_epochs: int
    clip: float
    kl_coef: float
    seed: int
    slow_step: int | None = None
    slow_stage: str | None = None
    slow_ms: float = 0.0
    slow_rank: int = 0
    constant_reward_groups: float = 0.0
    filter_groups: bool = False
    long_tail: float = 0.0
    long_tail_length: int = 64
    max_response_length: int = 0
    transition_ms: float = 0.0
    leak_mb: float = 0.0
    minibatch_stages: bool = False
    ray_address: str | None = None

    @classmethod
    def parse(cls, data: object) -> DemoConfig:
        """The section from its plain form (``msgspec.ValidationError`` naming a bad field)."""
        return msgspec.convert(data, cls)


Rule = tuple[Callable[[float], bool], str]

#: Each numeric knob's range, and how it is said.
RANGES: dict[str, Rule] = {
    "workers": (lambda v: v >= 0, "0 or more (0: one worker in this process, no Ray)"),
    "steps": (lambda v: v >= 1, "1 or more"),
    "prompts": (lambda v: v >= 1, "1 or more"),
    "group": (lambda v: v >= 2, "2 or more (GRPO compares the samples of a group)"),
    "length": (lambda v: v >= 1, "1 or more"),
    "vocab": (lambda v: v >= 2, "2 or more"),
    "hidden": (lambda v: v >= 1, "1 or more"),
    "actor_lr": (lambda v: v > 0, "over 0"),
    "critic_lr": (lambda v: v > 0, "over 0"),
    "ppo_epochs": (lambda v: v >= 1, "1 or more"),
    "clip": (lambda v: 0 < v < 1, "over 0 and under 1"),
    "kl_coef": (lambda v: v >= 0, "0 or more"),
    "seed": (lambda v: v >= 0, "0 or more"),
    "slow_ms": (lambda v: v >= 0, "0 or more"),
    "constant_reward_groups": (lambda v: 0 <= v <= 1, "a share, 0 to 1"),
    "long_tail": (lambda v: 0 <= v <= 1, "a share, 0 to 1"),
    "long_tail_length": (lambda v: v >= 1, "1 or more"),
    "max_response_length": (lambda v: v >= 0, "0 (no limit) or more"),
    "transition_ms": (lambda v: v >= 0, "0 or more"),
    "leak_mb": (lambda v: v >= 0, "0 or more"),
}


def _names() -> tuple[str, ...]:
    return tuple(f.name for f in msgspec.structs.fields(DemoConfig))


def unknown(name: str) -> str | None:
    """One line for ``demo.<name>`` where the demo has no such knob, else None."""
    names = _names()
    if name in names:
        return None
    close = did_you_mean(f"demo.{name}", [f"demo.{n}" for n in names])
    return f"demo.{name}: no such knob{close}; knobs: {', '.join(names)}"


def _show(value: object) -> str:
    return repr(value) if isinstance(value, str) else "null" if value is None else str(value)


def _typed(section: Mapping[str, object]) -> DemoConfig:
    """The section as the worker reads it, or ``ValueError`` naming the knob of a bad type."""
    try:
        return DemoConfig.parse(dict(section))
    except msgspec.ValidationError as err:
        text = str(err)
        knob = text.rpartition("`$.")[2].rstrip("`") if "`$." in text else ""
        what = text.split(" - at ")[0]
        shown = f"demo.{knob}={_show(section.get(knob))}" if knob else "demo"
        raise ValueError(f"{shown}: {what[:1].lower()}{what[1:]}") from None


def problem(section: Mapping[str, object]) -> str | None:
    """The first thing wrong with the ``demo`` section, as one line; None when nothing is."""
    for name in section:
        if line := unknown(str(name)):
            return line
    try:
        d = _typed(section)
    except ValueError as err:
        return str(err)
    for name, (ok, allowed) in RANGES.items():
        value = getattr(d, name, None)
        if isinstance(value, (int, float)) and not ok(value):
            return f"demo.{name}={_show(section.get(name, value))}: must be {allowed}"
    if d.slow_stage is not None and d.slow_stage not in STAGE_ORDER:
        return (
            f"demo.slow_stage={d.slow_stage!r}: not a stage of the demo"
            f"{did_you_mean(d.slow_stage, STAGE_ORDER)}; stages: {', '.join(STAGE_ORDER)}"
        )
    if d.slow_step is not None and not 1 <= d.slow_step <= d.steps:
        return f"demo.slow_step={d.slow_step}: must be a step of the run, 1 to {d.steps}"
    ranks = max(d.workers, 1)
    if not 0 <= d.slow_rank < ranks:
        return f"demo.slow_rank={d.slow_rank}: must be a worker's rank, 0 to {ranks - 1}"
    return None


def checked(section: Mapping[str, object]) -> DemoConfig:
    """The section as the worker reads it, or ``ValueError`` with ``problem``'s line."""
    line = problem(section)
    if line:
        raise ValueError(f"mindspeed-prof demo: {line}")
    return _typed(section)
