"""On-demand capture requests: what a request is (``request``), the two sides and the one wait
loop (``channel``), and the two carriers: a folder under the save root (``folder``) and a Ray
job's board (``board``; Ray is imported only there, and only when used).
"""

from __future__ import annotations

from mindspeed_prof.capture.control.channel import (
    Channel,
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
    FolderChannel,
    FolderSource,
    read_acks,
    write_request,
)
from mindspeed_prof.capture.control.request import Ack, Request, from_npu

__all__ = [
    "ACKS",
    "CONTROL",
    "REQUESTS",
    "Ack",
    "Channel",
    "FolderChannel",
    "FolderSource",
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
