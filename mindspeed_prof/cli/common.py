"""What the subcommands share: exit codes and reading captures with a progress bar."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["EXIT_NOTHING", "EXIT_OK", "EXIT_SKIPPED", "exit_code", "read_captures"]

EXIT_OK, EXIT_NOTHING, EXIT_SKIPPED = 0, 1, 3


def read_captures(path: Path, margin: float, quiet: bool) -> Any:
    from rich.progress import Progress

    from mindspeed_prof.analysis.analyse import analyse

    with Progress(transient=True, disable=quiet) as bar:
        task = bar.add_task(f"reading {path}", total=None)
        return analyse(path, margin=margin,
                       progress=lambda i, n: bar.update(task, completed=i, total=n))


def exit_code(*results: Any) -> int:
    if any(not r.traces for r in results):
        return EXIT_NOTHING
    return EXIT_SKIPPED if any(r.bad for r in results) else EXIT_OK
