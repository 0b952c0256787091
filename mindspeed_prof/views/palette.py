"""One colour per stage in every chart of the HTML report (stacked steps, heat map rows, Gantt).

MindSpeed-RL's stages (``config.schema.STAGES``, in the order a step runs them) always take the
same colours (Okabe-Ito, colour-blind safe), and so do the transitions between generation and
training (``TRANSITIONS``: darker, duller tones of their own). Any other stage name (a
trainer's own stages, ``record_function`` ranges) takes the colour its name hashes to in a
second palette (Paul Tol's muted; crc32, so the same in every run and process). Where names of
one report hash alike, the names, in sorted order, each take the next colour still free; beyond
the palette's size colours repeat.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

from mindspeed_prof.config.schema import STAGE_ORDER

__all__ = [
    "DEVICE_COLOURS",
    "EXTRA",
    "OTHER",
    "STAGE_PALETTE",
    "TRANSITION_PALETTE",
    "stage_colours",
    "stage_order",
]

#: MindSpeed-RL's stages, in ``STAGES`` order (Okabe-Ito without black and yellow).
STAGE_PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00")
#: The transitions, in ``TRANSITIONS`` order (none of them in the other palettes).
TRANSITION_PALETTE = ("#8C564B", "#5D6D7E", "#A6761D", "#1B9E77", "#6A3D9A", "#B15928")
#: Every fixed colour, by stage name.
_FIXED = dict(zip(STAGE_ORDER, (*STAGE_PALETTE, *TRANSITION_PALETTE)))
#: Every other stage name (Paul Tol's muted scheme, none of it in ``STAGE_PALETTE``).
EXTRA = (
    "#332288",
    "#88CCEE",
    "#44AA99",
    "#117733",
    "#999933",
    "#DDCC77",
    "#CC6677",
    "#882255",
    "#AA4499",
)
#: The grey of an unknown part.
OTHER = "#999999"
#: The parts of a step on the device, the same in every chart that splits device time.
DEVICE_COLOURS = {
    "compute only": "#4B5D9C",
    "comm during compute": "#B8860B",
    "comm only": "#C0392B",
    "copy only": "#7CAE3A",
    "idle": "#CFCFCF",
}


def stage_order(names: Iterable[str]) -> list[str]:
    """``names`` once each: MindSpeed-RL's stages in the order a step runs them, the
    transitions, then the rest sorted."""
    unique = set(names)
    return [s for s in STAGE_ORDER if s in unique] + sorted(unique.difference(STAGE_ORDER))


def _slot(name: str) -> int:
    return zlib.crc32(name.encode("utf-8", "replace")) % len(EXTRA)


def stage_colours(names: Iterable[str]) -> dict[str, str]:
    """A colour for each of ``names`` (see the module's docstring), in ``stage_order``."""
    out: dict[str, str] = {}
    taken: set[int] = set()
    for name in stage_order(names):
        fixed = _FIXED.get(name)
        if fixed is not None:
            out[name] = fixed
            continue
        slot = _slot(name)
        if len(taken) < len(EXTRA):
            while slot in taken:
                slot = (slot + 1) % len(EXTRA)
        taken.add(slot)
        out[name] = EXTRA[slot]
    return out
