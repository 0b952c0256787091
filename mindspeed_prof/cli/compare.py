"""``mindspeed-prof compare A B``: two runs side by side, regressions flagged."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from mindspeed_prof.cli.common import exit_code, read_captures

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    c = sub.add_parser("compare", help="two runs side by side, regressions flagged")
    c.add_argument("a")
    c.add_argument("b")
    c.add_argument("--threshold", type=float, default=0.1,
                   help="flag changes beyond this fraction (default 0.1)")
    c.add_argument("--margin", type=float, default=0.2, help=argparse.SUPPRESS)
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from mindspeed_prof.analysis.compare import compare

    a = read_captures(Path(args.a), args.margin, True)
    b = read_captures(Path(args.b), args.margin, True)
    rows = compare(a, b, threshold=args.threshold)
    for bad in a.bad + b.bad:
        print(f"mindspeed-prof: skipped {bad}", file=sys.stderr)
    if args.json:
        json.dump({"a": str(args.a), "b": str(args.b), "threshold": args.threshold,
                   "rows": rows}, sys.stdout, indent=2)
        print()
        return exit_code(a, b)
    table = Table(title=f"A = {args.a}\nB = {args.b}")
    for col in ("stage", "rank", "A mean ms", "B mean ms", "change", ""):
        table.add_column(col, justify="left" if col == "stage" else "right")
    for r in rows:
        change = "-" if r["change"] is None else f"{r['change']:+.1%}"
        flag = ("[red]regression[/red]" if r["regression"]
                else "[green]faster[/green]" if r["improvement"] else "")
        fmt = lambda v: "-" if v is None else f"{v:,.2f}"  # noqa: E731
        table.add_row(r["stage"], str(r["rank"]), fmt(r["a_mean_ms"]), fmt(r["b_mean_ms"]),
                      change, flag)
    Console().print(table)
    return exit_code(a, b)
