"""``mindspeed-prof capture TARGET``: start a capture in a running job, wait until it is written.

The request goes through a carrier (``capture.control.Carrier``): the job's save root's folder,
or its Ray board (``mindspeed_prof.ray.board``); both are followed by the same wait loop and
reported the same way.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mindspeed_prof.capture.control import (
    Carrier,
    Folder,
    Gone,
    NotRunning,
    Request,
    Status,
    from_npu,
    start_step,
    wait,
    wait_for_workers,
)
from mindspeed_prof.capture.control.folder import MAX_REQUEST_BYTES
from mindspeed_prof.cli.common import Exit, Subparsers, error, exit_help
from mindspeed_prof.config.schema import Level, Stage
from mindspeed_prof.formats.shell import quote
from mindspeed_prof.jsonio import read_json
from mindspeed_prof.views.safe import say

__all__ = ["GRACE_S", "add_parser", "follow", "report", "run"]

#: How long to wait for the workers to tell their steps before posting a request.
GRACE_S = 3.0

DESCRIPTION = f"""\
Capture the next steps of a running job without a restart. The job takes the
request at a step start (it looks at most once a second), whatever its preset,
while on_demand is true. TARGET is the job's save root; or, for a Ray job, whose
driver called mindspeed_prof.ray.open_board(), ray://ADDRESS (Ray Client) or
--ray [ADDRESS] (the cluster's address; default: the one this machine runs):
the request then reaches every worker through Ray, no shared filesystem needed.

{exit_help("capture")}"""


def add_parser(sub: Subparsers) -> None:
    """Register ``capture`` on the CLI's sub-parsers."""
    c = sub.add_parser(
        "capture",
        help="capture the next steps of a running job, now",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument(
        "target", nargs="?", help="the job's save root (profile_save_path), or ray://ADDRESS"
    )
    c.add_argument(
        "--ray",
        nargs="?",
        const="auto",
        metavar="ADDRESS",
        help="reach a Ray job's workers through its cluster (default: auto)",
    )
    c.add_argument(
        "--job",
        metavar="ID",
        help="with --ray: the Ray job to ask, where several have a capture board",
    )
    c.add_argument(
        "--steps", type=int, help="steps to capture (default 2; 0 with --flight: the dump only)"
    )
    c.add_argument("--ranks", help="comma-separated ranks, e.g. 0,3 (default: all)")
    c.add_argument("--role", help="only workers of this role (e.g. actor)")
    c.add_argument(
        "--stage",
        metavar="NAME",
        help="capture each execution of this stage instead of whole steps: "
        + ", ".join(s.value for s in Stage if s is not Stage.all),
    )
    c.add_argument(
        "--level",
        metavar="LEVEL",
        help="profile_level for this capture (default: the job's): "
        + ", ".join(level.value for level in Level),
    )
    c.add_argument("--preset", help="take the capture options of this preset (e.g. full)")
    c.add_argument(
        "--flight",
        action="store_true",
        help="also write each rank's flight recorder (flight_recorder_steps > 0)",
    )
    c.add_argument(
        "--from",
        dest="npu_config",
        metavar="FILE",
        help="a torch_npu dynamic-profiling profiler_config.json as the request",
    )
    c.add_argument(
        "--timeout", type=float, default=120.0, help="seconds to wait for the job (default 120)"
    )
    c.set_defaults(func=run)


def _choice_problem(args: argparse.Namespace) -> str | None:
    """One line for a ``--stage``, ``--level``, ``--role`` or ``--preset`` that is none of its
    values, with the closest one; None when each is one (a preset's other spelling is read as
    the preset, in ``args``)."""
    from mindspeed_prof.config.presets import PRESETS, canonical
    from mindspeed_prof.config.schema import ROLES
    from mindspeed_prof.config.validate import did_you_mean

    if args.preset is not None:
        args.preset = canonical(args.preset) or args.preset
    choices = {
        "stage": [s.value for s in Stage if s is not Stage.all],
        "level": [level.value for level in Level],
        "role": list(ROLES),
        "preset": [p for p in PRESETS if p != "none"],
    }
    for flag, allowed in choices.items():
        value = getattr(args, flag)
        if value is not None and value not in allowed:
            return (
                f"--{flag} {value}: no such {flag}{did_you_mean(value, allowed)}; "
                f"{flag}s: {', '.join(allowed)}"
            )
    return None


def _request(args: argparse.Namespace) -> Request:
    if args.npu_config:
        data = from_npu(read_json(args.npu_config, MAX_REQUEST_BYTES, follow=True), "")
        return Request.new(
            args.timeout, **{k: v for k, v in data.items() if k not in ("id", "created", "expires")}
        )
    ranks = None
    if args.ranks:
        try:
            ranks = sorted({int(r) for r in args.ranks.split(",") if r.strip()})
        except ValueError:
            raise ValueError(
                f"--ranks={args.ranks!r}: comma-separated integers, e.g. 0,3"
            ) from None
    steps = args.steps if args.steps is not None else (0 if args.flight else 2)
    return Request.new(
        args.timeout,
        steps=steps,
        ranks=ranks,
        role=args.role,
        stage=args.stage,
        level=args.level,
        preset=args.preset,
        flight=args.flight,
    )


def run(args: argparse.Namespace) -> int:
    target = None if args.target is None else str(args.target)
    address = (
        args.ray
        if args.ray is not None
        else (target if target and target.startswith("ray://") else None)
    )
    if (args.ray is None) == (target is None):  # neither, or both
        error("capture: give one of the job's save root, ray://ADDRESS or --ray [ADDRESS]")
        return Exit.USAGE
    if why := _choice_problem(args):
        error(f"capture: {why}")
        return Exit.USAGE
    try:
        request = _request(args)
    except (ValueError, OSError) as err:
        error(f"capture: {err}")
        return Exit.USAGE
    if address is not None:
        from mindspeed_prof.ray.board import Board

        try:
            carrier: Carrier = Board.reach(address, args.job)
        except NotRunning as err:
            error(f"capture: {err}")
            return Exit.NOT_RUNNING
    else:
        assert target is not None
        root = Path(target).expanduser()
        if root.exists() and not root.is_dir():
            error(f"capture: {root} is not a directory (give the save root)")
            return Exit.USAGE
        carrier = Folder(root)
    return follow(carrier, request, args.timeout)


@contextmanager
def _signals_stop() -> Iterator[None]:
    """SIGTERM and SIGHUP stop the command as Ctrl-C does (so the request is withdrawn),
    while inside; the handlers before are put back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    before = {signum: signal.signal(signum, stop) for signum in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)


def follow(carrier: Carrier, request: Request, timeout: float) -> int:
    """Ask where the workers are, post ``request`` to start on the same step on all of them,
    wait for them, report; the exit code. The request is withdrawn however the command ends
    (done, timed out, Ctrl-C, SIGTERM, SIGHUP): that is its expiry, decided on this command's
    clock alone."""
    with _signals_stop():
        try:
            carrier.open()
        except OSError as err:
            error(f"capture: {err}")
            return Exit.NOT_RUNNING
        try:
            why = carrier.absent(request)
            if why:
                error(f"capture: {why}")
                return Exit.NOT_RUNNING
            if request.steps and request.start_step is None:
                request = _synchronised(carrier, request)
            why = carrier.post(request)
            if why:
                error(f"capture: request {request.id} ignored: {why}")
                return Exit.NOT_RUNNING
            start = "" if request.start_step is None else f", from step {request.start_step}"
            say(
                f"request {request.id}{start}: waiting up to {timeout:g} s for the job "
                f"({carrier.where})",
                sys.stderr,
            )
            status = wait(carrier, request, timeout)
        except Gone as err:
            error(f"capture: {err}")
            return Exit.NOT_RUNNING
        finally:
            carrier.close(request)
    if status.ignored:
        error(f"capture: request {request.id} ignored: {status.ignored}")
        return Exit.NOT_RUNNING
    if not status.acks:
        error(f"capture: no job took request {request.id} within {timeout:g} s. {carrier.hint}")
        return Exit.NOT_RUNNING
    return report(request, status, timeout, carrier)


def _synchronised(carrier: Carrier, request: Request) -> Request:
    """``request`` with the start step every worker it is for will reach after it has been
    seen by all (or unchanged when none told its step within ``GRACE_S``)."""
    workers = wait_for_workers(carrier, request, GRACE_S)  # stamped with our clock
    start = start_step(workers, time.time())
    if start is None:
        say(
            f"no worker told its step within {GRACE_S:g} s: each rank starts at its next "
            "look (with steps longer than a second, the same step)",
            sys.stderr,
        )
        return request
    return request.starting_at(start)


def report(request: Request, status: Status, timeout: float, carrier: Carrier | None = None) -> int:
    """Where each worker's capture is, the ``analyse`` command (with what ``carrier`` says
    it needs to read them where they lie), and the exit code."""
    acks = status.acks
    written = [a for a in acks if a.status == "written"]
    for a in sorted(acks, key=lambda a: (a.rank, a.role)):
        detail = ", ".join(a.files) if a.files else a.message or "no files yet"
        where = f" on {a.host}" if a.host else ""
        say(f"rank {a.rank} ({a.role}){where}: {a.status}: {detail}")  # the job's words
        if a.status == "written" and a.message:
            say(f"rank {a.rank} ({a.role}): {a.message}")
    short = [a for a in written if a.message]  # written, but not what was asked for
    starts = sorted({a.start_step for a in written if a.start_step is not None})
    if len(starts) > 1:
        say(
            f"note: the ranks started at different steps ({', '.join(map(str, starts))}; "
            f"asked for {request.start_step}): a rank that saw the request late started "
            "where it was, so compare those steps with care"
        )
    if not written:
        error(f"capture: nothing written within {timeout:g} s (still capturing?)")
        return Exit.NOTHING
    if len(short) == len(written):
        error("capture: no rank recorded what the request asked for (see above)")
        return Exit.NOTHING
    folder = "triggered" if request.steps else "flight"
    option = carrier.analyse_option(written) if carrier is not None else ""
    for root in sorted({a.root for a in written if a.root}):
        say(f"analyse: mindspeed-prof analyse {quote(str(Path(root) / folder))}{option}")
    return Exit.OK if len(written) == len(acks) and not short else Exit.PARTIAL
