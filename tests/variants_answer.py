"""What answer a variant of ``variants.py`` must give: its original's, less what
legitimately differs.

``normalise`` takes out of an answer (``analyse --json``, ``doctor --json``, ``compare
--json``) what a variant changes by construction (paths, file names, ranks, file sizes, the
order of rows that follows the files' order...); ``same`` lists where two normalised answers
differ; ``tops`` compares top lists when figures may move (fractions); ``boundary`` leaves out
what a split changes by design. docs/invariants.md says what each takes out and why.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec
from variants import Variant

__all__ = ["boundary", "normalise", "same", "tops", "without_top_level"]

_ENCODE = msgspec.json.Encoder()

#: Tables whose rows are keyed (rank, step, name...): compared as sets of rows, since their
#: order follows the order the files were found in.
_TABLES = (
    "device",
    "per_step",
    "stage_rank",
    "ranges",
    "comm",
    "memory",
    "inventory",
    "stragglers",
    "range_stragglers",
    "problems",
    "skipped",
    "notes",
    "warnings",
    "phases",
)


def _rank_text(text: str, ranks: dict[int, int]) -> str:
    if not ranks:
        return text

    def back(m: re.Match[str]) -> str:
        n = int(m.group(2))
        return f"{m.group(1)}{ranks.get(n, n)}"

    text = re.sub(r"(\brank |\branks |--ranks |--detail |profile_ranks=\[|\brank)(\d+)", back, text)
    return re.sub(r"(\branks? (?:\d+, )+)(\d+)", back, text)


def _key(row: Any) -> bytes:
    """A table row's identity: its fields but the measured ones (floats), which may move."""
    if isinstance(row, dict):
        return _ENCODE.encode(
            {k: v for k, v in row.items() if isinstance(v, (str, int, bool)) or v is None}
        )
    return _ENCODE.encode(row)


_RANK_LISTS = ("ranks", "ranks_found", "ranks_expected")
_LISTED = re.compile(r"\(([^()]*, [^()]*)\)")
_SOURCE = re.compile(r"^(.*?)(?: and (\d+) more)? \(([^()]*)\)$")


def _files(text: str) -> str:
    """Lists of files in a line put in one order: the package lists them in the order it
    found them (by name), which renaming changes."""

    def listed(m: re.Match[str]) -> str:
        items = m.group(1).split(", ")
        if all("." in x or "/" in x for x in items):
            items = sorted(items)
        return f"({', '.join(items)})"

    return _LISTED.sub(listed, text)


def _source(text: str) -> str:
    """A finding's ``source``, ``a.json, b.json and 2 more (what)``: the files named depend on
    their names' order, so it is kept as the sorted list (or, cut short, the count)."""
    m = _SOURCE.match(text)
    if not m:
        return text
    names = sorted(set(m.group(1).split(", ")))  # the halves of a split trace: one file
    if m.group(2):
        return f"{len(names) + int(m.group(2))} files ({m.group(3)})"
    return f"{', '.join(sorted(names))} ({m.group(3)})"


#: The keys holding a run (``analyse --json``'s ``run`` and ``runs``).
_RUNS = ("run", "runs")


def normalise(doc: Any, variant: Variant | None, root: Path) -> Any:
    """``doc`` (an ``analyse --json``, ``doctor --json`` or ``compare --json``) with what
    legitimately differs between a variant and its original taken out:

    - the analysed root written ``<root>``; the variant's file and folder names put back to
      the original's (in every string, and a capture's ``group``, its folder's name);
    - lists of files in a line sorted (the package lists them in the order it found them),
      a finding's ``source`` cut short to a count of files as the package cuts it;
    - the variant's ranks put back (``rank`` fields, rank lists, "rank N" in text, the next
      commands' ``--ranks``/``--detail``/``profile_ranks``);
    - file sizes (``bytes``, ``disk_per_rank``) and a run's start left out;
    - the rows of keyed tables (``_TABLES``) sorted by their identity (the fields that are
      not measurements): their order follows the files' and the ranks' order.
    """
    paths = sorted((variant.paths if variant else {}).items(), key=lambda kv: -len(kv[0]))
    ranks = variant.ranks if variant else {}
    names = {Path(new).name: Path(old).name or "<root>" for new, old in paths if Path(new).name}
    names[root.name] = "<root>"

    def text(s: str) -> str:
        s = s.replace(str(root), "<root>")
        for new, old in paths:
            s = s.replace(new, old)
        return _files(_rank_text(s, ranks))

    def walk(node: Any, key: str = "") -> Any:
        if isinstance(node, dict):
            out: dict[str, Any] = {}
            for k, v in node.items():
                if k in ("bytes", "disk_per_rank") or (k == "started" and key in _RUNS):
                    continue  # sizes; a run's start (a file's clock or mtime)
                if k == "group" and isinstance(v, str):
                    out[k] = names.get(v, v)
                elif k == "source" and isinstance(v, str) and key == "findings":
                    out[k] = _source(text(v))
                elif k == "captures_per_rank":
                    out[k] = {
                        str(ranks.get(int(r), int(r))) if r.isdigit() else r: n
                        for r, n in v.items()
                    }
                else:
                    out[k] = walk(v, k)
            return out
        if isinstance(node, list):  # a list of ranks: each item a rank
            items = [walk(x, "rank" if key in _RANK_LISTS else key) for x in node]
            if key in _RANK_LISTS:
                items = sorted(items, key=lambda r: (r is None, r or 0))
            if key in _TABLES:  # rows with one identity (torch_npu's link rows) by value
                items = sorted(items, key=lambda x: (_key(x), _ENCODE.encode(x)))
            return items
        if isinstance(node, str):
            return text(node)
        if isinstance(node, int) and not isinstance(node, bool) and key in ("rank", "gated_by"):
            return ranks.get(node, node)
        return node

    out = walk(doc)
    if variant and variant.recipe.shift_us and isinstance(out, dict):
        for row in out.get("memory", []):  # a trace's timeline is in its own clock
            if row.get("source") == "snapshot":  # an allocator snapshot's is not retimed
                continue
            row["timeline"] = [[p[0] - variant.recipe.shift_us, *p[1:]] for p in row["timeline"]]
    if variant and variant.cuts and isinstance(out, dict) and "inventory" in out:
        out["inventory"] = _merged(out["inventory"])
    return out


def without_top_level(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` without what a trace's top level records and the JSON Array Format (a bare list
    of events) cannot: the world sizes (distributedInfo), the memory capacity and the device's
    peak (deviceProperties). Applied to the original and the variant alike."""
    verdict = dict(doc["verdict"])
    verdict.pop("worlds", None)
    if verdict.get("memory"):
        verdict["memory"] = {**verdict["memory"], "capacity_bytes": None, "share": None}
    out = {**doc, "verdict": verdict}
    model = (doc.get("throughput") or {}).get("model")
    if model and str(model.get("peak_from")).startswith("device "):
        out["throughput"] = {
            **doc["throughput"],
            "model": {**model, "peak_tflops": None, "peak_from": None},
        }
    return out


def _merged(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Inventory rows of the halves of a split trace as one: the union of their steps (each
    half's own event count left out)."""
    by: dict[str, dict[str, Any]] = {}
    for row in rows:
        row = {k: v for k, v in row.items() if k != "events"}
        have = by.setdefault(row["file"], row)
        if have is not row:
            have["steps"] = sorted(set(have["steps"]) | set(row["steps"]))
    return sorted(by.values(), key=_key)


def boundary(doc: dict[str, Any], variant: Variant) -> dict[str, Any]:
    """``doc`` without what a split changes: the device rows of the steps either side of each
    cut (a step's device window ends at the next step's first op, which the other half
    holds) and of the work outside every step (each half holds some: both claim it, and are
    reported apart, with a warning), the device verdict and device findings (and the causes
    they are) read from them, the next capture chosen from them, and the runs' capture
    counts."""
    cut = {(rank, s) for _, rank, before, after in variant.cuts for s in (before, after, None)}
    out = dict(doc)
    out["device"] = [r for r in doc["device"] if (r["rank"], r["step"]) not in cut]
    out["warnings"] = [w for w in doc["warnings"] if "claimed by" not in w]
    out["verdict"] = {k: v for k, v in doc["verdict"].items() if k not in ("device", "next")}
    out["verdict"]["causes"] = [
        c for c in doc["verdict"].get("causes", []) if not c["rule"].startswith("cuda.")
    ]
    out["findings"] = [f for f in doc["findings"] if not f["rule"].startswith("cuda.")]
    for key in _RUNS:  # a cut trace is two captures of its run
        if isinstance(out.get(key), dict):
            out[key] = {k: v for k, v in out[key].items() if k != "captures"}
        elif isinstance(out.get(key), list):
            out[key] = [{k: v for k, v in run.items() if k != "captures"} for run in out[key]]
    if "inventory" in out:
        out["inventory"] = [{k: v for k, v in r.items() if k != "events"} for r in doc["inventory"]]
    return out


def tops(a: dict[str, Any], b: dict[str, Any], slack: float) -> list[str]:
    """The top lists of two answers that may differ by ``slack`` ms per figure: each name's
    count and time equal (within slack) where both list it; a name only one lists must be
    within slack of the other list's last (its cut), and the order may change only where
    figures lie within slack of each other."""
    out = []
    for key, value in (("top_kernels", "device_ms"), ("top_ops", "self_ms"), ("top_runtime", "ms")):
        name = "op" if key == "top_ops" else "name"
        x = {r[name]: r for r in a.pop(key, [])}
        y = {r[name]: r for r in b.pop(key, [])}
        for n in x.keys() | y.keys():
            if n in x and n in y:
                out += same(x[n], y[n], slack, f".{key}[{n[:40]!r}]")
            else:
                one, other = (x, y) if n in x else (y, x)
                cut = min((r[value] for r in other.values()), default=0.0)
                if one[n][value] > cut + slack:
                    out.append(f".{key}: {n[:40]!r} ({one[n][value]}) listed in one only")
    return out


_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def _text_close(a: str, b: str, slack: float) -> bool:
    """Equal strings, but for the numbers in them, each within ``slack`` and its printed
    precision."""
    if a == b:
        return True
    if not slack:
        return False
    pa, pb = _NUMBER.split(a), _NUMBER.split(b)
    na, nb = _NUMBER.findall(a), _NUMBER.findall(b)
    if pa != pb or len(na) != len(nb):
        return False
    for x, y in zip(na, nb):
        digits = len(x.split(".")[1]) if "." in x else 0
        if abs(float(x.replace(",", "")) - float(y.replace(",", ""))) > (
            slack + 10.0**-digits + 1e-9
        ):
            return False
    return True


def same(a: Any, b: Any, slack: float = 0.0, path: str = "") -> list[str]:
    """Where two normalised answers differ (at most 10 places): numbers within ``slack`` (and
    a relative 1e-9 for the order of sums), strings equal but for their numbers within it."""
    out: list[str] = []
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{path}.{k}: only in {'B' if k not in a else 'A'}")
            else:
                out += same(a[k], b[k], slack, f"{path}.{k}")
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} rows against {len(b)}")
        for i, (x, y) in enumerate(zip(a, b)):
            out += same(x, y, slack, f"{path}[{i}]")
    elif isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        if a != b:
            out.append(f"{path}: {a!r} against {b!r}")
    elif isinstance(a, int) and isinstance(b, int):  # counts: exact
        if a != b:
            out.append(f"{path}: {a!r} against {b!r}")
    elif isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if abs(a - b) > slack + 1e-9 * max(abs(a), abs(b)):
            out.append(f"{path}: {a!r} against {b!r}")
    elif isinstance(a, str) and isinstance(b, str):
        if not _text_close(a, b, slack):
            out.append(f"{path}: {a!r} against {b!r}")
    elif a != b:
        out.append(f"{path}: {a!r} against {b!r}")
    return out[:10]
