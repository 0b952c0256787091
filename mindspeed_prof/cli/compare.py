"""``mindspeed-prof compare A B``: two runs side by side, regressions flagged."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mindspeed_prof.cli.common import (
    Exit,
    Subparsers,
    comm_kernels_option,
    error,
    exit_code,
    exit_help,
    noise_option,
    read_captures,
    run_line,
)

__all__ = ["add_parser", "run"]


def add_parser(sub: Subparsers) -> None:
    c = sub.add_parser(
        "compare",
        help="two runs side by side, regressions flagged",
        description="Mean time per stage execution and rank in run A (the baseline) and run\n"
        "B, per custom range too, device time per step and memory peaks; a change\n"
        "beyond --threshold is flagged, runs that captured different things are\n"
        "named. A save root of several runs is read as its newest run.\n\n" + exit_help("compare"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument("a", metavar="A", help="the baseline run: a save root, job dir or capture")
    c.add_argument("b", metavar="B", help="the run compared against A, in the same forms")
    c.add_argument(
        "--threshold",
        type=float,
        default=0.1,
        help="flag changes beyond this fraction (default 0.1 = 10%%)",
    )
    c.add_argument(
        "--fail-over",
        type=float,
        metavar="FRACTION",
        help=f"exit {int(Exit.SLOWER)} when a stage or range on a rank runs slower in "
        "B than in A: "
        "its per-step times shifted by more than FRACTION (0.05 = 5%%) of A's "
        "and the noise floor, a shift a rank test over both runs' steps finds "
        "real (one-off stalls are not): a CI gate",
    )
    c.add_argument(
        "--include-warmup", action="store_true", help="count warmup steps (left out by default)"
    )
    c.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    noise_option(c)
    comm_kernels_option(c)
    c.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from mindspeed_prof.analysis.compare import compare_runs, few_steps, side_of, slower_than
    from mindspeed_prof.analysis.report.settings import Settings
    from mindspeed_prof.views.text import print_compare, print_compare_details

    for given in (args.a, args.b):
        if not Path(given).exists():
            error(f"{given}: no such file or directory")
            return Exit.NOTHING
    settings = Settings(noise_ms=args.noise_ms, include_warmup=args.include_warmup)
    a = read_captures(Path(args.a), comm_kernels=args.comm_kernels)
    b = read_captures(Path(args.b), comm_kernels=args.comm_kernels)
    for side, result in (("A", a), ("B", b)):
        if line := run_line(result):  # each side: its newest run
            error(f"{side}: {line}")
        for line in result.messages():
            error(f"{side}: {line}")
    for given, result in ((args.a, a), (args.b, b)):
        if not result.traces and not result.bad:
            error(f"no captures under {given}")
    found = compare_runs(side_of(a, settings), side_of(b, settings), threshold=args.threshold)
    for w in found.warnings:
        error(f"warning: {w}")
    slower = slower_than(found, args.fail_over) if args.fail_over is not None else []
    if args.fail_over is not None and (few := few_steps(found, args.fail_over)):
        error(f"warning: {few}")
    if args.json:
        json.dump(
            {
                "a": str(args.a),
                "b": str(args.b),
                "threshold": args.threshold,
                "fail_over": args.fail_over,
                "slower": slower,
                **found.json(),
            },
            sys.stdout,
            indent=2,
        )
        print()
    else:
        console = Console()
        print_compare(found.rows, args.a, args.b, console)
        print_compare_details(found, console)
    for line in slower:
        error(f"slower: {line}")
    code = exit_code(a, b)
    return Exit.SLOWER if slower and code != Exit.NOTHING else code
