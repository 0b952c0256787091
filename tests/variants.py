"""Variants of a capture set that nobody wrote by hand, each with the answer it must give.

``make(src, dest, recipe)`` writes a copy of the set at ``src`` transformed as ``recipe``
says and returns a ``Variant``: where it is, and how its answer differs from the original's
(the file names, ranks and clock it renamed or shifted). ``variants_answer`` takes that
difference out of an answer. The parts of a recipe (docs/invariants.md has the table):

- ``reorder``: every object's keys reversed (1) or shuffled (2), at every depth;
- ``metadata``: a ``metadata`` object of that many bytes first, before ``traceEvents``;
- ``list_form``: the events as a bare list (JSON Array Format): the rank moves into the
  file name, the top level's records (device properties, distributedInfo) are gone;
- ``compress``: ``.json`` <-> ``.json.gz``;
- ``rename``: random hex names (never ``.pt.trace``) in the reverse of the original order,
  keeping what the formats fix (suffixes, a rank in a name, torch_npu's folder suffix and
  everything inside the folder); ``nest``: captures that many folders deeper;
- ``split``: each trace of two steps or more cut in two at a step (``Variant.cuts``);
- ``shift_us``: every ``ts`` moved (1e15 us), compared with the original quantised to the
  grid of doubles there (``Recipe.baseline``); ``fraction_ns``: up to that many ns added to
  every ``ts`` and ``dur``, growing with the value (``Variant.slack_ms``);
- ``ranks``: a permutation of the job's ranks (``Variant.ranks``).

torch_npu folders and msprof exports take ``reorder``, ``rename`` and ``nest`` (their times
and ranks live in CSV and SQLite tables). Files that are not captures are copied as they are.
"""

from __future__ import annotations

import dataclasses
import gzip
import lzma
import math
import random
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import msgspec
from variants_trace import (
    RANK_IN_NAME,
    metadata,
    name_rank,
    number,
    retime,
    shuffled,
    split,
    steps_of,
    trace_rank,
)

__all__ = ["Recipe", "Variant", "make", "steps_of", "trace_rank", "traces_of"]

_ENCODE = msgspec.json.Encoder(decimal_format="number")
#: A rank in a file or folder name, as the readers take it (``rank3_``, ``rank-3.``).
NPU_FOLDER = "_ascend_pt"
NPU_OUTPUT = "ASCEND_PROFILER_OUTPUT"
MSPROF_OUTPUT = "mindstudio_profiler_output"  # an msprof export's: its folder is kept whole
#: Kineto's categories of device work (``readers.events.DEVICE_CATS``, written out here so
#: the variants do not lean on the package they test).
_DEVICE = {
    "kernel",
    "gpu_memcpy",
    "gpu_memset",
    "Kernel",
    "Memcpy",
    "Memset",
    "gpu_user_annotation",
}
_STEP = re.compile(r"^ProfilerStep#(\d+)$")


@dataclass(frozen=True)
class Recipe:
    """What to do to a set; the defaults change nothing."""

    seed: int = 0
    #: 1: every object's keys in reverse order; 2: shuffled (by ``seed``).
    reorder: int = 0
    metadata: int = 0
    list_form: bool = False
    compress: bool = False
    rename: bool = False
    nest: int = 0
    split: bool = False
    shift_us: float = 0.0
    #: Put the times on the grid they would have once shifted by this much, without shifting:
    #: the original a shifted variant is compared with.
    quantise_us: float = 0.0
    fraction_ns: float = 0.0
    ranks: bool = False

    @property
    def name(self) -> str:
        parts = [
            f.name
            for f in dataclasses.fields(self)
            if f.name != "seed" and getattr(self, f.name) not in (False, 0, 0.0)
        ]
        return "+".join(parts) or "copy"

    def baseline(self) -> Recipe | None:
        """The recipe of the variant this one's answer is compared with, where that is not the
        original itself: the same recipe unshifted, its times quantised as the shift would."""
        if not self.shift_us:
            return None
        return replace(self, shift_us=0.0, quantise_us=self.shift_us)


@dataclass
class Variant:
    """A variant written at ``root``: ``paths`` maps each relative path in it (files and
    folders) to the original's, ``ranks`` each new rank to the original one."""

    recipe: Recipe
    root: Path
    src: Path
    paths: dict[str, str] = field(default_factory=dict)
    ranks: dict[int, int] = field(default_factory=dict)
    #: How far a figure (ms) may move: the fractions added and the rounding they cause.
    slack_ms: float = 0.0
    #: Traces cut in two (``split``): the original's path, its rank, the steps either side.
    cuts: list[tuple[str, int | None, int, int]] = field(default_factory=list)


# -- reading and writing traces -------------------------------------------------------------------


def _open(path: Path) -> bytes:
    """A file's bytes, unpacked (``.gz``; ``.xz``, as the corpus keeps some files)."""
    raw = path.read_bytes()
    name = path.name
    if name.endswith(".xz"):
        raw, name = lzma.decompress(raw), name[:-3]
    return gzip.decompress(raw) if name.endswith(".gz") else raw


def load_trace(path: Path) -> dict[str, Any] | None:
    """The trace at ``path`` when it is a Chrome trace object (``traceEvents`` a list)."""
    if not path.name.removesuffix(".xz").endswith((".json", ".json.gz")):
        return None
    try:
        doc = msgspec.json.decode(_open(path))
    except (msgspec.DecodeError, OSError, EOFError):
        return None
    if isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list):
        return doc
    return None


def traces_of(root: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Every Chrome trace object below ``root`` outside torch_npu folders."""
    for path in sorted(root.rglob("*")):
        parts = path.relative_to(root).parts
        if (
            path.is_file()
            and not path.name.startswith(".")
            and not any(p.endswith(NPU_FOLDER) or p == NPU_OUTPUT for p in parts)
        ):
            doc = load_trace(path)
            if doc is not None:
                yield path, doc


def _write(path: Path, doc: Any) -> None:
    raw = _ENCODE.encode(doc)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(
        gzip.compress(raw, compresslevel=1, mtime=0) if path.name.endswith(".gz") else raw
    )


# -- names ----------------------------------------------------------------------------------------


class _Names:
    """Fresh random names (hex: never ``rank`` nor ``.pt.trace``), each sorting before the one
    made before it: renamed files and folders are found in the reverse of their original
    order, so whatever the package does in the order it finds files shows."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.left = 99_999

    def fresh(self, n: int = 8) -> str:
        self.left -= 1
        return f"{self.left:05d}" + "".join(self.rng.choices("0123456789abcdef", k=n))


def _suffix(name: str) -> str:
    return ".json.gz" if name.endswith(".json.gz") else ".json" if name.endswith(".json") else ""


def _new_name(name: str, rank: int | None, recipe: Recipe, names: _Names, tag: str = "") -> str:
    """A trace's new name: random (``rename``), its suffix toggled (``compress``), a rank
    token where the rank must come from the name."""
    suffix = _suffix(name)
    if recipe.compress:
        suffix = ".json" if suffix == ".json.gz" else ".json.gz"
    stem = name[: len(name) - len(_suffix(name))]
    if recipe.rename:
        stem = names.fresh()
    if rank is not None:
        if RANK_IN_NAME.search(stem):
            stem = RANK_IN_NAME.sub(
                lambda m: m.group(0)[: m.start(1) - m.start(0)] + str(rank), stem
            )
        else:  # where the original had it: ``rank<r>_...`` names mindspeed-prof's own
            lead = re.match(r"rank\d+_", name)  # captures (doctor expects ranks 0..r)
            stem = f"rank{rank}_{stem}" if lead else f"{stem}_rank{rank}"
    return stem + tag + suffix


def _folder(rel: Path, recipe: Recipe, names: _Names, done: dict[Path, Path]) -> Path:
    """A folder's new relative path: each part renamed once (an ``_ascend_pt`` folder keeps
    its suffix and any rank in its name)."""
    if rel == Path("."):
        return rel
    if rel in done:
        return done[rel]
    parent = _folder(rel.parent, recipe, names, done)
    name = rel.name
    if recipe.rename:
        rank = name_rank(name)
        keep = NPU_FOLDER if name.endswith(NPU_FOLDER) else ""
        name = names.fresh() + (f"_rank{rank}" if rank is not None else "") + keep
    done[rel] = parent / name
    return done[rel]


# -- a variant ------------------------------------------------------------------------------------


def make(src: Path, dest: Path, recipe: Recipe) -> Variant:
    """``src`` (an unpacked set) written to ``dest`` (which must not exist) as ``recipe``
    says."""
    rng = random.Random(recipe.seed)
    names = _Names(rng)
    npu_folders = {
        p.relative_to(src)
        for p in src.rglob("*")
        if p.is_dir()
        and (
            p.name.endswith(NPU_FOLDER) or (p / NPU_OUTPUT).is_dir() or (p / MSPROF_OUTPUT).is_dir()
        )
    }
    out = Variant(recipe, dest, src)
    dest.mkdir(parents=True)
    folders: dict[Path, Path] = {}
    nests: dict[Path, Path] = {}
    ranks: dict[int, int] = {}

    def nested(top: Path) -> Path:
        """The folders a capture (a file, or a torch_npu folder) is moved down into."""
        if top not in nests:
            nests[top] = Path(*[names.fresh(4) for _ in range(recipe.nest)])
        return nests[top]

    if recipe.ranks:  # a permutation of the ranks the job had, moving every rank captured
        ranks = _permutation(src, rng)

    def renumber(rank: int | None) -> int | None:
        return rank if rank is None else ranks.get(rank, rank)

    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        if path.is_dir() or path.name.startswith("."):
            continue
        npu = next(
            (
                Path(*rel.parts[:i])
                for i in range(1, len(rel.parts))
                if Path(*rel.parts[:i]) in npu_folders
            ),
            None,
        )
        if npu is not None:  # inside a torch_npu folder: its own names stay
            where = nested(npu) / _folder(npu, recipe, names, folders)
            new = where / rel.relative_to(npu)
            out.paths[str(where)] = str(npu)
            _copy_npu(path, dest / new, recipe, rng)
            continue
        parent = _folder(rel.parent, recipe, names, folders)
        if not _rewrites(recipe) and _suffix(path.name):  # names only: the bytes stay
            name = _new_name(path.name, name_rank(path.name), recipe, names)
            where = nested(rel) / parent / name
            _recompress(path, dest / where)
            out.paths[str(where)] = str(rel)
            continue
        doc = load_trace(path)
        if doc is None:  # not a capture: copied as it is
            (dest / parent).mkdir(parents=True, exist_ok=True)
            shutil.copy(path, dest / parent / path.name)
            continue
        rank, inside = trace_rank(doc, path.name)
        new_rank = renumber(rank)
        if inside and recipe.ranks:
            doc["distributedInfo"] = {**doc["distributedInfo"], "rank": new_rank}
        # a rank in the name where the name is where it comes from (or will, in list form),
        # or where the original name carries one
        in_name = (
            new_rank
            if rank is not None
            and (not inside or recipe.list_form or name_rank(path.name) is not None)
            else None
        )
        cut = split(doc, rng) if recipe.split else None
        parts = cut[0] if cut else None
        pieces = parts or [doc]
        if cut:
            out.cuts.append((str(rel), rank, cut[1], cut[2]))
        for i, piece in enumerate(pieces):
            if recipe.fraction_ns or recipe.shift_us or recipe.quantise_us:
                retime(
                    piece["traceEvents"],
                    rng,
                    recipe.fraction_ns,
                    recipe.shift_us,
                    recipe.quantise_us,
                )
            if recipe.shift_us and isinstance(piece.get("baseTimeNanoseconds"), int):
                piece["baseTimeNanoseconds"] -= int(recipe.shift_us * 1000)
            if recipe.metadata:
                piece = {"metadata": metadata(recipe.metadata, rng), **piece}
            if recipe.reorder:
                piece = shuffled(piece, rng, recipe.reorder)
                if recipe.metadata:  # first stays first
                    piece = {"metadata": piece.pop("metadata"), **piece}
            body: Any = piece["traceEvents"] if recipe.list_form else piece
            name = _new_name(
                path.name,
                in_name,
                recipe,
                names,
                f".part{i + 1}" if parts and not recipe.rename else "",
            )
            where = nested(rel) / parent / name
            _write(dest / where, body)
            out.paths[str(where)] = str(rel)
    for old, new in folders.items():
        out.paths.setdefault(str(new), str(old))
    for top, deeper in nests.items():
        out.paths.setdefault(
            str(deeper / _folder(top.parent, recipe, names, folders)), str(top.parent)
        )
    out.ranks = {new: old for old, new in ranks.items()}
    if recipe.fraction_ns:
        out.slack_ms = _slack(src, recipe)
    return out


def _permutation(src: Path, rng: random.Random) -> dict[int, int]:
    """New ranks for the job's ranks ``0..W-1`` (W its world size where a trace records it,
    else one past the highest rank): the job stays the same size, so what a world size or
    the highest rank implies (the ranks doctor expects) is unchanged. Every captured rank
    moves where W > 1."""
    captured: set[int] = set()
    size = 0
    for path, doc in traces_of(src):
        rank = trace_rank(doc, path.name)[0]
        info = doc.get("distributedInfo")
        world = info.get("world_size") if isinstance(info, dict) else None
        if isinstance(world, int) and not isinstance(world, bool):
            size = max(size, world)
        if rank is not None:
            captured.add(rank)
            size = max(size, rank + 1)
    order = list(range(size))
    for _ in range(100):
        rng.shuffle(order)
        if size < 2 or all(order[r] != r for r in captured if r < size):
            break
    return {r: order[r] for r in range(size)}


def _rewrites(recipe: Recipe) -> bool:
    """Whether the recipe changes what a trace holds (else only names, folders and
    compression change, and the bytes are copied)."""
    return any(
        (
            recipe.reorder,
            recipe.metadata,
            recipe.list_form,
            recipe.split,
            recipe.shift_us,
            recipe.quantise_us,
            recipe.fraction_ns,
            recipe.ranks,
        )
    )


def _recompress(path: Path, new: Path) -> None:
    new.parent.mkdir(parents=True, exist_ok=True)
    gz_in, gz_out = path.name.endswith(".gz"), new.name.endswith(".gz")
    if gz_in == gz_out:
        shutil.copy(path, new)
    elif gz_in:
        with gzip.open(path, "rb") as src, open(new, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    else:
        with open(path, "rb") as src, gzip.open(new, "wb", compresslevel=1) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)


def _copy_npu(path: Path, new: Path, recipe: Recipe, rng: random.Random) -> None:
    new.parent.mkdir(parents=True, exist_ok=True)
    if recipe.reorder and path.suffix == ".json":
        try:
            doc = msgspec.json.decode(path.read_bytes())
        except msgspec.DecodeError:
            shutil.copy(path, new)
            return
        _write(new, shuffled(doc, rng, recipe.reorder))
        return
    shutil.copy(path, new)


def _slack(src: Path, recipe: Recipe) -> float:
    """How far a figure (ms) may move when ``fraction_ns`` is added to each time: every time
    moves by the fraction and by half the spacing of doubles at its magnitude, and a figure
    adds or subtracts at most two per event of its capture."""
    worst = 0.0
    for _, doc in traces_of(src):
        events = doc["traceEvents"]
        top = max(
            (
                abs(float(e["ts"])) + abs(float(e.get("dur") or 0))
                for e in events
                if isinstance(e, dict) and number(e.get("ts")) is not None
            ),
            default=0.0,
        )
        top += abs(recipe.shift_us)
        each = recipe.fraction_ns / 1000 + math.ulp(top)  # us: the fraction, and rounding
        worst = max(worst, 2 * len(events) * each / 1000)
    return worst
