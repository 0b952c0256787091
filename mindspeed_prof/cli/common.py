"""What the subcommands share: exit codes, one-line errors, reading captures with a progress bar."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

__all__ = ["EXIT_NOTHING", "EXIT_OK", "EXIT_SKIPPED", "EXIT_SLOWER", "EXIT_USAGE", "error",
           "exit_code", "read_captures"]

EXIT_OK, EXIT_NOTHING, EXIT_USAGE, EXIT_SKIPPED, EXIT_SLOWER = 0, 1, 2, 3, 4


def error(message: str) -> None:
    """One line on stderr, prefixed with the program's name."""
    print(f"mindspeed-prof: {message}", file=sys.stderr)


def read_captures(path: Path, margin: float | None = None, quiet: bool = True) -> Any:
    """``analyse(path)`` with a transient progress bar (none when ``quiet``)."""
    from rich.console import Console
    from rich.progress import Progress

    from mindspeed_prof.analysis.analyse import DEFAULT_MARGIN, analyse

    stderr = Console(stderr=True)
    with Progress(console=stderr, transient=True, disable=quiet or not stderr.is_terminal) as bar:
        task = bar.add_task(f"reading {path}", total=None)
        return analyse(path, margin=DEFAULT_MARGIN if margin is None else margin,
                       progress=lambda i, n: bar.update(task, completed=i, total=n))


def exit_code(*results: Any) -> int:
    if any(not r.traces for r in results):
        return EXIT_NOTHING
    return EXIT_SKIPPED if any(r.bad for r in results) else EXIT_OK
