"""A device's peak dense BF16 tensor TFLOPS from the name a trace records (Kineto's
``deviceProperties``), for MFU where neither the config nor a flag gives the peak.

Figures are the vendors' datasheet peaks for dense (not sparse) BF16 on the SXM/OAM part
unless the name says PCIe; a name not in the table gives None (MFU then needs the peak given).
"""

from __future__ import annotations

import re

__all__ = ["PEAKS", "device_name", "peak_tflops"]

#: (pattern on the device's name, dense BF16 TFLOPS), first match wins: the more specific
#: names (GB200 before B200, H100 PCIe before H100, L40S before L40) come first.
PEAKS: tuple[tuple[str, float], ...] = (
    (r"\bGB200\b", 2500.0),
    (r"\bB200\b", 2250.0),
    (r"\bB100\b", 1750.0),
    (r"\bH(?:100|800)\b.*\bPCIe\b", 756.0),
    (r"\bH(?:100|200|800)\b", 989.0),
    (r"\bH20\b", 148.0),
    (r"\bA(?:100|800)\b", 312.0),
    (r"\bA10\b", 125.0),
    (r"\bL40S\b", 362.0),
    (r"\bL40\b", 181.0),
    (r"\bL20\b", 119.5),
    (r"\bMI300X\b", 1307.0),
    (r"\bMI250X?\b", 383.0),
)
_COMPILED = tuple((re.compile(p, re.IGNORECASE), v) for p, v in PEAKS)


def device_name(properties: object) -> str | None:
    """The name every device in Kineto's ``deviceProperties`` shares (None: none listed,
    they differ, or it is not a list of objects with names)."""
    listed = properties if isinstance(properties, list) else []
    names = {
        str(n).strip()
        for p in listed
        if isinstance(p, dict)
        if isinstance(n := p.get("name"), str) and n.strip()
    }
    return names.pop()[:200] if len(names) == 1 else None


def peak_tflops(name: str) -> float | None:
    """The dense BF16 peak of the device called ``name``, or None when not in ``PEAKS``."""
    for pattern, value in _COMPILED:
        if pattern.search(name):
            return value
    return None
