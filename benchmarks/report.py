"""``Report``: the figures of one benchmark run, each a ratio with its goal and verdict."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["Figure", "Report"]


@dataclass
class Figure:
    """One ratio against a baseline measured in the same run; lower is better.

    ``goal`` is the largest ratio that meets it (None: reported without a goal). With a
    confidence interval ``ci`` the verdict uses its upper bound, so "met" means met with 95%
    confidence; without one, the ratio itself.
    """

    group: str
    figure: str
    baseline: str
    ratio: float
    goal: float | None
    detail: str = ""
    ci: tuple[float, float] | None = None

    @property
    def met(self) -> bool | None:
        if self.goal is None:
            return None
        if math.isnan(self.ratio):
            return False
        return (self.ci[1] if self.ci else self.ratio) <= self.goal

    @property
    def verdict(self) -> str:
        return {True: "met", False: "**missed**", None: "report"}[self.met]

    def line(self) -> str:
        ci = f" [{self.ci[0]:.3f}, {self.ci[1]:.3f}]" if self.ci else ""
        goal = f"<= {self.goal:g}x" if self.goal is not None else "-"
        return (
            f"| {self.figure} | {self.baseline} | {self.ratio:.3f}{ci} | {goal} | "
            f"{self.verdict} | {self.detail} |"
        )


@dataclass
class Report:
    """What ``run(report)`` receives: ``quick`` (fewer repeats) and ``add`` for figures."""

    quick: bool = False
    group: str = ""
    figures: list[Figure] = field(default_factory=list)

    def add(
        self,
        figure: str,
        baseline: str,
        ratio: float,
        goal: float | None,
        detail: str = "",
        ci: tuple[float, float] | None = None,
    ) -> Figure:
        fig = Figure(self.group, figure, baseline, ratio, goal, detail, ci)
        self.figures.append(fig)
        return fig
