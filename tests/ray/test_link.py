"""``mindspeed_prof.ray.link``: a cluster that cannot be reached is one line, for every command
that joins one (``analyse``, ``timeline``, ``capture``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mindspeed_prof.cli import main
from mindspeed_prof.cli.common import Exit
from mindspeed_prof.ray.link import Unreachable, connect


@pytest.mark.ray
def test_an_unreachable_address_is_one_line_for_every_command(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with pytest.raises(Unreachable, match="127.0.0.1:1"):
        connect("127.0.0.1:1")
    assert main(["analyse", str(tmp_path), "--ray", "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Ray cluster at 127.0.0.1:1: cannot connect" in err
    assert (
        main(
            [
                "timeline",
                str(tmp_path),
                "-o",
                str(tmp_path / "t.json"),
                "--ray",
                "ray://127.0.0.1:1",
            ]
        )
        == 2
    )
    capsys.readouterr()
    assert main(["capture", "--ray", "127.0.0.1:1", "--timeout", "5"]) == Exit.NOT_RUNNING
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Ray cluster at 127.0.0.1:1: cannot connect" in err
