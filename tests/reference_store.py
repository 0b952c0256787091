"""The reference tools' outputs (HTA, msprof-analyze) kept as checked-in fixtures.

Running HTA and msprof-analyze on the corpus takes minutes; what the reference tests compare of
their output is a few figures per input. :meth:`Store.figures` answers a call of a tool on an
input from ``tests/fixtures/reference/<store>.json`` when the fixture was made from the same
thing: the same bytes of input (every file the tool reads, or the set's files where the call
prepares the tool's copy itself), the same call (the source of the function that runs the tool
and picks its figures, of the functions it prepares the input with, and its options) and the
same version of the tool as installed. Anything else, and the tool runs live (with a warning
naming the script that renews the fixture), so a fixture can never stand in for an output it was
not made from. The figures come back through a JSON round trip either way: live or kept, the
tests see the same types.

``scripts/reference_fixtures.py`` renews every fixture: it runs the reference tests with
``MINDSPEED_PROF_REFERENCE=renew``, under which every call runs the tool and writes its figures.
``MINDSPEED_PROF_REFERENCE=live`` runs every call live and writes nothing (the tests as they were
before the fixtures: to time them, or to see the tools agree today).
``tests/analysis/test_reference_fixtures.py`` checks each fixture against the corpus sets it was
made from (their digest, as checked in) and the installed tool.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import threading
import warnings
from collections.abc import Callable
from functools import partial
from importlib.metadata import version
from pathlib import Path
from typing import Any

from corpus import CORPUS, SETS

from mindspeed_prof.formats import CACHE

__all__ = ["FIXTURES", "RENEW", "Store", "digest", "set_digest", "set_of"]

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "reference"
#: ``renew`` (scripts/reference_fixtures.py sets it): every call live, its figures written;
#: ``live``: every call live, nothing written.
RENEW = "MINDSPEED_PROF_REFERENCE"
_LOCK = threading.Lock()


def digest(root: Path | list[Path]) -> str:
    """Every file under ``root`` (or the files given): relative path (name) and bytes, hashed;
    not our analysis cache's entries (written next to a capture our side reads)."""
    if isinstance(root, list):
        files = root
    else:
        files = (
            sorted(p for p in root.rglob("*") if p.is_file() and not p.name.endswith(CACHE))
            if root.is_dir()
            else [root]
        )
    h = hashlib.sha256()
    for p in files:
        rel = (
            p.relative_to(root).as_posix() if isinstance(root, Path) and root.is_dir() else (p.name)
        )
        h.update(rel.encode() + b"\0" + hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()[:32]


def set_of(path: Path) -> tuple[str, ...]:
    """The corpus set a file lies in (its name, alone), or none (``sets.json``)."""
    top = path.relative_to(CORPUS).parts[0]
    return tuple(name for name, s in SETS.items() if s["path"] == top)


def set_digest(name: str) -> str:
    """A corpus set's files as checked in (``*.xz`` packed)."""
    return digest(CORPUS / SETS[name]["path"])


def _source(call: Callable[..., Any]) -> str:
    """The call's function source, and a partial's bound arguments."""
    if isinstance(call, partial):
        return _source(call.func) + repr((call.args, sorted(call.keywords.items())))
    return inspect.getsource(call)


class Store:
    """The kept figures of one tool (its distribution name) for one test module."""

    def __init__(self, name: str, tool: str) -> None:
        self.path = FIXTURES / f"{name}.json"
        self.tool = tool
        self.version = version(tool)
        doc = json.loads(self.path.read_text()) if self.path.is_file() else {}
        self.entries: dict[str, Any] = (
            doc.get("entries", {}) if doc.get("version") == self.version else {}
        )
        self.live: list[str] = []  # the labels of the calls that ran the tool

    def figures(
        self,
        call: Callable[[Any], Any],
        inputs: Path | list[Path],
        label: str,
        sets: tuple[str, ...] = (),
        options: str = "",
        code: tuple[Callable[..., Any], ...] = (),
    ) -> Any:
        """``call(inputs)``'s figures (JSON), kept or live. ``inputs``: a folder, or files;
        ``label`` names the entry for people; ``sets`` the corpus sets the input is made from;
        ``options`` whatever else the call depends on (environment variables); ``code`` the
        functions it calls to prepare the tool's input (their source is keyed too)."""
        source = "\0".join(_source(f) for f in (call, *code))
        key = hashlib.sha256("\0".join((source, options, digest(inputs))).encode())
        key_hex = key.hexdigest()[:32]
        mode = os.environ.get(RENEW, "")
        kept = self.entries.get(key_hex)
        if kept is not None and mode not in ("renew", "live"):
            return kept["figures"]
        if kept is None and not mode:
            warnings.warn(
                f"{self.path.name}: no fixture for {label} with {self.tool} "
                f"{self.version}: ran it live (renew: python scripts/"
                f"reference_fixtures.py)",
                stacklevel=2,
            )
        self.live.append(label)
        figures = json.loads(json.dumps(call(inputs)))
        if mode == "renew":
            self._write(
                key_hex,
                {"label": label, "sets": {s: set_digest(s) for s in sets}, "figures": figures},
            )
        return figures

    def _write(self, key: str, entry: dict[str, Any]) -> None:
        with _LOCK:
            doc = json.loads(self.path.read_text()) if self.path.is_file() else {}
            if doc.get("version") != self.version:
                doc = {"tool": self.tool, "version": self.version, "entries": {}}
            doc["entries"][key] = entry
            doc["entries"] = dict(
                sorted(doc["entries"].items(), key=lambda kv: (kv[1]["label"], kv[0]))
            )
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
