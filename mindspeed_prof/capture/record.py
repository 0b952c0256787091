"""``CaptureRecord``: what one capture wrote; its one typed form lives in ``formats.record``."""

from __future__ import annotations

from mindspeed_prof.formats.record import CaptureRecord

__all__ = ["CaptureRecord"]
