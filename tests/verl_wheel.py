"""verl's real config tree, from its published wheel (downloaded without dependencies, once per
test session; nothing of verl is kept in this repository nor installed)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

__all__ = ["PINNED", "RELEASES", "add_defaults_line", "download_config_tree"]

PINNED = "verl==0.9.1"
#: The releases the clients tests compose: 0.9.0 (no finish hook, no memory window) and the pin.
RELEASES = ("verl==0.9.0", PINNED)
CONFIG = "verl/trainer/config/"


def download_config_tree(folder: Path, pinned: str = PINNED) -> Path | str:
    """``verl/trainer/config`` of the ``pinned`` wheel under ``folder``, or why it could not be
    had (no network, no index: one line)."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-cache-dir",
            "-q",
            "-d",
            str(folder),
            "--python-version",
            "3.11",
            "--only-binary=:all:",
            pinned,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    wheels = sorted(folder.glob("verl-*.whl"))
    if proc.returncode != 0 or not wheels:
        lines = [x for x in proc.stderr.strip().splitlines() if not x.startswith("WARNING")]
        return (lines or ["no wheel written"])[-1]
    with zipfile.ZipFile(wheels[0]) as zf:
        zf.extractall(folder / "unpacked", [n for n in zf.namelist() if n.startswith(CONFIG)])
    return folder / "unpacked" / CONFIG


def add_defaults_line(tree: Path, into: Path, line: str = "- profiler_config: none") -> Path:
    """A copy of ``tree`` in ``into`` whose primary configs have ``line`` in their defaults list,
    just before ``_self_`` (what the README tells a verl user to add)."""
    shutil.copytree(tree, into)
    for name in ("ppo_trainer.yaml", "sft_trainer_engine.yaml"):
        path = into / name
        text = path.read_text()
        assert "\n  - _self_\n" in text, name
        path.write_text(text.replace("\n  - _self_\n", f"\n  {line}\n  - _self_\n", 1))
    return into
