"""``backend: none`` (span recorder only) passes the conformance suite."""

from __future__ import annotations

from mindspeed_prof.capture.backends.null import SpansOnlyBackend
from mindspeed_prof.testing.backend_suite import BackendConformance


class TestSpansOnlyBackend(BackendConformance):
    backend_cls = SpansOnlyBackend
