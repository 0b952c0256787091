"""Names from captures never drive the terminal nor reorder what people read."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console

from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.cli import main
from mindspeed_prof.views.safe import printable
from mindspeed_prof.views.text import print_analysis

HOSTILE = "op\x1b[31mred\x00nul\u202eevil\u2066x\ttab"


def test_printable_escapes_controls_and_direction_marks_only() -> None:
    assert printable(HOSTILE) == "op\\x1b[31mred\\x00nul\\u202eevil\\u2066x\\x09tab"
    assert printable("aten::mm é 中文") == "aten::mm é 中文"


def _trace(tmp_path: Path) -> Path:
    events = [{"ph": "X", "cat": "cpu_op", "name": HOSTILE, "ts": 1, "dur": 5, "pid": 1, "tid": 1},
              {"ph": "X", "cat": "user_annotation", "name": HOSTILE + "r", "ts": 1, "dur": 6,
               "pid": 1, "tid": 1},
              {"ph": "X", "name": "ProfilerStep#1", "ts": 0, "dur": 10, "pid": 1, "tid": 1}]
    path = tmp_path / f"rank0\u202e.json"
    path.write_text(json.dumps({"traceEvents": events, "bad": 1}))
    return path


def test_every_view_writes_escapes_not_controls(tmp_path: Path) -> None:
    path = _trace(tmp_path)
    out = io.StringIO()
    print_analysis(analyse(tmp_path, cache=False), Console(file=out, width=120,
                                                           color_system=None))
    text = out.getvalue()
    assert "\\x1b[31mred" in text and "\x1b" not in text and "\u202e" not in text
    report = tmp_path / "r.html"
    assert main(["analyse", str(tmp_path), "--html", str(report)]) == 0
    page = report.read_text()
    assert "\\x1b[31mred" in page and not any(c in page for c in "\x1b\x00\u202e\u2066")
    assert path.exists()
