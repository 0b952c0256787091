"""Every output a command writes, on a full disk, a read-only folder or a closed pipe: one line
on stderr, exit 6 (``Exit.UNWRITTEN``), no traceback, and never a file cut short under the
output's name (files are written to a temporary name and renamed when complete).

A real full disk and a real read-only folder where this process can mount a tmpfs (root, a
kernel that lets it); the same faults injected with write doubles everywhere; ``/dev/full``
and a pipe whose reader is gone as they are.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from mindspeed_prof.analysis.timeline import build as timeline_module
from mindspeed_prof.cli import main
from mindspeed_prof.cli.common import Exit

PROG = [sys.executable, "-m", "mindspeed_prof.cli"]


def _mount(where: Path, *options: str) -> Generator[Path, None, None]:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root (the injected faults' tests run instead)")
    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", ",".join(options), "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(
            f"cannot mount a tmpfs here ({done.stderr.strip()}); "
            "the injected faults' tests run instead"
        )
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 32 KiB tmpfs."""
    yield from _mount(tmp_path / "disk", "size=32k")


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    """A read-only tmpfs (root cannot write there either, unlike a chmod-ed folder)."""
    yield from _mount(tmp_path / "ro", "ro", "size=32k")


def _one_line(err: str, *words: str) -> str:
    (line,) = err.splitlines()
    assert line.startswith("mindspeed-prof: "), err
    assert all(w in line for w in words), line
    assert "Traceback" not in err
    return line


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# --- stdout ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args", [["analyse"], ["analyse", "--json"], ["doctor"]], ids=["analyse", "json", "doctor"]
)
def test_stdout_on_a_full_device_is_one_line(run_dir: Path, args: list[str]) -> None:
    """``analyse DIR > /dev/full``: every write fails with ENOSPC."""
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [*PROG, *args, str(run_dir)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )
    lines = proc.stderr.splitlines()
    assert proc.returncode == Exit.UNWRITTEN, proc.stderr
    assert _one_line(lines[-1], "stdout", "No space left on device", "cut short")
    assert "Traceback" not in proc.stderr and "Exception" not in proc.stderr


@pytest.mark.parametrize("json_out", [False, True], ids=["text", "json"])
def test_stdout_closed_by_its_reader_is_one_line_not_no_captures(
    run_dir: Path, json_out: bool
) -> None:
    """``analyse DIR | head`` where head has gone: a pipe with no reader, before the command
    writes anything."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the command starts
    try:
        proc = subprocess.run(
            [*PROG, "analyse", str(run_dir), *(["--json"] * json_out)],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )
    finally:
        os.close(write)
    assert proc.returncode == Exit.UNWRITTEN != Exit.NOTHING
    line = _one_line(proc.stderr, "stdout was closed by its reader")
    assert "no captures" not in line


def test_compare_onto_a_full_device_is_one_line(run_dir: Path) -> None:
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [*PROG, "compare", str(run_dir), str(run_dir)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )
    assert proc.returncode == Exit.UNWRITTEN
    _one_line(proc.stderr.splitlines()[-1], "stdout", "No space left on device")
    assert "Traceback" not in proc.stderr


# --- files: the timeline and the HTML report ---------------------------------------------------


class _FullAfter:
    """A file whose writes fail with ENOSPC once it would pass ``room`` bytes (after a short
    write, as a real disk does)."""

    def __init__(self, raw: Any, room: int) -> None:
        self.raw, self.room = raw, room

    def write(self, data: bytes) -> int:
        room = self.room - self.raw.tell()
        if room <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return int(self.raw.write(data[:room]))

    def __enter__(self) -> _FullAfter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.raw.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


def _fill(disk: Path) -> None:
    """Fill ``disk`` to its last byte."""
    with open(disk / "filler", "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 512)
        except OSError as err:
            assert err.errno == errno.ENOSPC


def _timeline(run_dir: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["timeline", str(run_dir), "-o", str(out), "--jobs", "1"])
    return code, capsys.readouterr().err


def test_timeline_onto_an_injected_full_disk(
    run_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    real_open = open
    monkeypatch.setattr(
        timeline_module,
        "open",
        lambda file, mode: _FullAfter(real_open(file, mode), 4096),
        raising=False,
    )
    code, err = _timeline(run_dir, tmp_path / "merged.json", capsys)
    assert code == Exit.UNWRITTEN
    _one_line(
        err,
        str(tmp_path / "merged.json"),
        "No space left on device",
        "nothing written under that name",
    )
    assert _leftovers(tmp_path) == []  # neither the output nor its temporary file


def test_timeline_onto_a_real_full_disk(
    run_dir: Path, small_disk: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(small_disk)
    code, err = _timeline(run_dir, small_disk / "merged.json", capsys)
    assert code == Exit.UNWRITTEN
    _one_line(err, "merged.json", "No space left on device")
    assert _leftovers(small_disk) == ["filler"]


def test_timeline_into_a_read_only_folder(
    run_dir: Path, read_only: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _timeline(run_dir, read_only / "merged.json", capsys)
    assert code == Exit.UNWRITTEN
    _one_line(err, "merged.json", "Read-only file system")
    assert _leftovers(read_only) == []


def _html(run_dir: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    pytest.importorskip("matplotlib")
    code = main(["analyse", str(run_dir), "--json", "--html", str(out), "--jobs", "1"])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("fault", [errno.ENOSPC, errno.EROFS], ids=["full", "read_only"])
def test_html_report_onto_an_injected_fault_leaves_no_cut_report(
    run_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    fault: int,
) -> None:
    """The page is written whole at once: the double writes its first 64 KiB, then fails (a
    full disk), or fails at once (a read-only folder)."""
    real = Path.write_text

    def write_text(self: Path, text: str, *args: Any, **kwargs: Any) -> int:
        if fault == errno.ENOSPC:
            real(self, text[:65536], *args, **kwargs)
        raise OSError(fault, os.strerror(fault))

    monkeypatch.setattr(Path, "write_text", write_text)
    out = tmp_path / "out" / "report.html"
    code, err = _html(run_dir, out, capsys)
    assert code == Exit.UNWRITTEN
    _one_line(err, str(out), os.strerror(fault))
    assert _leftovers(out.parent) == []


def test_html_report_onto_a_real_full_disk(
    run_dir: Path, small_disk: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(small_disk)
    code, err = _html(run_dir, small_disk / "report.html", capsys)
    assert code == Exit.UNWRITTEN
    _one_line(err, "report.html", "No space left on device")
    assert _leftovers(small_disk) == ["filler"]


def test_a_written_report_is_whole_and_named(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The rename path: the report is there, whole, and nothing else beside it."""
    code, err = _html(run_dir, tmp_path / "report.html", capsys)
    assert code == Exit.OK, err
    assert _leftovers(tmp_path) == ["report.html"]
    assert (tmp_path / "report.html").read_text().rstrip().endswith("</html>")
    assert f"report: {tmp_path / 'report.html'}" in err


# --- sweep_summary.json -------------------------------------------------------------------------


def _sweep(at: Path) -> Path:
    """A multirun dir of two jobs, each with the manifest its callback wrote."""
    from mindspeed_prof.formats.manifest import Manifest, write_manifest

    for num in (0, 1):
        write_manifest(
            at / str(num) / f"manifest-run{num}.json",
            Manifest(status="completed", run=f"run{num}", rank=0),
        )
    (at / "multirun.yaml").write_text("hydra: {}\n")
    return at


def test_sweep_summary_in_an_injected_read_only_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from mindspeed_prof.analysis import sweep

    def read_only(path: Path, data: object) -> None:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(sweep, "write_json", read_only)
    multirun = _sweep(tmp_path / "multirun")
    assert main(["sweep", str(multirun)]) == Exit.UNWRITTEN
    _one_line(capsys.readouterr().err, str(multirun / sweep.SUMMARY_NAME), "Read-only file system")


def test_sweep_summary_in_a_real_read_only_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The sweep dir made on a tmpfs, which is then remounted read-only."""
    mounted = _mount(tmp_path / "disk", "size=64k")
    disk = next(mounted)  # the generator held: collecting it unmounts
    try:
        multirun = _sweep(disk)
        remount = subprocess.run(
            ["mount", "-o", "remount,ro", str(disk)], capture_output=True, text=True
        )
        if remount.returncode != 0:
            pytest.skip(f"cannot remount read-only here ({remount.stderr.strip()})")
        assert main(["sweep", str(multirun)]) == Exit.UNWRITTEN
        _one_line(capsys.readouterr().err, "sweep_summary.json", "Read-only file system")
    finally:
        mounted.close()


def test_json_written_in_pieces_is_json_dumps_text() -> None:
    """``analyse --json`` writes its document a chunk at a time: the same text as
    ``json.dumps(indent=2, default=str)``, chunk edges anywhere (names, numbers, odd values)."""
    import io
    import json

    from mindspeed_prof.cli import output

    doc = {
        "rows": [
            {"step": i, "ms": i / 7, "name": f"range{i % 5}\u00e9", "none": None, "ok": i % 2 == 0}
            for i in range(3000)
        ],
        "path": Path("a/b"),
        "odd": [float("nan"), float("inf"), -0.0, 1e16, 10**20, '\n\t"q"'],
        "empty": {},
    }
    out = io.StringIO()
    output.write_json(doc, out)
    assert out.getvalue() == json.dumps(doc, indent=2, default=str)
    assert len(out.getvalue()) > 2 * output.JSON_CHUNK  # written in several chunks
