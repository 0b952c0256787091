"""Findings rules: CUDA device time, the questions HTA (Holistic Trace Analysis) asks of a
Kineto trace, answered per rank and step from what the readers keep.

- ``idle_time``: the GPU idles a share of the step; its busiest stream's idle time split as
  HTA's ``get_idle_time_breakdown`` splits it (host wait, kernel wait, other);
- ``launch_overhead``: many kernels shorter than their launch call (HTA's
  ``get_cuda_kernel_launch_stats``): the host spends longer launching them than the GPU runs
  them;
- ``exposed_comm``: communication kernels (NCCL, DeepEP, NVSHMEM... by ``readers.classify``)
  not overlapped with compute, a share of the step.

Each fires where its time per step is over the noise floor (``judgement.noise.noise_floor``: the
``--noise-ms`` floor or 1% of the step) and ``FIRE_SHARE`` of the step, on average and in
nearly every step (``ranks.consistent``: one step in four let off, as a rank's lag is judged:
a one-off host stall is not a host-bound device); severity grows with the share
(``severity``). They read the captures the device verdict reads (``device_scope``):
warmup steps are left out unless ``include_warmup``; where no capture has steps, each capture
is one whole, its own unit, named by its file; captures without steps beside captures with
steps are left out (the verdict names them), never averaged with steps. One module per rule
(``idle``, ``launch``, ``comm``); ``ranks`` what they all read.
"""

from __future__ import annotations

from mindspeed_prof.analysis.findings.cuda.comm import exposed_comm
from mindspeed_prof.analysis.findings.cuda.idle import idle_time
from mindspeed_prof.analysis.findings.cuda.launch import launch_overhead
from mindspeed_prof.analysis.findings.cuda.ranks import FIRE_SHARE
from mindspeed_prof.analysis.findings.finding import Rule

__all__ = ["FIRE_SHARE", "RULES", "exposed_comm", "idle_time", "launch_overhead"]

#: This family's rules, in the order they run.
RULES: list[Rule] = [idle_time, launch_overhead, exposed_comm]
