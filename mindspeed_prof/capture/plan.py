"""Pure capture decisions: which trainer events start and stop a capture (no torch here)."""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Literal, Union

from mindspeed_prof.capture.inner_schedule import InnerSchedule
from mindspeed_prof.capture.iterations import Event, IterationWindow, Phase, decide
from mindspeed_prof.config.schema import IntegratedConfig, stage_names

__all__ = [
    "ALL",
    "Action",
    "Capture",
    "CapturePlan",
    "Scheduler",
    "Start",
    "Stop",
    "StopReason",
    "Trigger",
    "TriggerReason",
]

#: ``stage`` value that captures whole steps.
ALL = "all"
#: Why an unplanned capture runs.
TriggerReason = Literal["anomaly", "on_demand"]
#: Why a capture stopped: its window (or run of listed steps) ended, the step left it, its
#: stage or step ended, an error, the close, its trigger's steps or an iteration window ended.
StopReason = Literal[
    "window_end",
    "left_window",
    "stage_end",
    "step_end",
    "error",
    "close",
    "trigger_end",
    "iteration_end",
]


@dataclass(frozen=True)
class Capture:
    """One capture: ``stage`` is ``all`` or a stage name; ``index`` counts that stage's
    executions in the step."""

    stage: str
    step: int
    index: int = 0
    trigger: TriggerReason | Literal[""] = ""  # "" when planned
    warmup: bool = False  # a schedule's warmup: recorded, then discarded


@dataclass(frozen=True)
class Trigger:
    """A request for an unplanned capture: ``steps`` steps whole (``stage: all``) or each
    execution of ``stage`` in them, from ``start`` (None: the next step start with no capture
    active) on. ``level``/``preset`` override the config's; ``ident`` names the request."""

    reason: TriggerReason
    steps: int
    stage: str = ALL
    level: str | None = None
    preset: str | None = None
    ident: str = ""
    start: int | None = None

    def due(self, step: int) -> bool:
        return self.start is None or step >= self.start

    def end(self, step: int) -> int:
        """The first step not captured when it starts at ``step``: its ``steps`` are
        captured whole, also by a rank that reached the start late (it says so)."""
        return step + self.steps


@dataclass(frozen=True)
class Start:
    capture: Capture


@dataclass(frozen=True)
class Stop:
    capture: Capture
    reason: StopReason


Action = Union[Start, Stop]


@dataclass(frozen=True)
class CapturePlan:
    """Which steps one rank captures: the window ``[start, end)``, or the listed ``steps``.

    ``warmup`` steps just before ``start`` are captured too and marked warmup, as MindSpeed-LLM
    warms its profiler up on step ``start - 1``: exactly ``[start, end)`` is measured, and there
    is no warmup when ``start`` is the first step the job runs (``start == 1``, or a resume at
    ``start``), since no step before it comes.
    ``stages``: ``(ALL,)`` for whole steps, else the stages whose executions are captured.
    ``one_per_step``: whole steps captured one step per capture instead of one capture over
    consecutive steps (verl's ``profile_continuous_steps: false``).
    """

    enabled: bool
    stages: tuple[str, ...] = (ALL,)
    start: int = 1
    end: int = 2
    warmup: int = 0
    one_per_step: bool = False
    steps: tuple[int, ...] | None = None
    #: A window over decode iterations inside one stage (its stage is then the one captured).
    iterations: IterationWindow | None = None
    #: Only each step's first execution of a captured stage (its first micro-batch).
    first_only: bool = False
    #: Which executions of a captured stage in a step are captured (``inner_schedule``).
    inner: InnerSchedule | None = None

    @classmethod
    def from_config(cls, cfg: IntegratedConfig, rank: int) -> CapturePlan:
        ranks = cfg.profile_ranks
        selected = ranks == "all" or rank in ranks
        listed = tuple(cfg.profile_steps) if cfg.profile_steps else None
        window = (
            IterationWindow(cfg.iteration_start, cfg.iteration_count, str(cfg.iteration_stage))
            if cfg.iteration_count > 0
            else None
        )
        return cls(
            enabled=bool(cfg.profile) and selected,
            stages=(window.stage,) if window else stage_names(cfg.stage),
            start=cfg.profile_step_start,
            end=cfg.profile_step_end,
            warmup=cfg.warmup_steps,
            steps=listed,
            one_per_step=not cfg.profile_continuous_steps,
            iterations=window,
            first_only=bool(cfg.first_microbatch),
            inner=InnerSchedule.from_config(cfg),
        )

    @property
    def whole_steps(self) -> bool:
        """``stage: all``: one capture over the window's steps."""
        return ALL in self.stages

    @property
    def first(self) -> int:
        """The first step captured (a warmup step when ``warmup``), if the job runs it."""
        return self.steps[0] if self.steps else max(1, self.start - self.warmup)

    @property
    def stop(self) -> int:
        """First step after every captured one."""
        return self.steps[-1] + 1 if self.steps else self.end

    def in_window(self, step: int | None) -> bool:
        if not self.enabled or step is None:
            return False
        return step in self.steps if self.steps else self.first <= step < self.end

    def is_warmup(self, step: int) -> bool:
        return not self.steps and self.first <= step < self.start

    def run_end(self, step: int) -> int:
        """The first step not captured by a whole-steps capture that starts at ``step``."""
        end = step + 1
        if self.one_per_step or not self.in_window(end):
            return end
        while self.steps and end + 1 in self.steps:  # a run of listed steps
            end += 1
        return end + 1 if self.steps else self.end

    def captured_steps(self) -> list[int]:
        if not self.enabled:
            return []
        return list(self.steps) if self.steps else list(range(self.first, self.end))


@dataclass
class Scheduler:
    """Turns trainer events into ``Start``/``Stop`` actions following a ``CapturePlan``.

    ``stage: all``: one capture per rank covering the window's steps (per run of consecutive
    listed steps; per step with ``one_per_step``), stopped at the end of the last step, at the
    start of a step outside it, on error (no more after that), or at ``close``; a step number
    that comes again is not captured twice.
    ``stage: <name>`` or a list of names: one capture per execution of any of them inside
    window steps; a target stage that runs inside another one is part of the outer capture.
    """

    plan: CapturePlan
    active: Capture | None = None
    done: bool = False  # a planned whole-steps capture ended by an error or close: no more
    _covered: int = 0  # the last step a planned whole-steps capture covered
    #: The last step of the active whole-steps capture, where a part ended it early (0: none).
    cut: int = 0
    _depth: int = 0
    _executions: dict[tuple[str, int], int] = field(default_factory=lambda: defaultdict(int))
    #: Unplanned captures: requested, and the one running with its first step not captured.
    pending: deque[Trigger] = field(default_factory=deque)
    trigger: Trigger | None = None
    _until: int = 0
    #: An iteration window's execution waiting for its first iteration, and where it stands.
    _armed: Capture | None = None
    _phase: Phase = Phase.IDLE
    _marked: bool = False  # an iteration was marked in the armed execution
    #: An execution of the window's stage ended without a single iteration mark.
    unmarked: bool = False
    #: Nothing planned, queued or running: ``step_start`` and ``step_end`` would do nothing, so
    #: the step hooks need not call them (kept by every method that changes what it reads).
    idle: bool = field(init=False)
    #: ``[_lo, _hi)``: the active planned capture's run of window steps, none queued (0: none)
    _lo: int = field(default=0, init=False)
    _hi: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self._settle()

    def _settle(self) -> None:
        self.idle = not (self.plan.enabled or self.active or self.trigger or self.pending)

    @property
    def busy(self) -> bool:
        """A capture is active, or an unplanned one is running or waiting."""
        return self.active is not None or self.trigger is not None or bool(self.pending)

    def request(self, trigger: Trigger) -> None:
        """Queue ``trigger``: it starts at a step start when no capture is active and its start
        step has come (the first such in the order queued)."""
        self.pending.append(trigger)
        self.idle, self._hi = False, 0

    def step_start(self, step: int) -> list[Action]:
        if self._lo <= step < self._hi:  # in the active capture's run: a start only notes it
            self._covered = step
            return []
        if self.trigger is not None:
            return self._triggered_step_start(step)
        actions = self._planned_step_start(step) if self.plan.enabled else []
        while self.pending and self.active is None and self.trigger is None:
            trigger = next((t for t in self.pending if t.due(step)), None)
            if trigger is None:
                break
            self.pending.remove(trigger)
            self.trigger, self._until = trigger, trigger.end(step)
            if trigger.stage == ALL:
                actions.append(self._start(Capture(ALL, step, trigger=trigger.reason)))
        return actions

    def _triggered_step_start(self, step: int) -> list[Action]:
        if step < self._until:
            return []
        actions = [self._stop("trigger_end")] if self.active is not None else []
        self.trigger = None
        self._settle()
        return actions + self.step_start(step)

    def _planned_step_start(self, step: int) -> list[Action]:
        actions: list[Action] = []
        if self.active is not None and not self.plan.in_window(step):
            actions.append(self._stop("left_window"))
        if (
            self.plan.whole_steps
            and self.active is None
            and not self.done
            and step > self._covered
            and self.plan.in_window(step)
        ):
            actions.append(self._start(Capture(ALL, step)))
        if self.active is not None and self.plan.whole_steps:
            self._covered = step
        return actions

    def step_end(self, step: int, failed: bool = False) -> list[Action]:
        if self._lo <= step + 1 < self._hi and not failed and not 0 < self.cut <= step:
            return []  # the next step in the active capture's window (nothing armed: whole steps)
        self._armed, self._phase = None, Phase.IDLE
        if self.trigger is not None:
            if failed or step >= self._until - 1:
                self.trigger = None  # the unplanned window ends with this step
                self._settle()
                return [self._stop("error" if failed else "trigger_end")] if self.active else []
            if self.active is not None and self.active.stage != ALL:
                return [self._stop("step_end")]  # a stage left open by a hook-driven trainer
            return []
        if self.active is None:
            return []
        if failed:
            return [self._stop("error")]
        if not self.plan.whole_steps:
            return [self._stop("step_end")]  # a stage left open by a hook-driven trainer
        if not self.plan.in_window(step + 1):
            return [self._stop("window_end")]  # the window's, or a run of listed steps', end
        if self.plan.one_per_step or 0 < self.cut <= step:
            return [self._stop("step_end")]
        return []

    def stage_start(self, stage: str, step: int | None) -> list[Action]:
        if self.trigger is not None:
            return self._triggered_stage_start(stage, step)
        if self.plan.whole_steps or stage not in self.plan.stages:
            return []
        if self.active is not None:
            self._depth += 1  # a target stage nested in one: keep the outer capture
            return []
        if not self.plan.in_window(step):
            return []
        assert step is not None
        index = self._executions[stage, step]
        self._executions[stage, step] += 1
        if self.plan.first_only and index:
            return []
        inner = self.plan.inner
        if inner is not None and inner.walks(stage) and (act := inner.action(index)) != "record":
            return [] if act == "none" else [self._start(Capture(stage, step, index, warmup=True))]
        window = self.plan.iterations
        if window is not None:  # started at the window's first iteration
            self._armed, self._marked = Capture(stage, step, index), False
            self._phase, _ = decide(window, self._phase, "stage_start")
            return []
        return [self._start(Capture(stage, step, index))]

    def _triggered_stage_start(self, stage: str, step: int | None) -> list[Action]:
        assert self.trigger is not None
        if self.trigger.stage != stage or step is None:
            return []
        if self.active is not None:
            self._depth += 1
            return []
        index = self._executions[stage, step]
        self._executions[stage, step] += 1
        return [self._start(Capture(stage, step, index, trigger=self.trigger.reason))]

    def stage_end(self, stage: str, step: int | None, failed: bool = False) -> list[Action]:
        if self.active is not None and self.active.trigger:
            if self.active.stage != stage:
                return []
        elif self._armed is not None and stage == self._armed.stage:
            return self._iteration_stage_end(failed)
        elif self.active is None or self.plan.whole_steps or stage not in self.plan.stages:
            return []
        if self._depth:
            self._depth -= 1
            return []
        return [self._stop("error" if failed else "stage_end")]

    def _iteration_stage_end(self, failed: bool) -> list[Action]:
        if self._depth:  # a nested execution of the stage ended, not the captured one
            self._depth -= 1
            return []
        assert self.plan.iterations is not None
        self.unmarked = self.unmarked or not self._marked
        self._phase, verb = decide(self.plan.iterations, self._phase, "stage_end")
        self._armed = None
        if verb == "stop" and self.active is not None:
            return [self._stop("error" if failed else "stage_end")]
        return []

    def iteration_start(self, iteration: int) -> list[Action]:
        """Decode iteration ``iteration`` of the current stage begins."""
        return self._iteration("iteration_start", iteration)

    def iteration_end(self, iteration: int) -> list[Action]:
        """It ended."""
        return self._iteration("iteration_end", iteration)

    def _iteration(self, event: Event, iteration: int) -> list[Action]:
        window, armed = self.plan.iterations, self._armed
        if window is None or armed is None or (self.active is not None and self.active.trigger):
            return []
        self._marked = True
        self._phase, verb = decide(window, self._phase, event, iteration)
        if verb == "start" and self.active is None:
            return [self._start(armed)]
        if verb == "stop" and self.active is not None:
            return [self._stop("iteration_end")]
        return []

    def close(self) -> list[Action]:
        self.trigger, self._armed, self._phase = None, None, Phase.IDLE
        self.pending.clear()
        actions: list[Action] = [self._stop("close")] if self.active is not None else []
        self._settle()
        return actions

    def _start(self, capture: Capture) -> Start:
        self.active, self.idle = capture, False
        if capture.stage == ALL and not (capture.trigger or self.trigger or self.pending):
            self._lo, self._hi = capture.step, self.plan.run_end(capture.step)
        return Start(capture)

    def _stop(self, reason: StopReason) -> Stop:
        assert self.active is not None
        capture, self.active, self._depth, self.cut, self._hi = self.active, None, 0, 0, 0
        if capture.stage == ALL and not capture.trigger and reason in ("error", "close"):
            self.done = True
        self._settle()
        return Stop(capture, reason)
