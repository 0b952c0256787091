"""What the subcommands share: exit codes, one-line errors, reading captures with a progress bar."""

from __future__ import annotations

import argparse
import sys
from enum import IntEnum
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from mindspeed_prof.analysis.analyse import ClusterReader
    from mindspeed_prof.analysis.report.captures import Captures

#: What ``add_subparsers`` returns: each command's ``add_parser(sub)`` adds its parser there.
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

__all__ = [
    "MEANINGS",
    "Exit",
    "Subparsers",
    "comm_kernels_option",
    "error",
    "exit_code",
    "exit_help",
    "exit_table",
    "jobs_option",
    "noise_option",
    "placement_line",
    "read_captures",
    "read_runs",
    "run_line",
]


class Exit(IntEnum):
    """The exit codes of every command: one table, one meaning per code."""

    OK = 0
    #: Nothing to read (no such path, no captures under it), or nothing written in time.
    NOTHING = 1
    #: Bad usage: an argument that is not allowed, a missing optional dependency.
    USAGE = 2
    #: Partly done: some files skipped or partly read, some ranks failed, doctor's findings.
    PARTIAL = 3
    #: ``compare --fail-over``: B is slower than A beyond the fraction (and the noise floor).
    SLOWER = 4
    #: ``capture``: no running job took the request (none running, none reachable, ignored).
    NOT_RUNNING = 5
    #: An output could not be written whole (a full disk, a read-only folder, a closed pipe).
    UNWRITTEN = 6


#: Every command that writes (stdout, ``-o``, ``--html``) can end so.
_UNWRITTEN = (
    "an output could not be written (a full disk, a read-only folder, stdout closed by its "
    "reader): one line names it; no file is left cut short under its name"
)

_READ = {
    Exit.OK: "every capture was read",
    Exit.NOTHING: "nothing to read (no such path, or no captures under it)",
    Exit.USAGE: "bad usage (also --html without matplotlib, a Ray cluster that cannot be reached)",
    Exit.PARTIAL: "some files were skipped or partly read (each named on stderr)",
    Exit.UNWRITTEN: _UNWRITTEN,
}

#: What each code means for each command that returns it: the one source of the exit-code
#: texts of ``--help`` (``exit_help``) and of the docs' tables (``exit_table``, held to it by
#: a test).
MEANINGS: dict[str, dict[Exit, str]] = {
    "analyse": _READ,
    "compare": {
        **_READ,
        Exit.USAGE: "bad usage",
        Exit.SLOWER: "--fail-over: a stage or range in B is slower than in A by more than allowed",
    },
    "timeline": {
        Exit.OK: "every capture was merged",
        Exit.NOTHING: "nothing to merge (no such path, no captures, or none holds "
        "the --steps asked for)",
        Exit.USAGE: "bad usage (--steps or --detail not allowed, a Ray cluster that "
        "cannot be reached)",
        Exit.PARTIAL: "some files were skipped or partly read (each named on stderr)",
        Exit.UNWRITTEN: _UNWRITTEN,
    },
    "doctor": {
        Exit.OK: "healthy",
        Exit.NOTHING: "no such directory",
        Exit.PARTIAL: "findings (one line each)",
        Exit.UNWRITTEN: _UNWRITTEN,
    },
    "sweep": {
        Exit.OK: "one row per job written",
        Exit.NOTHING: "no such directory, or no job under it wrote a manifest",
        Exit.UNWRITTEN: _UNWRITTEN,
    },
    "capture": {
        Exit.OK: "every rank that took the request wrote its capture",
        Exit.NOTHING: "a rank took the request but wrote nothing before the timeout (still "
        "capturing?), or no rank recorded what the request asked for",
        Exit.USAGE: "bad usage (an argument not allowed, a --from file that is no request)",
        Exit.PARTIAL: "some ranks wrote their capture, others failed or recorded less than asked",
        Exit.NOT_RUNNING: "no job took the request: none is running (or it ended while the "
        "command waited), none is reachable (no Ray cluster at the address, "
        "no capture board), on_demand is false, the hooks are not called, "
        "or no worker matches the request",
        Exit.UNWRITTEN: _UNWRITTEN,
    },
}


def exit_help(command: str) -> str:
    """``command``'s exit codes as ``--help`` shows them, wrapped at 79 columns."""
    import textwrap

    lines = ["exit codes:"]
    for code, meaning in sorted(MEANINGS[command].items()):
        lines += textwrap.wrap(
            meaning, 79, initial_indent=f"  {int(code)}  ", subsequent_indent=" " * 5
        )
    return "\n".join(lines) + "\n"


def exit_table(command: str) -> str:
    """``command``'s exit codes as the docs' Markdown table."""
    rows = [f"| {int(code)} | {meaning} |" for code, meaning in sorted(MEANINGS[command].items())]
    return "\n".join(["| exit | meaning |", "|---|---|", *rows]) + "\n"


def error(message: str) -> None:
    """One line on stderr, prefixed with the program's name (names from captures can hold
    control characters: they are written as escapes)."""
    from mindspeed_prof.views.safe import printable

    print(f"mindspeed-prof: {printable(message)}", file=sys.stderr)


def read_captures(
    path: Path,
    quiet: bool = True,
    jobs: int | None = None,
    ray: str | None = None,
    run: str | None = None,
    comm_kernels: str = "",
) -> Captures:
    """The captures of one run under ``path`` (``run``, else the newest): ``read_runs``."""
    return read_runs(path, quiet, jobs, ray, run, comm_kernels)[0]


def read_runs(
    path: Path,
    quiet: bool = True,
    jobs: int | None = None,
    ray: str | None = None,
    run: str | None = None,
    comm_kernels: str = "",
) -> list[Captures]:
    """``analyse_runs(path)`` in ``jobs`` processes (default: the CPU count, capped) with a
    transient progress bar of files and bytes (none when ``quiet``): the captures of each run
    ``run`` names (None: the newest; ``all``: each, newest first); ``comm_kernels``: as
    ``--comm-kernels``."""
    from mindspeed_prof.analysis.analyse import analyse_runs
    from mindspeed_prof.analysis.parallel import default_jobs

    if quiet:  # no bar: rich is not imported (a tenth of a small capture's start)
        return analyse_runs(
            path,
            jobs=default_jobs() if jobs is None else jobs,
            cluster=_cluster(ray),
            run=run,
            comm_kernels=comm_kernels,
        )
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    stderr = Console(stderr=True)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[files]}"),
        DownloadColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=stderr, transient=True, disable=not stderr.is_terminal) as bar:
        task = bar.add_task(f"reading {path}", total=None, files="")

        def progress(files: int, all_files: int, done: int, total: int) -> None:
            bar.update(task, completed=done, total=total, files=f"{files}/{all_files} files")

        return analyse_runs(
            path,
            progress=progress,
            jobs=default_jobs() if jobs is None else jobs,
            cluster=_cluster(ray),
            run=run,
            comm_kernels=comm_kernels,
        )


def _cluster(address: str | None) -> ClusterReader | None:
    """``--ray [ADDRESS]``: the reader that reads each capture on the Ray node holding it."""
    if address is None:
        return None
    from mindspeed_prof.ray.cluster import reader

    return reader(address)


def noise_option(parser: argparse.ArgumentParser) -> None:
    """``--noise-ms MS``: differences between ranks or runs under this are noise."""
    from mindspeed_prof.analysis.report.settings import Settings

    noise_ms = Settings().noise_ms
    parser.add_argument(
        "--noise-ms",
        type=float,
        default=noise_ms,
        metavar="MS",
        help="a difference under this many ms, or under 1%% of the step, is "
        f"noise: no straggler, no regression (default {noise_ms:g})",
    )


def comm_kernels_option(parser: argparse.ArgumentParser) -> None:
    """``--comm-kernels REGEX``: more device kernels counted as communication."""
    parser.add_argument(
        "--comm-kernels",
        type=_pattern,
        default="",
        metavar="REGEX",
        help="device kernels whose name this regex finds (re.search) are "
        "communication, before every built-in rule (NCCL, RCCL, HCCL, "
        "DeepEP, pplx, NVSHMEM, symmetric memory...): for a library they "
        "do not know; captures are then read again, past the cache",
    )


def _pattern(text: str) -> str:
    if not text:  # argparse passes the default "" through here too
        return text
    from mindspeed_prof.config.validate import pattern_problem

    problem = pattern_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(f"{text!r}: {problem}")
    return text


def jobs_option(parser: argparse.ArgumentParser) -> None:
    """``--jobs N`` (processes that read captures) and ``--ray [ADDRESS]``."""
    parser.add_argument(
        "--jobs",
        "-j",
        type=_jobs,
        metavar="N",
        help="processes that read captures (default: the CPU count, at most 8)",
    )
    parser.add_argument(
        "--ray",
        nargs="?",
        const="auto",
        metavar="ADDRESS",
        help="read each capture on the Ray node that holds it (default address: "
        "the cluster this machine belongs to)",
    )


def placement_line(result: Captures) -> str | None:
    """``read 16 captures on 2 Ray nodes (host-a: 8, host-b: 8)`` after ``--ray``."""
    if not result.placement:
        return None
    per: dict[str, int] = {}
    for p in result.placement:
        name = f"{p['host']} {p['node'][:8]}"
        per[name] = per.get(name, 0) + 1
    counts = ", ".join(f"{host}: {n}" for host, n in sorted(per.items()))
    return f"read {len(result.placement)} captures on {len(per)} Ray nodes ({counts})"


def run_line(result: Captures) -> str | None:
    """``3 runs under DIR; this is the newest, RUN (started ...); --run ID|all``, where the
    root holds several runs (None otherwise)."""
    from mindspeed_prof.analysis.runs import runs_line

    return runs_line(result.root, result.runs, result.run) if result.run else None


def _jobs(text: str) -> int:
    try:
        jobs = int(text)
    except ValueError:
        jobs = 0
    if jobs < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: a number of processes, 1 or more")
    return jobs


def exit_code(*results: Captures) -> Exit:
    if any(not r.traces for r in results):
        return Exit.NOTHING
    return Exit.PARTIAL if any(r.bad for r in results) else Exit.OK
