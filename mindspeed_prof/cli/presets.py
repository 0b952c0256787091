"""``mindspeed-prof presets``: every preset, the question it answers and its values."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from mindspeed_prof.cli.common import EXIT_OK

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    r = sub.add_parser("presets", help="every preset with its values")
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from rich.console import Console
    from rich.table import Table

    from mindspeed_prof.config.presets import PRESETS
    from mindspeed_prof.config.schema import IntegratedConfig

    defaults = asdict(IntegratedConfig())
    if args.json:
        out = {name: {"question": q, **{k: getattr(v, "value", v) for k, v in
                                        {**defaults, **fields}.items()}}
               for name, (q, fields) in PRESETS.items()}
        json.dump(out, sys.stdout, indent=2)
        print()
        return EXIT_OK
    table = Table(title="profiler=<preset> (values that differ from the defaults)",
                  show_lines=True)
    table.add_column("preset")
    table.add_column("question it answers")
    table.add_column("values")
    for name, (question, fields) in PRESETS.items():
        values = "\n".join(f"{k}: {getattr(v, 'value', v)}" for k, v in fields.items())
        table.add_row(name, question, values or "(defaults)")
    Console().print(table)
    return EXIT_OK
