"""The reference tools' kept outputs (``tests/fixtures/reference``, ``reference_store``): each
made from the corpus sets as checked in and the tool as installed, and served only for the input,
call and version it was made from."""

from __future__ import annotations

import importlib.util
import json
import re
import warnings
from importlib.metadata import version
from pathlib import Path

import pytest
import reference_store
from corpus import SETS
from reference_store import FIXTURES, RENEW, Store, set_digest

#: The stores the reference tests keep, and their tools.
STORES = {
    "hta_streams": "holistictraceanalysis",
    "hta_breakdown": "holistictraceanalysis",
    "msprof_advisor": "msprof-analyze",
    "msprof_reference": "msprof-analyze",
}


@pytest.mark.parametrize("name", sorted(STORES))
def test_each_fixture_is_of_the_sets_and_the_tool_installed(name: str) -> None:
    """A corpus set changed, or the tool upgraded, without renewing the fixture: the reference
    tests would run the tool live (and pass): this says so."""
    path = FIXTURES / f"{name}.json"
    renew = "renew with: python scripts/reference_fixtures.py"
    assert path.is_file(), f"{path.name}: missing; {renew}"
    doc = json.loads(path.read_text())
    assert doc["tool"] == STORES[name]
    installed = version(doc["tool"])
    assert doc["version"] == installed, (
        f"{path.name}: made with {doc['tool']} {doc['version']}, {installed} installed; {renew}"
    )
    stale = sorted(
        {
            f"{entry['label']} ({s})"
            for entry in doc["entries"].values()
            for s, d in entry["sets"].items()
            if s not in SETS or set_digest(s) != d
        }
    )
    assert not stale, f"{path.name}: made from other files of {', '.join(stale)}; {renew}"
    assert doc["entries"] and any(entry["sets"] for entry in doc["entries"].values())


def _count(inputs: Path) -> dict[str, int]:
    return {"files": len(list(inputs.iterdir()))}


def test_kept_figures_only_for_the_same_input_call_and_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reference_store, "FIXTURES", tmp_path / "kept")
    calls: list[Path] = []

    def call(inputs: Path) -> dict[str, int]:
        calls.append(inputs)
        return _count(inputs)

    src = tmp_path / "in"
    src.mkdir()
    (src / "a.json").write_text("{}")
    monkeypatch.setenv(RENEW, "renew")
    assert Store("s", "pytest").figures(call, src, "a") == {"files": 1}
    (doc,) = json.loads((tmp_path / "kept" / "s.json").read_text())["entries"].values()
    assert doc == {"label": "a", "sets": {}, "figures": {"files": 1}}
    monkeypatch.delenv(RENEW)
    assert Store("s", "pytest").figures(call, src, "a") == {"files": 1}
    assert len(calls) == 1  # kept: not called
    copy = tmp_path / "copy"  # the same bytes elsewhere: the same input
    copy.mkdir()
    (copy / "a.json").write_text("{}")
    (copy / ".a.json.analysis-cache").write_text("ours")  # our cache, not the tool's input
    assert Store("s", "pytest").figures(call, copy, "a") == {"files": 1}
    assert len(calls) == 1
    (src / "a.json").write_text("{ }")  # another input: live, and said
    with pytest.warns(UserWarning, match="s.json: no fixture for a with pytest .*: ran it live"):
        assert Store("s", "pytest").figures(call, src, "a") == {"files": 1}
    assert len(calls) == 2
    (src / "a.json").write_text("{}")
    with pytest.warns(UserWarning, match="ran it live"):  # another option, another call
        Store("s", "pytest").figures(call, src, "a", options="X=1")
    with pytest.warns(UserWarning, match="ran it live"):
        Store("s", "pytest").figures(_count, src, "a")
    monkeypatch.setenv(RENEW, "live")  # every call live, nothing written, nothing said
    before = (tmp_path / "kept" / "s.json").read_text()
    assert Store("s", "pytest").figures(call, src, "a") == {"files": 1}
    assert len(calls) == 4 and (tmp_path / "kept" / "s.json").read_text() == before
    monkeypatch.delenv(RENEW)
    monkeypatch.setattr(reference_store, "version", lambda tool: "0.0")  # another version
    with pytest.warns(UserWarning, match="with pytest 0.0: ran it live"):
        Store("s", "pytest").figures(call, src, "a")
    assert len(calls) == 5


def test_entries_name_the_digest_of_their_sets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reference_store, "FIXTURES", tmp_path)
    monkeypatch.setenv(RENEW, "renew")
    name = next(iter(SETS))
    Store("s", "pytest").figures(_count, tmp_path, "x", sets=(name,))
    (entry,) = json.loads((tmp_path / "s.json").read_text())["entries"].values()
    assert entry["sets"] == {name: set_digest(name)}


def _files(files: list[Path]) -> dict[str, int]:
    return {"files": len(files)}


def test_files_and_the_code_that_prepares_them_are_keyed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reference_store, "FIXTURES", tmp_path / "kept")
    monkeypatch.setenv(RENEW, "renew")
    f = tmp_path / "a.json"
    f.write_text("{}")
    Store("s", "pytest").figures(_files, [f], "a", code=(_count,))
    monkeypatch.delenv(RENEW)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # kept: nothing said
        assert Store("s", "pytest").figures(_files, [f], "a", code=(_count,)) == {"files": 1}
    with pytest.warns(UserWarning, match="ran it live"):  # another preparing code
        Store("s", "pytest").figures(_files, [f], "a", code=(_files,))
    f.write_text("{ }")  # another file
    with pytest.warns(UserWarning, match="ran it live"):
        Store("s", "pytest").figures(_files, [f], "a", code=(_count,))


def test_the_script_renews_every_store() -> None:
    """scripts/reference_fixtures.py runs every test file that keeps a tool's output."""
    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location(
        "reference_fixtures", root / "scripts" / "reference_fixtures.py"
    )
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    texts = [(root / f).read_text() for f in script.TESTS]
    assert set(re.findall(r'Store\("(\w+)"', "".join(texts))) == set(STORES)
    keeping = {
        p.relative_to(root).as_posix()
        for p in (root / "tests").rglob("test_*.py")
        if 'Store("' in p.read_text() and p.name != Path(__file__).name
    }
    assert keeping == set(script.TESTS)
