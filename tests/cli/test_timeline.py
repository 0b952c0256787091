"""``mindspeed-prof timeline``: steps no capture holds are one line, and nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from mindspeed_prof.cli import main
from mindspeed_prof.cli.common import Exit


def test_steps_no_capture_holds_fail_fast(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "t.json"
    assert (
        main(["timeline", str(run_dir), "-o", str(out), "--steps", "10:12", "-j", "1"])
        == Exit.NOTHING
    )
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (
        "mindspeed-prof: --steps 10:12: no capture holds those steps (they hold "
        "1-3); nothing written"
    )
    assert not out.exists()
    assert main(["timeline", str(run_dir), "-o", str(out), "--steps", "2:3", "-j", "1"]) == Exit.OK
    assert out.exists()
