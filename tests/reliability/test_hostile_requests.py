"""Whatever lands in ``<save>/control/`` of a running job: training goes on, nothing is written
outside the save root, and a bad file never disables a good one."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from helpers import count
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mindspeed_prof import Profiler
from mindspeed_prof.capture.control import Request, read_acks, write_request

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
PATHS = st.sampled_from(
    [
        "../../escaped",
        "/tmp/escaped",
        "..",
        "a/../../b",
        ".",
        "",
        "x" * 300,
        "ok-1",
        "../control/acks/x",
        "\x00",
        "é",
    ]
)
FIELD = st.sampled_from(
    [
        "steps",
        "ranks",
        "role",
        "stage",
        "level",
        "preset",
        "flight",
        "start_step",
        "overrides",
        "created",
        "expires",
        "id",
    ]
)
#: Request-shaped objects whose fields are anything, often close to right.
REQUESTS = st.builds(
    lambda base, changes: {**base, **changes},
    st.fixed_dictionaries(
        {
            "id": st.one_of(PATHS, JSON),
            "created": st.just(time.time()),
            "expires": st.just(time.time() + 600),
        }
    ),
    st.dictionaries(FIELD, st.one_of(JSON, PATHS, st.integers(-3, 20_000)), max_size=4),
)
#: torch_npu-style dynamic-profiling configs, fields anything.
NPU = st.dictionaries(
    st.sampled_from(
        [
            "start_step",
            "active",
            "experimental_config",
            "is_rank",
            "rank_list",
            "record_shapes",
            "prof_dir",
        ]
    ),
    JSON,
    min_size=1,
    max_size=4,
)
CONTENT = st.one_of(
    REQUESTS.map(json.dumps),
    NPU.map(json.dumps),
    JSON.map(json.dumps),
    st.binary(max_size=64).map(lambda b: b.decode("latin-1")),
)


def _tree(base: Path) -> dict[str, Any]:
    return {str(p.relative_to(base)): p.lstat().st_mtime_ns for p in base.rglob("*")}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    files=st.lists(
        st.tuples(st.from_regex(r"[a-z0-9._-]{1,20}\.json", fullmatch=True), CONTENT), max_size=6
    ),
    links=st.booleans(),
)
def test_hostile_files_never_stop_training_nor_escape_the_root(
    tmp_path_factory: Any, files: list[tuple[str, str]], links: bool
) -> None:
    base = tmp_path_factory.mktemp("hostile")
    root, outside = base / "root", base / "outside"
    outside.mkdir()
    (outside / "target.json").write_text("{}")
    folder = root / "control" / "requests"
    folder.mkdir(parents=True)
    old = time.time() - 60  # past the grace a half-written file gets
    for name, text in files:
        (folder / name).write_text(text, encoding="utf-8", errors="surrogateescape")
        os.utime(folder / name, (old, old))
    if links:  # links in the folder, and the acks folder a link out of the root
        (folder / "link.json").symlink_to(outside / "target.json")
        (root / "control" / "acks").symlink_to(outside, target_is_directory=True)
    good = Request.new(600, steps=1)
    write_request(root, good)
    count("hostile request files tried", len(files) + 2 * links)
    before = _tree(outside)
    prof = Profiler.from_config(
        {
            "integrated": {"profile_save_path": str(root), "mstx": True},
            "extensions": {"backend": "none", "flight_recorder_steps": 2},
        }
    )
    assert prof._ondemand is not None
    prof._ondemand.interval_ns = 0
    for step in range(1, 5):
        with prof.step(step), prof.stage("actor_update"):
            pass
    prof.close()
    assert not prof.failed
    assert _tree(outside) == before  # nothing written, replaced or removed outside the root
    for path in base.rglob("*"):
        if not path.is_symlink():
            assert path.resolve().is_relative_to(
                outside.resolve()
            ) or path.resolve().is_relative_to(root.resolve())
    assert any(c.request == good.id for c in prof.captures)  # the good one was not disabled
    if not links:
        assert [a.status for a in read_acks(root, good.id)] == ["written"]
