"""``mindspeed-prof compare A B``: two runs side by side, regressions flagged."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from mindspeed_prof.cli.common import EXIT_NOTHING, error, exit_code, read_captures

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    c = sub.add_parser(
        "compare", help="two runs side by side, regressions flagged",
        description="Mean time per stage execution and rank in run A (the baseline) and run "
                    "B; a change beyond --threshold is flagged. Exit codes as for analyse.")
    c.add_argument("a", metavar="A", help="the baseline run: a save root, job dir or capture")
    c.add_argument("b", metavar="B", help="the run compared against A, in the same forms")
    c.add_argument("--threshold", type=float, default=0.1,
                   help="flag changes beyond this fraction (default 0.1 = 10%%)")
    c.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    c.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from mindspeed_prof.analysis.compare import compare
    from mindspeed_prof.analysis.render import print_compare

    for given in (args.a, args.b):
        if not Path(given).exists():
            error(f"{given}: no such file or directory")
            return EXIT_NOTHING
    a, b = read_captures(Path(args.a)), read_captures(Path(args.b))
    for bad in a.bad + b.bad:
        error(f"skipped {bad}")
    for given, result in ((args.a, a), (args.b, b)):
        if not result.traces and not result.bad:
            error(f"no captures under {given}")
    rows = compare(a, b, threshold=args.threshold)
    if args.json:
        json.dump({"a": str(args.a), "b": str(args.b), "threshold": args.threshold,
                   "rows": rows}, sys.stdout, indent=2)
        print()
    else:
        print_compare(rows, args.a, args.b, Console())
    return exit_code(a, b)
