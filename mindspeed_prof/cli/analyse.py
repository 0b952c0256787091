"""``mindspeed-prof analyse PATH``: tables, stragglers, an HTML report."""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import util
from pathlib import Path
from typing import TYPE_CHECKING

from mindspeed_prof.cli.common import (
    Exit,
    Subparsers,
    comm_kernels_option,
    error,
    exit_code,
    exit_help,
    jobs_option,
    noise_option,
    placement_line,
    read_runs,
    run_line,
)
from mindspeed_prof.cli.output import write_json, written

if TYPE_CHECKING:
    from rich.console import Console

    from mindspeed_prof.analysis.cluster import Away
    from mindspeed_prof.analysis.report.captures import Captures
    from mindspeed_prof.analysis.report.report import Report

__all__ = ["add_parser", "run"]


def add_parser(sub: Subparsers) -> None:
    from mindspeed_prof.analysis.report.settings import Settings

    defaults = Settings()
    a = sub.add_parser(
        "analyse",
        aliases=["analyze"],
        help="tables, stragglers and an HTML report of a run",
        description="Read every capture under PATH and print time per stage and rank, per\n"
        "step, stragglers, custom ranges, device time, memory and top ops. Notes\n"
        "(such as a trace without ProfilerStep ranges) do not change the exit code.\n"
        "\n" + exit_help("analyse"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    a.add_argument(
        "path",
        metavar="PATH",
        help="a save root (profiler_data), a Hydra job or multirun dir, or one capture file",
    )
    a.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    a.add_argument(
        "--html", metavar="FILE", help="also write a self-contained HTML report (needs matplotlib)"
    )
    a.add_argument(
        "--margin",
        type=float,
        default=defaults.margin,
        help="a rank is a straggler when it exceeds the median of the other ranks "
        f"by this fraction (default {defaults.margin:g} = {defaults.margin:.0%}%)",
    )
    a.add_argument(
        "--top",
        type=int,
        default=defaults.top,
        metavar="N",
        help=f"rows of each top list (default {defaults.top})",
    )
    a.add_argument(
        "--run",
        metavar="ID|all",
        help="which run to answer for where PATH holds several (every run of an "
        "app writes to one save root): an id (or its first characters) from "
        "the first line, or all: each run apart (default: the newest)",
    )
    a.add_argument(
        "--flops-per-token",
        type=_model("flops_per_token"),
        metavar="F",
        help="the model's forward FLOPs per token (2 x parameters for a dense "
        "model), for MFU; over the captures' model_flops_per_token",
    )
    a.add_argument(
        "--peak-tflops",
        type=_model("peak_tflops"),
        metavar="P",
        help="one device's peak TFLOPS (at the training dtype), for MFU; over the "
        "captures' peak_tflops",
    )
    noise_option(a)
    comm_kernels_option(a)
    jobs_option(a)
    a.set_defaults(func=run)


def _model(field: str) -> Callable[[str], float]:
    """An argparse type for a model fact: a finite number over 0 (``counts.model_problem``)."""

    def parse(text: str) -> float:
        from mindspeed_prof.analysis.counts import model_problem

        try:
            value = float(text)
        except ValueError:
            value = None
        problem = (
            model_problem(field, value)
            if value is not None
            else (f"{field}={text!r}: not a number")
        )
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return float(text)

    return parse


def report_requirement() -> str | None:
    """``matplotlib>=3.7`` when the HTML report's dependency is missing, else None."""
    if util.find_spec("matplotlib") is not None:
        return None
    from importlib import metadata  # 25 ms of imports: only on this path

    try:
        requires = metadata.requires("mindspeed-prof") or []
    except metadata.PackageNotFoundError:
        requires = []
    for req in requires:
        if req.startswith("matplotlib") and "extra" in req and "report" in req:
            return req.split(";")[0].strip()
    return "matplotlib"


def _read(args: argparse.Namespace) -> list[Captures] | Exit:
    """The runs ``args`` ask for, or the exit code of why there are none to read."""
    from mindspeed_prof.analysis.runs import UnknownRun

    path = Path(args.path)
    if args.html and (missing := report_requirement()):
        error(f"--html needs matplotlib, which is not installed: pip install '{missing}'")
        return Exit.USAGE
    if args.ray is None and not path.exists():  # with --ray, the nodes hold the captures
        error(f"{args.path}: no such file or directory")
        return Exit.NOTHING
    said: tuple[type[Exception], ...] = (UnknownRun,)
    if args.ray is not None:  # logging and socket only for a cluster
        from mindspeed_prof.ray.link import Unreachable

        said += (Unreachable,)
    try:
        return read_runs(
            path,
            quiet=args.json,
            jobs=args.jobs,
            ray=args.ray,
            run=args.run,
            comm_kernels=args.comm_kernels,
        )
    except said as err:
        error(str(err))
        return Exit.USAGE


def _say_lines(args: argparse.Namespace, results: list[Captures], every: bool) -> None:
    """The run, placement and reading lines on stderr, each once."""
    line = None if every else run_line(results[0])
    if line and args.json:
        error(line)  # stdout is the JSON document
    if line := placement_line(results[0]):
        error(line)
    for line in dict.fromkeys(m for r in results for m in r.messages()):
        error(line)


def _write_html(args: argparse.Namespace, found: Report, result: Captures, every: bool) -> None:
    """``--html``: the report page, one per run when every run is asked for."""
    from mindspeed_prof.views.html import write_report
    from mindspeed_prof.views.safe import say

    html = Path(args.html)
    if every and result.run is not None:
        html = html.with_name(f"{html.stem}-{result.run.id.replace(':', '_')}{html.suffix}")
    with written(html) as tmp:  # never a report cut short under its name
        write_report(found, tmp)
    say(f"report: {html}", sys.stderr)


@contextmanager
def _no_gc() -> Iterator[None]:
    """The cyclic collector off (this process's own: the CLI's). The report's tables hold a row
    per step, a range file's many: each collection would rescan every row made so far (a
    quarter of a 400 MB range file's CPU), and they make no cycles."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def run(args: argparse.Namespace) -> int:
    from mindspeed_prof.analysis.report.report import report
    from mindspeed_prof.analysis.report.settings import Settings
    from mindspeed_prof.analysis.runs import ALL, describe

    if args.run is None and args.ray is None and (jobs := _sweep_jobs(Path(args.path))):
        return _as_sweep(args, jobs)
    results = _read(args)
    if isinstance(results, Exit):
        return results
    first = results[0]
    every = args.run == ALL and len(results) > 1
    _say_lines(args, results, every)
    away = _elsewhere(args, results)
    if not any(r.traces for r in results):
        if not first.bad:
            error(
                f"no captures under {args.path} (is profile: true, and does the window "
                "[profile_step_start, profile_step_end) contain steps that ran?)"
            )
        return Exit.NOTHING
    settings = Settings(
        margin=args.margin,
        noise_ms=args.noise_ms,
        flops_per_token=args.flops_per_token,
        peak_tflops=args.peak_tflops,
        top=args.top,
    )
    console: Console | None = None  # the tables' (rich and the views): not for --json
    docs = []
    for result in results:
        with _no_gc():
            found = report(result, settings)
        for note in found.rule_notes:
            error(f"note: {note}")
        if args.html:
            _write_html(args, found, result, every)
        if args.json:
            doc = found.json(lazy=True)
            if args.ray is None:
                doc["elsewhere"] = [a._asdict() for a in away.get(_run_id(result), [])]
            docs.append(doc)
            continue
        head = (
            f"run {describe(result.run)}" if every and result.run is not None else run_line(result)
        )
        from mindspeed_prof.views.text import print_analysis

        if console is None:
            from rich.console import Console

            console = Console()
        if head:
            console.print(head, soft_wrap=True, highlight=False, markup=False)
        print_analysis(found, console)
    if args.json:
        body = {"runs": docs[0]["runs"], "results": docs} if every else docs[0]
        write_json(body, sys.stdout)
        print()
    code = exit_code(*results) if every else exit_code(first)
    return Exit.PARTIAL if code == Exit.OK and any(away.values()) else code


def _run_id(result: Captures) -> str | None:
    return result.run.id if result.run is not None else None


def _elsewhere(args: argparse.Namespace, results: list[Captures]) -> dict[str | None, list[Away]]:
    """Per run: the captures a cluster summary names outside the analysed root (one line each
    on stderr), and the workers Ray restarted (one line each). Nothing with ``--ray``, which
    reads every node."""
    from mindspeed_prof.analysis.cluster import elsewhere, restarts, summary_workers

    if args.ray is not None:
        return {}
    root = Path(args.path)
    workers = summary_workers(root)
    if not workers:
        return {}
    read = {t.path.name for r in results for t in r.traces}
    away: dict[str | None, list[Away]] = {}
    for result in results:
        run = _run_id(result)
        away[run] = elsewhere(root, workers, read, run)
        for line in [a.line(root) for a in away[run]] + restarts(workers, run):
            error(line)
    return away


def _sweep_jobs(path: Path) -> list[Path]:
    """A Hydra multirun dir's job dirs, where ``path`` is one with several jobs (else [])."""
    from mindspeed_prof.analysis.sweep import RECORDS, SUMMARY_NAME

    if not path.is_dir() or not any(
        (path / name).exists() for name in ("multirun.yaml", RECORDS, SUMMARY_NAME)
    ):
        return []
    jobs = sorted((p for p in path.iterdir() if p.is_dir() and p.name.isdecimal()), key=_num)
    return jobs if len(jobs) > 1 else []


def _num(path: Path) -> int:
    return int(path.name)


def _as_sweep(args: argparse.Namespace, jobs: list[Path]) -> int:
    """A sweep's answer is one row per job (``sweep``), not the newest job's alone: one line
    saying so and how to read one job, then the sweep's table (or its ``--json``)."""
    from mindspeed_prof.cli import sweep
    from mindspeed_prof.formats.shell import quote

    where = quote(str(args.path))
    error(
        f"{args.path} is a Hydra multirun of {len(jobs)} jobs, each its own run: one row per "
        f"job (mindspeed-prof sweep {where}); one job's answer: mindspeed-prof analyse "
        f"{quote(str(jobs[0]))}, or each apart: --run all"
        + (" (--html reads one run)" if args.html else "")
    )
    if args.html:
        return Exit.USAGE
    return int(sweep.run(argparse.Namespace(dir=args.path, json=args.json)))
