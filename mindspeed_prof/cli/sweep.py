"""``mindspeed-prof sweep DIR``: one row per job of a Hydra multirun."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from mindspeed_prof.cli.common import EXIT_NOTHING, EXIT_OK

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    s = sub.add_parser("sweep", help="summary of a Hydra multirun dir")
    s.add_argument("dir")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mindspeed_prof.analysis.sweep import sweep_summary

    try:
        rows = sweep_summary(Path(args.dir), print_table=not args.json)
    except FileNotFoundError as err:
        print(f"mindspeed-prof: {err}", file=sys.stderr)
        return EXIT_NOTHING
    if not any(r["status"] != "no manifest" for r in rows):
        print(f"mindspeed-prof: no job under {args.dir} wrote a manifest (was profile on?)",
              file=sys.stderr)
        return EXIT_NOTHING
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
    return EXIT_OK
