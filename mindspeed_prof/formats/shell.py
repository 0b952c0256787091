"""Paths as text where they must survive as bytes: quoted for a shell, and named for a writer
that cannot escape them.

``quote(word)``: ``word`` as one word of a POSIX shell command a person pastes: ``shlex.quote``
where that is plain printable text; else bash's ``$'...'`` quoting, every byte that is no
printable ASCII written ``\\xHH`` (a tab, a newline, an escape, a non-UTF-8 file name's bytes,
as ``os.fsencode`` gives them), which bash, zsh and ksh read back to the same bytes. Every command
the CLI and the Hydra callback print is built with it (``command``).

``writable_name(path)``: a name that reaches ``path`` and holds only printable ASCII other than
``"`` and ``\\``: ``path`` itself where it does; else, on Linux, ``/proc/self/fd/<fd>/<name>``
through its open folder. Kineto writes the path it is given into its trace unescaped
(``traceName``) and renames its own temporary file by it: a tab or ``"`` in the save root made
every op-level trace invalid JSON, a newline or ``\\`` failed the rename, a non-UTF-8 byte could
not be passed at all.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["command", "quote", "writable_name"]

#: What ``shlex.quote`` may be left to: printable text with no control or odd characters.
_PLAIN = re.compile(r"[^\x00-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029\u200b-\u200f\u202a-\u202e]*")
#: What Kineto writes into its JSON as it is: printable ASCII but ``"`` and ``\``.
_KINETO = re.compile(r"[ !#-\[\]-~]*")


def quote(word: str) -> str:
    """``word`` as one shell word that reads back to its bytes (see the module)."""
    if _PLAIN.fullmatch(word) and word.isprintable():
        return shlex.quote(word)
    try:
        raw = os.fsencode(word)
    except UnicodeEncodeError:  # a lone surrogate no file name holds: its UTF-8 form
        raw = word.encode("utf-8", "surrogatepass")
    out = []
    for byte in raw:
        if byte in (0x27, 0x5C):  # ' and \
            out.append("\\" + chr(byte))
        elif 0x20 <= byte < 0x7F:
            out.append(chr(byte))
        else:
            out.append(f"\\x{byte:02x}")
    return "$'" + "".join(out) + "'"


def command(words: Iterable[str]) -> str:
    """``words`` as one shell command line, each ``quote``d."""
    return " ".join(quote(w) for w in words)


@contextmanager
def writable_name(path: Path) -> Iterator[str]:
    """A name for writing ``path`` that holds no character a writer may copy unescaped into JSON
    or fail to pass (see the module); valid inside the ``with``."""
    text = str(path)
    if _KINETO.fullmatch(text) or not os.path.isdir("/proc/self/fd"):
        yield text
        return
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        name = f"/proc/self/fd/{folder}/{path.name}"
        yield name if _KINETO.fullmatch(name) else text
    finally:
        os.close(folder)
