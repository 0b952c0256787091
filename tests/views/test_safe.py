"""Names from captures never drive the terminal nor reorder what people read."""

from __future__ import annotations

import io
import json
import os
import sys
import unicodedata
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.report.report import report as make_report
from mindspeed_prof.cli import main
from mindspeed_prof.views.safe import cell, printable, say
from mindspeed_prof.views.text import print_analysis

HOSTILE = "op\x1b[31mred\x00nul\u202eevil\u2066x\ttab"


def test_printable_escapes_controls_and_direction_marks_only() -> None:
    assert printable(HOSTILE) == "op\\x1b[31mred\\x00nul\\u202eevil\\u2066x\\x09tab"
    assert printable("aten::mm é 中文") == "aten::mm é 中文"
    assert printable("a\u2028b\u2029c\u200bd\ufeffe\U000e0041") == (
        "a\\u2028b\\u2029c\\u200bd\\ufeffe\\U000e0041"
    )


#: What is escaped: Unicode's controls, format characters, line and paragraph separators and
#: surrogates.
UNSAFE = {"Cc", "Cf", "Zl", "Zp", "Cs"}


def test_exactly_the_unsafe_categories_are_escaped_over_every_code_point() -> None:
    """Over all 1,114,112 code points: every control, format, separator or surrogate character
    is escaped; anything else escaped is one this Python's Unicode does not know yet (the set
    holds the format characters of Unicode 15.1)."""
    everything = "".join(map(chr, range(sys.maxunicode + 1)))
    escaped = {ord(c) for c in everything if printable(c) != c}
    for code in range(sys.maxunicode + 1):
        category = unicodedata.category(chr(code))
        if category in UNSAFE:
            assert code in escaped, hex(code)
        elif code in escaped:
            assert category == "Cn", (hex(code), category)


def test_the_bytes_of_a_file_name_that_is_not_utf8_are_shown_as_bytes() -> None:
    name = os.fsdecode(b"rank0_\xff\xfe\x80_\xed\xa0\x80.json")  # held as lone surrogates
    assert printable(name) == "rank0_\\xff\\xfe\\x80_\\xed\\xa0\\x80.json"
    assert printable("\ud800") == "\\ud800"  # a surrogate that is no escaped byte


@given(st.text(alphabet=st.characters(), max_size=60))
def test_printable_output_is_one_safe_line_and_escaping_again_changes_nothing(text: str) -> None:
    shown = printable(text)
    shown.encode("utf-8")  # a UTF-8 terminal takes it
    assert not any(unicodedata.category(c) in UNSAFE for c in shown)
    assert printable(shown) == shown
    assert shown == "".join(map(printable, text))  # character by character
    assert all((printable(c) == c) is (unicodedata.category(c) not in UNSAFE) for c in text)


def test_cell_shows_rich_markup_as_written_and_say_prints_one_escaped_line() -> None:
    out = io.StringIO()
    Console(file=out, color_system=None, width=80).print(cell("[red]x[/red] \x1b[1m"))
    assert out.getvalue() == "[red]x[/red] \\x1b[1m\n"
    out = io.StringIO()
    say("a\u2028b\nc", out)
    assert out.getvalue() == "a\\u2028b\\x0ac\n"


def _trace(tmp_path: Path) -> Path:
    events = [
        {"ph": "X", "cat": "cpu_op", "name": HOSTILE, "ts": 1, "dur": 5, "pid": 1, "tid": 1},
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": HOSTILE + "r",
            "ts": 1,
            "dur": 6,
            "pid": 1,
            "tid": 1,
        },
        {"ph": "X", "name": "ProfilerStep#1", "ts": 0, "dur": 10, "pid": 1, "tid": 1},
    ]
    path = tmp_path / "rank0\u202e.json"
    path.write_text(json.dumps({"traceEvents": events, "bad": 1}))
    return path


def test_every_view_writes_escapes_not_controls(tmp_path: Path) -> None:
    path = _trace(tmp_path)
    out = io.StringIO()
    print_analysis(
        make_report(analyse(tmp_path, cache=False)), Console(file=out, width=120, color_system=None)
    )
    text = out.getvalue()
    assert "\\x1b[31mred" in text and "\x1b" not in text and "\u202e" not in text
    report = tmp_path / "r.html"
    assert main(["analyse", str(tmp_path), "--html", str(report)]) == 0
    page = report.read_text()
    assert "\\x1b[31mred" in page and not any(c in page for c in "\x1b\x00\u202e\u2066")
    assert path.exists()
