"""``mindspeed-prof doctor``: a health check of a run's captures before anyone opens a trace.

``check`` runs it (``doctor``): ``files`` (our own files, cheaply, before any reader), then
``readable`` (every capture as ``analyse`` reads it), ``ranks`` (what the run's records expect)
and ``killed`` (a job stopped or spread from outside); ``health`` is what they find.
"""

from __future__ import annotations

from mindspeed_prof.analysis.doctor.check import doctor
from mindspeed_prof.analysis.doctor.health import Health, Problem

__all__ = ["Health", "Problem", "doctor"]
