"""The demo's workers as plain child processes, for when Ray cannot start: each rank in a
process of its own, as with Ray (one profiler per process, the ranks' steps at once), called
the way the driver calls Ray actors (``call`` all, then ``result`` of each)."""

from __future__ import annotations

import multiprocessing
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

    from mindspeed_prof.demo.knobs import DemoConfig

__all__ = ["ProcessWorker"]


class ProcessWorker:
    """``IntegratedWorker(rank, demo, profiler_config)`` in a child process (spawned: a fresh
    interpreter, as a Ray worker is), ended by ``close`` or with this process."""

    def __init__(self, rank: int, demo: DemoConfig, profiler_config: Mapping[str, object]) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._conn, theirs = ctx.Pipe()
        self._proc = ctx.Process(
            target=_serve, args=(theirs, rank, demo, dict(profiler_config)), daemon=True
        )
        self._proc.start()
        theirs.close()

    def call(self, method: str, *args: object) -> None:
        """Ask for ``method(*args)``; ``result`` gives its answer."""
        self._conn.send((method, args))

    def result(self) -> Any:
        """The answer to the last ``call``; what the worker raised, raised here."""
        try:
            ok, value = self._conn.recv()
        except EOFError:
            raise RuntimeError(f"demo worker process {self._proc.pid} ended") from None
        if not ok:
            raise value
        return value

    def close(self) -> None:
        try:
            self._conn.send(None)
        except OSError:
            pass
        self._proc.join(timeout=30)
        if self._proc.is_alive():
            self._proc.terminate()


def _serve(
    conn: Connection, rank: int, demo: DemoConfig, profiler_config: dict[str, object]
) -> None:
    from mindspeed_prof.demo.worker import IntegratedWorker

    worker = IntegratedWorker(rank, demo, profiler_config)
    while (asked := conn.recv()) is not None:
        method, args = asked
        try:
            conn.send((True, getattr(worker, method)(*args)))
        except Exception as err:  # noqa: BLE001 - the driver raises it
            conn.send((False, err))
