"""After the captures (verl's finish hook and ``relocate_results``): each capture's files moved
flat into the save root as they are written, and one shell command run once on the chosen ranks
when the profiler closes (to ship the captures off the node). A failing command is one warning;
training is never held by it beyond its own run."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from mindspeed_prof.capture.naming import inside
from mindspeed_prof.capture.part import Host, Part
from mindspeed_prof.capture.record import CaptureRecord

__all__ = ["FinishPart", "hook_env", "runs_hook"]


def runs_hook(ranks: object, rank: int, captured: bool) -> bool:
    """Whether this rank runs the finish hook: ``ranks`` None (the ranks that captured),
    ``all``, or a list."""
    if ranks is None:
        return captured
    return ranks == "all" or (isinstance(ranks, list) and rank in ranks)


def hook_env(host: Host, backend: str) -> dict[str, str]:
    """What the command is told, in verl's names (its commands run unchanged)."""
    return {
        "VERL_PROFILE_SAVE_PATH": str(host.save_root),
        "VERL_PROFILE_TOOL": backend,
        "VERL_PROFILE_RANK": str(host.rank),
        "VERL_PROFILE_PID": str(os.getpid()),
        "VERL_PROFILE_ROLE": host.role,
    }


class FinishPart(Part):
    """``relocate_results``: captures moved flat into the save root; ``finish_hook_cmd``: run
    at close on the ranks ``finish_hook_ranks`` names."""

    live = False

    def __init__(self, host: Host) -> None:
        self.host = host
        self.ran: subprocess.CompletedProcess[str] | None = None

    def on_capture(self, record: CaptureRecord, error: str) -> None:
        if error or not self.host.cfg.relocate_results:
            return
        root, moved = self.host.save_root, []
        for name in record.files:
            path = Path(name)
            target = inside(root, path.name)
            if path.parent.resolve() == root.resolve() or target.exists():
                moved.append(name)  # already flat, or a name taken: left where it is
                continue
            try:
                path.rename(target)
                moved.append(str(target))
            except OSError as err:
                moved.append(name)
                self.host.warn_once(
                    f"relocate:{type(err).__name__}",
                    f"mindspeed-prof: relocate_results: {path} stays where it is ({err})",
                )
        record.files = moved

    def on_close(self) -> None:
        host, cmd = self.host, self.host.cfg.finish_hook_cmd
        if not cmd or not runs_hook(host.cfg.finish_hook_ranks, host.rank, bool(host.captures)):
            return
        backend = host.captures[-1].backend if host.captures else host.cfg.backend.value
        try:
            self.ran = subprocess.run(
                cmd,
                shell=True,  # the user's own command line, as verl runs it
                env={**os.environ, **hook_env(host, backend)},
                capture_output=True,
                text=True,
            )
            failed = f"exit code {self.ran.returncode}" if self.ran.returncode else ""
            detail = (self.ran.stderr or "").strip().splitlines()[-1:]
        except Exception as err:
            failed, detail = f"{type(err).__name__}: {err}", []
        if failed:
            host.warn_once(
                "finish_hook",
                f"mindspeed-prof: finish_hook_cmd failed on rank {host.rank} ({failed})"
                + (f": {detail[0]}" if detail else "")
                + "; the captures are where they were written",
            )
