"""``mindspeed-prof doctor ROOT``: a run's captures checked, one line per finding."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from mindspeed_prof.analysis.readers.labels import ranks_text
from mindspeed_prof.cli.common import Exit, Subparsers, error, exit_help

__all__ = ["add_parser", "captures_line", "run", "runs_text"]

DESCRIPTION = f"""\
A run's captures checked before anyone opens a trace: missing ranks, empty,
truncated or temporary files, files analyse cannot read whole, windows that
captured nothing, clock skew between hosts, Ray workers that gave no summary;
then captures and disk used per rank, notes on how captures were read, and
triggered captures.

{exit_help("doctor")}"""


def triggered_line(t: dict[str, Any]) -> str:
    """A triggered capture: the step that triggered it (a flight dump's ``trigger_step``, not
    the first step it holds), then what it holds."""
    at = t.get("trigger_step")
    step = at if at is not None else t.get("step")
    steps = t.get("steps") or []
    held = f"; holds steps {steps[0]}-{steps[-1]}" if len(steps) > 1 else ""
    return f"rank {t.get('rank')} step {step}: {t.get('trigger')} ({t.get('reason')}{held})"


def add_parser(sub: Subparsers) -> None:
    d = sub.add_parser(
        "doctor",
        help=f"health check of a run's captures (exit {int(Exit.PARTIAL)} on findings)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    d.add_argument("root", help="a save root (profile_save_path)")
    d.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    d.add_argument(
        "--skew-ms",
        type=float,
        default=500.0,
        help="clock skew between hosts worth a finding (default 500 ms)",
    )
    d.set_defaults(func=run)


def captures_line(per_rank: dict[str, int]) -> str:
    """``captures: 5 (ranks 0-3: 1 each; rank ?: 1)``: ranks grouped by how many they have."""
    if not per_rank:
        return "captures: none"
    by_count: dict[int, list[int | None]] = {}
    for rank, n in per_rank.items():
        by_count.setdefault(n, []).append(None if rank == "?" else int(rank))
    groups = []
    for n, ranks in sorted(by_count.items(), key=lambda kv: -len(kv[1])):
        each = " each" if len(ranks) > 1 else ""
        groups.append(f"rank{'s' if len(ranks) > 1 else ''} {ranks_text(ranks)}: {n}{each}")
    return f"captures: {sum(per_rank.values())} ({'; '.join(groups)})"


def runs_text(runs: list[dict[str, Any]]) -> str:
    """``runs: 2, newest first: RUN (started ..., ranks 0-1); ...``."""
    from mindspeed_prof.analysis.runs import RunInfo, describe

    return f"runs: {len(runs)}, newest first: " + "; ".join(describe(RunInfo(**r)) for r in runs)


def run(args: argparse.Namespace) -> int:
    from mindspeed_prof.analysis.doctor import doctor
    from mindspeed_prof.views.safe import say

    root = Path(args.root)
    if not root.is_dir():
        error(f"doctor: {root}: no such directory")
        return Exit.NOTHING
    health = doctor(root, skew_ms=args.skew_ms)
    if args.json:
        json.dump(health.to_json(), sys.stdout, indent=2)
        print()
    else:
        for finding in health.findings:
            say(finding.message)
        say(captures_line(health.captures_per_rank))
        ranks = ranks_text(list(health.ranks_found)) or "none"
        expected = (
            str(len(health.ranks_expected))
            if health.ranks_expected
            else "unknown: no manifest names them"
        )
        say(f"ranks with captures: {ranks} (expected {expected})")
        if len(health.runs) > 1:
            say(runs_text(health.runs))
        if health.worlds:
            from mindspeed_prof.analysis.capture_facts import worlds_text
            from mindspeed_prof.analysis.rows import World

            say(f"world size: {worlds_text([World(**w) for w in health.worlds])}")
        for note in health.notes:
            say(f"note: {note}")
        for rank, size in sorted(health.disk_per_rank.items()):
            say(
                f"disk: rank {rank}: "
                + (f"{size / 2**20:.1f} MB" if size >= 2**20 else f"{size / 1024:.1f} KB")
            )
        for t in health.triggered:
            say(f"triggered: {triggered_line(t)}")
        say("healthy" if health.healthy else f"{len(health.findings)} finding(s)")
    return Exit.OK if health.healthy else Exit.PARTIAL
