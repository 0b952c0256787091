"""``jsonio``: our files read as regular files within a bound, never through a link nor blocking;
written whole through a fresh name; and no module above the readers reads a file another way."""

from __future__ import annotations

import ast
import json
import os
import pickle
import stat
import tempfile
import threading
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import mindspeed_prof
from mindspeed_prof import jsonio
from mindspeed_prof.jsonio import Refused, read_bytes, read_json, within, write_atomic, write_json


def _bounded(call: Callable[[], object], seconds: float = 30.0) -> object:
    """``call()`` (its result or the exception it raised), failing rather than hanging."""
    out: list[object] = []

    def target() -> None:
        try:
            out.append(call())
        except BaseException as err:  # noqa: BLE001 - handed to the test
            out.append(err)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"blocked for {seconds:g} s"
    return out[0]


def test_a_regular_file_is_read_whole_up_to_its_limit(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_bytes(b'{"a": 1}' + b" " * 92)
    assert read_bytes(path, 100) == path.read_bytes() and read_json(path, 100) == {"a": 1}
    with pytest.raises(Refused, match=r"m\.json: larger than 99 bytes \(100\)$") as err:
        read_bytes(path, 99)
    assert err.value.reason == "larger than 99 bytes (100)"
    back = pickle.loads(pickle.dumps(err.value))  # as a worker process hands it back
    assert (str(back), back.reason) == (str(err.value), err.value.reason)


def test_a_file_larger_than_the_limit_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    with open(path, "wb") as f:
        f.truncate(jsonio.MAX_JSON_BYTES + 1)  # sparse
    tracemalloc.start()
    try:
        with pytest.raises(Refused, match="larger than"):
            read_json(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "link", "folder", "dangling"])
def test_what_is_not_a_regular_file_is_refused_at_once(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "manifest.json"
    target = tmp_path / "real.json"
    target.write_text("{}")
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev_zero":
        path.symlink_to("/dev/zero")
    elif kind == "link":
        path.symlink_to(target)
    elif kind == "folder":
        path.mkdir()
    else:
        path.symlink_to(tmp_path / "nowhere")
    got = _bounded(lambda: read_json(path))
    reason = {"fifo": "a FIFO, not a regular file", "folder": "a folder, not a regular file"}
    assert isinstance(got, Refused) and got.reason == reason.get(
        kind, "a symbolic link, not followed"
    )
    assert str(got) == f"{path}: {got.reason}"


def test_follow_reads_through_a_link_to_a_regular_file_only(tmp_path: Path) -> None:
    target = tmp_path / "real.json"
    target.write_text('{"ok": true}')
    (tmp_path / "a.json").symlink_to(target)
    (tmp_path / "z.json").symlink_to("/dev/zero")
    assert read_json(tmp_path / "a.json", follow=True) == {"ok": True}
    got = _bounded(lambda: read_json(tmp_path / "z.json", follow=True))
    assert isinstance(got, Refused) and got.reason == "a device, not a regular file"
    with pytest.raises(FileNotFoundError):
        read_json(tmp_path / "missing.json")


def test_json_nested_past_the_parser_is_refused_and_bad_json_is_a_value_error(
    tmp_path: Path,
) -> None:
    deep, bad = tmp_path / "deep.json", tmp_path / "bad.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    bad.write_text('{"a": ')
    with pytest.raises(Refused, match="nested too deeply to read$"):
        read_json(deep)
    with pytest.raises(json.JSONDecodeError):
        read_json(bad)


def test_within_follows_links_both_ways(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside.json"
    (root / "sub").mkdir(parents=True)
    outside.write_text("{}")
    (root / "sub" / "in.json").write_text("{}")
    (root / "out.json").symlink_to(outside)
    (root / "back.json").symlink_to(root / "sub" / "in.json")
    (root / "loop").symlink_to(root / "loop")
    (tmp_path / "alias").symlink_to(root)
    assert within(root / "sub" / "in.json", root) and within(root / "back.json", root)
    assert within(tmp_path / "alias" / "sub" / "in.json", root)  # a linked root is the root
    assert not within(root / "out.json", root) and not within(root / "loop", root)


def test_a_write_never_follows_a_link_planted_at_its_temporary_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep")
    path = tmp_path / "out" / "manifest.json"
    path.parent.mkdir()
    planted = path.parent / ".manifest.json.planted.tmp"
    planted.symlink_to(victim)
    (path.parent / f".manifest.json.{os.getpid()}.tmp").symlink_to(victim)  # the old name
    names = iter(["planted", "fresh"])
    monkeypatch.setattr(tempfile, "_get_candidate_names", lambda: names)
    umask = os.umask(0o077)
    try:
        write_json(path, {"a": 1})
    finally:
        os.umask(umask)
    assert victim.read_text() == "keep" and json.loads(path.read_text()) == {"a": 1}
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert not (path.parent / ".manifest.json.fresh.tmp").exists()


def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.json"
    path.write_text("old")

    def fail(*_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="No space"):
        write_atomic(path, b"new")
    monkeypatch.undo()
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["m.json"]


PACKAGE = Path(mindspeed_prof.__file__).parent
#: Modules above the trace readers: every file they read is one of ours, read through jsonio.
ABOVE_READERS = [
    p
    for p in sorted(PACKAGE.rglob("*.py"))
    if p.relative_to(PACKAGE).parts[0] in ("analysis", "cli", "views", "formats")
    and "readers" not in p.relative_to(PACKAGE).parts
    or p.relative_to(PACKAGE).parts[:2] == ("capture", "control")
    or p.relative_to(PACKAGE).parts[0] == "ray"
]
#: Reads allowed elsewhere: the cache's version digest reads the package's own source.
ALLOWED = {("analysis/cache.py", "read_bytes")}


def _reads(path: Path) -> list[str]:
    """The calls in ``path`` that read a file other than through jsonio: ``open`` without a
    write mode, ``Path.read_text``/``read_bytes`` (a bare ``read_bytes`` is jsonio's),
    ``json.load``/``json.loads``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        if name == "open" and isinstance(f, ast.Name):
            modes = [a.value for a in node.args[1:2] if isinstance(a, ast.Constant)]
            if not any(isinstance(m, str) and set(m) & set("wax") for m in modes):
                found.append(name)
        elif (
            name in ("read_text", "read_bytes")
            and isinstance(f, ast.Attribute)
            or (
                name in ("load", "loads")
                and isinstance(f, ast.Attribute)
                and isinstance(f.value, ast.Name)
                and f.value.id == "json"
            )
        ):
            found.append(name)
    return [n for n in found if (str(path.relative_to(PACKAGE)), n) not in ALLOWED]


def test_no_module_above_the_readers_reads_a_file_but_through_jsonio() -> None:
    assert len(ABOVE_READERS) > 30
    assert {str(p.relative_to(PACKAGE)): _reads(p) for p in ABOVE_READERS if _reads(p)} == {}


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=6)
    | st.builds(Path, st.sampled_from(["a/b", "c"]))  # (``default=str``)
)
# Plain JSON (``json``'s to write), and documents: ``ROWS_DEPTH`` levels of objects and arrays
# holding plain values and ``JsonRows`` (objects of plain JSON made as they are written).
_PLAIN = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=12,
)
# (a row's keys as ``json`` takes them: numbers, booleans and null are written as strings)
_KEYS = st.text(max_size=3) | st.integers(-5, 5) | st.floats(-2, 2) | st.booleans() | st.none()
_ROWS = st.lists(st.dictionaries(_KEYS, _PLAIN, max_size=3), max_size=4).map(
    lambda rows: jsonio.JsonRows(rows, dict)  # type: ignore[arg-type]
)


def _level(inner: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return (
        inner
        | st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    )


_DOCS = _level(_level(_level(_ROWS | _PLAIN)))


def _whole(value: object) -> object:
    """``value`` with every ``JsonRows`` made into the list of its items."""
    if isinstance(value, jsonio.JsonRows):
        return [_whole(v) for v in value]
    if isinstance(value, dict):
        return {k: _whole(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_whole(v) for v in value]
    return value


@given(_DOCS)
def test_pieces_are_the_indented_json_of_the_rows_made_whole(doc: object) -> None:
    want = json.dumps(_whole(doc), indent=2, default=str)
    assert "".join(jsonio.pieces(doc)) == want


def test_rows_are_made_one_at_a_time_as_they_are_written() -> None:
    made: list[int] = []

    def each(i: int) -> dict[str, int]:
        made.append(i)
        return {"step": i}

    # how many rows were made when each piece came: none at the start, then one more at a time
    seen = [len(made) for _ in jsonio.pieces({"per_step": jsonio.JsonRows(range(3), each)})]
    assert made == [0, 1, 2]
    assert seen[0] == 0 and sorted(set(seen)) == [0, 1, 2, 3] and seen == sorted(seen)
