"""Text from files shown to people: every control, format and separator character escaped.

A trace's op, range or host name, a file's name, a manifest's override is whatever the file or
the disk says: an ESC would drive the terminal, a NUL, a right-to-left override or a line
separator would hide, reorder or split what a person reads, and a file name that is not UTF-8
(Python holds its bytes as lone surrogates) cannot even be written to a UTF-8 terminal. Every
view and command prints such text through ``printable`` (``cell`` for rich markup, ``say`` for a
plain line): the one way text from outside reaches a screen or a report.
"""

from __future__ import annotations

import re
import sys
from typing import TextIO

__all__ = ["cell", "printable", "say"]

#: Unicode's control (Cc), format (Cf: bidirectional marks, embeddings, overrides and isolates,
#: zero-width characters, the BOM...), line and paragraph separator (Zl, Zp) and surrogate (Cs)
#: characters, as of Unicode 15.1 (tab and newline included: a name is one line).
_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ud800-\udfff\ufeff\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f]"
)


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    if code < 0x100:
        return f"\\x{code:02x}"
    if 0xDC80 <= code <= 0xDCFF:  # a byte of a file name that is not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable(text: object) -> str:
    """``text`` (``str()`` of anything) with every unsafe character written as an escape:
    ``\\x1b``, ``\\u202e``, and a file name's undecodable byte as ``\\xff``."""
    return _UNSAFE.sub(_escape, text if isinstance(text, str) else str(text))


def cell(text: object) -> str:
    """``printable(text)`` for rich: its ``[`` markup escaped too, so a name is shown as is."""
    from rich.markup import escape

    return escape(printable(text))


def say(line: object, file: TextIO | None = None) -> None:
    """Print one line of text from outside, escaped (stdout unless ``file``)."""
    print(printable(line), file=file if file is not None else sys.stdout)
