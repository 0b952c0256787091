"""Starting the tests' one Ray cluster: a bounded number of tries, then one line saying why not."""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["PAUSE_S", "TRIES", "start"]

#: Tries before giving up; a loaded machine starts a raylet slowly, rarely not at all.
TRIES = 3
#: The pause after the first failed try, doubled after the second, and so on.
PAUSE_S = 5.0


def start(
    init: Callable[[], object],
    shutdown: Callable[[], object],
    tries: int = TRIES,
    pause_s: float | None = None,
    sleep: Callable[[float], object] = time.sleep,
) -> str:
    """Call ``init`` until it returns, at most ``tries`` times, ``shutdown`` (clearing what
    a failed start left) and a pause between tries. Returns "" once started, else one line:
    how many tries and the last error's first line."""
    last = ""
    for attempt in range(1, tries + 1):
        try:
            init()
            return ""
        except Exception as err:  # noqa: BLE001 - any failure to start is retried, then said
            text = next((line.strip() for line in str(err).splitlines() if line.strip()), "")
            last = f"{type(err).__name__}: {text}"[:300]
        try:
            shutdown()
        except Exception:  # noqa: BLE001, S110 - nothing left to clear
            pass
        if attempt < tries:
            sleep((PAUSE_S if pause_s is None else pause_s) * 2 ** (attempt - 1))
    return f"no Ray cluster after {tries} tries ({last})"
