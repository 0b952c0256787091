"""Run ids: which job instance (run) a capture or manifest belongs to.

A run id is made once per job and shared by every rank of it (``capture.run`` says how they
agree). Made here it reads ``20261130-100000-3f9a2c``: the start in UTC, to the second, then 24
random bits, so ids sort by start time and two jobs started in the same second differ. An id
given from outside (``MINDSPEED_PROF_RUN``, a launcher's job id) may be any short safe name;
its start is then unknown from the id alone (the manifest records it).
"""

from __future__ import annotations

import os
import re
import time
from datetime import datetime, timezone

__all__ = ["RUN_ENV", "new_run_id", "run_started", "valid_run_id"]

#: The environment variable that hands a run id to a job's processes (set it in a launcher to
#: make every rank use one id; a process that makes an id exports it here for its children).
RUN_ENV = "MINDSPEED_PROF_RUN"

_MADE = re.compile(r"^(\d{8}-\d{6})-[0-9a-f]{6}$")
_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def new_run_id(now: float | None = None, token: str | None = None) -> str:
    """A fresh id: ``YYYYmmdd-HHMMSS`` (UTC) of ``now``, then ``token`` (6 hex digits, random
    when None)."""
    stamp = time.gmtime(time.time() if now is None else now)
    return f"{time.strftime('%Y%m%d-%H%M%S', stamp)}-{token or os.urandom(3).hex()}"


def valid_run_id(text: object) -> bool:
    """Whether ``text`` can name a run: 1-64 of letters, digits, ``_ . -``, not starting with a
    dot or dash (it goes into file names)."""
    return isinstance(text, str) and bool(_SAFE.fullmatch(text))  # "$" matches before a "\n"


def run_started(run_id: str) -> float | None:
    """The start (epoch seconds) an id made by ``new_run_id`` holds; None for other ids."""
    m = _MADE.match(run_id)
    if not m:
        return None
    day, clock = m.group(1).split("-")  # by hand: ``strptime`` imports its own module
    y, mo, d, h, mi, s = map(int, (day[:4], day[4:6], day[6:], clock[:2], clock[2:4], clock[4:]))
    try:
        return datetime(y, mo, d, h, mi, s, tzinfo=timezone.utc).timestamp()
    except ValueError:
        return None
