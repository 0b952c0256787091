"""torch_npu CSVs: a row shorter than the header is one problem line; every other row is read."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from mindspeed_prof.analysis.readers.npu.tables import NAMED_ROWS, Table

HEADER = ["Name", "Type", "Duration(us)", "Wait(us)"]


def _write(path: Path, rows: list[list[str]]) -> None:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([HEADER, *rows])
    path.write_text(buf.getvalue(), encoding="utf-8")


_cell = st.text(alphabet="abcxyz019.", min_size=1, max_size=6)
# each row: whole (4 cells) or short (1 to 3 cells)
_rows = st.lists(
    st.integers(1, len(HEADER)).flatmap(lambda n: st.lists(_cell, min_size=n, max_size=n)),
    min_size=1,
    max_size=30,
)


@settings(deadline=None)  # a file per example: timing is not what is tested
@given(rows=_rows)
def test_short_rows_are_named_and_every_whole_row_is_kept(tmp_path_factory, rows) -> None:
    path = tmp_path_factory.mktemp("csv") / "kernel_details.csv"
    _write(path, rows)
    problems: list[str] = []
    table = Table.open(path, ("Name", "Duration(us)"), problems)
    assert table is not None
    whole = [r for r in rows if len(r) == len(HEADER)]
    assert list(table.rows) == [dict(zip(HEADER, r)) for r in whole]
    short = [i + 2 for i, r in enumerate(rows) if len(r) < len(HEADER)]  # line 1: the header
    if not short:
        assert problems == []
        return
    (line,) = problems
    assert line.startswith(f"{path}: line")
    if len(short) == 1:
        cells = len(rows[short[0] - 2])
        cut = " (cut short?)" if short[0] == len(rows) + 1 else ""
        assert line == (
            f"{path}: line {short[0]} has {cells} of {len(HEADER)} columns{cut}; row skipped"
        )
    else:
        named = ", ".join(map(str, short[:NAMED_ROWS]))
        more = f" and {len(short) - NAMED_ROWS} more" if len(short) > NAMED_ROWS else ""
        assert line == (
            f"{path}: lines {named}{more} have fewer than {len(HEADER)} columns; "
            f"{len(short)} rows skipped"
        )


def test_a_short_row_in_the_middle_is_not_called_cut_short(tmp_path: Path) -> None:
    path = tmp_path / "op_statistic.csv"
    _write(path, [["a", "t", "1", "0"], ["b", "t", "2"], ["c", "t", "3", "0"]])
    problems: list[str] = []
    table = Table.open(path, ("Name",), problems)
    assert table is not None and [r["Name"] for r in table.rows] == ["a", "c"]
    assert problems == [f"{path}: line 3 has 3 of 4 columns; row skipped"]


def test_the_line_on_short_rows_comes_before_the_readers_own(tmp_path: Path) -> None:
    """Rows are parsed as the reader takes them; the line on short rows goes where reading
    the whole file at ``open`` put it: before what the reader says of the rows."""
    path = tmp_path / "step_trace_time.csv"
    _write(path, [["a", "t", "1", "0"], ["b", "t"], ["c", "t", "3", "0"]])
    problems = ["earlier"]
    table = Table.open(path, ("Name",), problems)
    assert table is not None and problems == ["earlier"]
    for row in table.rows:
        problems.append(f"reader: {row['Name']}")
    assert problems == [
        "earlier",
        f"{path}: line 3 has 2 of 4 columns; row skipped",
        "reader: a",
        "reader: c",
    ]


_text_cell = st.text(alphabet='ab,"\r\n\t ', max_size=5)


@settings(deadline=None)
@given(
    rows=st.lists(st.lists(_text_cell, min_size=1, max_size=5), max_size=12),
    ending=st.sampled_from(["\n", "\r\n", "\r"]),
)
def test_rows_are_those_the_csv_module_reads_from_the_file(
    tmp_path_factory, rows: list[list[str]], ending: str
) -> None:
    """Any line ending, quoted cells holding commas, quotes and line breaks: the rows (and the
    lines that name short rows) are those ``csv.reader`` gives over the file itself."""
    path = tmp_path_factory.mktemp("csv") / "kernel_details.csv"
    buf = io.StringIO()
    csv.writer(buf, lineterminator=ending).writerows([HEADER, *rows])
    path.write_bytes(buf.getvalue().encode())
    with open(path, newline="", encoding="utf-8-sig") as f:
        lines = [r for r in csv.reader(f) if r]
    header = [h.strip() for h in lines[0]]
    problems: list[str] = []
    table = Table.open(path, ("Name",), problems)
    assert table is not None and table.header == header
    assert list(table.rows) == [dict(zip(header, r)) for r in lines[1:] if len(r) >= len(header)]
    assert len(problems) == any(len(r) < len(header) for r in lines[1:])
