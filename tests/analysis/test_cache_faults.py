"""The cache never changes an answer: flipped bits, swapped and stale entries, FIFOs, links to
``/dev/zero`` and links planted at temporary names are each read again or refused, never served
nor followed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from capture_fixtures import make_run

from mindspeed_prof.analysis import cache
from mindspeed_prof.analysis.readers import TraceData, discover, read
from mindspeed_prof.formats import CACHE


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_run(tmp_path_factory.mktemp("run"), ranks=(0, 1), steps=2, profile_level="level0")


@pytest.fixture
def captures(run: Path, tmp_path: Path) -> dict[int, Path]:
    """A fresh copy of rank 0's and rank 1's torch trace, each alone in its folder."""
    out = {}
    for path in discover(run):
        if path.name.endswith(".pt.trace.json"):
            rank = int(path.name[4])
            (tmp_path / str(rank)).mkdir()
            out[rank] = Path(shutil.copy2(path, tmp_path / str(rank) / path.name))
    return out


def _bit_flips(size: int) -> Iterator[tuple[int, int]]:
    """(byte, bit) positions: every bit of the first 160 bytes (magic, checksum, version,
    fingerprint), of the last 16, and of 240 bytes spread evenly over the rest."""
    head = range(min(size, 160))
    spread = range(160, size, max(1, (size - 160) // 240))
    for at in sorted({*head, *spread, *range(max(0, size - 16), size)}):
        for bit in range(8):
            yield at, bit


def test_no_single_bit_flip_of_an_entry_changes_the_answer(captures: dict[int, Path]) -> None:
    capture = captures[0]
    right = cache.read_cached(capture)
    entry = cache.cache_path(capture)
    good = entry.read_bytes()
    key = cache.fingerprint(capture)
    flips = list(_bit_flips(len(good)))
    assert len(flips) > 3000
    fd = os.open(entry, os.O_RDWR)
    try:
        for at, bit in flips:  # flipped in place, then put back
            os.pwrite(fd, bytes([good[at] ^ 1 << bit]), at)
            assert cache.load(capture, key) is None, f"byte {at} bit {bit}: served damaged"
            os.pwrite(fd, good[at : at + 1], at)
    finally:
        os.close(fd)
    assert entry.read_bytes() == good
    assert cache.load(capture, key) == right  # the undamaged entry is served


def test_a_damaged_entry_is_read_again_and_replaced(captures: dict[int, Path]) -> None:
    capture = captures[1]
    right = read(capture)
    cache.read_cached(capture)
    entry = cache.cache_path(capture)
    raw = bytearray(entry.read_bytes())
    raw[len(raw) // 2] ^= 0x10
    entry.write_bytes(bytes(raw))
    assert cache.read_cached(capture) == right
    assert cache.load(capture, cache.fingerprint(capture)) == right  # rewritten whole


def _same_size_and_mtime(a: Path, b: Path) -> None:
    """``b`` padded with spaces to ``a``'s size (still the same JSON), and ``a``'s mtime."""
    pad = a.stat().st_size - b.stat().st_size
    if pad < 0:
        a, b, pad = b, a, -pad
    b.write_bytes(b.read_bytes() + b" " * pad)
    st = a.stat()
    os.utime(b, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_another_captures_entry_with_its_size_and_mtime_is_not_served(
    captures: dict[int, Path],
) -> None:
    """The probe: rank 1's entry copied next to rank 0's capture of the same size and mtime
    showed rank 0 as rank 1."""
    zero, one = captures[0], captures[1]
    _same_size_and_mtime(zero, one)
    assert (zero.stat().st_size, zero.stat().st_mtime_ns) == (
        one.stat().st_size,
        one.stat().st_mtime_ns,
    )
    assert cache.read_cached(one).rank == 1
    shutil.copyfile(cache.cache_path(one), cache.cache_path(zero))
    got = cache.read_cached(zero)
    assert got.rank == 0 and got == read(zero)


def _rewrite_in_place(path: Path, at: int, old: bytes, new: bytes) -> None:
    """Replace ``old`` by ``new`` (same length) at or after byte ``at``, in place, then put
    the old atime and mtime back (``touch -r``)."""
    st = path.stat()
    raw = path.read_bytes()
    where = raw.index(old, at)
    with open(path, "r+b") as f:
        f.seek(where)
        f.write(new)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


@pytest.mark.parametrize("where", ["head", "middle", "tail"])
def test_a_same_size_rewrite_with_its_mtime_put_back_is_read_again(
    captures: dict[int, Path], where: str
) -> None:
    capture = captures[0]
    first = cache.read_cached(capture)
    raw = capture.read_bytes()
    at = {"head": 0, "middle": len(raw) // 2, "tail": len(raw) - 2 * cache.BLOCK}[where]
    name = next(n for n in first.ops if raw.find(f'"{n}"'.encode(), at) >= 0)
    before = capture.stat()
    time.sleep(0.05)  # past the kernel's coarse clock tick, so the rewrite has a new ctime
    _rewrite_in_place(capture, at, f'"{name}"'.encode(), b'"' + b"z" * len(name) + b'"')
    after = capture.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        before.st_size,
        before.st_mtime_ns,
        before.st_ino,
    )
    again = cache.read_cached(capture)
    assert again == read(capture) and "z" * len(name) in again.ops


def _bounded(call: Callable[[], object], seconds: float = 30.0) -> object:
    """``call()`` in a thread; fails (rather than hangs) when it does not return in time."""
    out: list[object] = []
    thread = threading.Thread(target=lambda: out.append(call()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"blocked for {seconds:g} s"
    return out[0]


def test_a_fifo_entry_is_refused_at_once_and_replaced(captures: dict[int, Path]) -> None:
    capture = captures[0]
    entry = cache.cache_path(capture)
    os.mkfifo(entry)
    key = cache.fingerprint(capture)
    assert _bounded(lambda: cache.load(capture, key)) is None
    assert _bounded(lambda: cache.read_cached(capture)) == read(capture)
    assert entry.is_file() and cache.load(capture, key) == read(capture)


def test_an_entry_linked_to_dev_zero_or_too_large_is_refused_unread(
    captures: dict[int, Path],
) -> None:
    import tracemalloc

    capture = captures[0]
    entry = cache.cache_path(capture)
    key = cache.fingerprint(capture)
    assert key is not None
    entry.symlink_to("/dev/zero")
    assert _bounded(lambda: cache.load(capture, key)) is None
    entry.unlink()
    with open(entry, "wb") as f:  # sparse: past the bound without using the disk
        f.truncate(2 * key.size + (64 << 20) + 1)
    tracemalloc.start()
    try:
        assert cache.load(capture, key) is None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20
    assert cache.read_cached(capture) == read(capture)
    assert entry.stat().st_size < key.size  # replaced by a real entry


def test_links_planted_at_temporary_names_are_never_followed(
    captures: dict[int, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Links at the names earlier versions wrote through (``<entry>.<pid>.tmp``, for this
    process and its neighbours), and at the very name the next temporary file is given: the
    file they point to outside the folder is untouched, and the entry is written whole."""
    capture = captures[0]
    victim = tmp_path / "outside.txt"
    victim.write_text("precious")
    entry = cache.cache_path(capture)
    for pid in range(os.getpid() - 5, os.getpid() + 6):
        entry.with_name(f"{entry.name}.{pid}.tmp").symlink_to(victim)
    planted = entry.with_name(f"{entry.name}.planted.tmp")
    planted.symlink_to(victim)
    names = iter(["planted", "fresh123"])
    monkeypatch.setattr(tempfile, "_get_candidate_names", lambda: names)
    assert cache.read_cached(capture) == read(capture)
    assert victim.read_text() == "precious"
    assert entry.is_file() and not entry.is_symlink()
    assert planted.is_symlink() and not entry.with_name(f"{entry.name}.fresh123.tmp").exists()
    monkeypatch.undo()
    assert cache.load(capture, cache.fingerprint(capture)) == read(capture)


def test_analyse_ends_with_the_right_answer_over_a_fifo_and_a_dev_zero_entry(
    run: Path, tmp_path: Path
) -> None:
    """The probe's two hangs, through the command: a FIFO at one capture's entry, a link to
    ``/dev/zero`` at another's, under a 2 GiB address-space limit."""

    def analyse(root: Path) -> dict[str, object]:
        limit = "import resource; resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))"
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                f"{limit}; from mindspeed_prof.cli import main; import sys; "
                f"sys.exit(main(['analyse', {str(root)!r}, '--json', '--jobs', '1']))",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        return dict(json.loads(proc.stdout))

    clean = Path(shutil.copytree(run, tmp_path / "clean"))
    for entry in clean.rglob(f"*{CACHE}"):
        entry.unlink()
    root = Path(shutil.copytree(clean, tmp_path / "run"))
    paths = [p for p in discover(root) if p.name.endswith(".pt.trace.json")]
    os.mkfifo(cache.cache_path(paths[0]))
    cache.cache_path(paths[1]).symlink_to("/dev/zero")
    got, right = analyse(root), analyse(clean)
    assert got["stage_rank"] == right["stage_rank"] and got["top_ops"] == right["top_ops"]
    assert all(
        cache.cache_path(p).is_file() and not cache.cache_path(p).is_symlink() for p in paths
    )


def test_a_name_that_is_not_utf8_gets_no_entry_and_the_same_answer(
    tmp_path: Path, run: Path
) -> None:
    source = next(p for p in discover(run) if p.name.endswith(".mstx.trace.json"))
    odd = Path(os.fsdecode(os.fsencode(tmp_path) + b"/rank0_\xff\xfe_1_step1.mstx.trace.json"))
    shutil.copy2(source, odd)
    data = cache.read_cached(odd)
    assert isinstance(data, TraceData) and data.ranges == read(odd).ranges
    assert [p.name for p in tmp_path.iterdir()] == [odd.name]  # no entry, no temporary file
