"""``mindspeed-prof compare A B``: two runs side by side, regressions flagged, a CI gate."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from mindspeed_prof.cli.common import EXIT_NOTHING, EXIT_SLOWER, exit_code, read_captures

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    c = sub.add_parser("compare", help="two runs side by side, regressions flagged")
    c.add_argument("a")
    c.add_argument("b")
    c.add_argument("--threshold", type=float, default=0.1,
                   help="flag changes beyond this fraction (default 0.1)")
    c.add_argument("--fail-over", type=float, metavar="FRACTION",
                   help="exit 4 when a stage or range in B is slower than in A by more than "
                        "FRACTION (0.05 = 5%%), for CI")
    c.add_argument("--include-warmup", action="store_true",
                   help="count warmup steps (left out by default)")
    c.add_argument("--margin", type=float, default=0.2, help=argparse.SUPPRESS)
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from mindspeed_prof.analysis.compare import compare_runs, slower_than
    from mindspeed_prof.analysis.render import print_compare

    a = read_captures(Path(args.a), args.margin, True)
    b = read_captures(Path(args.b), args.margin, True)
    a.include_warmup = b.include_warmup = args.include_warmup
    result = compare_runs(a, b, threshold=args.threshold)
    for bad in a.bad + b.bad:
        print(f"mindspeed-prof: skipped {bad}", file=sys.stderr)
    for p in a.problems() + b.problems():
        print(f"mindspeed-prof: partly read {p}", file=sys.stderr)
    for w in result["warnings"]:
        print(f"mindspeed-prof: warning: {w}", file=sys.stderr)
    slower = slower_than(result, args.fail_over) if args.fail_over is not None else []
    if args.json:
        json.dump({"a": str(args.a), "b": str(args.b), "threshold": args.threshold,
                   "fail_over": args.fail_over, "slower": slower, **result}, sys.stdout,
                  indent=2)
        print()
    else:
        print_compare(result, str(args.a), str(args.b), Console())
    for line in slower:
        print(f"mindspeed-prof: slower: {line}", file=sys.stderr)
    code = exit_code(a, b)
    return EXIT_SLOWER if slower and code != EXIT_NOTHING else code
