"""``mindspeed-prof``: the command line, one module per subcommand."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from types import ModuleType

from mindspeed_prof.cli.common import Exit, error, exit_help

__all__ = ["COMMANDS", "NAMES", "main", "parser"]

#: Subcommand modules of this package, in ``--help`` order. Each has ``add_parser(subparsers)``,
#: which registers the command and sets ``func`` (args -> exit code). A new command is a module
#: and a line here. A command line that names one imports only that one (its start pays for
#: its own imports, not every command's).
NAMES = ["demo", "analyse", "timeline", "compare", "sweep", "presets", "capture", "doctor"]

#: Commands that only read captures. They do no linear algebra, so numpy's BLAS gets one
#: thread: its pool of one thread a core, started at numpy's import, spins for a while and
#: spent a fifth of a small capture's CPU (0.05 of 0.25 s) for nothing. A value the user
#: set is kept. The demo trains, and gets the machine's default.
READERS = {"analyse", "timeline", "compare", "sweep", "doctor"}


def command(name: str) -> ModuleType:
    """The subcommand module ``name`` (imported on first use)."""
    return importlib.import_module(f"mindspeed_prof.cli.{name}")


def __getattr__(name: str) -> list[ModuleType]:
    if name == "COMMANDS":  # every subcommand module, imported
        return [command(n) for n in NAMES]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


DESCRIPTION = f"""\
Profiling for RL post-training loops: run the demo, then read what a run captured.

Exit codes of analyse and compare below; each command's --help gives its own.

{exit_help("compare")}"""


def parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser: every command, or only ``only`` where it names one."""
    p = argparse.ArgumentParser(
        prog="mindspeed-prof",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in [only] if only in NAMES else NAMES:
        command(name).add_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    from mindspeed_prof.cli.output import Unwritten, guarded_stdout, silence_stdout

    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] and argv[0] in READERS:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        with guarded_stdout():
            if argv[:1] == ["demo"]:
                return int(command("demo").run(argv[1:]))
            args = parser(argv[0] if argv else None).parse_args(argv)
            code = int(args.func(args))
            sys.stdout.flush()  # a closed pipe or a full disk shows up here, not at exit
            return code
    except KeyboardInterrupt:
        print(
            "mindspeed-prof: interrupted (no partial output or cache entry left)", file=sys.stderr
        )
        return 130
    except Unwritten as err:
        # A full disk, a read-only folder, or the reader went away (`analyse DIR | head`):
        # one line, and for stdout, point it at devnull so the flush at exit does not fail again.
        if err.where == "stdout":
            silence_stdout()
        error(str(err))
        return Exit.UNWRITTEN
