"""``mindspeed-prof capture TARGET``: start a capture in a running job, wait until it is written."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from mindspeed_prof.capture.control import (
    ACKS,
    CONTROL,
    REQUESTS,
    Request,
    from_npu,
    read_acks,
    write_request,
)
from mindspeed_prof.capture.naming import host_name
from mindspeed_prof.config.schema import Level, Stage

__all__ = ["EXIT_NOT_RUNNING", "add_parser", "report", "run"]

EXIT_OK, EXIT_NOTHING_WRITTEN, EXIT_NOT_RUNNING, EXIT_PARTIAL = 0, 1, 2, 3
_DONE = ("written", "failed")
_SETTLE_S = 3.0  # without --ranks: wait this long after the last rank reported
DESCRIPTION = """\
Capture the next steps of a running job without a restart. The job takes the
request at a step start (it looks at most once a second), whatever its preset,
while on_demand is true. TARGET is the job's save root; or, for a Ray job, whose
driver called mindspeed_prof.ray.open_board(), ray://ADDRESS (Ray Client) or
--ray [ADDRESS] (the cluster's address; default: the one this machine runs):
the request then reaches every worker through Ray, no shared filesystem needed.

exit codes:
  0  every rank that took the request wrote its capture
  1  a rank took the request but wrote nothing before the timeout
  2  bad usage, a Ray cluster or job that cannot be reached, a request no
     worker matches, or no job took the request before the timeout
  3  some ranks wrote their capture, others failed
"""


def add_parser(sub: Any) -> None:
    """Register ``capture`` on the CLI's sub-parsers."""
    c = sub.add_parser("capture", help="capture the next steps of a running job, now",
                       description=DESCRIPTION,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("target", nargs="?",
                   help="the job's save root (profile_save_path), or ray://ADDRESS")
    c.add_argument("--ray", nargs="?", const="auto", metavar="ADDRESS",
                   help="reach a Ray job's workers through its cluster (default: auto)")
    c.add_argument("--job", metavar="ID",
                   help="with --ray: the Ray job to ask, where several have a capture board")
    c.add_argument("--steps", type=int,
                   help="steps to capture (default 2; 0 with --flight: the dump only)")
    c.add_argument("--ranks", help="comma-separated ranks, e.g. 0,3 (default: all)")
    c.add_argument("--role", help="only workers of this role (e.g. actor)")
    c.add_argument("--stage", metavar="NAME",
                   help="capture each execution of this stage instead of whole steps: "
                   + ", ".join(s.value for s in Stage if s is not Stage.all))
    c.add_argument("--level", metavar="LEVEL",
                   help="profile_level for this capture (default: the job's): "
                   + ", ".join(level.value for level in Level))
    c.add_argument("--preset", help="take the capture options of this preset (e.g. full)")
    c.add_argument("--flight", action="store_true",
                   help="also write each rank's flight recorder (flight_recorder_steps > 0)")
    c.add_argument("--from", dest="npu_config", metavar="FILE",
                   help="a torch_npu dynamic-profiling profiler_config.json as the request")
    c.add_argument("--timeout", type=float, default=120.0,
                   help="seconds to wait for the job (default 120)")
    c.set_defaults(func=run)


def _request(args: argparse.Namespace) -> Request:
    if args.npu_config:
        data = from_npu(json.loads(Path(args.npu_config).read_text()), "")
        return Request.new(args.timeout, **{k: v for k, v in data.items()
                                            if k not in ("id", "created", "expires")})
    ranks = None
    if args.ranks:
        try:
            ranks = sorted({int(r) for r in args.ranks.split(",") if r.strip()})
        except ValueError:
            raise ValueError(f"--ranks={args.ranks!r}: comma-separated integers, "
                             "e.g. 0,3") from None
    steps = args.steps if args.steps is not None else (0 if args.flight else 2)
    return Request.new(args.timeout, steps=steps, ranks=ranks, role=args.role,
                       stage=args.stage, level=args.level, preset=args.preset,
                       flight=args.flight)


def run(args: argparse.Namespace) -> int:
    target = None if args.target is None else str(args.target)
    address = args.ray if args.ray is not None else (
        target if target and target.startswith("ray://") else None)
    if (args.ray is None) == (target is None):  # neither, or both
        print("mindspeed-prof: capture: give one of the job's save root, ray://ADDRESS or "
              "--ray [ADDRESS]", file=sys.stderr)
        return EXIT_NOT_RUNNING
    try:
        request = _request(args)
    except (ValueError, OSError) as err:
        print(f"mindspeed-prof: capture: {err}", file=sys.stderr)
        return EXIT_NOT_RUNNING
    if address is not None:
        from mindspeed_prof.cli.capture_ray import capture_through_ray

        return capture_through_ray(address, args.job, request, args.timeout)
    assert target is not None
    root = Path(target).expanduser()
    if root.exists() and not root.is_dir():
        print(f"mindspeed-prof: capture: {root} is not a directory (give the save root)",
              file=sys.stderr)
        return EXIT_NOT_RUNNING
    path = write_request(root, request)
    print(f"request {request.id}: waiting up to {args.timeout:g} s for the job (it looks at "
          f"{root / CONTROL / REQUESTS} at most once a second, at a step start)",
          file=sys.stderr)
    try:
        acks = _wait(root, request, args.timeout)
    finally:
        path.unlink(missing_ok=True)  # a job started later must not take a stale request
    if not acks:
        print(f"mindspeed-prof: capture: no job took request {request.id} within "
              f"{args.timeout:g} s. Is a job saving to {root} running, with on_demand: true, "
              "calling the step hooks?", file=sys.stderr)
        return EXIT_NOT_RUNNING
    acks = [{**a, "root": str(root)} for a in acks]  # the save root as this machine sees it
    return report(request, acks, args.timeout, f"see {root / CONTROL / ACKS}")


def _wait(root: Path, request: Request, timeout: float) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    last_change, seen = time.monotonic(), ""
    while True:
        acks = read_acks(root, request.id)
        state = json.dumps([(a["rank"], a["status"]) for a in acks])
        if state != seen:
            seen, last_change = state, time.monotonic()
        done = [a for a in acks if a["status"] in _DONE]
        if acks and len(done) == len(acks):
            if request.ranks is not None and {a["rank"] for a in done} >= set(request.ranks):
                return acks
            if request.ranks is None and time.monotonic() - last_change >= _SETTLE_S:
                return acks
        if time.monotonic() >= deadline:
            return acks
        time.sleep(0.25)


def report(request: Request, acks: list[dict[str, Any]], timeout: float, more: str,
           ray: str | None = None) -> int:
    """Where each rank's capture is, the ``analyse`` command, and the exit code.

    With ``ray`` (the cluster's address), captures on several nodes, or on a node that is
    not this machine, are analysed where they lie: ``analyse FOLDER --ray ADDRESS``.
    """
    written = [a for a in acks if a["status"] == "written"]
    for a in sorted(acks, key=lambda a: (a["rank"], a["role"])):
        detail = ", ".join(a["files"]) if a["files"] else a.get("message") or "no files yet"
        where = f" on {a['host']}" if a.get("host") else ""
        print(f"rank {a['rank']} ({a['role']}){where}: {a['status']}: {detail}")
    if not written:
        print(f"mindspeed-prof: capture: nothing written within {timeout:g} s (still "
              f"capturing? {more})", file=sys.stderr)
        return EXIT_NOTHING_WRITTEN
    folder = "triggered" if request.steps else "flight"
    remote = ray is not None and (len({a.get("node") for a in written}) > 1 or any(
        a.get("host") not in (None, host_name()) for a in written))
    option = "" if not remote else " --ray" if ray == "auto" else f" --ray {ray}"
    for root in sorted({str(a["root"]) for a in written if a.get("root")}):
        print(f"analyse: mindspeed-prof analyse {Path(root) / folder}{option}")
    return EXIT_OK if len(written) == len(acks) else EXIT_PARTIAL
