"""``capture.plugins``: what a layer above registers reaches the profiler (a request source beside
the save root's folder, a sink by name); a source that cannot be made is one warning; capture
imports a layer's module only for a framework the process has imported itself."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from mindspeed_prof import Profiler
from mindspeed_prof.capture import plugins
from mindspeed_prof.capture.control import Ack, Folder, Request, Worker


class Stub:
    """A carrier's worker side that hands out one request, and keeps the acks."""

    def __init__(self, request: Request) -> None:
        self.requests, self.acks = [request], list[Ack]()

    def poll(self, worker: Worker) -> list[Request]:
        out, self.requests = self.requests, []
        return out

    def ack(self, request: Request, ack: Ack) -> None:
        self.acks.append(ack)


def test_a_registered_source_is_asked_beside_the_folder_and_a_broken_one_warns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    stub = Stub(Request.new(60, steps=1))

    def broken() -> None:
        raise RuntimeError("no carrier here")

    monkeypatch.setattr(
        plugins, "_SOURCES", {"stub": lambda: stub, "broken": broken, "none": lambda: None}
    )
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        prof = Profiler.from_config({"profile_save_path": str(tmp_path), "backend": "none"}, rank=0)
    control = prof._ondemand
    assert control is not None
    assert [type(s) for s in control.sources] == [Folder, Stub]
    assert [r.getMessage() for r in caplog.records] == [
        "mindspeed-prof: no on-demand capture through broken: no carrier here"
    ]
    control.interval_ns = 0
    for step in (1, 2, 3):
        with prof.step(step), prof.stage("actor_update"):
            pass
    prof.close()
    assert [a.status for a in stub.acks] == ["queued", "written"]
    assert stub.acks[-1].files and all(Path(f).is_file() for f in stub.acks[-1].files)


def test_a_layers_module_is_imported_only_for_a_framework_the_process_imported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(plugins, "SOURCES", {"no_such_framework": "no_such_module"})
    monkeypatch.setattr(plugins, "_SOURCES", {})
    assert plugins.sources() == []  # not imported: no_such_module would raise
    monkeypatch.setitem(sys.modules, "no_such_framework", sys)
    monkeypatch.setattr(plugins, "SOURCES", {"no_such_framework": "colorsys"})
    monkeypatch.delitem(sys.modules, "colorsys", raising=False)
    assert plugins.sources() == [] and "colorsys" in sys.modules


def test_a_sink_nobody_serves_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plugins, "_SINKS", {})
    assert plugins.sink("nowhere") is None
