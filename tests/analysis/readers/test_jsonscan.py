"""The JSON outline scanner: the keys a full parse gives, at any chunk size, within its limit."""

from __future__ import annotations

import io
import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mindspeed_prof.analysis.readers import jsonscan
from mindspeed_prof.analysis.readers.jsonscan import NotJson, Scanner, TooLong

# text that looks like structure: quotes, escapes, brackets, separators, non-ASCII
_TEXT = st.lists(
    st.sampled_from(
        [
            '"',
            "\\",
            "\\\\",
            '\\"',
            "{",
            "}",
            "[",
            "]",
            ",",
            ":",
            " ",
            "\n",
            "a",
            "é✓",
            "traceEvents",
            "\\u0022",
        ]
    ),
    max_size=6,
).map("".join)
_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=20,
)


def _outline(scan: Scanner) -> Any:
    """The document rebuilt from the scanner, with every object walked key by key and every
    value below the top skipped (``None`` in its place)."""
    c = scan.peek()
    if c == ord("{"):
        out = []
        for key in scan.each_key():
            out.append(key)
            scan.skip()
        return out
    if c == ord("["):
        n = 0
        for _ in scan.each_element():
            scan.skip()
            n += 1
        return n
    scan.skip()
    return None


@settings(max_examples=200, deadline=None)
@given(
    doc=st.dictionaries(_TEXT, _VALUES, max_size=6) | st.lists(_VALUES, max_size=6),
    first=st.integers(1, 9),
    chunk=st.integers(1, 9),
    ascii_only=st.booleans(),
    indent=st.sampled_from([None, 0, 2]),
    by_hand=st.booleans(),
)
def test_outline_equals_a_full_parse_at_any_chunk_size(
    doc: Any, first: int, chunk: int, ascii_only: bool, indent: int | None, by_hand: bool
) -> None:
    """The same outline whether msgspec skips arrays and objects or, where what it says is
    not understood (``by_hand``), the regex scanner does."""
    raw = json.dumps(doc, ensure_ascii=ascii_only, indent=indent).encode()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(jsonscan, "FIRST", first)
        mp.setattr(jsonscan, "CHUNK", chunk)
        if by_hand:
            mp.setattr(jsonscan, "_TRAILING", re.compile("(?!)"))
        scan = Scanner(io.BytesIO(raw), len(raw) + 1)
        assert _outline(scan) == (list(doc) if isinstance(doc, dict) else len(doc))
        assert scan.peek() is None  # the whole document was consumed, nothing after it
        assert scan.taken == len(raw)


def test_msgspec_skips_arrays_and_objects_without_the_scanner(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What msgspec says of a value followed by more is what ``_container`` reads (a new
    wording would leave every value to the slower scanner: this test names it)."""
    monkeypatch.setattr(jsonscan, "FIRST", 64)
    monkeypatch.setattr(jsonscan, "CHUNK", 64)
    monkeypatch.setattr(Scanner, "_scan_container", lambda self: pytest.fail("scanner used"))
    raw = json.dumps({"a": {"b": [1, "]}", {"c": None}] * 50}, "d": [[]], "e": {}}).encode()
    assert _outline(Scanner(io.BytesIO(raw), len(raw) + 1)) == ["a", "d", "e"]


def test_a_value_larger_than_the_limit_stops_at_the_limit() -> None:
    raw = b'{"metadata": "' + b"x" * 5_000 + b'", "traceEvents": []}'
    scan = Scanner(io.BytesIO(raw), 1_000)
    with pytest.raises(TooLong):
        _outline(scan)
    assert scan.taken == 1_000


def test_long_keys_are_cut_and_escapes_undone() -> None:
    raw = json.dumps({"k" * 5000: 1, 'a"b\\c': 2}).encode()
    assert _outline(Scanner(io.BytesIO(raw), len(raw))) == ["k" * jsonscan.KEY_BYTES, 'a"b\\c']


@pytest.mark.parametrize(
    "raw", [b'{"a" 1}', b'{"a": 1 "b": 2}', b'{"a": "open', b"[1 2]", b'{"a": [1, {"b": 2}']
)
def test_malformed_documents_are_not_json(raw: bytes) -> None:
    with pytest.raises(NotJson):
        _outline(Scanner(io.BytesIO(raw), 1 << 20))
