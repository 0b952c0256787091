"""Every ``analyse --json`` answer on the corpus, dumped to a folder, and two dumps compared.

A change that should not alter any answer (a faster reader, a lazier import) is checked by
dumping before and after and comparing byte for byte::

    python scripts/corpus_answers.py dump before/      # on the old checkout
    python scripts/corpus_answers.py dump after/       # on the new one
    python scripts/corpus_answers.py diff before/ after/

Each set of ``tests/fixtures/corpus`` is unpacked to the same place every time (a folder under
the system's temporary folder, emptied first), so the paths the answers name agree between
runs (and an expanded file keeps its packed file's times); each set is a fresh copy, so nothing
comes from the cache. ``dump`` writes
``NAME.json`` (stdout) and ``NAME.rc`` (exit code and stderr) per set; ``diff`` prints one line
per set that differs and exits 1 if any does. ``--only NAME`` (repeatable) limits the sets.
"""

from __future__ import annotations

import argparse
import difflib
import json
import lzma
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "fixtures" / "corpus"
PLACE = Path(tempfile.gettempdir()) / "mindspeed-prof-corpus-answers"


def sets() -> list[tuple[str, str]]:
    """(name, folder) of every corpus set, in sets.json's order."""
    listed = json.loads((CORPUS / "sets.json").read_text(encoding="utf-8"))
    return [(s["name"], s["path"]) for s in listed]


def unpack(folder: str, dest: Path) -> Path:
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(CORPUS / folder, dest)
    for packed in dest.rglob("*.xz"):
        plain = packed.with_suffix("")
        plain.write_bytes(lzma.decompress(packed.read_bytes()))
        stat = packed.stat()  # the packed file's times (copied): answers name a file's mtime
        os.utime(plain, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        packed.unlink()
    return dest


def _cli() -> list[str]:
    exe = Path(sys.executable).with_name("mindspeed-prof")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "mindspeed_prof.cli"]


def dump(out: Path, only: list[str]) -> int:
    out.mkdir(parents=True, exist_ok=True)
    for name, folder in sets():
        if only and name not in only:
            continue
        dest = unpack(folder, PLACE / name)
        run = subprocess.run(
            [*_cli(), "analyse", "--json", "--jobs", "1", str(dest)],
            capture_output=True,
            text=True,
            timeout=900,
        )
        (out / f"{name}.json").write_text(run.stdout)
        (out / f"{name}.rc").write_text(f"{run.returncode}\n{run.stderr}")
        shutil.rmtree(dest, ignore_errors=True)
        print(f"{name}: exit {run.returncode}, {len(run.stdout):,} bytes", flush=True)
    return 0


def diff(a: Path, b: Path) -> int:
    differ = 0
    names = sorted({p.name for p in a.iterdir()} | {p.name for p in b.iterdir()})
    for name in names:
        left, right = a / name, b / name
        x = left.read_text() if left.exists() else "<missing>\n"
        y = right.read_text() if right.exists() else "<missing>\n"
        if x == y:
            continue
        differ += 1
        lines = list(
            difflib.unified_diff(
                x.splitlines(), y.splitlines(), str(left), str(right), n=0, lineterm=""
            )
        )
        print(f"{name}: differs ({len(lines)} diff lines)")
        print("\n".join(lines[:12]))
    print(f"{len(names)} files, {differ} differ")
    return 1 if differ else 0


def main() -> int:
    p = argparse.ArgumentParser(prog="corpus_answers.py", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("out", type=Path)
    d.add_argument("--only", action="append", default=[])
    c = sub.add_parser("diff")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    args = p.parse_args()
    return dump(args.out, args.only) if args.cmd == "dump" else diff(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
