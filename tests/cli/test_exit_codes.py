"""The exit codes have one source: ``Exit`` and ``MEANINGS``. Every command's ``--help`` and
every exit table in ``docs/`` is generated from it, and checked to be."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mindspeed_prof.cli import COMMANDS, main
from mindspeed_prof.cli.common import MEANINGS, Exit, exit_help, exit_table

DOCS = Path(__file__).resolve().parents[2] / "docs"
_TABLE = re.compile(r"(?:^<!-- exit codes: (?P<command>\w+) -->\n)?(?P<table>^\| exit \| meaning "
                    r"\|\n(?:^\|.*\|\n)+)", re.M)


def _tables() -> list[tuple[Path, str | None, str]]:
    """Every exit table in ``docs/``: its file, the command its marker names, the table."""
    return [(path, m["command"], m["table"]) for path in sorted(DOCS.rglob("*.md"))
            for m in _TABLE.finditer(path.read_text())]


def test_every_exit_table_in_the_docs_is_the_generated_one() -> None:
    tables = _tables()
    assert ("capture", exit_table("capture")) in {(c, t) for _, c, t in tables}
    for path, command, table in tables:
        assert command in MEANINGS, f"{path}: an exit table without <!-- exit codes: COMMAND -->"
        assert table == exit_table(command), f"{path}: {command}'s table is not the generated one"


@pytest.mark.parametrize("command", sorted(MEANINGS))
def test_every_commands_help_gives_its_generated_exit_codes(
        command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    assert exit_help(command) in capsys.readouterr().out


def test_the_table_has_one_meaning_per_code_and_every_command_that_reads() -> None:
    names = {m.__name__.rsplit(".", 1)[1] for m in COMMANDS} - {"demo", "presets"}
    assert set(MEANINGS) == names
    for meanings in MEANINGS.values():
        assert Exit.OK in meanings and all(isinstance(c, Exit) for c in meanings)
    assert [int(c) for c in Exit] == list(range(6))  # never renumbered: scripts depend on it
    assert exit_table("doctor") == ("| exit | meaning |\n|---|---|\n| 0 | healthy |\n"
                                    "| 1 | no such directory |\n| 3 | findings (one line each) |\n")
