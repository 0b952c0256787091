"""The shared fold of every trace reader: events in, a capture's ``TraceData`` out.

``collect``: the ``Collector`` that takes Chrome trace events a batch at a time and keeps what
the analysis needs; ``batch``: a batch split into typed columns (and the events it skips);
``device``: the device side (kernels, copies, their launches, the device breakdown). The host
side is ``readers.host_ops``.
"""

from mindspeed_prof.analysis.readers.fold.collect import Collector, collect

__all__ = ["Collector", "collect"]
