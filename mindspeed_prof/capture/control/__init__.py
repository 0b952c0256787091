"""On-demand capture requests: what a request is (``request``), the one carrier abstraction, its
two sides and the one wait loop (``channel``), and the carrier through a folder under the save
root (``folder``). A layer above adds its own carrier's worker side (``capture.plugins``:
``mindspeed_prof.ray``'s board).
"""

from __future__ import annotations

from mindspeed_prof.capture.control.channel import (
    Carrier,
    Channel,
    Gone,
    NotRunning,
    RequestSource,
    Status,
    Worker,
    start_step,
    wait,
    wait_for_workers,
)
from mindspeed_prof.capture.control.folder import (
    ACKS,
    CONTROL,
    REQUESTS,
    Folder,
    read_acks,
    write_request,
)
from mindspeed_prof.capture.control.request import Ack, Request, from_npu

__all__ = [
    "ACKS",
    "CONTROL",
    "REQUESTS",
    "Ack",
    "Carrier",
    "Channel",
    "Folder",
    "Gone",
    "NotRunning",
    "Request",
    "RequestSource",
    "Status",
    "Worker",
    "from_npu",
    "read_acks",
    "start_step",
    "wait",
    "wait_for_workers",
    "write_request",
]
