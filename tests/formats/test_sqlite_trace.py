"""The db export (``write_db``/``read_db_events``) keeps the args analysis reads, counters'
``value``, ``values`` and ``stage`` among them."""

from __future__ import annotations

import json
from pathlib import Path

from mindspeed_prof import Profiler
from mindspeed_prof.formats.sqlite_trace import read_db_events, write_db


def test_the_db_export_keeps_counter_args(tmp_path: Path) -> None:
    prof = Profiler.from_config(
        {
            "integrated": {
                "profile": True,
                "mstx": True,
                "profile_level": "level_none",
                "profile_with_cpu": False,
                "profile_step_start": 1,
                "profile_step_end": 2,
                "profile_save_path": str(tmp_path),
            }
        },
        rank=0,
    )
    with prof.step(1), prof.stage("actor_generate"):
        prof.count("tokens_generated", 64)
        prof.count("response_length", [10, 54])
    prof.close()
    (path,) = tmp_path.rglob("*.mstx.trace.json")
    trace = json.loads(path.read_text())
    db = write_db(trace, tmp_path / "t.pt.trace.db")
    rows = [
        (name, cat, ph, json.loads(args))
        for name, cat, ph, _, _, _, _, args in read_db_events(db)
        if ph == "C"
    ]
    assert rows == [
        ("tokens_generated", "count", "C", {"value": 64, "step": 1, "stage": "actor_generate"}),
        (
            "response_length",
            "count",
            "C",
            {"values": [10, 54], "step": 1, "stage": "actor_generate"},
        ),
    ]
