"""``mindspeed-prof``: demo, analyse, timeline, compare, sweep and presets.

Exit codes of ``analyse`` and ``compare``: 0 every capture was read; 1 nothing could be read
(or the path does not exist); 3 some files were skipped (each named on stderr); 2 bad usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["main"]

EXIT_OK, EXIT_NOTHING, EXIT_SKIPPED = 0, 1, 3


def _analyse(path: Path, margin: float, quiet: bool, jobs: int | None = None) -> Any:
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    from mindspeed_prof.analysis.analyse import analyse
    from mindspeed_prof.analysis.parallel import default_jobs

    columns = (TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[files]}"),
               DownloadColumn(), TimeRemainingColumn())
    console = Console(stderr=True)
    with Progress(*columns, console=console, transient=True,
                  disable=quiet or not console.is_terminal) as bar:
        task = bar.add_task(f"reading {path}", total=None, files="")

        def progress(files: int, all_files: int, done: int, total: int) -> None:
            bar.update(task, completed=done, total=total, files=f"{files}/{all_files} files")

        return analyse(path, margin=margin, progress=progress,
                       jobs=default_jobs() if jobs is None else jobs)


def _jobs(text: str) -> int:
    try:
        jobs = int(text)
    except ValueError:
        jobs = 0
    if jobs < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: a number of processes, 1 or more")
    return jobs


def _exit_code(*results: Any) -> int:
    if any(not r.traces for r in results):
        return EXIT_NOTHING
    return EXIT_SKIPPED if any(r.bad for r in results) else EXIT_OK


def cmd_analyse(args: argparse.Namespace) -> int:
    from rich.console import Console

    from mindspeed_prof.analysis.render import print_analysis

    result = _analyse(Path(args.path), args.margin, args.json, args.jobs)
    for b in result.bad:
        print(f"mindspeed-prof: skipped {b}", file=sys.stderr)
    if args.html:
        from mindspeed_prof.analysis.report import write_report

        print(f"report: {write_report(result, Path(args.html))}", file=sys.stderr)
    if args.json:
        json.dump(result.to_json(), sys.stdout, indent=2, default=str)
        print()
    else:
        print_analysis(result, Console(), top=args.top)
    return _exit_code(result)


def cmd_timeline(args: argparse.Namespace) -> int:
    from mindspeed_prof.analysis.timeline import StepWindow, parse_ranks, parse_steps, write_timeline

    try:
        steps = parse_steps(args.steps) if args.steps else StepWindow()
        detail = parse_ranks(args.detail) if args.detail else frozenset()
    except ValueError as err:
        print(f"mindspeed-prof: {err}", file=sys.stderr)
        return 2
    result = _analyse(Path(args.root), 0.2, False, args.jobs)
    for b in result.bad:
        print(f"mindspeed-prof: skipped {b}", file=sys.stderr)
    if not result.traces:
        print(f"mindspeed-prof: {args.root}: no captures to merge", file=sys.stderr)
        return EXIT_NOTHING
    timeline = write_timeline(result.traces, Path(args.output), detail, steps)
    for w in timeline.warnings:
        print(f"mindspeed-prof: {w}", file=sys.stderr)
    print(f"timeline: {timeline.path} ({len(timeline.tracks)} tracks, {timeline.events:,} events, "
          f"{timeline.bytes / 1e6:,.1f} MB); open it in ui.perfetto.dev or chrome://tracing")
    return _exit_code(result)


def cmd_compare(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from mindspeed_prof.analysis.compare import compare

    a = _analyse(Path(args.a), args.margin, True)
    b = _analyse(Path(args.b), args.margin, True)
    rows = compare(a, b, threshold=args.threshold)
    for bad in a.bad + b.bad:
        print(f"mindspeed-prof: skipped {bad}", file=sys.stderr)
    if args.json:
        json.dump({"a": str(args.a), "b": str(args.b), "threshold": args.threshold,
                   "rows": rows}, sys.stdout, indent=2)
        print()
        return _exit_code(a, b)
    table = Table(title=f"A = {args.a}\nB = {args.b}")
    for col in ("stage", "rank", "A mean ms", "B mean ms", "change", ""):
        table.add_column(col, justify="left" if col == "stage" else "right")
    for r in rows:
        change = "-" if r["change"] is None else f"{r['change']:+.1%}"
        flag = ("[red]regression[/red]" if r["regression"]
                else "[green]faster[/green]" if r["improvement"] else "")
        fmt = lambda v: "-" if v is None else f"{v:,.2f}"  # noqa: E731
        table.add_row(r["stage"], str(r["rank"]), fmt(r["a_mean_ms"]), fmt(r["b_mean_ms"]),
                      change, flag)
    Console().print(table)
    return _exit_code(a, b)


def cmd_sweep(args: argparse.Namespace) -> int:
    from mindspeed_prof.analysis.sweep import sweep_summary

    try:
        rows = sweep_summary(Path(args.dir), print_table=not args.json)
    except FileNotFoundError as err:
        print(f"mindspeed-prof: {err}", file=sys.stderr)
        return EXIT_NOTHING
    if not any(r["status"] != "no manifest" for r in rows):
        print(f"mindspeed-prof: no job under {args.dir} wrote a manifest (was profile on?)",
              file=sys.stderr)
        return EXIT_NOTHING
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
    return EXIT_OK


def cmd_presets(args: argparse.Namespace) -> int:
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


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mindspeed-prof", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="run the demo RL trainer (Hydra overrides follow)")
    a = sub.add_parser("analyse", aliases=["analyze"], help="tables, stragglers, report")
    a.add_argument("path", help="a save root, a job or multirun dir, or one capture")
    a.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    a.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report")
    a.add_argument("--margin", type=float, default=0.2,
                   help="straggler margin over the median (default 0.2 = 20%%)")
    a.add_argument("--top", type=int, default=10, help="ops listed by self time")
    jobs_help = "processes that read captures (default: the CPU count, at most 8)"
    a.add_argument("--jobs", "-j", type=_jobs, metavar="N", help=jobs_help)
    a.set_defaults(func=cmd_analyse)
    t = sub.add_parser("timeline", help="every capture merged into one Chrome trace")
    t.add_argument("root", help="a save root, a job or multirun dir")
    t.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="the merged trace (.json, or .json.gz to compress it)")
    t.add_argument("--detail", metavar="RANKS",
                   help="add operator and kernel events for these ranks (0,3,8-11 or all)")
    t.add_argument("--steps", metavar="A:B", help="only steps A..B-1 (A: and :B work too)")
    t.add_argument("--jobs", "-j", type=_jobs, metavar="N", help=jobs_help)
    t.set_defaults(func=cmd_timeline)
    c = sub.add_parser("compare", help="two runs side by side, regressions flagged")
    c.add_argument("a")
    c.add_argument("b")
    c.add_argument("--threshold", type=float, default=0.1,
                   help="flag changes beyond this fraction (default 0.1)")
    c.add_argument("--margin", type=float, default=0.2, help=argparse.SUPPRESS)
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=cmd_compare)
    s = sub.add_parser("sweep", help="summary of a Hydra multirun dir")
    s.add_argument("dir")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_sweep)
    r = sub.add_parser("presets", help="every preset with its values")
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=cmd_presets)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["demo"]:
        from mindspeed_prof.demo.__main__ import main as demo

        sys.argv = ["mindspeed-prof demo", *argv[1:]]
        demo()
        return EXIT_OK
    args = parser().parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("mindspeed-prof: interrupted (no partial output or cache entry left)",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
