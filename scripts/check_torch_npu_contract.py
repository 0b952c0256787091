"""Compare the torch_npu contract double (tests/doubles/torch_npu) with a real torch-npu wheel.

Usage: python scripts/check_torch_npu_contract.py torch_npu-2.14.0-...whl
       python scripts/check_torch_npu_contract.py --download   (what CI runs)

``--download`` fetches the pinned wheel with ``pip download --no-deps`` into a temporary folder
(nothing is installed or cached) and checks it; when the download is impossible (no network, no
index) it prints one line saying so and exits 0.

Reads the wheel's Python sources without importing them. For every function and method the
double defines, the wheel must define the same name with the same parameters (names, kinds,
literal defaults); for every enum-like class (ProfilerLevel, AiCMetrics, ExportType) the same
members with the same values. Exits 1 and lists each difference, else prints what matched.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

DOUBLE = Path(__file__).resolve().parents[1] / "tests" / "doubles" / "torch_npu"
FILES = ["profiler/profiler.py", "profiler/experimental_config.py", "npu/mstx.py", "npu/memory.py"]
ENUMS = {"ProfilerLevel", "AiCMetrics", "ExportType"}
CONSTANTS = "torch_npu/profiler/analysis/prof_common_func/_constant.py"
#: The release the double is written against, and one platform it ships a wheel for (the
#: Python sources checked here are the same in every platform's wheel).
PINNED = "torch_npu==2.14.0"
PLATFORM = [
    "--platform",
    "manylinux_2_28_x86_64",
    "--python-version",
    "3.11",
    "--only-binary=:all:",
]


def functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    out: dict[str, ast.FunctionDef] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            out[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if (
                    isinstance(item, ast.FunctionDef)
                    and not item.name.startswith("_")
                    or (isinstance(item, ast.FunctionDef) and item.name == "__init__")
                ):
                    out[f"{node.name}.{item.name}"] = item
    return out


def params(fn: ast.FunctionDef) -> list[tuple[str, str, object]]:
    a = fn.args
    out: list[tuple[str, str, object]] = []
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    for arg, d in zip(positional, defaults):
        out.append((arg.arg, "positional", literal(d)))
    for arg, d in zip(a.kwonlyargs, a.kw_defaults):
        out.append((arg.arg, "keyword-only", literal(d)))
    return [p for p in out if p[0] != "self"]


def literal(node: ast.expr | None) -> object:
    if node is None:
        return "<required>"
    try:
        return ast.literal_eval(node)
    except ValueError:
        return "<expr>"  # e.g. Constant.LEVEL0: compared through the enum values instead


def constants(zf: zipfile.ZipFile) -> dict[str, object]:
    tree = ast.parse(zf.read(CONSTANTS))
    out: dict[str, object] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "Constant":
            for item in node.body:
                if isinstance(item, ast.Assign) and isinstance(item.targets[0], ast.Name):
                    try:
                        out[item.targets[0].id] = ast.literal_eval(item.value)
                    except ValueError:
                        pass
    return out


def enums(tree: ast.Module, consts: dict[str, object]) -> dict[str, dict[str, object]]:
    out: dict[str, dict[str, object]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name in ENUMS:
            members = {}
            for item in node.body:
                if isinstance(item, ast.Assign) and isinstance(item.targets[0], ast.Name):
                    v = item.value
                    if isinstance(v, ast.Attribute) and isinstance(v.value, ast.Name):
                        members[item.targets[0].id] = consts.get(v.attr, f"<{v.attr}?>")
                    else:
                        members[item.targets[0].id] = literal(v)
            out[node.name] = members
    return out


def compare(wheel: Path) -> list[str]:
    problems: list[str] = []
    checked = 0
    with zipfile.ZipFile(wheel) as zf:
        consts = constants(zf)
        for rel in FILES:
            real = ast.parse(zf.read(f"torch_npu/{rel}"))
            double = ast.parse((DOUBLE / rel).read_text())
            real_fns = functions(real)
            for name, fn in functions(double).items():
                if name not in real_fns:
                    problems.append(f"{rel}: {name} is not in the wheel")
                    continue
                want, got = params(fn), params(real_fns[name])
                got_cmp = [(n, k, d) for n, k, d in got]
                want_cmp = [
                    (n, k, d if got_d != "<expr>" else "<expr>")
                    for (n, k, d), (_, _, got_d) in zip(want, got)
                ]
                if [p[:2] for p in want] != [p[:2] for p in got] or want_cmp != got_cmp:
                    problems.append(
                        f"{rel}: {name} parameters differ:\n  double {want}\n  wheel  {got}"
                    )
                checked += 1
            real_enums, double_enums = enums(real, consts), enums(double, consts)
            for cls, members in double_enums.items():
                if real_enums.get(cls) != members:
                    problems.append(
                        f"{rel}: {cls} differs:\n  double {members}\n  wheel  {real_enums.get(cls)}"
                    )
                checked += 1
    if not problems:
        print(f"OK: {checked} signatures and enums of the double match {wheel.name}")
    return problems


def download(folder: Path) -> Path | None:
    """The pinned wheel downloaded into ``folder``, or None (with one line why) if impossible."""
    t0 = time.perf_counter()
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
            *PLATFORM,
            PINNED,
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    wheels = sorted(folder.glob("torch_npu-*.whl"))
    if proc.returncode != 0 or not wheels:
        reason = (proc.stderr.strip().splitlines() or ["no wheel written"])[-1]
        print(f"SKIP: torch_npu contract check: cannot download {PINNED} ({reason})")
        return None
    print(
        f"downloaded {wheels[0].name} ({wheels[0].stat().st_size / 1e6:.0f} MB) in "
        f"{time.perf_counter() - t0:.1f} s"
    )
    return wheels[0]


def main() -> int:
    if sys.argv[1:] == ["--download"]:
        with tempfile.TemporaryDirectory() as tmp:
            wheel = download(Path(tmp))
            if wheel is None:
                return 0
            problems = compare(wheel)
    elif len(sys.argv) == 2 and not sys.argv[1].startswith("-"):
        problems = compare(Path(sys.argv[1]))
    else:
        print(__doc__)
        return 2
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
