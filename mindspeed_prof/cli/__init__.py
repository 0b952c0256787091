"""``mindspeed-prof``: the command line, one module per subcommand."""

from __future__ import annotations

import argparse
import sys
from types import ModuleType

from mindspeed_prof.cli import analyse, capture, compare, demo, doctor, presets, sweep

__all__ = ["COMMANDS", "main", "parser"]

#: Subcommand modules, in ``--help`` order. Each has ``add_parser(subparsers)``, which registers
#: the command and sets ``func`` (args -> exit code). A new command is a module and a line here.
COMMANDS: list[ModuleType] = [demo, analyse, compare, sweep, presets, capture, doctor]

DESCRIPTION = """\
Exit codes of analyse and compare: 0 every capture was read; 1 nothing could be read
(or the path does not exist); 3 some files were skipped (each named on stderr); 2 bad usage.
"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mindspeed-prof", description=DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["demo"]:
        return demo.run(argv[1:])
    args = parser().parse_args(argv)
    return int(args.func(args))
