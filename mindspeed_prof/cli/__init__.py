"""``mindspeed-prof``: the command line, one module per subcommand."""

from __future__ import annotations

import argparse
import os
import sys
from types import ModuleType

from mindspeed_prof.cli import (
    analyse,
    capture,
    compare,
    demo,
    doctor,
    presets,
    sweep,
    timeline,
)
from mindspeed_prof.cli.common import Exit, exit_help

__all__ = ["COMMANDS", "main", "parser"]

#: Subcommand modules, in ``--help`` order. Each has ``add_parser(subparsers)``, which registers
#: the command and sets ``func`` (args -> exit code). A new command is a module and a line here.
COMMANDS: list[ModuleType] = [demo, analyse, timeline, compare, sweep, presets, capture, doctor]

DESCRIPTION = f"""\
Profiling for RL post-training loops: run the demo, then read what a run captured.

Exit codes of analyse and compare below; each command's --help gives its own.

{exit_help("compare")}"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mindspeed-prof",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        if argv[:1] == ["demo"]:
            return demo.run(argv[1:])
        args = parser().parse_args(argv)
        code = int(args.func(args))
        sys.stdout.flush()  # a closed pipe shows up here, not at exit
        return code
    except KeyboardInterrupt:
        print(
            "mindspeed-prof: interrupted (no partial output or cache entry left)", file=sys.stderr
        )
        return 130
    except BrokenPipeError:
        # The reader went away (`mindspeed-prof analyse DIR --json | head`): not an error of
        # ours. Point stdout at devnull so the flush at exit does not raise again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return Exit.NOTHING
