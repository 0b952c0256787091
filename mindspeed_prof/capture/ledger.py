"""``Ledger``: the bytes this job's ranks wrote under a save root, for the disk budget, known
without walking the root.

Each process adds the size of every capture it wrote, as it writes it (``add``: exact, no
scan). The ranks of one job that share a save root (every rank of a host) tell each other
through ``<save>/.budget/<run>/``: one small file per process holding its total. A thread of
its own writes this process's total and reads the others' at most once every ``interval_s``
(longer where the folder is slow: ten times what the last look took), so the training thread
only ever adds two integers. Files that other jobs, earlier runs or datasets keep in the root are
never looked at and never count.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path

__all__ = ["FOLDER", "Ledger"]

log = logging.getLogger("mindspeed_prof")

#: Where the job's ranks write their totals, under the save root (hidden: readers skip it).
FOLDER = ".budget"


class Ledger:
    """This process's bytes (``mine``) and the other ranks' of its job (``others``, as last
    read); ``used``: both. Reads and writes of the shared folder run on a thread of its own,
    started by ``share`` once the job's run id is known."""

    def __init__(self, root: Path, name: str, interval_s: float = 2.0) -> None:
        self.root, self.name, self.interval_s = root, name, interval_s
        self.mine = 0
        self.others = 0
        self.looks = 0  # times the folder was looked at (read back by the tests)
        self._folder: Path | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._published = -1
        self._pid = os.getpid()
        self._warned = False

    @property
    def used(self) -> int:
        return self.mine + self.others

    def add(self, nbytes: int) -> None:
        """This process wrote ``nbytes`` more under the root."""
        self.mine += max(0, nbytes)

    def share(self, run: str) -> None:
        """Tell and hear the job's other ranks (run ``run``) from now on: the thread starts."""
        if self._thread is not None or os.getpid() != self._pid:
            return
        self._folder = self.root / FOLDER / run
        self._thread = threading.Thread(target=self._loop, name="mindspeed-prof-ledger")
        self._thread.daemon = True
        self._thread.start()

    def close(self) -> None:
        """The thread told to end after its last write (not waited for: the folder may stall)."""
        self._stop.set()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the thread's last write (after ``close``)."""
        if self._thread is not None:
            self._thread.join(timeout)

    def _loop(self) -> None:
        wait = 0.0
        while not self._stop.wait(wait):
            began = time.monotonic()
            self.look()
            wait = max(self.interval_s, 10 * (time.monotonic() - began))
        self.look()  # the final total, for ranks still running

    def look(self) -> None:
        """Write this process's total where it changed; read the others'. A folder that
        cannot be written or read leaves the figures as they were (one warning)."""
        folder = self._folder
        if folder is None or os.getpid() != self._pid:
            return
        self.looks += 1
        try:
            mine = self.mine
            if mine != self._published:
                folder.mkdir(parents=True, exist_ok=True)
                part = folder / f".{self.name}.part"
                part.write_text(str(mine))
                os.replace(part, folder / self.name)
                self._published = mine
            others = 0
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.name != self.name and not entry.name.startswith("."):
                        others += _read_int(Path(entry.path))
            self.others = others
        except OSError as err:
            if not self._warned:
                self._warned = True
                log.warning("mindspeed-prof: disk budget: %s: %s", folder, err)


def _read_int(path: Path) -> int:
    try:
        text = path.read_text()[:32]
    except (OSError, UnicodeDecodeError):
        return 0
    return int(text) if text.isdigit() else 0
