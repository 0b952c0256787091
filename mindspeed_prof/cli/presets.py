"""``mindspeed-prof presets``: every preset, the question it answers and its values."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from mindspeed_prof.cli.common import Exit, Subparsers

__all__ = ["add_parser", "changed_values", "run"]


def add_parser(sub: Subparsers) -> None:
    r = sub.add_parser(
        "presets",
        help="every preset, the question it answers and what it changes",
        description="List the profiler_config=<preset> choices with the values each sets "
        "(those that differ from the defaults; --json: every value).",
    )
    r.add_argument("--json", action="store_true", help="every preset with all its values on stdout")
    r.set_defaults(func=run)


def _plain(value: Any) -> Any:
    return getattr(value, "value", value)


def changed_values(fields: dict[str, Any]) -> dict[str, Any]:
    """The preset's values that differ from the schema's defaults, as YAML would write them."""
    from dataclasses import asdict

    from mindspeed_prof.config.schema import IntegratedConfig

    defaults = asdict(IntegratedConfig())
    return {
        k: str(v).lower() if isinstance(v, bool) else _plain(v)
        for k, v in fields.items()
        if _plain(v) != _plain(defaults.get(k))
    }


def run(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from mindspeed_prof.config.presets import PRESETS
    from mindspeed_prof.config.schema import IntegratedConfig

    if args.json:
        defaults = asdict(IntegratedConfig())
        out = {
            name: {"question": q, **{k: _plain(v) for k, v in {**defaults, **fields}.items()}}
            for name, (q, fields) in PRESETS.items()
        }
        json.dump(out, sys.stdout, indent=2)
        print()
        return Exit.OK
    from rich.console import Console

    from mindspeed_prof.views.text import print_presets

    print_presets(
        [(name, q, changed_values(fields)) for name, (q, fields) in PRESETS.items()], Console()
    )
    return Exit.OK
