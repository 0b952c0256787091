"""The install line for an extra names the install that fits this copy: the index's name, or
the clone it was installed from (pip's ``direct_url.json``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mindspeed_prof import extras


class Dist:
    def __init__(self, record: object) -> None:
        self.record = record

    def read_text(self, name: str) -> str | None:
        assert name == "direct_url.json"
        return None if self.record is None else json.dumps(self.record)


@pytest.mark.parametrize(
    "record,source",
    [
        (None, None),  # from the index: pip writes no record
        ({"url": "https://files.example/mindspeed_prof-0.1.0.tar.gz", "archive_info": {}}, None),
        ({"url": "git+https://example/repo", "vcs_info": {"vcs": "git"}}, None),
        (
            {"url": "file:///home/me/mindspeed-prof", "dir_info": {}},
            Path("/home/me/mindspeed-prof"),
        ),
        (
            {"url": "file:///home/me/my%20clone", "dir_info": {"editable": True}},
            Path("/home/me/my clone"),
        ),
    ],
)
def test_where_this_copy_came_from(
    monkeypatch: pytest.MonkeyPatch, record: object, source: Path | None
) -> None:
    from importlib import metadata

    # a clone's own egg-info (no record) found first, then the install's
    monkeypatch.setattr(metadata, "distributions", lambda name: [Dist(None), Dist(record)])
    assert extras.installed_from() == source


def test_the_line_fits_the_install(tmp_path: Path) -> None:
    clone = tmp_path / "my clone"
    clone.mkdir()
    assert extras.line_for("tensorboard", None) == "pip install 'mindspeed-prof[tensorboard]'"
    assert extras.line_for("tensorboard", clone, cwd=clone) == "pip install '.[tensorboard]'"
    assert extras.line_for("perfetto", clone, cwd=tmp_path) == f"pip install '{clone}[perfetto]'"


def test_this_checkout_is_a_clone_install() -> None:
    """The tests run from an install of this repository (editable or not): its folder."""
    root = Path(__file__).resolve().parents[1]  # this checkout, installed either way
    if extras.installed_from() is None:
        pytest.skip("SKIP: mindspeed-prof is not installed from a folder here")
    assert extras.install_line("report", cwd=root) == "pip install '.[report]'"
