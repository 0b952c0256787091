"""How this Hydra app was launched, for the job's manifest: the words to run it again (without
its overrides), so that ``analyse`` prints a relaunch line people paste as it is.

Python keeps the command line it was given (``sys.orig_argv``: interpreter, its options, the
script or ``-m module``); Hydra's arguments are ``sys.argv[1:]`` (an app may rename
``sys.argv[0]``, as ``mindspeed-prof demo`` does, but keeps the rest). Of Hydra's arguments,
the flags that pick the config are kept; overrides are not (the manifest holds the job's own,
one value per key even in a sweep), nor ``-m`` (a relaunch is one job).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hydra.conf import HydraConf

__all__ = ["command", "launch_info"]

#: Hydra's flags that choose the config (``dest`` in its argument parser -> the flag written).
_CONFIG_FLAGS = {
    "config_path": "--config-path",
    "config_name": "--config-name",
    "config_dir": "--config-dir",
}


def command(
    orig_argv: list[str],
    argv: list[str],
    which: Callable[[str], str | None] = shutil.which,
    shebang: Callable[[str], str | None] | None = None,
) -> list[str]:
    """The words that start the app again: ``orig_argv`` without Hydra's ``argv[1:]``, plus
    the config flags among those. A script the kernel ran through the interpreter its first
    line names (an installed ``mindspeed-prof``: Python sees ``/venv/bin/python
    /venv/bin/mindspeed-prof demo``) reads as it was typed: its name where the shell finds
    that same file, else its path."""
    hydra_args = argv[1:]
    cut = len(orig_argv) - len(hydra_args)
    if cut < 1 or orig_argv[cut:] != hydra_args:  # not the shape Python gives: only argv
        return []
    words = list(orig_argv[:cut])
    if len(words) >= 2 and (shebang or _shebang)(words[1]) == words[0]:
        name = os.path.basename(words[1])
        found = which(name)
        words = [name if found and _same(found, words[1]) else words[1], *words[2:]]
    return words + _config_flags(hydra_args)


def _shebang(path: str) -> str | None:
    """The interpreter a script's ``#!`` line names (None: no such line, or not a file)."""
    try:
        with open(path, "rb") as f:
            first = f.read(512).split(b"\n", 1)[0]
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode(errors="replace").split()
    return words[0] if words else None


def _same(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return a == b


def _config_flags(hydra_args: list[str]) -> list[str]:
    from hydra._internal.utils import get_args_parser

    try:
        parsed, _ = get_args_parser().parse_known_args(hydra_args)
    except SystemExit:  # Hydra parsed these already: only a changed argv gets here
        return []
    return [
        f"{flag}={getattr(parsed, dest)}"
        for dest, flag in _CONFIG_FLAGS.items()
        if getattr(parsed, dest, None) is not None
    ]


def launch_info(hydra_cfg: HydraConf, words: list[str] | None = None) -> dict[str, object]:
    """The manifest's ``job`` fields for a relaunch: ``command`` (the words above, with the
    job's own ``hydra.*`` overrides but Hydra's run mode) and ``cwd`` (the launch dir).

    ``words``: the command as the process that launched the job saw it (a launcher may run
    the job in a worker process with a command line of its own)."""
    base = words if words is not None else command(list(sys.orig_argv), list(sys.argv))
    own = [o for o in hydra_cfg.overrides.hydra if not str(o).startswith("hydra.mode=")]
    return {"command": [*base, *map(str, own)] if base else [], "cwd": str(hydra_cfg.runtime.cwd)}
