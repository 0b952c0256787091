"""Peak RSS and CPU seconds of ``analyse --json --jobs 2`` (first read, every cache entry deleted,
then every entry a hit), ``doctor --json`` and ``timeline --detail all`` on ``scale_roots``'
torch_npu roots, for two checkouts of the package interleaved on one machine state (each command
by ``scale_detailed.measure``, the scale benchmark's launcher), with the ``--json`` answers of
the two compared byte for byte.

    python -m benchmarks.npu_memory_ab BASELINE_CHECKOUT [RANKS ...] [--no-doctor]
        [--no-timeline] [--new-first]

Run it from outside both checkouts (``python -m`` puts the current folder first on the path).

The checkout this module is in is the other. Ranks default to 64 and 1024.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from benchmarks import scale_detailed
from benchmarks.scale_roots import npu_root

HERE = Path(scale_detailed.__file__).resolve()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("baseline", type=Path)
    parser.add_argument("ranks", type=int, nargs="*", default=[64, 1024])
    parser.add_argument("--no-doctor", action="store_true")
    parser.add_argument("--no-timeline", action="store_true")
    parser.add_argument("--new-first", action="store_true", help="this checkout's runs first")
    args = parser.parse_args()
    trees = {"base": args.baseline.resolve(), "new": HERE.parents[1]}
    if args.new_first:
        trees = dict(reversed(trees.items()))
    tmp = Path(tempfile.mkdtemp(prefix="npu-memory-ab-"))
    print(f"load average at start: {os.getloadavg()}", flush=True)
    for ranks in args.ranks:
        root = npu_root(ranks)
        outs: dict[str, dict[str, bytes]] = {}
        for name, tree in trees.items():
            out = tmp / f"{name}.json"
            row: dict[str, object] = {}
            scale_detailed._uncache(root)
            row["first"] = scale_detailed.measure(
                ["analyse", "--json", "--jobs", "2", str(root)], out, tree
            )
            first = out.read_bytes()
            row["warm"] = scale_detailed.measure(
                ["analyse", "--json", "--jobs", "2", str(root)], out, tree
            )
            outs[name] = {"first": first, "warm": out.read_bytes()}
            scale_detailed._uncache(root)
            if not args.no_doctor:
                row["doctor"] = scale_detailed.measure(["doctor", "--json", str(root)], out, tree)
                outs[name]["doctor"] = out.read_bytes()
            if not args.no_timeline:
                trace = tmp / f"{name}.timeline.json"
                row["timeline"] = scale_detailed.measure(
                    ["timeline", str(root), "-o", str(trace), "--detail", "all", "--jobs", "2"],
                    out,
                    tree,
                )
                trace.unlink(missing_ok=True)
            scale_detailed._uncache(root)
            print(json.dumps({"ranks": ranks, "tree": name, **row}), flush=True)
        same = {k: outs["base"][k] == outs["new"][k] for k in outs["base"]}
        print(json.dumps({"ranks": ranks, "same_json": same}), flush=True)
    print(f"load average at end: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
