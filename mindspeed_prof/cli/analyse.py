"""``mindspeed-prof analyse PATH``: tables, stragglers, an HTML report."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from mindspeed_prof.cli.common import exit_code, read_captures

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    a = sub.add_parser("analyse", aliases=["analyze"], help="tables, stragglers, report")
    a.add_argument("path", help="a save root, a job or multirun dir, or one capture")
    a.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    a.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report")
    a.add_argument("--margin", type=float, default=0.2,
                   help="straggler margin over the median (default 0.2 = 20%%)")
    a.add_argument("--top", type=int, default=10, help="ops listed by self time")
    a.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from mindspeed_prof.analysis.render import print_analysis

    result = read_captures(Path(args.path), args.margin, args.json)
    for b in result.bad:
        print(f"mindspeed-prof: skipped {b}", file=sys.stderr)
    if args.html:
        from mindspeed_prof.analysis.report import write_report

        print(f"report: {write_report(result, Path(args.html))}", file=sys.stderr)
    if args.json:
        json.dump(result.to_json(), sys.stdout, indent=2, default=str)
        print()
    else:
        print_analysis(result, Console(), top=args.top)
    return exit_code(result)
