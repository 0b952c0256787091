"""``Settings``: the one way the user's choices reach an analysis (``analyse``/``compare``
options and the CLI's defaults)."""

from __future__ import annotations

import msgspec

from mindspeed_prof.analysis.judgement.noise import DEFAULT_NOISE_MS

__all__ = ["DEFAULT_MARGIN", "TOP_JSON", "TOP_MOST", "Settings"]

#: A rank is a straggler when its stage time exceeds the other ranks' by this fraction (every
#: row's columns are documented with its type in ``analysis.rows``).
DEFAULT_MARGIN = 0.2
#: The longest top list any view shows (the report's); shorter lists are its first rows.
TOP_MOST = 25
#: The top lists' length in ``--json`` and for the findings.
TOP_JSON = 15


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    """What the user chose for an analysis; each default is the CLI's."""

    #: A rank is a straggler when it exceeds the median of the other ranks by this fraction.
    margin: float = DEFAULT_MARGIN
    #: A difference between ranks under this many ms (or 1% of the step) is noise.
    noise_ms: float = DEFAULT_NOISE_MS
    #: Count warmup steps in stragglers and compare (they are left out by default).
    include_warmup: bool = False
    #: The user's model facts for MFU (``--flops-per-token``, ``--peak-tflops``): over the
    #: captures' headers (``counts.model_facts``).
    flops_per_token: float | None = None
    peak_tflops: float | None = None
    #: Rows of each top list the terminal shows (``--top``); the report's lists hold at least
    #: ``TOP_MOST``.
    top: int = 10
