"""Names from captures shown to people: control characters and bidirectional overrides escaped.

A trace's op, range or file name is whatever the file says: an ESC would drive the terminal, a
NUL or a right-to-left override would hide or reorder what a person reads. Every view prints
such text through ``printable``.
"""

from __future__ import annotations

import re

__all__ = ["printable"]

#: C0 and C1 controls (tab and newline included: a name is one line), DEL, and the bidirectional
#: embeddings, overrides and isolates.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every control or direction-changing character written as an escape."""
    return _UNSAFE.sub(_escape, text)
