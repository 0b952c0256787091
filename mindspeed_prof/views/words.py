"""The sentences the text and HTML views share: what they say in words where the analysis gives
typed values (one place, so the two views say the same)."""

from __future__ import annotations

from mindspeed_prof.analysis.readers.events import UNREAD_DEVICE

__all__ = ["no_device_text"]


def no_device_text(unread: dict[str, int]) -> str:
    """Why there is no device table: CPU-only captures, or device events not read as time."""
    if not unread:
        return ("No device data: these are CPU-only captures (no kernels, copies or "
                "collectives were recorded).")
    what = ", ".join(f"{n:,} {UNREAD_DEVICE.get(cat, cat)} ({cat})"
                     for cat, n in sorted(unread.items()))
    return (f"No device breakdown: these captures hold {what}, which are not read as device "
            "time (kernels, copies and collectives of CUDA, ROCm and Ascend are).")
