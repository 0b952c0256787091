"""``quote``: every word, whatever its characters (a tab, a newline, ``"``, ``\\``, an escape, a
non-UTF-8 file name's bytes), reads back in bash to its own bytes; a plain one is quoted as
``shlex.quote`` quotes it. ``writable_name``: a name with no character Kineto copies into JSON
unescaped, that reaches the same file."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mindspeed_prof.formats.shell import _KINETO, command, quote, writable_name

ODD = [
    "a\tb",
    'a"b',
    "a\nb",
    "a\\b",
    "a b",
    os.fsdecode(b"a\xffb"),
    "it's",
    "x\x1b[31m",
    "\u202eevil",
    "caf\u00e9",
    "$HOME",
    "`id`",
    "-rf",
    "",
    "!!",
    "a\rb",
    "\x7f",
]


def bash_reads(words: list[str]) -> list[bytes]:
    """What bash makes of ``command(words)``: each word's bytes."""
    line = "printf '%s\\0' " + command(words)
    out = subprocess.run(["bash", "-c", line], capture_output=True, check=True).stdout
    return out.split(b"\0")[:-1]


def test_every_odd_word_reads_back_to_its_bytes() -> None:
    assert bash_reads(ODD) == [os.fsencode(w) for w in ODD]
    assert all(quote(w).isascii() or quote(w) == shlex.quote(w) for w in ODD)


@settings(max_examples=50, deadline=None)
@given(
    words=st.lists(
        st.text(st.characters(exclude_characters="\0", exclude_categories=["Cs"]))
        | st.sampled_from(ODD),
        min_size=1,
        max_size=20,
    )
)
def test_any_words_read_back_to_their_bytes(words: list[str]) -> None:
    assert bash_reads(words) == [os.fsencode(w) for w in words]


@pytest.mark.parametrize("word", ["plain", "a b", "outputs/2026-12-06/20-27-08", "caf\u00e9"])
def test_a_plain_word_is_quoted_as_shlex_quotes_it(word: str) -> None:
    assert quote(word) == shlex.quote(word)


@pytest.mark.parametrize("name", ODD[:6])
def test_a_writable_name_holds_no_odd_character_and_reaches_the_file(
    tmp_path: Path, name: str
) -> None:
    folder = tmp_path / name
    folder.mkdir()
    path = folder / "rank0_h_1_abc_step1.pt.trace.json.tmp"
    with writable_name(path) as written:
        assert _KINETO.fullmatch(written)
        Path(written).write_text("{}")
    assert path.read_text() == "{}"
