"""The exit codes have one source: ``Exit`` and ``MEANINGS``. Every command's ``--help`` and
every exit table in ``docs/`` is generated from it, and checked to be."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from mindspeed_prof.cli import COMMANDS, main
from mindspeed_prof.cli.common import MEANINGS, Exit, exit_help, exit_table

DOCS = Path(__file__).resolve().parents[2] / "docs"
#: An exit table (indented too, as in a list item), and the marker naming its command.
_TABLE = re.compile(
    r"(?:^[ \t]*<!-- exit codes: (?P<command>\w+) -->\n)?"
    r"(?P<table>^[ \t]*\| exit \| meaning \|\n(?:^[ \t]*\|.*\|\n)+)",
    re.M,
)


def _tables(text: str) -> list[tuple[str | None, str]]:
    """Every exit table in ``text``: the command its marker names, the table (dedented)."""
    return [(m["command"], textwrap.dedent(m["table"])) for m in _TABLE.finditer(text)]


def test_every_exit_table_in_the_docs_is_the_generated_one() -> None:
    tables = [
        (path, *table) for path in sorted(DOCS.rglob("*.md")) for table in _tables(path.read_text())
    ]
    assert ("capture", exit_table("capture")) in {(c, t) for _, c, t in tables}
    for path, command, table in tables:
        assert command in MEANINGS, f"{path}: an exit table without <!-- exit codes: COMMAND -->"
        assert table == exit_table(command), f"{path}: {command}'s table is not the generated one"


def test_a_table_written_by_hand_or_without_its_marker_is_found() -> None:
    """What the check above stops: a list item's table copied from an older text, its marked
    twin with a row changed, and the generated one, indented as in a list item."""
    old = (
        "- On demand, exit codes:\n\n  | exit | meaning |\n  |---|---|\n  | 0 | done |\n"
        "  | 2 | no job took the request |\n"
    )
    changed = "<!-- exit codes: capture -->\n" + exit_table("capture").replace("| 5 |", "| 2 |")
    right = textwrap.indent("<!-- exit codes: capture -->\n" + exit_table("capture"), "  ")
    found = _tables(f"{old}\ntext\n\n{changed}\n{right}")
    assert [command for command, _ in found] == [None, "capture", "capture"]
    assert [table == exit_table("capture") for _, table in found] == [False, False, True]


@pytest.mark.parametrize("command", sorted(MEANINGS))
def test_every_commands_help_gives_its_generated_exit_codes(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    assert exit_help(command) in capsys.readouterr().out


def test_the_table_has_one_meaning_per_code_and_every_command_that_reads() -> None:
    names = {m.__name__.rsplit(".", 1)[1] for m in COMMANDS} - {"demo", "presets"}
    assert set(MEANINGS) == names
    for meanings in MEANINGS.values():
        assert Exit.OK in meanings and all(isinstance(c, Exit) for c in meanings)
    assert [int(c) for c in Exit] == list(range(7))  # never renumbered: scripts depend on it
    assert exit_table("doctor") == (
        "| exit | meaning |\n|---|---|\n| 0 | healthy |\n"
        "| 1 | no such directory |\n| 3 | findings (one line each) |\n"
        f"| 6 | {MEANINGS['analyse'][Exit.UNWRITTEN]} |\n"
    )
