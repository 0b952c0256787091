"""Terminal output: rich tables for analyses, sweeps, comparisons and presets, at 80 columns.

A table whose natural width exceeds the terminal switches to a narrower layout (short stage codes
with a legend, or ranks as rows) rather than letting rich cut its headers; headers never shrink
below their own width, values wrap instead. One module per view: ``analyse`` (with ``stages``
and ``details``), ``compare``, ``sweep`` (and presets); ``cells`` is what they share.
"""

from __future__ import annotations

from mindspeed_prof.views.tables import STAGE_CODES
from mindspeed_prof.views.text.analyse import headline, print_analysis
from mindspeed_prof.views.text.cells import count
from mindspeed_prof.views.text.compare import print_compare, print_compare_details
from mindspeed_prof.views.text.details import (
    print_details,
    print_device,
    print_memory,
    print_ranges,
    print_top_lists,
)
from mindspeed_prof.views.text.stages import print_stage_rank
from mindspeed_prof.views.text.sweep import print_presets, print_sweep
from mindspeed_prof.views.words import no_device_text

__all__ = [
    "STAGE_CODES",
    "count",
    "headline",
    "no_device_text",
    "print_analysis",
    "print_compare",
    "print_compare_details",
    "print_details",
    "print_device",
    "print_memory",
    "print_presets",
    "print_ranges",
    "print_stage_rank",
    "print_sweep",
    "print_top_lists",
]
