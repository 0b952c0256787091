"""``mindspeed-prof timeline ROOT -o FILE``: every capture merged into one Chrome trace."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from mindspeed_prof.analysis.readers.labels import ranks_text
from mindspeed_prof.analysis.timeline.budget import DEFAULT_MB
from mindspeed_prof.cli.common import (
    Exit,
    Subparsers,
    error,
    exit_code,
    exit_help,
    jobs_option,
    placement_line,
    read_captures,
    run_line,
)
from mindspeed_prof.cli.output import Unwritten
from mindspeed_prof.ray.link import Unreachable

if TYPE_CHECKING:
    from mindspeed_prof.analysis.report.captures import Captures

__all__ = ["add_parser", "run"]


def add_parser(sub: Subparsers) -> None:
    t = sub.add_parser(
        "timeline",
        help="every capture of a run merged into one Chrome trace",
        description="Merge every capture under ROOT (all ranks, roles, hosts and stages) into\n"
        "one Chrome trace for ui.perfetto.dev or chrome://tracing: a track per\n"
        "rank, role and host, with steps, stages and ranges on one wall clock.\n\n"
        + exit_help("timeline"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    t.add_argument("root", metavar="ROOT", help="a save root, a Hydra job or multirun dir")
    t.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="FILE",
        help="the merged trace (.json, or .json.gz to compress it)",
    )
    t.add_argument(
        "--detail",
        metavar="RANKS",
        help="add operator and kernel events for these ranks (0,3,8-11 or all)",
    )
    t.add_argument("--steps", metavar="A:B", help="only steps A..B-1 (A: and :B work too)")
    t.add_argument(
        "--max-mb",
        type=_megabytes,
        default=DEFAULT_MB,
        metavar="MB",
        help="the most MB of JSON to write (before gzip; default %(default)s, what a "
        "browser tab loads): short operators merged, then the slowest "
        "rank-steps' kept; 0: no limit",
    )
    t.add_argument(
        "--format",
        choices=("json", "perfetto"),
        default="json",
        help="json: Chrome's trace format (default); perfetto: Perfetto's own "
        "protobuf, smaller and faster to open (needs mindspeed-prof[perfetto])",
    )
    jobs_option(t)
    t.set_defaults(func=run)


def _megabytes(text: str) -> float:
    try:
        mb = float(text)
    except ValueError:
        mb = -1.0
    if not mb >= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a size in MB, 0 or more (0: no limit)")
    return mb


def _usage_problem(args: argparse.Namespace, detail: frozenset[int] | None) -> str | None:
    """Why ``args`` cannot be honoured before anything is read (None: they can)."""
    if args.format == "perfetto":
        from mindspeed_prof.analysis.timeline.perfetto import available

        if not available():
            from mindspeed_prof.extras import install_line

            return f"--format perfetto needs the perfetto package: {install_line('perfetto')}"
    if args.ray is not None and detail != frozenset():
        return "--detail reads operator events from local files: not with --ray"
    return None


def _say_reading(result: Captures) -> None:
    """The run, placement and reading lines on stderr."""
    if line := run_line(result):  # one run's timeline: the newest
        error(line.replace("; --run ID|all", ""))
    if line := placement_line(result):
        error(line)
    for line in result.messages():
        error(line)


def run(args: argparse.Namespace) -> int:
    from mindspeed_prof.analysis.timeline import write_timeline
    from mindspeed_prof.analysis.timeline.budget import BudgetError, budget_line
    from mindspeed_prof.analysis.timeline.window import StepWindow, parse_ranks, parse_steps

    try:
        steps = parse_steps(args.steps) if args.steps else StepWindow()
        detail = parse_ranks(args.detail) if args.detail else frozenset()
    except ValueError as err:
        error(str(err))
        return Exit.USAGE
    if problem := _usage_problem(args, detail):
        error(problem)
        return Exit.USAGE
    if args.ray is None and not Path(args.root).exists():
        error(f"{args.root}: no such file or directory")
        return Exit.NOTHING
    try:
        result = read_captures(Path(args.root), quiet=False, jobs=args.jobs, ray=args.ray)
    except Unreachable as err:
        error(str(err))
        return Exit.USAGE
    _say_reading(result)
    if not result.traces:
        error(f"{args.root}: no captures to merge")
        return Exit.NOTHING
    if not steps.everything:
        have = sorted({r.step for t in result.traces for r in t.ranges if r.step is not None})
        if not any(step in steps for step in have):
            error(
                f"--steps {args.steps}: no capture holds those steps (they hold "
                f"{ranks_text(list(have)) or 'no steps'}); nothing written"
            )
            return Exit.NOTHING
    limit = int(args.max_mb * 1e6) or None
    from mindspeed_prof.analysis.parallel import default_jobs

    jobs = default_jobs() if args.jobs is None else args.jobs
    try:
        timeline = write_timeline(
            result.traces, Path(args.output), detail, steps, limit, args.format, jobs
        )
    except BudgetError as err:
        error(f"{err}: nothing written; narrow it with --steps A:B or raise --max-mb")
        return Exit.NOTHING
    except OSError as err:  # a full disk, a read-only folder: written through a temporary name
        raise Unwritten(args.output, err) from err
    for w in timeline.warnings:
        error(result.shown(w))
    if timeline.budget:
        error(budget_line(timeline.budget, args.max_mb))
    from mindspeed_prof.views.safe import say

    say(f"timeline: {timeline.path}")
    say(
        f"{len(timeline.tracks)} tracks, {timeline.slices:,} slices, "
        f"{timeline.bytes / 1e6:,.1f} MB: open it in ui.perfetto.dev"
        + (" or chrome://tracing" if args.format == "json" else "")
    )
    if timeline.all_detail:
        say("no stages or ranges in these captures: every rank's operators and kernels shown")
    return exit_code(result)
