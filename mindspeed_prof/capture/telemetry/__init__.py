"""Live per-rank telemetry: every step's stage, custom-range and counter figures, kept on each
rank at the cost of the clock reads the profiler already takes, and sent where people look
(``prof.metrics()``, Ray's metrics, TensorBoard); ``across_ranks`` turns the ranks' figures into
max, median and the slowest rank per figure."""

from mindspeed_prof.capture.telemetry.part import TelemetryPart
from mindspeed_prof.capture.telemetry.spread import across_ranks
from mindspeed_prof.capture.telemetry.totals import StepRecord, StepTotals

__all__ = ["StepRecord", "StepTotals", "TelemetryPart", "across_ranks"]
