"""``mindspeed-prof timeline``: every capture under a root merged into one Chrome trace.

One process track per (host, role, rank), named ``rank 3 · actor · host-a`` and sorted by role
then rank; inside it one thread track each for steps, stages and custom ranges, and with
``--detail`` one per original thread for operators and kernels. Every capture records a
(wall-clock, trace-clock) pair at its start (``clock`` in a range file's metadata, Kineto's
``baseTimeNanoseconds`` in a torch trace; torch_npu writes wall-clock times); events are put on
that one wall-clock axis, shown relative to the earliest event. A capture without such a record
is aligned on step starts instead, and its track says so.

Modules, in the order a timeline is made: ``tracks`` (the captures on their tracks),
``clock`` (one wall-clock axis), ``window`` (``--steps``, ``--detail``), ``budget`` (the size
plan), ``emit`` and ``detail`` (the events), ``event``, ``nest``, ``writer`` and ``perfetto``
(written out); ``build`` puts them together (``write_timeline``).
"""

from __future__ import annotations

from mindspeed_prof.analysis.timeline.build import Timeline, write_timeline

__all__ = ["Timeline", "write_timeline"]
