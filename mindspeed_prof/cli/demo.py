"""``mindspeed-prof demo``: the demo RL trainer (a Hydra app; its overrides follow)."""

from __future__ import annotations

import sys

from mindspeed_prof.cli.common import Exit, Subparsers

__all__ = ["add_parser", "run"]


def add_parser(sub: Subparsers) -> None:
    # Never parsed by argparse: main() hands "demo ..." to Hydra (mindspeed-prof demo --help).
    sub.add_parser(
        "demo",
        help="run the demo RL trainer on CPU; Hydra overrides follow "
        "(e.g. profiler_config=stage_scoped demo.workers=0)",
    )


def run(overrides: list[str]) -> int:
    """Hand the command line to the demo's Hydra app (argparse would reject its overrides)."""
    from mindspeed_prof.demo.__main__ import main as demo

    sys.argv = ["mindspeed-prof demo", *overrides]
    demo()
    return Exit.OK
