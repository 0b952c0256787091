"""``mindspeed-prof sweep DIR``: one row per job of a Hydra multirun."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mindspeed_prof.cli.common import Exit, Subparsers, error, exit_help
from mindspeed_prof.cli.output import Unwritten

__all__ = ["add_parser", "run"]


def add_parser(sub: Subparsers) -> None:
    s = sub.add_parser(
        "sweep",
        help="one row per job of a Hydra multirun",
        description="Summarise every job of a Hydra multirun (-m) dir: stage, status,\n"
        "captures, time per step and per stage; writes sweep_summary.json there.\n\n"
        + exit_help("sweep"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("dir", metavar="DIR", help="the multirun dir, e.g. multirun/2026-11-30/10-00-00")
    s.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    s.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mindspeed_prof.analysis.sweep import SUMMARY_NAME, as_dicts, profiled, sweep_summary
    from mindspeed_prof.views.text import print_sweep

    try:
        rows = sweep_summary(Path(args.dir))
    except FileNotFoundError as err:
        error(str(err))
        return Exit.NOTHING
    except OSError as err:  # the summary file: a read-only folder, a full disk
        raise Unwritten(str(Path(args.dir) / SUMMARY_NAME), err) from err
    if not profiled(rows):
        error(f"no job under {args.dir} wrote a manifest (was profile on?)")
        return Exit.NOTHING
    if args.json:
        json.dump(as_dicts(rows), sys.stdout, indent=2)
        print()
    else:
        print_sweep(as_dicts(rows), Path(args.dir))
    return Exit.OK
